//! Bounds the profile of a long recording (SPEC.md, "The finalized profile"): a graph track
//! with more than [`MAX_SAMPLES_PER_TRACK`] samples is merged into about that many, each
//! covering an equal stretch of the track. Peaks and totals survive: memory keeps the
//! sample with the highest `used` (the task's: `rss`), disk, network and swap add up, CPU
//! is the time-weighted mean with its highest busy share in `peak`, metrics keep what the
//! task sent (counts add up), any other graph the time-weighted mean. A merged sample never
//! reaches over time where nothing was measured (see [`Breaks`]).

mod flat;
mod intervals;
mod stretch;

pub(crate) use intervals::merge_metric_intervals;

use crate::marker_columns::Markers;
use crate::profile_marker::{leading_type, MarkerRef, ProfileMarker};
use serde_json::{Map, Value};
use std::borrow::Cow;
use tc_profile_format::metric::MetricKind;
use tc_profile_format::schema::data_type;
use tc_profile_format::Marker;

/// Samples per track in a profile at most: a 1-hour recording keeps every sample (about
/// 9,000 per track), a 24-hour one is merged into samples of about 4.3 s.
pub const MAX_SAMPLES_PER_TRACK: usize = 20_000;

/// Merges the samples of each graph track in `markers` down to about `max`, never across
/// `missing` (spans, start to end, where nothing was recorded: "Data missing"); returns how
/// many samples went into merged ones.
pub(crate) fn bound_tracks(
    markers: &mut Markers,
    meta: &Map<String, Value>,
    missing: &[(f64, f64)],
    max: usize,
) -> usize {
    let graph_types = graph_types(meta);
    if graph_types.is_empty() {
        return 0;
    }
    // A track is the intervals of one name whose payload has a graph's type: only names
    // with more than `max` intervals can need merging, and only their payloads are read.
    // Counted by name id: hashing each marker's name was a tenth of compacting.
    // Intervals first, by their columns alone: most recordings have no name over `max`,
    // and then no payload is read.
    let mut intervals = vec![0usize; markers.names().len()];
    for position in (0..markers.len()).filter(|&p| markers.end_time(p).is_some()) {
        intervals[markers.name_id(position) as usize] += 1;
    }
    if intervals.iter().all(|&count| count <= max) {
        return 0;
    }
    // Then those names' samples, by track, as positions in the columns, in one walk of the
    // payloads (each found without a rank: `Markers::payloads`). Only the tracks over
    // `max` are taken out (and parsed a stretch at a time while merged); every other
    // marker stays where it is. Taking every marker out as an owned one, to put most of
    // them back, was most of bounding a log with a crowded track.
    let mut tracks: Vec<Track> = Vec::new();
    let mut last = 0;
    for (position, data) in markers.payloads().enumerate() {
        let name = markers.name_id(position);
        if intervals[name as usize] <= max || markers.end_time(position).is_none() {
            continue;
        }
        let kind = match data.and_then(leading_type) {
            Some(kind) => Cow::Borrowed(kind),
            None => match markers.get(position).data_type() {
                Some(kind) => kind,
                None => continue,
            },
        };
        if !is_graph_type(&graph_types, &kind) {
            continue;
        }
        // A tick's tracks take turns: the one before, or the one after it, is most often it.
        let found = [last, last + 1]
            .into_iter()
            .chain(0..tracks.len())
            .find(|&t| tracks.get(t).is_some_and(|track| track.is(name, &kind)));
        last = found.unwrap_or_else(|| {
            tracks.push(Track {
                name,
                kind,
                samples: Vec::new(),
            });
            tracks.len() - 1
        });
        tracks[last].samples.push(position);
    }
    tracks.retain(|track| track.samples.len() > max);
    if tracks.is_empty() {
        return 0;
    }
    // In the order of their names and types, as merged samples of equal start are left.
    tracks.sort_by(|a, b| {
        let names = markers.names();
        (&names[a.name as usize], &a.kind).cmp(&(&names[b.name as usize], &b.kind))
    });
    for track in &mut tracks {
        let start = |position: usize| markers.start_time(position);
        track
            .samples
            .sort_by(|&a, &b| start(a).total_cmp(&start(b)));
    }
    let mut taken = vec![false; markers.len()];
    for &position in tracks.iter().flat_map(|track| &track.samples) {
        taken[position] = true;
    }
    // Into new columns: the markers left as they are, then each track's merged samples
    // (20,000 merged samples as parsed markers held 12 MB at once).
    let mut bounded = Markers::default();
    for (position, marker) in markers.iter().enumerate() {
        if !taken[position] {
            bounded.push(marker);
        }
    }
    let merged = tracks.iter().map(|track| track.samples.len()).sum();
    // The later tracks (about half the work) merged on a second thread meanwhile, when
    // there are enough of them: merging is most of bounding, and a daemon task's end
    // waits for it.
    let first = tracks.len().min(1 + tracks_before_half(markers, &tracks));
    let (mine, later) = tracks.split_at(first);
    let markers_ref = &*markers;
    std::thread::scope(|scope| {
        let helper = (merged >= MERGED_ON_TWO_THREADS && !later.is_empty())
            .then(|| {
                std::thread::Builder::new().spawn_scoped(scope, move || {
                    let mut columns = Markers::default();
                    merge_tracks(markers_ref, later, max, missing, &mut columns);
                    columns
                })
            })
            .and_then(Result::ok);
        merge_tracks(markers_ref, mine, max, missing, &mut bounded);
        match helper {
            Some(helper) => match helper.join() {
                Ok(columns) => bounded.append(columns),
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // None started (few samples, or no thread to be had): all of it here.
            None => merge_tracks(markers_ref, later, max, missing, &mut bounded),
        }
    });
    *markers = bounded;
    merged
}

/// Samples merged at least for a second thread to merge half of them: a 10-minute segment
/// at 0.1 s has 24,000.
const MERGED_ON_TWO_THREADS: usize = 8192;

/// How many of `tracks`, from the first, hold less than half of the work of merging them
/// all: their samples' text, told by each track's first (a CPU sample has three times the
/// fields of a memory one).
fn tracks_before_half(markers: &Markers, tracks: &[Track]) -> usize {
    let work = |track: &Track| {
        let first = markers.get(track.samples[0]).data.map_or(1, str::len);
        first * track.samples.len()
    };
    let total: usize = tracks.iter().map(work).sum();
    let mut so_far = 0;
    tracks
        .iter()
        .take_while(|track| {
            so_far += work(track);
            2 * so_far < total
        })
        .count()
}

/// Each of `tracks` merged down to about `max` samples, in order, into `merged`.
fn merge_tracks(
    markers: &Markers,
    tracks: &[Track],
    max: usize,
    missing: &[(f64, f64)],
    merged: &mut Markers,
) {
    for track in tracks {
        let breaks = Breaks::of(&track.kind, missing);
        merge_track(markers, &track.samples, max, &breaks, merged);
    }
}

/// The samples of one graph track: the positions of its name's intervals of one type.
struct Track<'a> {
    name: u32,
    kind: Cow<'a, str>,
    samples: Vec<usize>,
}

