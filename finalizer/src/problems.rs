//! What was dropped from marker files, summed for the profile's `Marker files` note.

use crate::escape::escape_controls;
use std::collections::BTreeMap;
use tc_profile_format::marker_file::Problem;
use tc_profile_format::Dropped;

/// File names listed per problem in the note at most.
const NAMES_SHOWN: usize = 3;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProblemCount {
    /// Lines, or files for a whole-file problem.
    pub count: u64,
    pub bytes: u64,
    /// The first few files it happened in.
    pub files: Vec<String>,
}

/// Problems of a profile directory by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems {
    pub by_problem: BTreeMap<Problem, ProblemCount>,
}

impl Problems {
    pub fn add(&mut self, dropped: &Dropped) {
        let entry = self.by_problem.entry(dropped.problem).or_default();
        entry.count += dropped.count;
        entry.bytes += dropped.bytes;
        let named = !dropped.file.is_empty();
        if named && entry.files.len() < NAMES_SHOWN && !entry.files.contains(&dropped.file) {
            entry.files.push(dropped.file.clone());
        }
    }

    pub fn count(&self, problem: Problem) -> u64 {
        self.by_problem.get(&problem).map_or(0, |c| c.count)
    }

    pub fn is_empty(&self) -> bool {
        self.by_problem.is_empty()
    }

    /// "dropped from marker files: symbolic link (not followed): 1 file (a.jsonl); ...".
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .by_problem
            .iter()
            .map(|(problem, count)| {
                let unit = match (problem.counts_files(), count.count) {
                    (true, 1) => "file",
                    (true, _) => "files",
                    (false, 1) => "line",
                    (false, _) => "lines",
                };
                let bytes = if count.bytes > 0 {
                    format!(", {} bytes", count.bytes)
                } else {
                    String::new()
                };
                let files = if count.files.is_empty() {
                    String::new()
                } else {
                    let files: Vec<_> = count.files.iter().map(|f| escape_controls(f)).collect();
                    format!(" ({})", files.join(", "))
                };
                format!(
                    "{}: {} {unit}{bytes}{files}",
                    problem.describe(),
                    count.count
                )
            })
            .collect();
        format!("dropped from marker files: {}", parts.join("; "))
    }
}
