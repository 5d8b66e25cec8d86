//! `--tree` of `list` and `show`: the relationship graph as an indented tree.

use std::collections::HashSet;
use std::io::Write;

use grove::graph::{Graph, Node};

use super::output::Style;

/// Writes the trees rooted at `roots` (every node not reached from them is
/// printed as a root too when `all`). `mark` is highlighted.
pub fn write(
    w: &mut impl Write,
    s: Style,
    graph: &Graph,
    roots: &[&str],
    mark: Option<&str>,
    all: bool,
) -> std::io::Result<()> {
    let mut visited = HashSet::new();
    for root in roots {
        write_node(w, s, graph, root, None, "", "", mark, &mut visited)?;
    }
    if all {
        // Nodes only reachable through a cycle have no root: print them anyway.
        for n in &graph.nodes {
            if !visited.contains(n.thread_id.as_str())
                && n.exists
                && graph.parents_of(&n.thread_id).next().is_some()
            {
                write_node(w, s, graph, &n.thread_id, None, "", "", mark, &mut visited)?;
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn write_node<'g>(
    w: &mut impl Write,
    s: Style,
    graph: &'g Graph,
    id: &'g str,
    edge_label: Option<String>,
    first_prefix: &str,
    rest_prefix: &str,
    mark: Option<&str>,
    visited: &mut HashSet<&'g str>,
) -> std::io::Result<()> {
    let node = graph.node(id);
    let label = edge_label
        .map(|l| format!("{} ", s.magenta(&l)))
        .unwrap_or_default();
    let again = !visited.insert(id);
    writeln!(
        w,
        "{first_prefix}{label}{}{}",
        describe(s, id, node, mark == Some(id)),
        if again {
            s.dim(" (see above)")
        } else {
            String::new()
        }
    )?;
    if again {
        return Ok(());
    }
    let children = graph.children_of(id);
    let mentions = graph.mentions_of(id);
    for m in &mentions {
        let branch = if children.is_empty() { "   " } else { "│  " };
        writeln!(
            w,
            "{rest_prefix}{branch}{} {}",
            s.dim("↪ mentions"),
            describe(s, &m.from, graph.node(&m.from), false)
        )?;
    }
    for (i, edge) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (first, rest) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        let label = match edge.message_index {
            Some(n) => format!("{}@{n}", edge.kind),
            None => edge.kind.clone(),
        };
        write_node(
            w,
            s,
            graph,
            &edge.to,
            Some(label),
            &format!("{rest_prefix}{first}"),
            &format!("{rest_prefix}{rest}"),
            mark,
            visited,
        )?;
    }
    Ok(())
}

fn describe(s: Style, id: &str, node: Option<&Node>, marked: bool) -> String {
    let short = super::output::short_id(id);
    let text = match node {
        Some(n) if n.exists => {
            let status = n.status.map(|st| st.as_str()).unwrap_or("");
            let archived = if n.archived { ", archived" } else { "" };
            format!(
                "{}  {}  {}",
                s.yellow(&s.text(short)),
                s.text(n.title.as_deref().unwrap_or("")),
                s.dim(&format!("[{status}{archived}]"))
            )
        }
        _ => format!("{}  {}", s.yellow(&s.text(short)), s.dim("(deleted)")),
    };
    if marked {
        format!("{} {text}", s.bold("*"))
    } else {
        text
    }
}