impl Track<'_> {
    fn is(&self, name: u32, kind: &str) -> bool {
        self.name == name && self.kind == kind
    }
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

/// Looked up in a list: a few compares cost less than hashing the type of each marker.
fn is_graph_type(graph_types: &[String], kind: &str) -> bool {
    graph_types.iter().any(|graph_type| graph_type == kind)
}

/// Where a merged sample of a track must not reach across: a stretch between two of its
/// samples that no sample covers, when nothing was recorded there ("Data missing"), or
/// when the track is sampled. A sampled track (the recorder's resource tracks, Mozilla's
/// monitor's) has samples that touch, each from the one before it: a stretch between two is
/// lost samples. A metric track has a sample only for an interval that had metrics, so
/// between two its figures were taken and were none.
struct Breaks<'a> {
    sampled: bool,
    missing: &'a [(f64, f64)],
}

impl<'a> Breaks<'a> {
    fn of(kind: &str, missing: &'a [(f64, f64)]) -> Breaks<'a> {
        let sampled = data_type::is_ours(kind) && MetricKind::from_data_type(kind).is_none();
        Breaks { sampled, missing }
    }

    /// Whether nothing was measured from `end` (the samples before) to `start` (the next).
    fn between(&self, end: f64, start: f64) -> bool {
        start > end
            && (self.sampled
                || self
                    .missing
                    .iter()
                    .any(|&(from, to)| from < start && to > end))
    }
}

/// One sample per stretch of `(last end - first start) / max` of `samples` (positions in
/// `markers`, in time order), cut where `breaks` says, added to `merged` as it is made.
fn merge_track(
    markers: &Markers,
    samples: &[usize],
    max: usize,
    breaks: &Breaks,
    merged: &mut Markers,
) {
    let start_of = |position: usize| markers.start_time(position);
    let end_of = |position: usize| markers.end_time(position).unwrap_or(start_of(position));
    let start = start_of(samples[0]);
    let end = samples.iter().map(|&s| end_of(s)).fold(start, f64::max);
    let width = ((end - start) / max as f64).max(f64::MIN_POSITIVE);
    let stretch = |position: usize| ((start_of(position) - start) / width).floor();
    let mut group_start = 0;
    let mut group_end = end_of(samples[0]);
    let mut group = Vec::new();
    let mut merger = flat::Merger::default();
    for i in 1..=samples.len() {
        let cut = i == samples.len()
            || stretch(samples[i]) != stretch(samples[group_start])
            || breaks.between(group_end, start_of(samples[i]));
        if cut {
            group.clear();
            group.extend(samples[group_start..i].iter().map(|&s| markers.get(s)));
            merge_group(&group, &mut merger, merged);
            group_start = i;
        }
        if let Some(&sample) = samples.get(i) {
            group_end = if cut {
                end_of(sample)
            } else {
                group_end.max(end_of(sample))
            };
        }
    }
}

/// `group` (samples in time order) merged into one, added to `merged`: a flat payload's
/// text read and written as text, any other through a tree; a sample alone as it is.
fn merge_group<'a>(group: &[MarkerRef<'a>], merger: &mut flat::Merger<'a>, merged: &mut Markers) {
    let (first, last) = (group[0], group[group.len() - 1]);
    if group.len() == 1 {
        // Written back through a tree, its payload only had its keys sorted: a third of
        // the stretches when a track is bounded to about half its samples.
        return merged.push(first);
    }
    match merger.merge(group) {
        Some(data) => merged.push(MarkerRef {
            end_time: last.end_time,
            data: Some(data),
            ..first
        }),
        None => {
            let group: Vec<Marker> = group.iter().map(|m| m.to_marker()).collect();
            merged.push(ProfileMarker::from(stretch::merge(&group)).as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stretch::number;
    use super::*;
    use serde_json::json;
    use tc_profile_format::schema::{marker_schemas, track};
    fn meta() -> Map<String, Value> {
        let mut meta = Map::new();
        let sources =
            ["cpu", "memory", "io", "net", "processes", "swap", "statsd"].map(String::from);
        meta.insert("markerSchema".to_owned(), marker_schemas(&sources));
        meta
    }

    fn sample(name: &str, second: usize, data: Value) -> Marker {
        Marker::interval(name, second as f64 * 1000.0, (second + 1) as f64 * 1000.0).with_data(data)
    }

    /// 1,000 seconds of samples: CPU busy 0.1 but 0.9 at 500 s, memory peaking at 700 s,
    /// 1 KiB written each second; and a step marker that must not be touched.
    fn recording() -> Vec<Marker> {
        recording_of(1000)
    }

    /// [`recording`] over `seconds`.
    fn recording_of(seconds: usize) -> Vec<Marker> {
        let mut markers = vec![Marker::interval("build", 0.0, 1_000_000.0)
            .with_data(json!({"type": "Text", "text": "make"}))];
        for s in 0..seconds {
            let busy = if s == 500 { 0.9 } else { 0.1 };
            markers.push(sample(
                track::CPU,
                s,
                json!({"type": "CPU", "nice": 0.0, "user": busy,
                "system": busy, "iowait": busy, "softirq": busy, "steal": busy,
                "cpuPercent": "x", "user_pct": "x"}),
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
        bound_around(markers, &[], max)
    }

    /// [`bound`], with spans where nothing was recorded.
    fn bound_around(
        markers: Vec<Marker>,
        missing: &[(f64, f64)],
        max: usize,
    ) -> (usize, Vec<Marker>) {
        let mut markers: Markers = markers.into_iter().map(ProfileMarker::from).collect();
        let merged = bound_tracks(&mut markers, &meta(), missing, max);
        (
            merged,
            markers.iter().map(|marker| marker.to_marker()).collect(),
        )
    }

    fn named<'a>(markers: &'a [Marker], name: &str) -> Vec<&'a Marker> {
        markers.iter().filter(|m| m.name == name).collect()
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
        assert_eq!(stretch["cpuPercent"], "18.0%", "as an older log wrote it");
        assert!(
            stretch.get("user_pct").is_none(),
            "an older log's percentages of single samples are left out"
        );
    }

    #[test]
    fn tracks_merged_on_two_threads_are_as_each_merged_alone() {
        // 9,000 samples of three tracks: enough for a second thread to merge some.
        let markers = recording_of(3000);
        assert!(3 * 3000 >= MERGED_ON_TWO_THREADS);
        let (merged, together) = bound(markers.clone(), 100);
        assert_eq!(merged, 9000);
        assert_eq!(named(&together, "build").len(), 1);
        for track in [track::CPU, track::MEMORY, track::IO] {
            let alone = markers.iter().filter(|m| m.name == track).cloned();
            let (_, alone) = bound(alone.collect(), 100);
            assert_eq!(alone.len(), 100, "{track}");
            assert_eq!(named(&together, track), alone.iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_merged_sample_covers_no_lost_samples_and_no_span_where_nothing_was_recorded() {
        // Merged into stretches of 20 s. Memory each second but from 403 s to 408 s (its
        // lines lost); a counter every other second (none in between), its listener down
        // from 803 s to 808 s.
        let mut markers = Vec::new();
        for s in (0..1000).filter(|s| !(403..408).contains(s)) {
            let data = json!({"type": "Mem", "used": 1000});
            markers.push(sample(track::MEMORY, s, data));
        }
        for s in (0..1000).step_by(2).filter(|s| !(803..808).contains(s)) {
            let data = json!({"type": "Counter", "metric": "task.n", "value": 1});
            markers.push(sample("task.n", s, data));
        }
        let (_, markers) = bound_around(markers, &[(803_000.0, 808_000.0)], 50);
        let covers = |m: &&Marker, from: f64, to: f64| {
            m.start_time < to && m.end_time.is_some_and(|end| end > from)
        };
        let memory = named(&markers, track::MEMORY);
        assert_eq!(memory.len(), 51, "cut at the hole");
        assert!(!memory.iter().any(|m| covers(m, 403_000.0, 408_000.0)));
        let counter = named(&markers, "task.n");
        assert_eq!(
            counter.len(),
            51,
            "bridged between seconds, cut at the outage"
        );
        assert!(!counter.iter().any(|m| covers(m, 803_000.0, 808_000.0)));
        let counted: f64 = counter.iter().filter_map(|m| number(m, "value")).sum();
        assert_eq!(counted, 498.0, "every count kept");
    }

    #[test]
    fn cpu_shares_written_as_numbers_are_merged_into_their_means() {
        let mut markers = Vec::new();
        for s in 0..1000 {
            let busy = if s % 2 == 0 { 0.2 } else { 0.4 };
            let data = json!({"type": "CPU", "nice": 0.0, "user": busy, "system": busy,
                "iowait": busy, "softirq": busy, "steal": busy, "cpuPercent": busy,
                "user_pct": busy, "idle_pct": 1.0 - busy});
            markers.push(sample(track::CPU, s, data));
            let data = json!({"type": "TaskCPU", "cpu": busy, "cpuPercent": busy});
            markers.push(sample(track::TASK_CPU, s, data));
        }
        let (_, markers) = bound(markers, 100);
        let cpu = named(&markers, track::CPU);
        let stretch = cpu[10].data.as_ref().unwrap();
        assert_eq!(stretch["cpuPercent"], 0.3);
        assert!((number(cpu[10], "user_pct").unwrap() - 0.3).abs() < 1e-9);
        assert!((number(cpu[10], "idle_pct").unwrap() - 0.7).abs() < 1e-9);
        assert_eq!(stretch["peak"], 0.4);
        let task = named(&markers, track::TASK_CPU);
        assert_eq!(task[10].data.as_ref().unwrap()["cpuPercent"], 0.3);
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
