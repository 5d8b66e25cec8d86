//! The outcome written into the thread, where the conversation that made
//! the work is: `metadata.grove.merge` in `thread.json` (commit ids,
//! strategy, test results — for programs), and a system message saying the
//! same in a line (for whoever reads the conversation).

use serde_json::Value;

use super::Landed;
use crate::atsf::{ContentBlock, Message, Role};
use crate::discovery::Found;
use crate::error::Result;
use crate::setup::HookStatus;
use crate::store::AppendOptions;

/// Writes `landed` into `found`'s thread.
pub(super) fn record(found: &Found, landed: &Landed) -> Result<()> {
    let value = merge_value(landed);
    found.thread.update_meta(|m| {
        let grove = m
            .metadata_mut()
            .entry("grove")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(g) = grove {
            g.insert("merge".into(), value);
        }
    })?;
    let message = Message::new(Role::System, vec![ContentBlock::text(summary(landed))]);
    found.thread.append(message, AppendOptions::default())?;
    Ok(())
}

/// `metadata.grove.merge`: what landed where, how, and what the tests said.
fn merge_value(landed: &Landed) -> Value {
    serde_json::json!({
        "strategy": landed.strategy,
        "branch": landed.branch,
        "branchTip": landed.branch_tip,
        "target": landed.target,
        "targetBefore": landed.target_before,
        "targetAfter": landed.target_after,
        "committed": landed.committed,
        "alreadyIntegrated": landed.already_integrated,
        "tests": landed.tests,
        "mergedAt": crate::atsf::now_timestamp(),
    })
}

/// One line: `Merged grove/x into main (squash): 1a2b3c4d5e6f..7a8b9c0d1e2f; test `cargo test` passed.`
pub(super) fn summary(landed: &Landed) -> String {
    let short = |c: &str| c.chars().take(12).collect::<String>();
    if let Some(i) = &landed.already_integrated {
        return format!(
            "{} was already in {} ({}); nothing was merged.",
            landed.branch,
            landed.target,
            i.reason.as_str()
        );
    }
    let tests = match landed.tests.as_slice() {
        [] => "no test was run".to_string(),
        tests => tests
            .iter()
            .map(|t| {
                let said = match t.status {
                    HookStatus::Ok => "passed",
                    HookStatus::Skipped => "skipped",
                    _ => "failed (continueOnError)",
                };
                format!("test `{}` {said}", t.label)
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "Merged {} into {} ({}): {}..{}; {tests}.",
        landed.branch,
        landed.target,
        landed.strategy.as_str(),
        short(&landed.target_before),
        short(&landed.target_after)
    )
}
