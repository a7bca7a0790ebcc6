//! Bounds the profile of a long recording (SPEC.md, "The finalized profile"): a graph track
//! with more than [`MAX_SAMPLES_PER_TRACK`] samples is merged into about that many, each
//! covering an equal stretch of the track. Peaks and totals survive: memory keeps the
//! sample with the highest `used` (the task's: `rss`), disk, network and swap add up, CPU
//! is the time-weighted mean with its highest busy share in `peak`, metrics keep what the
//! task sent (counts add up), any other graph the time-weighted mean.

use crate::marker_columns::Markers;
use crate::profile_marker::{busy_share, ProfileMarker};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use tc_profile_format::metric::MetricKind;
use tc_profile_format::schema::data_type;
use tc_profile_format::Marker;

/// Samples per track in a profile at most: a 1-hour recording keeps every sample (about
/// 9,000 per track), a 24-hour one is merged into samples of about 4.3 s.
pub const MAX_SAMPLES_PER_TRACK: usize = 20_000;

/// Memory tracks, by schema, and the field whose highest sample a merged one keeps: the
/// system's, and the task's processes' against the rest (SPEC.md, "Categories and schemas").
const KEEP_HIGHEST: [(&str, &str); 4] = [
    (data_type::MEMORY, "used"),
    (data_type::TASK_MEMORY, "rss"),
    (data_type::OTHER_MEMORY, "used"),
    (data_type::CGROUP_MEMORY, "current"),
];

/// Merges the samples of each graph track in `markers` down to about `max`; returns how
/// many samples went into merged ones.
pub(crate) fn bound_tracks(markers: &mut Markers, meta: &Map<String, Value>, max: usize) -> usize {
    let graph_types = graph_types(meta);
    if graph_types.is_empty() {
        return 0;
    }
    // A track is the intervals of one name whose payload has a graph's type: only names
    // with more than `max` intervals can need merging, and only their payloads are read.
    // A payload that leads with another type is none (a million text markers, say).
    // Counted by name id: hashing each marker's name was a tenth of compacting.
    let mut intervals = vec![0usize; markers.names().len()];
    for (position, marker) in markers.iter().enumerate() {
        let sample = marker.end_time.is_some()
            && marker
                .leading_type()
                .is_none_or(|kind| is_graph_type(&graph_types, kind));
        if sample {
            intervals[markers.name_id(position) as usize] += 1;
        }
    }
    let crowded: HashSet<String> = intervals
        .iter()
        .zip(markers.names())
        .filter(|&(&count, _)| count > max)
        .map(|(_, name)| name.to_string())
        .collect();
    if crowded.is_empty() {
        return 0;
    }
    // Kept as read: a payload is parsed only while its stretch is merged, so that a day of
    // samples never sits in memory as JSON trees.
    let mut tracks: BTreeMap<(String, String), Vec<ProfileMarker>> = BTreeMap::new();
    let mut others = Vec::with_capacity(markers.len());
    for marker in markers.to_vec() {
        let track = crowded
            .contains(&marker.name)
            .then(|| track_of(&marker, &graph_types))
            .flatten();
        match track {
            Some(key) => tracks.entry(key).or_default().push(marker),
            None => others.push(marker),
        }
    }
    let mut merged = 0;
    for (_, mut samples) in tracks {
        if samples.len() > max {
            samples.sort_by(|a, b| a.start_time.total_cmp(&b.start_time));
            merged += samples.len();
            others.extend(
                merge_track(&samples, max)
                    .into_iter()
                    .map(ProfileMarker::from),
            );
        } else {
            others.extend(samples);
        }
    }
    *markers = others.into_iter().collect();
    merged
}

/// `data.type` of every schema that draws a graph: a few.
fn graph_types(meta: &Map<String, Value>) -> Vec<String> {
    let schemas = meta.get("markerSchema").and_then(Value::as_array);
    schemas
        .into_iter()
        .flatten()
        .filter(|s| {
            s.get("graphs")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty())
        })
        .filter_map(|s| s.get("name")?.as_str().map(str::to_owned))
        .collect()
}

/// (marker name, data type) of a sample of a graph track.
fn track_of(marker: &ProfileMarker, graph_types: &[String]) -> Option<(String, String)> {
    marker.end_time?;
    let figures = marker.as_ref().figures();
    let kind = figures.kind?;
    is_graph_type(graph_types, &kind).then(|| (marker.name.clone(), kind.into_owned()))
}

/// Looked up in a list: a few compares cost less than hashing the type of each marker.
fn is_graph_type(graph_types: &[String], kind: &str) -> bool {
    graph_types.iter().any(|graph_type| graph_type == kind)
}

