//! Several logs of one machine on one timeline, over a span (the daemon's task and worker
//! profiles): each log compacted on its own, its markers moved to the span's time 0, the
//! machine's markers cut to the span, and every stretch of the span that no machine log
//! covers drawn as "Data missing" (the machine was not being recorded).

use crate::coarsen::{bound_tracks, MAX_SAMPLES_PER_TRACK};
use crate::command_totals::CommandRuns;
use crate::marker_columns::Markers;
use crate::profile::{
    add_command_totals, compact_markers, match_closes, Profile, DATA_MISSING, ENDED_EARLY,
};
use crate::profile_marker::{MarkerRef, ProfileMarker};
use crate::reader::Recording;
use serde_json::{json, Map, Value};
use tc_profile_format::schema::{data_type, declare_notes};
use tc_profile_format::{Marker, OpenInterval};

/// A stretch no machine log covers is drawn only past this, or past 2.5 of the logs'
/// sampling intervals: a live log's last sample lags its clock by up to one interval and
/// its sync, and a log's name and its `startTime` differ by a moment.
const MISSING_AFTER_MS: f64 = 250.0;

/// Epoch milliseconds, `start` to `end`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub start: f64,
    pub end: f64,
}

/// What a span profile is made of, besides the machine's logs (which [`compact_span`]
/// takes one at a time).
#[derive(Default)]
pub struct SpanLogs {
    /// Logs kept whole (a task's parts), in time order; the first one's meta and thread
    /// are the profile's.
    pub own: Vec<Recording>,
    /// Markers to add, their times in epoch milliseconds.
    pub extra: Vec<Marker>,
    /// Keys to add to `meta.tcProfile`: what the caller knows of the span.
    pub tc_profile: Map<String, Value>,
}

/// The profile of `logs` and the `machine`'s logs over `span`, time 0 at `span.start`. The
/// machine's logs, cut to the span, say together what was recorded when; each is taken
/// from `machine` only once the one before it is folded in and dropped, so that a span of
/// many segments holds one segment's lines at a time (a 1-hour span at 0.1 s read all six
/// of its 10-minute segments first, 22 MB of payload text at once). The first error
/// `machine` gives ends the profile. An input's "Recording ended early" note is left out:
/// a live log has no footer yet, and a killed daemon's logs are told by the "Data
/// missing" of its downtime. The commands' totals are of the `Commands` markers of `logs`:
/// the machine's logs hold none (the machine's sampler follows no process), and their
/// payloads, 21 MB for an hour at 0.1 s, are not searched for them.
pub fn compact_span<E>(
    mut logs: SpanLogs,
    machine: impl IntoIterator<Item = Result<Recording, E>>,
    span: Span,
) -> Result<Profile, E> {
    carry_open_intervals(&mut logs.own);
    let length = span.end - span.start;
    let mut covered = Vec::new();
    let mut shortest_gap = MISSING_AFTER_MS;
    let mut base: Option<Profile> = None;
    // Every input's markers go straight into one set of columns: owned markers, one
    // allocation each, cost a 1-hour span at 0.1 s over 100 MB of resident memory. Each
    // input's columns are moved in whole, their payloads' text taken over, not copied.
    let mut markers = Markers::default();
    let mut runs = CommandRuns::default();
    let own = logs.own.into_iter().map(|r| Ok((r, false)));
    for input in own.chain(machine.into_iter().map(|r| r.map(|r| (r, true)))) {
        let (recording, is_machine) = input?;
        let origin = start_time(&recording.meta);
        let interval = number(&recording.meta, "interval").unwrap_or(100.0);
        let offset = origin - span.start;
        // Bounded below, once cut to the span.
        let (mut profile, compaction) = compact_markers(recording, usize::MAX);
        if is_machine {
            shortest_gap = shortest_gap.max(2.5 * interval);
            covered.push((offset, offset + compaction.end_time));
        }
        let mut input_markers = std::mem::take(&mut profile.markers);
        if input_markers
            .names()
            .iter()
            .any(|name| &**name == ENDED_EARLY)
        {
            input_markers.retain(|_, marker| marker.name != ENDED_EARLY);
        }
        input_markers.retime(|start, end| {
            let times = shift((start, end), offset);
            if is_machine {
                cut(times, length)
            } else {
                Some(times)
            }
        });
        if !is_machine {
            runs.extend(CommandRuns::of(&input_markers));
        }
        // Bounded to its share of the span's samples as it comes in: a 10-minute segment
        // is under the bound alone, and the span's columns bounded whole at the end were
        // held twice (33 MiB for an hour at 0.1 s, 27 MiB unbounded).
        let covered = (offset + compaction.end_time).min(length) - offset.max(0.0);
        let share = if length > 0.0 { covered / length } else { 1.0 };
        let max = (share * MAX_SAMPLES_PER_TRACK as f64).ceil().max(1.0) as usize;
        let missing = missing_spans(&input_markers);
        bound_tracks(&mut input_markers, &profile.meta, &missing, max);
        markers.append(input_markers);
        match &mut base {
            None => base = Some(profile),
            Some(base) => unite_meta(&mut base.meta, &profile.meta),
        }
    }
    let mut profile = base.unwrap_or_else(empty_profile);
    let notes = declare_notes(&mut profile.meta);
    let gaps = uncovered(covered, length).into_iter();
    for (start, end) in gaps.filter(|(start, end)| end - start >= shortest_gap) {
        let text = "the machine was not being recorded (the daemon was stopped or killed)";
        let missing = Marker::interval(DATA_MISSING, start, end)
            .with_category(notes)
            .with_data(json!({"type": data_type::TEXT, "text": text}));
        markers.push(ProfileMarker::from(missing).as_ref());
    }
    for extra in logs.extra {
        let marker = ProfileMarker::from(extra);
        let (start_time, end_time) = shift((marker.start_time, marker.end_time), -span.start);
        let marker = MarkerRef {
            start_time,
            end_time,
            ..marker.as_ref()
        };
        if marker.data_type().as_deref() == Some(data_type::COMMANDS) {
            runs.add(marker);
        }
        markers.push(marker);
    }
    markers.sort_by_start();
    profile
        .meta
        .insert("startTime".to_owned(), json!(span.start));
    profile
        .meta
        .insert("profilingEndTime".to_owned(), json!(length));
    match profile.meta.get_mut("tcProfile") {
        Some(Value::Object(tc_profile)) => tc_profile.extend(logs.tc_profile),
        _ => {
            let keys = Value::Object(logs.tc_profile);
            profile.meta.insert("tcProfile".to_owned(), keys);
        }
    }
    profile.markers = markers;
    runs.sort_by_start();
    add_command_totals(&mut profile, &runs, length);
    Ok(profile)
}

