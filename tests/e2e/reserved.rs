//! A task cannot write into the recorder's own tracks: a marker of one of the recorder's
//! data types, and a marker of a task's graph schema with a graph key that is not a number,
//! are dropped and counted, from marker files, the helpers, metric lines and statsd, live
//! and by `finalize` after a SIGKILL; the recorder's tracks keep exactly its own samples.
//!
//! With `TC_PROFILE_E2E_KEEP=DIR`, the profiles made here are copied to DIR, to be checked
//! by the Firefox Profiler's own import code.

use crate::util::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// Every `data.type` the recorder declares but `Text`.
const RESERVED: [&str; 24] = [
    "CPU",
    "Mem",
    "IO",
    "NetIO",
    "Command",
    "TaskCPU",
    "OtherCPU",
    "TaskMem",
    "OtherMem",
    "Process",
    "CgroupMem",
    "CgroupCPU",
    "OOMKill",
    "PSI",
    "Load",
    "Swap",
    "CPUFreq",
    "Log",
    "Counter",
    "Gauge",
    "Timer",
    "Histogram",
    "Set",
    "MetricDrops",
];
const METRIC_TYPES: [&str; 5] = ["Counter", "Gauge", "Timer", "Histogram", "Set"];
/// The last line the forging task writes, kept: once logged, every line before it is.
const LAST: &str = "forgeries written";
/// A task schema with a graph; the marker named `late` uses it before it is declared.
const GRAPH_SCHEMA: &str = "Late";

fn append_lines(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    append(path, text.as_bytes());
}

fn graph_schema(name: &str) -> Value {
    json!({"type": "schema", "name": name, "display": ["marker-table"],
           "data": [{"key": "v", "label": "V", "format": "integer"}],
           "graphs": [{"key": "v", "type": "bar", "color": "blue"}]})
}

/// A marker of [`GRAPH_SCHEMA`] with a string under its graph key, in its own file, before
/// the schema is declared: the finalizer drops it.
fn write_late_marker(dir: &Path) {
    let late = json!({"type": "marker", "name": "late", "startTime": epoch_ms(),
                      "data": {"type": GRAPH_SCHEMA, "v": "high"}});
    append_lines(&dir.join("2.jsonl"), &[late]);
}

fn declare_graph_schema(dir: &Path) {
    append_lines(&dir.join("3.jsonl"), &[graph_schema(GRAPH_SCHEMA)]);
}

/// What a careless or hostile task writes to `1.jsonl`: every reserved type with strings
/// and with plausible numbers, in markers, a begin and an end; a graph schema of its own
/// with a string, a number and no value (only the number kept); metric lines named like the recorder's tracks.
/// Returns what the note says of the lines that use a reserved type.
fn write_forgeries(dir: &Path) -> String {
    let now = epoch_ms();
    let mut lines = Vec::new();
    for kind in RESERVED {
        lines.push(json!({"type": "marker", "name": "Memory", "startTime": now,
                          "endTime": now + 50.0, "data": {"type": kind, "used": "1GB"}}));
        lines.push(
            json!({"type": "marker", "name": "CPU Use", "startTime": now,
                          "endTime": now + 50.0, "category": "task",
                          "data": {"type": kind, "user": 0.99, "used": 1e12, "value": 5,
                                   "cpuPercent": "99%", "command": "forged"}}),
        );
    }
    lines.push(json!({"type": "begin", "name": "IO", "time": now,
                      "data": {"type": "IO", "read_bytes": 1e12}}));
    lines.push(json!({"type": "end", "name": "IO", "time": now + 1.0,
                      "data": {"type": "Mem", "used": 1e12}}));
    let bytes: usize = lines.iter().map(|line| line.to_string().len() + 1).sum();
    let reserved = format!("{} lines, {bytes} bytes (1.jsonl)", lines.len());
    lines.push(graph_schema("Score"));
    for v in [json!("lots"), json!(3), Value::Null] {
        let mut data = json!({"type": "Score"});
        if !v.is_null() {
            data["v"] = v;
        }
        lines.push(json!({"type": "marker", "name": "score", "startTime": now, "data": data}));
    }
    for name in ["Memory", "CPU Use"] {
        lines.push(json!({"type": "metric", "name": name, "kind": "g", "value": 5, "time": now}));
    }
    lines.push(
        json!({"type": "marker", "name": "CPU Use", "startTime": now,
                      "data": {"type": "Text", "text": "a note of the task"}}),
    );
    lines.push(json!({"type": "marker", "name": LAST, "startTime": now + 1.0}));
    append_lines(&dir.join("1.jsonl"), &lines);
    reserved
}

/// Data types of the markers the log holds outside marker-file batches: the recorder's own.
fn recorder_types_in_log(log: &str) -> HashMap<String, usize> {
    let mut in_batch = false;
    let mut types = HashMap::new();
    for line in log.lines() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match line["type"].as_str() {
            Some("ingest") => in_batch = true,
            Some("checkpoint") => in_batch = false,
            Some("marker") if !in_batch => {
                let kind = line["data"]["type"].as_str().unwrap_or_default();
                *types.entry(kind.to_owned()).or_default() += 1;
            }
            _ => {}
        }
    }
    types
}