/// One sample per stretch of `(last end - first start) / max`.
fn merge_track(samples: &[ProfileMarker], max: usize) -> Vec<Marker> {
    let start = samples[0].start_time;
    let end = samples
        .iter()
        .filter_map(|s| s.end_time)
        .fold(start, f64::max);
    let width = ((end - start) / max as f64).max(f64::MIN_POSITIVE);
    let mut merged = Vec::with_capacity(max + 1);
    let mut group_start = 0;
    for i in 1..=samples.len() {
        let stretch = |s: &ProfileMarker| ((s.start_time - start) / width).floor();
        if i == samples.len() || stretch(&samples[i]) != stretch(&samples[group_start]) {
            let group: Vec<Marker> = samples[group_start..i]
                .iter()
                .map(|sample| sample.as_ref().to_marker())
                .collect();
            merged.push(merge(&group));
            group_start = i;
        }
    }
    merged
}

fn merge(group: &[Marker]) -> Marker {
    let last = &group[group.len() - 1];
    if group.len() == 1 {
        return last.clone();
    }
    let kind = last
        .data
        .as_ref()
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str);
    let highest = KEEP_HIGHEST.iter().find(|(k, _)| Some(*k) == kind);
    let metric = kind.and_then(MetricKind::from_data_type);
    let mut merged = match kind {
        _ if let Some((_, key)) = highest => {
            let value = |m: &Marker| number(m, key).unwrap_or(0.0);
            group
                .iter()
                .max_by(|a, b| value(a).total_cmp(&value(b)))
                .map_or(Value::Null, data_of)
        }
        _ if let Some(metric) = metric => merge_metric(group, metric),
        Some(data_type::IO | data_type::NET_IO | data_type::SWAP) => sum(group),
        Some(data_type::CPU) => cpu_mean(group),
        Some(data_type::TASK_CPU | data_type::OTHER_CPU | data_type::CGROUP_CPU) => {
            share_mean(group)
        }
        _ => mean(group),
    };
    if let Value::Object(fields) = &mut merged {
        fields.insert("samples".to_owned(), Value::from(group.len()));
    }
    Marker {
        end_time: last.end_time,
        data: Some(merged),
        ..group[0].clone()
    }
}

fn number(marker: &Marker, key: &str) -> Option<f64> {
    marker.data.as_ref()?.get(key)?.as_f64()
}

fn duration(marker: &Marker) -> f64 {
    marker
        .end_time
        .map_or(0.0, |end| (end - marker.start_time).max(0.0))
}

/// The last sample's fields, each number replaced by its time-weighted mean.
fn mean(group: &[Marker]) -> Value {
    let total: f64 = group.iter().map(duration).sum();
    let weight = |m: &Marker| {
        if total > 0.0 {
            duration(m) / total
        } else {
            1.0 / group.len() as f64
        }
    };
    combine(group, |key| {
        Value::from(
            group
                .iter()
                .map(|m| number(m, key).unwrap_or(0.0) * weight(m))
                .sum::<f64>(),
        )
    })
}

/// A metric's intervals as one: what the task sent in the stretch, so that totals taken from
/// the profile stay whole. Counters and timer counts add up, a gauge keeps its last value,
/// a timer its lowest min, highest max and count-weighted mean, a set its most distinct
/// members (members seen in two intervals cannot be told apart).
fn merge_metric(group: &[Marker], metric: MetricKind) -> Value {
    match metric {
        MetricKind::Counter => sum(group),
        MetricKind::Gauge => data_of(&group[group.len() - 1]),
        MetricKind::Set => combine(group, |key| extreme(group, key, f64::max)),
        MetricKind::Timer | MetricKind::Histogram => {
            let values = |key| group.iter().map(move |m| number(m, key).unwrap_or(0.0));
            let count: f64 = values("count").sum();
            let timed: f64 = values("count")
                .zip(values("mean"))
                .map(|(n, t)| n * t)
                .sum();
            let mut merged = sum(group);
            merged["min"] = extreme(group, "min", f64::min);
            merged["max"] = extreme(group, "max", f64::max);
            merged["mean"] = Value::from(if count > 0.0 { timed / count } else { 0.0 });
            merged
        }
    }
}

fn data_of(marker: &Marker) -> Value {
    marker.data.clone().unwrap_or(Value::Null)
}

/// The group's lowest or highest `key` (by `pick`), a whole number when every one is.
fn extreme(group: &[Marker], key: &str, pick: fn(f64, f64) -> f64) -> Value {
    let values = group.iter().filter_map(|m| m.data.as_ref()?.get(key));
    let picked = values.clone().filter_map(Value::as_f64).reduce(pick);
    match values.map(Value::as_u64).collect::<Option<Vec<u64>>>() {
        Some(whole) if picked.is_some() => Value::from(
            whole
                .into_iter()
                .map(|v| v as f64)
                .reduce(pick)
                .unwrap_or(0.0) as u64,
        ),
        _ => picked.map_or(Value::Null, Value::from),
    }
}

