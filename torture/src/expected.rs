//! What the profile of a killed recording must hold, by source: every marker whose line was
//! whole in the log (the recorder API's) or in a marker file (the task processes') when
//! everything was killed, exactly once; intervals ended when their `end` line was whole,
//! cut off otherwise; nothing else of those names.

use crate::child::{INSTANT, INTERVAL};
use crate::profile_check::Row;
use crate::task::{
    FILE_INSTANT, FILE_INTERVAL, FILE_PHASE, FILE_SPAN, FILE_SPAN_BY_ID, HELPER_INSTANT,
    HELPER_SPAN,
};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::Path;
use tc_profile_format::marker_file::FileLine;

/// Where a marker came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The recorder library's `MarkerSink`, in the recorder's process.
    Api,
    /// Writer processes appending to their marker files.
    Writers,
    /// A shell calling `tc-profile mark`, `begin` and `end`.
    Helper,
}

impl Source {
    fn of(name: &str) -> Option<Source> {
        match name {
            INSTANT | INTERVAL => Some(Source::Api),
            FILE_INSTANT | FILE_INTERVAL | FILE_SPAN | FILE_SPAN_BY_ID | FILE_PHASE => {
                Some(Source::Writers)
            }
            HELPER_INSTANT | HELPER_SPAN => Some(Source::Helper),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Source::Api => "recorder API (MarkerSink)",
            Source::Writers => "marker files, writer processes",
            Source::Helper => "marker files, tc-profile mark/begin/end",
        }
    }
}

/// A marker: its name and `data.text`.
type Key = (String, String);

/// The markers that must be in the profile, and those that may be.
#[derive(Default)]
pub struct Expected {
    /// Each with whether it must be ended (true) or cut off (false); None: either, or not
    /// an interval of a begin.
    must: HashMap<Key, Option<bool>>,
    /// A last line without newline that is whole JSON: the finalizer may take it.
    may: HashSet<Key>,
    /// Whole lines of marker files that do not read.
    pub garbled: usize,
}

impl Expected {
    /// The recorder API's markers whole in the log.
    pub fn add_api(&mut self, name: &str, text: String) {
        self.must.insert((name.to_owned(), text), None);
    }

    /// Every marker file of the profile directory.
    pub fn add_marker_files(&mut self, dir: &Path) -> Result<()> {
        for entry in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                self.add_marker_file(&std::fs::read(&path)?);
            }
        }
        Ok(())
    }

    /// Matches begins and ends by key as the recorder does within one file (every end of
    /// these writers follows its begin in the same file).
    fn add_marker_file(&mut self, bytes: &[u8]) {
        let mut open: HashMap<String, Vec<Key>> = HashMap::new();
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let whole = line.ends_with(b"\n");
            let Ok(parsed) = serde_json::from_slice::<FileLine>(line) else {
                self.garbled += usize::from(whole);
                continue;
            };
            match parsed {
                FileLine::Marker(marker) => {
                    let key = (marker.name, text_of(marker.data.as_ref()));
                    self.insert(key, None, whole);
                }
                FileLine::Begin(begin) => {
                    let key = (begin.name.clone(), text_of(begin.data.as_ref()));
                    let by = begin.id.unwrap_or(begin.name);
                    open.entry(by).or_default().push(key.clone());
                    self.insert(key, Some(false), whole);
                }
                FileLine::End(end) => {
                    let by = end.id.unwrap_or(end.name);
                    if let Some(begun) = open.get_mut(&by).and_then(Vec::pop) {
                        // A torn end may or may not be taken.
                        self.must.insert(begun, whole.then_some(true));
                    }
                }
                _ => {}
            }
        }
    }

    fn insert(&mut self, key: Key, ended: Option<bool>, whole: bool) {
        if whole {
            self.must.insert(key, ended);
        } else {
            self.may.insert(key);
        }
    }

    /// Compares the profile's markers of the known sources with what must be there.
    pub fn tally(&self, rows: &[Row]) -> BTreeMap<Source, Tally> {
        let mut tallies: BTreeMap<Source, Tally> = BTreeMap::new();
        let mut found: HashMap<Key, Vec<&Row>> = HashMap::new();
        for row in rows {
            let Some(source) = Source::of(&row.name) else {
                continue;
            };
            let key = (row.name.clone(), row.text.clone().unwrap_or_default());
            if !self.must.contains_key(&key) && !self.may.contains(&key) {
                tallies.entry(source).or_default().invented += 1;
            }
            found.entry(key).or_default().push(row);
        }
        for (key, ended) in &self.must {
            let Some(source) = Source::of(&key.0) else {
                continue;
            };
            let tally = tallies.entry(source).or_default();
            tally.on_disk += 1;
            match found.get(key).map(Vec::as_slice) {
                None | Some([]) => tally.lost += 1,
                Some([row]) => {
                    if ended.is_some_and(|ended| ended == row.cut_off) {
                        tally.wrong_end += 1;
                    }
                }
                Some(_) => tally.duplicated += 1,
            }
        }
        for key in &self.may {
            if found.get(key).is_some_and(|rows| rows.len() > 1) {
                if let Some(source) = Source::of(&key.0) {
                    tallies.entry(source).or_default().duplicated += 1;
                }
            }
        }
        tallies
    }
}

fn text_of(data: Option<&serde_json::Map<String, serde_json::Value>>) -> String {
    data.and_then(|d| d.get("text"))
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// One source's markers over the kills.
#[derive(Clone, Copy, Default)]
pub struct Tally {
    pub on_disk: usize,
    pub lost: usize,
    pub duplicated: usize,
    pub invented: usize,
    /// Intervals ended where their file has no whole `end`, or cut off where it has one.
    pub wrong_end: usize,
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        self.on_disk += other.on_disk;
        self.lost += other.lost;
        self.duplicated += other.duplicated;
        self.invented += other.invented;
        self.wrong_end += other.wrong_end;
    }

    pub fn is_clean(&self) -> bool {
        self.lost + self.duplicated + self.invented + self.wrong_end == 0
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on disk at the kill; lost: {}; duplicated: {}; invented: {}; intervals ended \
             or cut off wrongly: {}",
            self.on_disk, self.lost, self.duplicated, self.invented, self.wrong_end
        )
    }
}
