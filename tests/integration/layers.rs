//! The library's modules import in one direction: no module reaches, through
//! `crate::` or `super::` paths, a module that reaches back to it — at the
//! top (`store`, `cache`, `git`, …) and among the files of each folder
//! (`export/claude.rs`, `export/native.rs`, …). A circle makes every change
//! to one of its modules a change to all of them.
//!
//! Read from the source text: `crate::a::b` and `super::b` paths, and
//! `use crate::{a, b::{c, d}}` groups. A parent module's own re-exports of
//! its children are not edges (a parent is made of its children).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The edges allowed to run against the layers, each with its reason. At
/// most one.
const ALLOWED_UPWARD: &[(&str, &str, &str)] = &[(
    "store",
    "cache",
    "every change of a task's thread.json reaches the cache's copy from the one place it passes \
     through, the store's save (cache::follow)",
)];

type Module = Vec<String>;

/// Every `.rs` file under `dir`, with its module path (`a/b.rs` and
/// `a/b/mod.rs` are `[a, b]`).
fn modules(root: &Path, dir: &Path, out: &mut Vec<(Module, PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            modules(root, &path, out);
            continue;
        }
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap().with_extension("");
        let mut module: Module = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|l| l == "mod") {
            module.pop();
        }
        out.push((module, path));
    }
}