/// The last sample's fields, each number replaced by the group's total.
fn sum(group: &[Marker]) -> Value {
    combine(group, |key| {
        let values = group.iter().filter_map(|m| m.data.as_ref()?.get(key));
        match values.clone().map(Value::as_u64).sum::<Option<u64>>() {
            Some(whole) => Value::from(whole),
            None => Value::from(values.filter_map(Value::as_f64).sum::<f64>()),
        }
    })
}

/// The mean of the stacked bars, with the busy share's mean as `cpuPercent` and its highest
/// as `peak`; the per-kind percentages of single samples are left out.
fn cpu_mean(group: &[Marker]) -> Value {
    let mut merged = mean(group);
    let peak = group
        .iter()
        .filter_map(|m| {
            let data = m.data.as_ref()?;
            busy_share(|key| data.get(key)?.as_f64())
        })
        .fold(0.0, f64::max);
    if let Value::Object(fields) = &mut merged {
        fields.retain(|key, _| !key.ends_with("_pct"));
        if let Some(busy) = busy_share(|key| fields.get(key)?.as_f64()) {
            fields.insert(
                "cpuPercent".to_owned(),
                Value::from(format!("{:.1}%", busy * 100.0)),
            );
        }
        fields.insert("peak".to_owned(), Value::from(peak));
    }
    merged
}

/// The mean of a `cpu` share, with `cpuPercent` saying it.
fn share_mean(group: &[Marker]) -> Value {
    let mut merged = mean(group);
    if let Some(cpu) = merged.get("cpu").and_then(Value::as_f64) {
        merged["cpuPercent"] = Value::from(format!("{:.1}%", cpu * 100.0));
    }
    merged
}