/// The profile's tracks hold exactly the samples the recorder logged; every marker of a
/// metric type is a series under the prefix; the task's own markers are kept as written.
fn assert_only_the_recorder_draws_its_tracks(profile: &Value, log: &str, text_notes: usize) {
    assert_processed_profile(profile);
    let markers = profile_markers(profile);
    let logged = recorder_types_in_log(log);
    assert!(logged.get("CPU").is_some_and(|&n| n > 0), "{logged:?}");
    assert!(logged.get("Mem").is_some_and(|&n| n > 0), "{logged:?}");
    for kind in RESERVED.iter().filter(|k| !METRIC_TYPES.contains(k)) {
        let in_profile: Vec<&MarkerRow> =
            markers.iter().filter(|m| m.data["type"] == *kind).collect();
        let expected = logged.get(*kind).copied().unwrap_or_default();
        assert_eq!(
            in_profile.len(),
            expected,
            "{kind} markers: the sampler's only"
        );
        for marker in in_profile {
            assert_ne!(marker.data["command"], "forged", "{kind}: {}", marker.data);
            assert_ne!(marker.data["used"], "1GB", "{kind}: {}", marker.data);
        }
    }
    let cpu_use = markers.iter().filter(|m| m.name == "CPU Use");
    for marker in cpu_use.clone().filter(|m| m.data["type"] == "CPU") {
        assert!(marker.data["cpuPercent"].is_number(), "{}", marker.data);
        assert!(marker.data["user"].is_number(), "{}", marker.data);
        assert_eq!(marker.category, 0, "the recorder's category");
    }
    let texts = cpu_use.filter(|m| m.data["type"] == "Text").count();
    assert_eq!(
        texts, text_notes,
        "the task's Text markers named CPU Use are kept"
    );
    let series: Vec<&str> = markers
        .iter()
        .filter(|m| METRIC_TYPES.iter().any(|k| m.data["type"] == *k))
        .map(|m| m.name.as_str())
        .collect();
    assert!(
        series.iter().all(|name| name.starts_with("task.")),
        "{series:?}"
    );
    for name in ["task.Memory", "task.CPU_Use"] {
        assert!(series.contains(&name), "{name} in {series:?}");
    }
    assert_eq!(count_named(&markers, "score"), 1, "the number is kept");
    assert_eq!(
        count_named(&markers, "late"),
        0,
        "dropped once its schema is known"
    );
    assert_eq!(count_named(&markers, LAST), 1);
}

fn assert_counted(profile: &Value, reserved: &str) {
    let note = marker_files_note(profile);
    let expected = [
        format!("data.type of the recorder's own tracks and markers: {reserved}"),
        // Two from the file, one logged before its schema (its file unknown then).
        "a graph key of its schema missing or not a number: 3 lines (1.jsonl)".to_owned(),
    ];
    for part in expected {
        assert!(note.contains(&part), "{part:?} in {note:?}");
    }
}

fn keep_for_the_validator(profile: &Path, name: &str) {
    if let Some(dir) = std::env::var_os("TC_PROFILE_E2E_KEEP") {
        std::fs::copy(profile, Path::new(&dir).join(name)).expect("copy the profile");
    }
}

fn statsd_socket(log: &Path) -> String {
    let log = std::fs::read_to_string(log).unwrap();
    let meta: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    meta["tcProfile"]["statsd"]["socket"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_recording_drops_and_counts_what_would_write_into_the_recorders_tracks() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &["--keep-log"]);
    let dir = recording.profile_dir.clone();
    write_late_marker(&dir);
    recording.wait_logged(r#""name":"late""#);
    declare_graph_schema(&dir);
    recording.wait_logged(&format!(r#""name":"{GRAPH_SCHEMA}""#));
    let reserved = write_forgeries(&dir);
    let socket = UnixDatagram::unbound().unwrap();
    let address = statsd_socket(&recording.log);
    for packet in ["Memory:7|g", "CPU Use:1|c"] {
        socket.send_to(packet.as_bytes(), &address).unwrap();
    }
    let mark = ["mark", "CPU Use", "--text", "a helper's note"];
    let output = sandbox
        .command(&mark)
        .env("TASKCLUSTER_PROFILE_DIR", &dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&mark, &output));
    recording.wait_logged(LAST);
    recording.wait_logged("a helper's note");
    // A few ticks of the sampler among the task's lines, to count them against.
    let cpu_samples = || {
        let log = std::fs::read_to_string(&recording.log).unwrap();
        recorder_types_in_log(&log)
            .get("CPU")
            .copied()
            .unwrap_or_default()
    };
    let before = cpu_samples();
    wait_for(|| cpu_samples() >= before + 3);
    let stderr = recording.stop();

    let path = sandbox.path("profile_resource-usage.json");
    keep_for_the_validator(&path, "reserved-live.json");
    let profile = read_json(&path);
    let log_path = sandbox.path("profile_resource-usage.jsonl");
    keep_for_the_validator(&log_path, "reserved-live.jsonl");
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert_streamed_profile(log.as_bytes());
    assert_only_the_recorder_draws_its_tracks(&profile, &log, 2);
    assert_counted(&profile, &reserved);
    assert!(stderr.contains("dropped from marker files"), "{stderr}");
}

#[test]
fn finalize_after_a_sigkill_drops_and_counts_the_same_lines() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &["--keep-log"]);
    let dir = recording.profile_dir.clone();
    write_late_marker(&dir);
    recording.wait_logged(r#""name":"late""#);
    recording.wait_logged(r#""type":"CPU""#);
    recording.wait_logged(r#""type":"Mem""#);
    recording.kill();
    declare_graph_schema(&dir);
    let reserved = write_forgeries(&dir);
    let log = std::fs::read_to_string(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert!(!log.contains(LAST), "written after the kill");

    sandbox.run_ok(&["finalize", "profile_resource-usage.jsonl"]);
    let path = sandbox.path("profile_resource-usage.json");
    keep_for_the_validator(&path, "reserved-finalized.json");
    let profile = read_json(&path);
    assert_only_the_recorder_draws_its_tracks(&profile, &log, 1);
    assert_counted(&profile, &reserved);
}
