//! How tasks are grouped (`--by`): a tag's value, or the task's name with its numbers and
//! chunk suffixes folded, so that `test-linux/opt-xpcshell-3` and `-7` are one kind.

use crate::export::report::TASK_NAME_TAG;
use crate::fleet::task::FleetTask;

/// What tasks are grouped by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// A tag's value (`worker_type`, `instance_type`, any tag InfluxDB holds).
    Tag(String),
    /// The task's name (`task_name`), its numbers folded into `N`.
    TaskName,
}

/// The group of a task without the tag.
pub const NO_VALUE: &str = "(none)";

impl GroupBy {
    /// `task-name`, else a tag's name (`worker-type` is `worker_type`).
    pub fn parse(text: &str) -> GroupBy {
        match text {
            "task-name" | "task_name" => GroupBy::TaskName,
            tag => GroupBy::Tag(tag.replace('-', "_")),
        }
    }

    pub fn key(&self, task: &FleetTask) -> String {
        let value = match self {
            GroupBy::Tag(tag) => task.tag(tag).map(str::to_owned),
            GroupBy::TaskName => task.tag(TASK_NAME_TAG).map(fold_numbers),
        };
        value.unwrap_or_else(|| NO_VALUE.to_owned())
    }

    /// The name shown: `worker-type`, `task-name`.
    pub fn label(&self) -> String {
        match self {
            GroupBy::Tag(tag) => tag.replace('_', "-"),
            GroupBy::TaskName => "task-name".to_owned(),
        }
    }
}

/// Every number that stands alone between separators (`-`, `/`, `_`, `.`, `:`, a space)
/// becomes `N`, and a chunk suffix `N/N` (anywhere) or `N-N` (at the end) one `N`:
/// `test-e10s-3/8` is `test-e10s-N`. Digits inside a word (`linux64`, `e10s`) stay: they
/// name a platform, not a chunk.
pub fn fold_numbers(name: &str) -> String {
    let mut tokens: Vec<&str> = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        let separator = |c: char| "-/_.: ".contains(c);
        let first_is_separator = rest.starts_with(separator);
        let length = rest
            .find(|c: char| separator(c) != first_is_separator)
            .unwrap_or(rest.len());
        let token = &rest[..length];
        let number = token.bytes().all(|b| b.is_ascii_digit());
        tokens.push(if number { "N" } else { token });
        rest = &rest[length..];
    }
    let mut folded: Vec<&str> = Vec::with_capacity(tokens.len());
    for (at, token) in tokens.iter().enumerate() {
        let last = at + 1 == tokens.len();
        let chunk = match folded.as_slice() {
            [.., "N", "/"] => true,
            [.., "N", "-"] => last,
            _ => false,
        };
        if *token == "N" && chunk {
            folded.pop();
        } else {
            folded.push(token);
        }
    }
    folded.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_chunk_suffixes_fold_and_digits_in_words_stay() {
        for (name, folded) in [
            ("test-linux64/opt-xpcshell-3", "test-linux64/opt-xpcshell-N"),
            (
                "test-linux64/opt-mochitest-e10s-3/8",
                "test-linux64/opt-mochitest-e10s-N",
            ),
            ("build-android 12", "build-android N"),
            ("lint", "lint"),
            ("chunk-2-4", "chunk-N"),
        ] {
            assert_eq!(fold_numbers(name), folded, "{name}");
        }
    }
}