/// The last sample's data with every numeric field replaced by `number_of(key)`.
fn combine(group: &[Marker], number_of: impl Fn(&str) -> Value) -> Value {
    let Some(Value::Object(last)) = group[group.len() - 1].data.clone() else {
        return Value::Null;
    };
    let fields = last
        .into_iter()
        .map(|(key, value)| {
            let value = if value.is_number() {
                number_of(&key)
            } else {
                value
            };
            (key, value)
        })
        .collect();
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tc_profile_format::schema::{marker_schemas, track};

    fn meta() -> Map<String, Value> {
        let mut meta = Map::new();
        let sources = ["cpu", "memory", "io", "net", "processes", "swap"].map(String::from);
        meta.insert("markerSchema".to_owned(), marker_schemas(&sources));
        meta
    }

    fn sample(name: &str, second: usize, data: Value) -> Marker {
        Marker::interval(name, second as f64 * 1000.0, (second + 1) as f64 * 1000.0).with_data(data)
    }

    /// 1,000 seconds of samples: CPU busy 0.1 but 0.9 at 500 s, memory peaking at 700 s,
    /// 1 KiB written each second; and a step marker that must not be touched.
    fn recording() -> Vec<Marker> {
        let mut markers = vec![Marker::interval("build", 0.0, 1_000_000.0)
            .with_data(json!({"type": "Text", "text": "make"}))];
        for s in 0..1000 {
            let busy = if s == 500 { 0.9 } else { 0.1 };
            markers.push(sample(
                track::CPU,
                s,
                json!({"type": "CPU", "nice": 0.0, "user": busy,
                "system": busy, "iowait": busy, "softirq": busy, "steal": busy,
                "user_pct": "x"}),
            ));
            let used = if s == 700 { 9_000 } else { 1_000 + s as u64 };
            markers.push(sample(
                track::MEMORY,
                s,
                json!({"type": "Mem", "used": used}),
            ));
            markers.push(sample(
                track::IO,
                s,
                json!({"type": "IO", "read_bytes": 0,
                "write_bytes": 1024, "write_count": 1}),
            ));
        }
        markers
    }

    /// Bounds the tracks of `markers`: how many samples were merged, and the markers after.
    fn bound(markers: Vec<Marker>, max: usize) -> (usize, Vec<Marker>) {
        let mut markers: Markers = markers.into_iter().map(ProfileMarker::from).collect();
        let merged = bound_tracks(&mut markers, &meta(), max);
        (
            merged,
            markers.iter().map(|marker| marker.to_marker()).collect(),
        )
    }

    fn named<'a>(markers: &'a [Marker], name: &str) -> Vec<&'a Marker> {
        markers.iter().filter(|m| m.name == name).collect()
    }

    #[test]
    fn merged_metrics_keep_what_the_task_sent() {
        let metric = |kind: MetricKind, s: usize, data: Value| {
            let mut data = data;
            data["type"] = json!(kind.data_type());
            sample("task.x", s, data)
        };
        let counter = [1, 2, 3].map(|v| metric(MetricKind::Counter, v, json!({"value": v})));
        assert_eq!(
            merge(&counter).data.unwrap()["value"],
            6,
            "a counter adds up"
        );
        let gauge = [5, 9, 7].map(|v| metric(MetricKind::Gauge, v, json!({"value": v})));
        assert_eq!(
            merge(&gauge).data.unwrap()["value"],
            7,
            "a gauge's last value"
        );
        let timer = [
            metric(
                MetricKind::Timer,
                0,
                json!({"count": 1, "min": 10, "mean": 10.0, "max": 10}),
            ),
            metric(
                MetricKind::Timer,
                1,
                json!({"count": 3, "min": 2, "mean": 30.0, "max": 50}),
            ),
        ];
        let merged = merge(&timer).data.unwrap();
        assert_eq!(
            (
                &merged["count"],
                &merged["min"],
                &merged["mean"],
                &merged["max"]
            ),
            (&json!(4), &json!(2), &json!(25.0), &json!(50)),
            "{merged}"
        );
        let set = [4, 2].map(|v| metric(MetricKind::Set, v, json!({"distinct": v})));
        assert_eq!(merge(&set).data.unwrap()["distinct"], 4);
    }

    #[test]
    fn tracks_under_the_bound_are_left_as_they_are() {
        let before = recording();
        let (merged, markers) = bound(before.clone(), 1000);
        assert_eq!(merged, 0);
        assert_eq!(markers, before);
    }

    #[test]
    fn long_tracks_are_merged_keeping_peaks_and_totals() {
        let (merged, markers) = bound(recording(), 100);
        assert_eq!(merged, 3000);
        assert_eq!(named(&markers, "build").len(), 1, "steps are no track");
        for track in [track::CPU, track::MEMORY, track::IO] {
            let samples = named(&markers, track);
            assert_eq!(samples.len(), 100, "{track}");
            assert_eq!(samples[0].start_time, 0.0);
            assert_eq!(samples[99].end_time, Some(1_000_000.0));
            assert_eq!(samples[0].data.as_ref().unwrap()["samples"], 10);
        }
        let memory = named(&markers, track::MEMORY);
        let peak = memory
            .iter()
            .filter_map(|m| number(m, "used"))
            .fold(0.0, f64::max);
        assert_eq!(peak, 9_000.0, "the memory peak survives");
        let written: u64 = named(&markers, track::IO)
            .iter()
            .map(|m| m.data.as_ref().unwrap()["write_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(written, 1000 * 1024, "the disk total survives");
        let cpu = named(&markers, track::CPU);
        let stretch = cpu[50].data.as_ref().unwrap();
        assert_eq!(stretch["peak"], 0.9, "the CPU peak survives in peak");
        assert!(
            (stretch["steal"].as_f64().unwrap() - 0.18).abs() < 1e-9,
            "{stretch}"
        );
        assert_eq!(stretch["cpuPercent"], "18.0%");
        assert!(
            stretch.get("user_pct").is_none(),
            "stale percentages are left out"
        );
    }

    #[test]
    fn task_memory_keeps_its_peak_swap_its_total_and_task_cpu_its_mean() {
        let mut markers = Vec::new();
        for s in 0..1000 {
            let rss = if s == 300 { 5_000 } else { 100 };
            let data = json!({"type": "TaskMem", "rss": rss, "processes": 2});
            markers.push(sample(track::TASK_MEMORY, s, data));
            let data = json!({"type": "Swap", "swap_in": 4096, "swap_out": 0});
            markers.push(sample(track::SWAP, s, data));
            let cpu = if s % 2 == 0 { 0.2 } else { 0.4 };
            let data = json!({"type": "TaskCPU", "cpu": cpu, "cpuPercent": "x", "processes": 1});
            markers.push(sample(track::TASK_CPU, s, data));
        }
        let (merged, markers) = bound(markers, 100);
        assert_eq!(merged, 3000);
        let peak = named(&markers, track::TASK_MEMORY)
            .iter()
            .filter_map(|m| number(m, "rss"))
            .fold(0.0, f64::max);
        assert_eq!(peak, 5_000.0);
        let swapped: f64 = named(&markers, track::SWAP)
            .iter()
            .filter_map(|m| number(m, "swap_in"))
            .sum();
        assert_eq!(swapped, 1000.0 * 4096.0);
        let cpu = named(&markers, track::TASK_CPU);
        let stretch = cpu[10].data.as_ref().unwrap();
        assert!(
            (stretch["cpu"].as_f64().unwrap() - 0.3).abs() < 1e-9,
            "{stretch}"
        );
        assert_eq!(stretch["cpuPercent"], "30.0%");
    }
}
