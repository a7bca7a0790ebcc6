//! A graph track of the finalized profile draws only where something was measured: never
//! over a "Data missing" span (the recorder could not write), nor over samples lost
//! without one, whatever graph types the log declares and however long the track. What a
//! track draws is judged as the Firefox Profiler draws it (TrackCustomMarkerGraph): a bar
//! graph a bar per sample over the sample's own interval, a `line` or `line-filled` graph
//! one path from the track's first sample to its last.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use tc_profile_finalizer::{compact, read_log};
use tc_profile_format::{encode_line, meta_line, thread_line, Footer, Gap, Line, Marker, MetaInfo};

/// `ticks` samples 100 ms apart, but in `lost`, whose lines did not reach the log: CPU,
/// memory, load and a gauge, with the gap line that says so.
fn log_with_lost_samples(ticks: u32, lost: (f64, f64), old_graphs: bool) -> Vec<u8> {
    let sources = ["cpu", "memory", "load", "statsd"]
        .map(String::from)
        .to_vec();
    let Line::Meta(mut meta) = meta_line(&MetaInfo {
        start_time: 1.8e12,
        interval_ms: 100.0,
        sources,
        ..MetaInfo::default()
    }) else {
        unreachable!("meta_line makes a meta line")
    };
    if old_graphs {
        declare_lines(&mut meta["markerSchema"]);
    }
    let mut log = encode_line(&Line::Meta(meta));
    log.extend(encode_line(&thread_line("measured")));
    for tick in 1..=ticks {
        let (start, end) = (f64::from(tick - 1) * 100.0, f64::from(tick) * 100.0);
        if end > lost.0 && start < lost.1 {
            continue;
        }
        let tracks = [
            (
                "CPU Use",
                json!({"type": "CPU", "user": 0.5, "system": 0.6}),
            ),
            ("Memory", json!({"type": "Mem", "used": 1e9 + start})),
            ("Load", json!({"type": "Load", "load1": 1.5})),
            (
                "task.queue",
                json!({"type": "Gauge", "metric": "task.queue", "value": 3}),
            ),
        ];
        for (name, data) in tracks {
            let sample = Marker::interval(name, start, end).with_data(data);
            log.extend(encode_line(&Line::Marker(sample)));
        }
    }
    log.extend(encode_line(&Line::Gap(Gap {
        start_time: lost.0,
        end_time: lost.1,
        lines: 80,
        reason: "No space left on device (os error 28)".into(),
    })));
    log.extend(encode_line(&Line::Footer(Footer {
        end_time: f64::from(ticks) * 100.0,
        reason: tc_profile_format::EndReason::CommandExited,
    })));
    log
}

/// What a log written before every graph of ours was a bar declares: memory, load and
/// gauges as lines.
fn declare_lines(schemas: &mut Value) {
    for schema in schemas.as_array_mut().unwrap() {
        let line = match schema["name"].as_str() {
            Some("Mem" | "Gauge") => "line-filled",
            Some("Load") => "line",
            _ => continue,
        };
        for graph in schema["graphs"].as_array_mut().unwrap() {
            graph["type"] = json!(line);
        }
    }
}

fn finalized(log: &[u8]) -> Value {
    let (profile, _) = compact(read_log(log).unwrap());
    serde_json::from_slice(&serde_json::to_vec(&profile).unwrap()).unwrap()
}

/// The stretches of time each graph track draws over, by track (marker name and type).
fn drawn(profile: &Value) -> BTreeMap<String, Vec<(f64, f64)>> {
    let graph_types: BTreeMap<&str, Vec<&str>> = profile["meta"]["markerSchema"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|schema| {
            let graphs = schema["graphs"].as_array()?;
            let types = graphs.iter().filter_map(|g| g["type"].as_str()).collect();
            Some((schema["name"].as_str()?, types))
        })
        .collect();
    let mut samples: BTreeMap<String, (bool, Vec<(f64, f64)>)> = BTreeMap::new();
    for (name, kind, start, end) in markers(profile) {
        let Some(kind) = kind else { continue };
        let Some(types) = graph_types.get(kind.as_str()) else {
            continue;
        };
        let one_path = types.iter().any(|t| *t != "bar");
        let track = samples.entry(format!("{name} ({kind})")).or_default();
        track.0 = one_path;
        track.1.push((start, end.unwrap_or(start)));
    }
    samples
        .into_iter()
        .map(|(track, (one_path, mut intervals))| {
            intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
            if one_path {
                let end = intervals.iter().map(|i| i.1).fold(f64::MIN, f64::max);
                intervals = vec![(intervals[0].0, end)];
            }
            (track, intervals)
        })
        .collect()
}

/// Each marker's name, `data.type`, start and end.
fn markers(profile: &Value) -> Vec<(String, Option<String>, f64, Option<f64>)> {
    let thread = &profile["threads"][0];
    let table = &thread["markers"];
    (0..table["length"].as_u64().unwrap() as usize)
        .map(|i| {
            let name = &thread["stringArray"][table["name"][i].as_u64().unwrap() as usize];
            (
                name.as_str().unwrap().to_owned(),
                table["data"][i]["type"].as_str().map(str::to_owned),
                table["startTime"][i].as_f64().unwrap(),
                table["endTime"][i].as_f64(),
            )
        })
        .collect()
}

fn data_missing(profile: &Value) -> Vec<(f64, f64)> {
    let missing = markers(profile).into_iter();
    let missing = missing.filter(|(name, ..)| name == "Data missing");
    missing
        .map(|(_, _, start, end)| (start, end.unwrap()))
        .collect()
}

/// Fails unless every graph track of `profile` draws nothing within `lost`, and something.
fn assert_blank_over(profile: &Value, lost: (f64, f64)) {
    let tracks = drawn(profile);
    assert_eq!(tracks.len(), 4, "{:?}", tracks.keys());
    for (track, intervals) in &tracks {
        let over = intervals
            .iter()
            .find(|(start, end)| *start < lost.1 && *end > lost.0);
        assert!(over.is_none(), "{track} draws over {lost:?}: {over:?}");
    }
}

#[test]
fn no_graph_track_draws_over_a_span_where_nothing_was_recorded_whatever_the_log_declares() {
    let lost = (4000.0, 6000.0);
    // A log as the recorder writes it now, and one that declares lines, as before.
    for old_graphs in [false, true] {
        let profile = finalized(&log_with_lost_samples(100, lost, old_graphs));
        assert_eq!(data_missing(&profile), [lost]);
        assert_blank_over(&profile, lost);
    }
}

#[test]
fn a_long_track_merged_into_fewer_samples_draws_none_over_a_short_outage() {
    // 100 minutes of samples: 60,000 a track, merged into stretches of 300 ms, three
    // samples; the outage loses the middle one of a stretch.
    let lost = (3_000_100.0, 3_000_200.0);
    let profile = finalized(&log_with_lost_samples(60_000, lost, false));
    let memory = markers(&profile).into_iter().filter(|m| m.0 == "Memory");
    assert_eq!(memory.count(), 20_001, "merged, and cut at the outage");
    assert_blank_over(&profile, lost);
}
