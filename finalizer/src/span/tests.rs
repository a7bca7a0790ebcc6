use super::*;
use crate::profile::MARKER_FILES;
use crate::profile_marker::MarkerRef;
use crate::reader::read_log;

fn log(start: f64, schema: &str, lines: &[&str]) -> Recording {
    let mut text = format!(
        r#"{{"type":"meta","startTime":{start},"interval":100,"markerSchema":[{{"name":"{schema}","display":[],"data":[]}}],"tcProfile":{{"sources":["{schema}"]}}}}"#
    );
    text.push_str("\n{\"type\":\"thread\",\"name\":\"t\"}\n");
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    read_log(text.as_bytes()).unwrap()
}

fn marker(name: &str, start: f64, end: f64) -> String {
    format!(r#"{{"type":"marker","name":"{name}","startTime":{start},"endTime":{end}}}"#)
}

/// The span's profile with machine logs that all read well.
fn span_profile(logs: SpanLogs, machine: Vec<Recording>, span: Span) -> Profile {
    let machine = machine.into_iter().map(Ok::<_, std::convert::Infallible>);
    compact_span(logs, machine, span).unwrap()
}

fn named<'a>(profile: &'a Profile, name: &str) -> Vec<MarkerRef<'a>> {
    profile.markers.iter().filter(|m| m.name == name).collect()
}

#[test]
fn logs_are_put_on_the_span_timeline_and_the_machine_cut_to_it() {
    // The task's log starts at 10 s, the machine's at 5 s; the span is 10 s to 20 s.
    let task = log(10_000.0, "T", &[&marker("step", 1000.0, 2000.0)]);
    let machine_lines = [
        marker("cpu", 0.0, 4000.0),
        marker("cpu", 4000.0, 6000.0),
        marker("cpu", 14_000.0, 15_000.0),
        r#"{"type":"footer","endTime":15000,"reason":"stopped"}"#.to_owned(),
    ];
    let machine_lines: Vec<&str> = machine_lines.iter().map(String::as_str).collect();
    let machine = log(5000.0, "M", &machine_lines);
    let span = Span {
        start: 10_000.0,
        end: 20_000.0,
    };
    let logs = SpanLogs {
        own: vec![task],
        extra: vec![Marker::interval("task", 11_000.0, 12_000.0)],
        tc_profile: Map::from_iter([("exitStatus".to_owned(), json!(3))]),
    };
    let profile = span_profile(logs, vec![machine], span);
    let step = named(&profile, "step");
    assert_eq!(
        (step[0].start_time, step[0].end_time),
        (1000.0, Some(2000.0))
    );
    let cpu: Vec<_> = named(&profile, "cpu")
        .iter()
        .map(|m| (m.start_time, m.end_time))
        .collect();
    // The first sample is before the span, the second cut at its start, the third moved.
    assert_eq!(cpu, [(0.0, Some(1000.0)), (9000.0, Some(10_000.0))]);
    let task = named(&profile, "task");
    assert_eq!(task[0].start_time, 1000.0);
    assert_eq!(profile.meta["startTime"], json!(10_000.0));
    assert_eq!(profile.meta["profilingEndTime"], json!(10_000.0));
    let schemas = profile.meta["markerSchema"].as_array().unwrap();
    assert!(["T", "M", "Text"]
        .iter()
        .all(|name| schemas.iter().any(|s| s["name"] == *name)));
    assert_eq!(profile.meta["tcProfile"]["sources"], json!(["T", "M"]));
    assert_eq!(profile.meta["tcProfile"]["exitStatus"], json!(3));
    assert!(named(&profile, ENDED_EARLY).is_empty());
    // The machine log ends at 20 s: nothing is missing.
    assert!(named(&profile, DATA_MISSING).is_empty());
}