/// The source without comments (line comments only: grove has no block
/// comments, and a `//` inside a string only hides the rest of its line).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The paths a `use` tree names, from inside its braces: `a, b::{c, d}`.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Module>) {
    let mut depth = 0;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&tree[start..]);
    for item in items {
        let item = item.trim();
        let mut path = prefix.to_vec();
        let mut rest = item;
        while let Some(name) = ident_at(rest) {
            path.push(name.to_string());
            rest = &rest[name.len()..];
            match rest.strip_prefix("::") {
                Some(r) if r.starts_with('{') => {
                    let inner = &r[1..r.rfind('}').unwrap_or(r.len())];
                    expand(&path, inner, out);
                    path.clear();
                    break;
                }
                Some(r) => rest = r,
                None => break,
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
    }
}

/// The module paths `code` refers to, resolved from module `at` (`None`
/// at the root of a path means `crate`).
fn references(at: &Module, code: &str) -> Vec<Module> {
    let mut out = Vec::new();
    // `use crate::{…}` / `use super::{…}` groups.
    for (prefix, base) in [("crate::{", Vec::new()), ("super::{", parent(at))] {
        let mut from = 0;
        while let Some(i) = code[from..].find(prefix) {
            let open = from + i + prefix.len();
            let mut depth = 1;
            let mut end = open;
            for (j, c) in code[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = open + j;
                    break;
                }
            }
            expand(&base, &code[open..end], &mut out);
            from = end;
        }
    }
    // Plain paths: `crate::a::b`, `super::a`, `super::super::a`.
    let bytes = code.as_bytes();
    for (i, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        if i > 0
            && (bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':')
        {
            continue;
        }
        let mut path: Module = Vec::new();
        let mut rest = &code[i..];
        let mut base_set = false;
        while let Some(name) = ident_at(rest) {
            match name {
                "crate" if !base_set => base_set = true,
                "super" => {
                    if !base_set {
                        path = parent(at);
                        base_set = true;
                    } else {
                        path.pop();
                    }
                }
                _ => path.push(name.to_string()),
            }
            rest = &rest[name.len()..];
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        out.push(path);
    }
    out
}

/// The module `super` names from `at` (from `a/mod.rs` as from `a.rs`).
fn parent(at: &Module) -> Module {
    let mut p = at.clone();
    p.pop();
    p
}

/// Edges between the children of each folder module (the crate's root
/// being `[]`): `(folder, from, to) -> files`.
type Edges = BTreeMap<(Module, String, String), BTreeSet<String>>;

fn edges(root: &Path) -> Edges {
    let mut files = Vec::new();
    modules(root, root, &mut files);
    let known: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut edges = Edges::new();
    for (module, path) in &files {
        if module.is_empty() || module == &["lib"] || module == &["main"] {
            continue;
        }
        let text = code(&std::fs::read_to_string(path).unwrap());
        for target in references(module, &text) {
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= module.len() || common >= target.len() {
                continue; // a module's own children or itself
            }
            let folder = module[..common].to_vec();
            let to = &target[..=common];
            if !known.contains(to) {
                continue; // an item of the folder module, not a module
            }
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            edges
                .entry((folder, module[common].clone(), target[common].clone()))
                .or_default()
                .insert(rel);
        }
    }
    edges
}

/// The circles of one folder's graph (strongly connected components of
/// more than one module).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let lw = self.low[w.as_str()];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w.as_str()) {
                    let iw = self.index[w.as_str()];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// What is wrong with the module graph under `root`, one line per circle
/// with the files behind each of its edges.
fn problems(root: &Path) -> Vec<String> {
    let edges = edges(root);
    let mut graphs: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (folder, from, to) in edges.keys() {
        let allowed = ALLOWED_UPWARD
            .iter()
            .any(|(f, t, _)| folder.is_empty() && f == from && t == to);
        if !allowed {
            graphs
                .entry(folder.clone())
                .or_default()
                .entry(from.clone())
                .or_default()
                .insert(to.clone());
        }
    }
    let mut out = Vec::new();
    for (folder, graph) in &graphs {
        for circle in circles(graph) {
            let mut line = format!("circle in {}: {}", folder.join("::"), circle.join(" <-> "));
            for a in &circle {
                for b in &circle {
                    if let Some(files) = edges.get(&(folder.clone(), a.clone(), b.clone())) {
                        let files: Vec<&str> = files.iter().map(String::as_str).collect();
                        line += &format!("\n    {a} -> {b}: {}", files.join(", "));
                    }
                }
            }
            out.push(line);
        }
    }
    out
}

/// The top-level modules in the order `lib.rs`'s map lists them, from the
/// foundations up.
fn documented_layers(root: &Path) -> Vec<String> {
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let doc: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .skip_while(|l| !l.contains("in layers"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (i, _) in doc.match_indices("[`") {
        let rest = &doc[i + 2..];
        if let Some(end) = rest.find("`]") {
            out.push(rest[..end].to_string());
        }
    }
    out
}

/// Each top-level import that runs against `lib.rs`'s order of layers.
fn against_the_layers(root: &Path) -> Vec<String> {
    let layers = documented_layers(root);
    let rank = |m: &str| layers.iter().position(|l| l == m);
    let mut files = Vec::new();
    modules(root, root, &mut files);
    let top: BTreeSet<&str> = files
        .iter()
        .filter_map(|(m, _)| m.first())
        .map(String::as_str)
        .collect();
    let mut out: Vec<String> = top
        .into_iter()
        .filter(|m| !["cli", "error", "lib", "main"].contains(m) && rank(m).is_none())
        .map(|m| format!("{m} is not in lib.rs's map"))
        .collect();
    for ((folder, from, to), files) in edges(root) {
        if !folder.is_empty() || from == "cli" {
            continue;
        }
        let allowed = ALLOWED_UPWARD
            .iter()
            .any(|(f, t, _)| *f == from && *t == to);
        match (rank(&from), rank(&to)) {
            (Some(a), Some(b)) if b > a && !allowed => {
                let files: Vec<&str> = files.iter().map(String::as_str).collect();
                out.push(format!(
                    "{from} imports {to}, a layer above it: {}",
                    files.join(", ")
                ));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn the_library_s_modules_import_only_from_the_layers_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(documented_layers(&root).len() > 20);
    let wrong = against_the_layers(&root);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_library_s_modules_import_in_one_direction() {
    assert!(ALLOWED_UPWARD.len() <= 1, "at most one upward import");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = problems(&root);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_sees_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("low")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod low; pub mod high;").unwrap();
    std::fs::write(
        src.join("low/mod.rs"),
        "mod a; mod b;\nuse crate::{atsf, high::Thing};",
    )
    .unwrap();
    std::fs::write(src.join("low/a.rs"), "use super::b::X; // crate::nothing").unwrap();
    std::fs::write(src.join("low/b.rs"), "fn f() { super::a::g() }").unwrap();
    std::fs::write(src.join("high.rs"), "use crate::low::Y;").unwrap();
    std::fs::write(src.join("atsf.rs"), "").unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "//! The modules, in layers:\n//! - [`low`]\n//! - [`high`]\npub mod low; pub mod high;",
    )
    .unwrap();
    let wrong = against_the_layers(src);
    assert!(
        wrong.iter().any(|w| w.starts_with("low imports high")),
        "{wrong:?}"
    );
    assert!(
        wrong.iter().any(|w| w.starts_with("atsf is not in")),
        "{wrong:?}"
    );
    let found = problems(src);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].starts_with("circle in : high <-> low"),
        "{found:#?}"
    );
    assert!(found[0].contains("low -> high: low/mod.rs"), "{found:#?}");
    assert!(found[1].starts_with("circle in low: a <-> b"), "{found:#?}");
}