/// An interval a task's part left open goes on in the parts after it (the daemon was
/// restarted): each part's intervals still open once its own ends are matched are moved to
/// the next part, on its timeline and under ids of its own, where an `end` read after the
/// restart (a `close`) finds its begin. What no part ends is cut off at the last one's end.
fn carry_open_intervals(parts: &mut [Recording]) {
    let mut carried: Vec<OpenInterval> = Vec::new();
    let last = parts.len().saturating_sub(1);
    for (index, part) in parts.iter_mut().enumerate() {
        let origin = start_time(&part.meta);
        for mut open in carried.drain(..) {
            part.max_open_id += 1;
            open.id = part.max_open_id;
            open.start_time -= origin;
            part.open.insert(open.id, open);
        }
        match_closes(part);
        if index < last {
            carried.extend(
                std::mem::take(&mut part.open)
                    .into_values()
                    .map(|mut open| {
                        open.start_time += origin;
                        open
                    }),
            );
        }
    }
}

/// Start and end of each "Data missing" marker.
fn missing_spans(markers: &Markers) -> Vec<(f64, f64)> {
    let Some(missing) = markers
        .names()
        .iter()
        .position(|name| &**name == DATA_MISSING)
    else {
        return Vec::new();
    };
    (0..markers.len())
        .filter(|&position| markers.name_id(position) as usize == missing)
        .map(|position| {
            let start = markers.start_time(position);
            (start, markers.end_time(position).unwrap_or(start))
        })
        .collect()
}

fn start_time(meta: &Map<String, Value>) -> f64 {
    number(meta, "startTime").unwrap_or_default()
}

fn number(meta: &Map<String, Value>, key: &str) -> Option<f64> {
    meta.get(key).and_then(Value::as_f64)
}

/// A marker's start and end (None for an instant).
type Times = (f64, Option<f64>);

fn shift((start, end): Times, offset: f64) -> Times {
    (start + offset, end.map(|end| end + offset))
}

/// A marker's times cut to `[0, length]`; None when none of it is inside.
fn cut((start, end): Times, length: f64) -> Option<Times> {
    if end.unwrap_or(start) < 0.0 || start > length {
        return None;
    }
    Some((start.max(0.0), end.map(|end| end.min(length))))
}

/// The stretches of `[0, length]` that no `(start, end)` covers.
pub fn uncovered(mut covered: Vec<(f64, f64)>, length: f64) -> Vec<(f64, f64)> {
    covered.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut gaps = Vec::new();
    let mut reached = 0.0_f64;
    for (start, end) in covered.into_iter().chain([(length, length)]) {
        let start = start.min(length);
        if start - reached > 0.0 {
            gaps.push((reached, start));
        }
        reached = reached.max(end);
    }
    gaps
}

/// Adds to `meta` the schemas and sources of `other` it lacks.
fn unite_meta(meta: &mut Map<String, Value>, other: &Map<String, Value>) {
    let theirs = other.get("markerSchema").and_then(Value::as_array);
    if let (Some(Value::Array(ours)), Some(theirs)) = (meta.get_mut("markerSchema"), theirs) {
        for schema in theirs {
            if !ours.iter().any(|s| s["name"] == schema["name"]) {
                ours.push(schema.clone());
            }
        }
    }
    let theirs = other
        .get("tcProfile")
        .and_then(|t| t.get("sources"))
        .and_then(Value::as_array);
    let ours = meta
        .get_mut("tcProfile")
        .and_then(|t| t.get_mut("sources"))
        .and_then(Value::as_array_mut);
    if let (Some(ours), Some(theirs)) = (ours, theirs) {
        for source in theirs {
            if !ours.contains(source) {
                ours.push(source.clone());
            }
        }
    }
}

/// A span with no log at all: only the front-end's required meta and an empty thread.
fn empty_profile() -> Profile {
    let meta = tc_profile_format::meta_line(&tc_profile_format::MetaInfo::default());
    let thread = tc_profile_format::thread_line("tc-profile");
    let (tc_profile_format::Line::Meta(meta), tc_profile_format::Line::Thread(thread)) =
        (meta, thread)
    else {
        unreachable!("meta_line and thread_line make a meta and a thread line")
    };
    Profile {
        meta,
        thread,
        markers: Markers::default(),
        counters: Vec::new(),
        left_out: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