#[test]
fn what_no_machine_log_covers_is_data_missing() {
    // Two machine logs: 0 to 3 s, then 8 s to 10 s (a daemon killed and restarted).
    let first = log(0.0, "M", &[&marker("cpu", 0.0, 3000.0)]);
    let second = log(8000.0, "M", &[&marker("cpu", 0.0, 2000.0)]);
    let profile = span_profile(
        SpanLogs::default(),
        vec![second, first],
        Span {
            start: 0.0,
            end: 10_200.0,
        },
    );
    let missing: Vec<_> = named(&profile, DATA_MISSING)
        .iter()
        .map(|m| (m.start_time, m.end_time))
        .collect();
    // And 10 s to 10.2 s is not: a live log's last sample lags.
    assert_eq!(missing, [(3000.0, Some(8000.0))]);
}

#[test]
fn a_span_without_any_log_is_all_missing_and_still_a_profile() {
    let span = Span {
        start: 1000.0,
        end: 4000.0,
    };
    let profile = span_profile(SpanLogs::default(), Vec::new(), span);
    let missing = named(&profile, DATA_MISSING);
    assert_eq!(
        (missing[0].start_time, missing[0].end_time),
        (0.0, Some(3000.0))
    );
    assert!(profile.meta.contains_key("categories"));
}

