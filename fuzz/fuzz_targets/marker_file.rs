//! A whole marker file, read as the recorder reads the profile directory (the hardened
//! directory reader, then the merger): every byte is taken, as a line or as a counted
//! problem; reading the file in two scans, the second after the rest was appended, hands
//! over the same lines and problems as one scan; every log line the merger makes decodes
//! back to itself; and its metric markers hold finite figures. Caps are small, so that
//! inputs reach them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;
use tc_profile_format::marker_file::{Limits, Problem};
use tc_profile_format::metric::key;
use tc_profile_format::profile_dir::{DirReader, Item};
use tc_profile_format::{Line, Marker};
use tc_profile_fuzz::{check_log_line, check_metric_markers, merger, NOW_EPOCH_MS};

const FILE: &str = "1.jsonl";

fuzz_target!(|bytes: &[u8]| {
    let limits = Limits {
        line_bytes: 512,
        depth: 8,
        open_intervals: 8,
        schemas: 4,
        ..Limits::default()
    };
    let path = directory().join(FILE);
    let _ = std::fs::remove_file(&path);
    let (head, tail) = bytes.split_at(bytes.len() / 2);
    write(&path, head);
    let mut in_two = DirReader::open(directory(), limits.clone()).expect("open the directory");
    let mut two_scans = Items::default();
    two_scans.scan(&mut in_two, false);
    write(&path, tail);
    two_scans.scan(&mut in_two, true);

    let mut in_one = DirReader::open(directory(), limits.clone()).expect("open the directory");
    let mut one_scan = Items::default();
    let taken = one_scan.scan(&mut in_one, true);
    assert_eq!(taken, bytes.len() as u64, "every byte is taken");
    assert_eq!(one_scan.lines, two_scans.lines);
    assert_eq!(one_scan.problems, two_scans.problems);

    let mut reader = DirReader::open(directory(), limits.clone()).expect("open the directory");
    let batch = merger(limits)
        .read_batch(&mut reader, true, NOW_EPOCH_MS)
        .expect("read the batch");
    assert_eq!(batch.scan.bytes, bytes.len() as u64);
    for line in &batch.lines {
        check_log_line(line);
    }
    // A marker file's counter takes any number, so it may fall.
    let metrics: Vec<Marker> = batch
        .lines
        .into_iter()
        .filter_map(|line| match line {
            Line::Marker(marker) if is_metric(&marker) => Some(marker),
            _ => None,
        })
        .collect();
    check_metric_markers(&metrics, true);
});

fn is_metric(marker: &Marker) -> bool {
    marker
        .data
        .as_ref()
        .is_some_and(|data| data.get(key::METRIC).is_some())
}

/// What scans handed over: the lines, and the lines and bytes of each problem, summed (a
/// line over the cap that two scans read is counted in both, its bytes split between them).
#[derive(Default)]
struct Items {
    lines: Vec<Vec<u8>>,
    problems: BTreeMap<Problem, (u64, u64)>,
}

impl Items {
    /// One scan; returns the bytes it took.
    fn scan(&mut self, reader: &mut DirReader, take_unterminated: bool) -> u64 {
        let scan = reader.scan(take_unterminated, &mut |item| match item {
            Item::Line { bytes, .. } => self.lines.push(bytes.to_vec()),
            Item::Problem {
                problem,
                count,
                bytes,
                ..
            } => {
                let sum = self.problems.entry(problem).or_default();
                *sum = (sum.0 + count, sum.1 + bytes);
            }
        });
        scan.expect("scan the directory").bytes
    }
}

/// This process's own directory, made once.
fn directory() -> &'static PathBuf {
    static DIRECTORY: OnceLock<PathBuf> = OnceLock::new();
    DIRECTORY.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("tc-profile-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&path).expect("make the directory");
        path
    })
}

fn write(path: &PathBuf, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the marker file");
    file.write_all(bytes).expect("write the marker file");
}
