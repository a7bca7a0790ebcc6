//! The log reader on arbitrary bytes (what a killed recorder, a full disk or another tool
//! left): it never panics, and never returns a marker that is not whole in the input
//! (SPEC.md, "Reading a damaged log"): every marker it returns is a line of the input, by
//! its name and start time. Compacting and serializing what it read never panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use tc_profile_finalizer::{compact, read_log};

fuzz_target!(|bytes: &[u8]| {
    let Ok(recording) = read_log(bytes) else {
        return;
    };
    let whole = whole_markers(bytes);
    for marker in &recording.markers {
        assert!(
            whole
                .iter()
                .any(|(name, start)| *name == marker.name && *start == marker.start_time),
            "{} at {} is no whole line of the input",
            marker.name,
            marker.start_time
        );
    }
    let (profile, _) = compact(recording);
    serde_json::to_vec(&profile).expect("a profile serializes");
});

/// (name, startTime) of every line of the input that is a JSON object with both, by a
/// parser of its own rather than the reader's: it knows nothing of the reader's line
/// splitting, torn tails or batches. Leading NULs are what a power cut leaves; what the
/// line holds besides is skipped unread (invalid UTF-8 in a key the reader ignores, say).
fn whole_markers(bytes: &[u8]) -> Vec<(String, f64)> {
    #[derive(Deserialize)]
    struct Named {
        name: String,
        #[serde(rename = "startTime")]
        start_time: f64,
    }
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let body = &line[line.iter().take_while(|&&b| b == 0).count()..];
            let named: Named = serde_json::from_slice(body).ok()?;
            Some((named.name, named.start_time))
        })
        .collect()
}