#[test]
fn an_interval_begun_in_one_part_and_ended_in_a_later_one_is_whole() {
    // Part 1 from 10 s: "phase" begun at 10.5 s, then the daemon was killed. Part 2 from
    // 12 s: the end, read without its begin (a `close`), at 12.3 s; and an open interval
    // of its own with the same id as part 1's.
    let key = "file:k.jsonl:phase";
    let begun = format!(r#"{{"type":"open","id":1,"name":"phase","startTime":500,"key":"{key}"}}"#);
    let first = log(10_000.0, "T", &[&begun, &marker("step", 600.0, 700.0)]);
    let ended = format!(r#"{{"type":"close","key":"{key}","name":"phase","time":300}}"#);
    let own = r#"{"type":"open","id":1,"name":"own","startTime":100}"#;
    let footer = r#"{"type":"footer","endTime":1000,"reason":"stopped"}"#;
    let second = log(12_000.0, "T", &[own, &ended, footer]);
    let logs = SpanLogs {
        own: vec![first, second],
        ..SpanLogs::default()
    };
    let span = Span {
        start: 10_000.0,
        end: 13_000.0,
    };
    let profile = span_profile(logs, Vec::new(), span);
    let phase = named(&profile, "phase");
    assert_eq!(phase.len(), 1);
    assert_eq!(
        (phase[0].start_time, phase[0].end_time),
        (500.0, Some(2300.0))
    );
    let data = phase[0].data.unwrap_or_default();
    assert!(!data.contains("cutOff"), "{data}");
    let own = named(&profile, "own");
    assert_eq!((own[0].start_time, own[0].end_time), (2100.0, Some(3000.0)));
    assert!(
        named(&profile, MARKER_FILES).is_empty(),
        "no end without its begin"
    );
}

#[test]
fn the_commands_of_every_part_are_added_up_on_the_span_timeline() {
    let commands = |start: f64, runs: u32, cpu: f64| {
        format!(
            r#"{{"type":"marker","name":"cc1","startTime":{start},"endTime":{},"category":2,"data":{{"type":"Commands","command":"cc1","runs":{runs},"failures":0,"cpuTime":{cpu},"peakRss":{}}}}}"#,
            start + 1000.0,
            runs * 1000,
        )
    };
    let first = log(10_000.0, "T", &[&commands(1000.0, 3, 30.5)]);
    let second = log(15_000.0, "T", &[&commands(500.0, 2, 0.25)]);
    let machine = log(5000.0, "M", &[&marker("cpu", 5000.0, 6000.0)]);
    let logs = SpanLogs {
        own: vec![first, second],
        ..SpanLogs::default()
    };
    let span = Span {
        start: 10_000.0,
        end: 20_000.0,
    };
    let profile = span_profile(logs, vec![machine], span);
    let whole = named(&profile, "Command totals (whole task)");
    assert_eq!(whole.len(), 1);
    assert_eq!(
        (whole[0].start_time, whole[0].end_time),
        (0.0, Some(10_000.0))
    );
    let data = whole[0].data_value().unwrap();
    assert_eq!(
        (data["runs"].as_u64(), data["cpuTime"].as_f64()),
        (Some(5), Some(30.75))
    );
    assert_eq!(data["top"][0][0], "cc1");
}

#[test]
fn a_track_over_the_bound_across_segments_is_bounded_as_a_whole() {
    use crate::coarsen::MAX_SAMPLES_PER_TRACK;
    use tc_profile_format::schema::track;
    // Two machine segments, each under the bound, together over it: 0 to 120 s and 180 s to
    // 300 s, a memory sample each 10 ms (the machine unrecorded in between), the peak at 50 s.
    let per_segment = 12_000;
    let segment = |start: f64| memory_segment(start, per_segment, (start == 0.0).then_some(5000));
    let span = Span {
        start: 0.0,
        end: 300_000.0,
    };
    let machine = vec![segment(0.0), segment(180_000.0)];
    let profile = span_profile(SpanLogs::default(), machine, span);
    let memory = named(&profile, track::MEMORY);
    assert!(
        memory.len() <= MAX_SAMPLES_PER_TRACK + 1,
        "{} samples",
        memory.len()
    );
    let samples = |m: &MarkerRef| m.data_value().unwrap()["samples"].as_u64().unwrap_or(1);
    assert_eq!(
        memory.iter().map(samples).sum::<u64>(),
        2 * per_segment as u64
    );
    let used = |m: &MarkerRef| m.data_value().unwrap()["used"].as_u64().unwrap();
    assert_eq!(
        memory.iter().map(used).max(),
        Some(9000),
        "the peak survives"
    );
    assert!(
        !memory
            .iter()
            .any(|m| m.start_time < 180_000.0 && m.end_time.unwrap() > 120_000.0),
        "no merged sample reaches over the stretch where the machine was not recorded"
    );
}

/// A machine segment from `start` (epoch ms) of `samples` memory samples 10 ms apart, the
/// one numbered `peak` using 9000, the others 1000.
fn memory_segment(start: f64, samples: usize, peak: Option<usize>) -> Recording {
    use tc_profile_format::schema::{marker_schemas, track};
    let schemas = marker_schemas(&["memory".to_owned()]);
    let mut text = format!(
        r#"{{"type":"meta","startTime":{start},"interval":10,"markerSchema":{schemas},"tcProfile":{{"sources":["memory"]}}}}"#
    );
    text.push_str("\n{\"type\":\"thread\",\"name\":\"t\"}\n");
    for n in 0..samples {
        let used = if peak == Some(n) { 9000 } else { 1000 };
        let (from, to) = (n * 10, n * 10 + 10);
        text.push_str(&format!(
            r#"{{"type":"marker","name":"{}","startTime":{from},"endTime":{to},"data":{{"type":"Mem","used":{used}}}}}"#,
            track::MEMORY
        ));
        text.push('\n');
    }
    read_log(text.as_bytes()).unwrap()
}

#[test]
fn a_segment_partly_in_the_span_is_bounded_by_its_samples_in_the_span() {
    use tc_profile_format::schema::track;
    // A 10-minute segment of 60,000 samples (three times the bound), the span its last
    // minute: the 6,000 samples in the span are all kept.
    let span = Span {
        start: 540_000.0,
        end: 600_000.0,
    };
    let profile = span_profile(
        SpanLogs::default(),
        vec![memory_segment(0.0, 60_000, None)],
        span,
    );
    let memory = named(&profile, track::MEMORY);
    // And the one that ends where the span starts, cut to nothing.
    assert_eq!(memory.len(), 6001);
    assert!(memory.iter().all(|m| !m.data.unwrap().contains("samples")));
}
