//! Unit tests of a whole recording, through [`Recorder`].

use super::*;
use crate::profile_dir::now_epoch_ms;
use std::time::{Duration, Instant};
use tc_profile_format::EndReason;

/// Records with only the profile-directory source, inotify on or off.
fn record_markers(watch: bool) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let mut config = RecorderConfig::new(log.clone());
    config.sample_system = false;
    config.statsd = None;
    let mut profile_dir = ProfileDirConfig::new(dir.path().join("markers"));
    profile_dir.watch = watch;
    profile_dir.poll_interval = Duration::from_millis(20);
    config.profile_dir = Some(profile_dir);
    let recorder = Recorder::start(config).unwrap();
    let line = format!(
        "{{\"type\":\"marker\",\"name\":\"seen\",\"startTime\":{}}}\n",
        now_epoch_ms()
    );
    std::fs::write(dir.path().join("markers/1.jsonl"), line).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let logged = || std::fs::read_to_string(&log).unwrap().contains("\"seen\"");
    while !logged() {
        assert!(
            Instant::now() < deadline,
            "the marker never reached the log"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(recorder.finish(EndReason::Stopped).unwrap());
    // A scan may find the file before its line (created, not yet written): a batch of
    // its own, without lines.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let marker = lines
        .iter()
        .position(|l| l.contains("\"name\":\"seen\""))
        .unwrap();
    let is_bound = |l: &&&str| {
        l.starts_with("{\"type\":\"ingest\"") || l.starts_with("{\"type\":\"checkpoint\"")
    };
    let before = lines[..marker].iter().rev().find(is_bound);
    let after = lines[marker + 1..].iter().find(is_bound);
    assert!(
        before.is_some_and(|l| l.contains("ingest"))
            && after.is_some_and(|l| l.contains("checkpoint")),
        "inside its batch:\n{text}"
    );
}

#[test]
fn markers_arrive_through_inotify() {
    record_markers(true);
}

#[test]
fn markers_arrive_by_polling_where_inotify_is_not_used() {
    record_markers(false);
}

#[test]
fn a_metric_prefix_that_could_name_a_recorder_track_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    for prefix in ["", "Memory", "CPU Use."] {
        let mut config = RecorderConfig::new(log.clone());
        config.sample_system = false;
        config.statsd = Some(MetricLimits {
            prefix: prefix.to_owned(),
            ..MetricLimits::default()
        });
        let refused = Recorder::start(config);
        assert!(
            matches!(refused, Err(RecorderError::MetricPrefix(ref p)) if p == prefix),
            "{prefix:?}"
        );
        assert!(!log.exists(), "no log is created");
    }
}
