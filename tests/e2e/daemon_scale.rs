//! The daemon at a worker's scale: a task's end reads of the machine's segments only the
//! bytes its span needs, however long the segments are.

use crate::daemon::{ask, Daemon};
use crate::util::{assert_processed_profile, epoch_ms, profile_markers, read_json, Sandbox};

/// A finished machine segment of an hour, a sample a second from `start` (epoch ms, a
/// whole number), as a daemon that ran an hour before this one left it; its size.
fn hour_segment(sandbox: &Sandbox, start: f64) -> u64 {
    let mut text = format!(
        "{{\"type\":\"meta\",\"startTime\":{start},\"interval\":1000}}\n\
         {{\"type\":\"thread\",\"name\":\"machine\"}}\n"
    );
    for tick in 0..3600_u32 {
        let (from, to) = (f64::from(tick) * 1000.0, f64::from(tick + 1) * 1000.0);
        for name in ["Earlier sample", "Earlier padding"] {
            text.push_str(&format!(
                "{{\"type\":\"marker\",\"name\":\"{name}\",\"startTime\":{from},\"endTime\":{to},\
                 \"data\":{{\"type\":\"Text\",\"text\":\"tick {tick} of the daemon before\"}}}}\n"
            ));
        }
    }
    let path = sandbox.path(&format!("state/segments/machine-{start}-1.jsonl"));
    std::fs::write(&path, &text).unwrap();
    text.len() as u64
}

fn segment_bytes_read(sandbox: &Sandbox) -> u64 {
    let status: serde_json::Value =
        serde_json::from_str(&ask(sandbox, &["daemon", "status"])).unwrap();
    status["segmentBytesRead"]
        .as_u64()
        .expect("segmentBytesRead")
}

#[test]
fn a_task_end_reads_only_the_segment_bytes_of_its_span() {
    let sandbox = Sandbox::new();
    let daemon = Daemon::start(&sandbox, &[]);
    // An hour's segment that ended a minute after the task's start.
    let since = (epoch_ms() - 3_660_000.0).round();
    let segment = hour_segment(&sandbox, since - 3_540_000.0);
    ask(
        &sandbox,
        &["task", "start", "t", "--since", &since.to_string()],
    );
    let before = segment_bytes_read(&sandbox);
    ask(&sandbox, &["task", "end", "t", "-o", "t.json"]);
    let read = segment_bytes_read(&sandbox) - before;
    let profile = read_json(&sandbox.path("t.json"));
    assert_processed_profile(&profile);
    // The segment's last minute is in the span: its 60 samples, and the one that ends
    // at the span's start.
    let earlier = profile_markers(&profile)
        .into_iter()
        .filter(|m| m.name == "Earlier sample")
        .count();
    assert!((60..=61).contains(&earlier), "{earlier} samples");
    // A minute of the hour, and the daemon's own segment (seconds at 0.1 s), read.
    assert!(
        read * 10 < segment,
        "{read} bytes read, the segment {segment}"
    );
    daemon.stop();
}
