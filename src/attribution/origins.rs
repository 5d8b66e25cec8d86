//! Each line of a file followed through a thread's snapshots: a line the
//! first snapshot holds was there before the thread; a line a later one
//! adds or changes is that step's; an unchanged line keeps its origin.

use crate::error::Result;

use super::linediff::{kept, lines};
use super::objects::Objects;

/// Where a line of the file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The first snapshot held it.
    Before,
    /// Step `k` (from snapshot `k` to `k + 1`) wrote it.
    Step(usize),
}

/// The file at `path` in the last of `trees`, with each of its lines'
/// origins; `None` when no snapshot holds the file.
pub fn follow(objects: &Objects, trees: &[String], path: &str) -> Result<Option<Followed>> {
    let mut seen = false;
    let mut last: Option<(String, Option<String>)> = None;
    let mut now = Followed::default();
    for (k, tree) in trees.iter().enumerate() {
        if last.as_ref().is_some_and(|(t, _)| t == tree) {
            continue;
        }
        let blob = objects.blob_in(tree, path)?;
        if last.as_ref().is_some_and(|(_, b)| *b == blob) {
            last = Some((tree.clone(), blob));
            continue;
        }
        let text = match &blob {
            Some(id) => objects.blob(id)?,
            None => Vec::new(),
        };
        seen |= blob.is_some();
        now = if k == 0 {
            Followed {
                origins: vec![Origin::Before; lines(&text).len()],
                text,
            }
        } else {
            now.advance(text, k - 1)
        };
        last = Some((tree.clone(), blob));
    }
    Ok(seen.then_some(now))
}

/// A version of the file and its lines' origins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Followed {
    /// The file's content.
    pub text: Vec<u8>,
    /// Each of its lines' origin.
    pub origins: Vec<Origin>,
}

impl Followed {
    /// The next version, `text`, written by step `step`.
    pub fn advance(&self, text: Vec<u8>, step: usize) -> Followed {
        let origins = kept(&self.text, &text)
            .into_iter()
            .map(|m| {
                m.and_then(|j| self.origins.get(j).copied())
                    .unwrap_or(Origin::Step(step))
            })
            .collect();
        Followed { text, origins }
    }

    /// For each line of `text` (the file now), the origin of the line of
    /// this version it is unchanged from; `None` for a line this version
    /// does not have.
    pub fn align(&self, text: &[u8]) -> Vec<Option<Origin>> {
        kept(&self.text, text)
            .into_iter()
            .map(|m| m.and_then(|j| self.origins.get(j).copied()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Origin::*;

    #[test]
    fn each_line_keeps_the_step_that_last_wrote_it() {
        let first = Followed {
            text: b"a\nb\n".to_vec(),
            origins: vec![Before, Before],
        };
        let second = first.advance(b"a\nnew\nb\n".to_vec(), 0);
        assert_eq!(second.origins, [Before, Step(0), Before]);
        let third = second.advance(b"a\nnew\nB!\nmore\n".to_vec(), 1);
        assert_eq!(third.origins, [Before, Step(0), Step(1), Step(1)]);
        assert_eq!(
            third.align(b"top\na\nnew\nmore\n"),
            [None, Some(Before), Some(Step(0)), Some(Step(1))]
        );
    }
}
