//! A port and an environment per task: `worktreeHooks.ports` and `env`.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::json;

use crate::support::*;

fn ports_of(task: &serde_json::Value) -> Vec<u64> {
    let dir = PathBuf::from(task["threadDir"].as_str().unwrap());
    read_json(&dir.join("thread.json"))["metadata"]["grove"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect()
}

#[test]
fn twelve_parallel_tasks_get_distinct_free_ports_an_env_file_and_give_them_back() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {
            "ports": 2,
            "env": {"PORT": "{port}", "API_URL": "http://localhost:{port2}/{branch}", "NOTE": "a b"},
            "envFile": ".env.local",
            "postSetupCommands": [{"command":
                "echo \"$GROVE_PORT $GROVE_PORT_1 $GROVE_PORT_2\" > \"$GROVE_REPO_ROOT/../ports-$GROVE_THREAD_ID\""}]}}),
    );
    ok(sb.grove(&repo).args(["trust"]));
    let children: Vec<_> = (0..12)
        .map(|i| {
            sb.grove(&repo)
                .args(["new", &format!("task {i}"), "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let tasks: Vec<serde_json::Value> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            json(&String::from_utf8(out.stdout).unwrap())
        })
        .collect();
    let mut all = HashSet::new();
    for t in &tasks {
        let ports = ports_of(t);
        assert_eq!(ports.len(), 2, "{t}");
        for p in &ports {
            assert!(all.insert(*p), "port {p} given twice");
            assert!(
                std::net::TcpListener::bind(("127.0.0.1", *p as u16)).is_ok(),
                "{p} is free"
            );
        }
        let id = t["threadId"].as_str().unwrap();
        let seen = std::fs::read_to_string(sb.path().join(format!("ports-{id}"))).unwrap();
        assert_eq!(
            seen.trim(),
            format!("{} {} {}", ports[0], ports[0], ports[1])
        );
        let wt = PathBuf::from(t["worktreePath"].as_str().unwrap());
        let env = std::fs::read_to_string(wt.join(".env.local")).unwrap();
        let branch = t["branch"].as_str().unwrap();
        assert!(env.contains(&format!("PORT={}\n", ports[0])), "{env}");
        assert!(
            env.contains(&format!("API_URL=http://localhost:{}/{branch}\n", ports[1])),
            "{env}"
        );
        assert!(env.contains("NOTE=\"a b\"\n"), "{env}");
        assert_eq!(
            sb.git(&wt, &["status", "--porcelain"]),
            "",
            "the env file is not a change"
        );
    }
    assert_eq!(all.len(), 24);

    // `grove env` for a shell, and as JSON.
    let first = &tasks[0];
    let id = first["threadId"].as_str().unwrap();
    let ports = ports_of(first);
    let exports = ok(sb.grove(&repo).args(["env", id]));
    assert!(
        exports.contains(&format!("export GROVE_PORT={}\n", ports[0])),
        "{exports}"
    );
    assert!(
        exports.contains(&format!("export GROVE_PORT_2={}\n", ports[1])),
        "{exports}"
    );
    assert!(exports.contains("export NOTE='a b'\n"), "{exports}");
    let shell = std::process::Command::new("sh")
        .args(["-c", &format!("{exports}\necho \"$API_URL\"")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&shell.stdout).trim(),
        format!(
            "http://localhost:{}/{}",
            ports[1],
            first["branch"].as_str().unwrap()
        )
    );
    let v = json(&ok(sb.grove(&repo).args(["env", id, "--json"])));
    assert_eq!(v["GROVE_PORT_1"], ports[0].to_string());

    // rm gives them back.
    let registry = || std::fs::read_to_string(sb.grove_home().join("ports.json")).unwrap();
    assert!(registry().contains(&format!("\"{}\"", ports[0])));
    ok(sb.grove(&repo).args(["rm", id]));
    let now = registry();
    for p in &ports {
        assert!(!now.contains(&format!("\"{p}\"")), "{p} given back: {now}");
    }
}

/// The README's example of `{port1}` vs `{port2}`, as written there: each
/// placeholder is the task's port of that number, `{port}` the first; one
/// past `ports` is left as it is.
#[test]
fn the_readme_port_example_fills_port1_and_port2_with_the_task_s_two_ports() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let example = readme
        .split("```json\n")
        .skip(1)
        .map(|b| b.split_once("```").unwrap().0)
        .find(|b| b.contains("{port2}"))
        .expect("the README has an example with {port2}");
    let example: String = example.lines().map(str::trim).collect();
    let mut config: serde_json::Value = serde_json::from_str(&example).unwrap();
    config["worktreeHooks"]["env"]["EXTRA"] = json!("{port3}");

    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(&repo, config);
    let task = new_task(&sb, &repo, &["web and db"]);
    let ports = ports_of(&task);
    assert_eq!(ports.len(), 2);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let env = std::fs::read_to_string(wt.join(".env.local")).unwrap();
    for line in [
        format!("PORT={}", ports[0]),
        format!("DATABASE_URL=postgres://localhost:{}/app", ports[1]),
        format!("APP_URL=http://localhost:{}/", ports[0]),
        "EXTRA=\"{port3}\"".to_string(),
    ] {
        assert!(env.lines().any(|l| l == line), "{line} in {env}");
    }
    let id = task["threadId"].as_str().unwrap();
    let v = json(&ok(sb.grove(&repo).args(["env", id, "--json"])));
    assert_eq!(v["GROVE_PORT"], ports[0].to_string());
    assert_eq!(v["GROVE_PORT_1"], ports[0].to_string());
    assert_eq!(v["GROVE_PORT_2"], ports[1].to_string());
}
