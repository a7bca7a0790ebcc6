//! Part 2: real logs from part 1 cut at every byte, and with every tail overwritten by NUL
//! bytes (what a power cut leaves on ext4: the size grew, the blocks were never written).
//! Each finalizes unless the meta and thread lines are cut; none holds a marker that the
//! whole log does not; the bytes dropped are counted.

use crate::report::write_failures;
use anyhow::Result;
use std::collections::HashSet;
use std::fmt;
use tc_profile_finalizer::{compact, read_log, DropReason, Profile};
use tc_profile_format::schema::category;

#[derive(Default)]
pub struct TruncationReport {
    logs: usize,
    bytes_of_logs: usize,
    finalized: usize,
    refused_headers_cut: usize,
    invented: usize,
    stride: usize,
    torn_bytes_dropped: u64,
    nul_bytes_dropped: u64,
    failures: Vec<String>,
}

impl TruncationReport {
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.logs > 0
    }
}

impl fmt::Display for TruncationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "2. truncation: {} real logs ({} bytes), each cut at every {} byte and with every such \
             tail NUL-filled: {} finalized, {} refused (meta or thread line cut), invented \
             markers: {}; dropped by the reader, summed over all cuts: {} bytes of torn or \
             garbled lines, {} NUL bytes",
            self.logs,
            self.bytes_of_logs,
            ordinal(self.stride),
            self.finalized,
            self.refused_headers_cut,
            self.invented,
            self.torn_bytes_dropped,
            self.nul_bytes_dropped
        )?;
        if self.logs == 0 {
            write!(
                f,
                "\n   FAILED no log of part 1 was small enough to cut at every byte"
            )?;
        }
        write_failures(f, &self.failures)
    }
}

fn ordinal(stride: usize) -> String {
    match stride {
        1 => String::new(),
        2 => "2nd".to_owned(),
        3 => "3rd".to_owned(),
        n => format!("{n}th"),
    }
}

pub fn run(logs: &[Vec<u8>], count: usize, stride: usize) -> Result<TruncationReport> {
    let mut report = TruncationReport {
        stride,
        ..TruncationReport::default()
    };
    for log in logs.iter().take(count) {
        report.logs += 1;
        report.bytes_of_logs += log.len();
        check_log(log, &mut report);
    }
    Ok(report)
}

fn check_log(log: &[u8], report: &mut TruncationReport) {
    let Some(whole) = markers_of(log) else {
        report
            .failures
            .push("a whole log of part 1 does not read".into());
        return;
    };
    let headers_end = log
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(1)
        .map_or(0, |(i, _)| i);
    let mut nul_tailed = Vec::with_capacity(log.len());
    for cut in (0..=log.len()).step_by(report.stride) {
        nul_tailed.clear();
        nul_tailed.extend_from_slice(&log[..cut]);
        nul_tailed.resize(log.len(), 0);
        for (variant, bytes) in [("cut", &log[..cut]), ("NUL tail", &nul_tailed[..])] {
            check_variant(bytes, cut, headers_end, variant, &whole, report);
        }
    }
}

fn check_variant(
    bytes: &[u8],
    cut: usize,
    headers_end: usize,
    variant: &str,
    whole: &HashSet<String>,
    report: &mut TruncationReport,
) {
    let recording = match read_log(bytes) {
        Ok(recording) => recording,
        Err(_) if cut <= headers_end => {
            report.refused_headers_cut += 1;
            return;
        }
        Err(error) => {
            report.failures.push(format!("{variant} at {cut}: {error}"));
            return;
        }
    };
    report.finalized += 1;
    for (reason, (_, bytes)) in &recording.damage.by_reason {
        match reason {
            DropReason::NulBytes => report.nul_bytes_dropped += bytes,
            _ => report.torn_bytes_dropped += bytes,
        }
    }
    let (profile, _) = compact(recording);
    let invented: Vec<String> = keys(&profile)
        .into_iter()
        .filter(|(key, note_or_cut_off)| !note_or_cut_off && !whole.contains(key))
        .map(|(key, _)| key)
        .collect();
    if let Some(first) = invented.first() {
        report.invented += invented.len();
        report
            .failures
            .push(format!("{variant} at {cut} invented {first}"));
    }
}

fn markers_of(log: &[u8]) -> Option<HashSet<String>> {
    let (profile, _) = compact(read_log(log).ok()?);
    Some(keys(&profile).into_iter().map(|(key, _)| key).collect())
}

/// Each marker as text, and whether it is the finalizer's own (a note, or an interval it
/// closed at the end of what it read).
fn keys(profile: &Profile) -> Vec<(String, bool)> {
    profile
        .markers()
        .iter()
        .map(|m| {
            let data = m.data_value();
            let own = m.category == Some(category::RECORDER)
                || data.as_ref().is_some_and(|d| d["cutOff"].is_string());
            let key = format!("{}|{}|{:?}|{:?}", m.name, m.start_time, m.end_time, data);
            (key, own)
        })
        .collect()
}
