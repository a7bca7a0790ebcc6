//! Compaction of a [`Recording`] into the processed profile at version 47: the markers the
//! profiler's JSON Lines importer would build from the log, with open intervals closed and
//! flagged, notes about damage and an early end, and `meta.profilingEndTime`.

use crate::coarsen::{bound_tracks, merge_metric_intervals, MAX_SAMPLES_PER_TRACK};
use crate::command_totals::{command_totals, CommandRuns};
use crate::marker_columns::Markers;
use crate::marker_table::{ThreadOut, UniqueStrings};
use crate::metric_drops::{metric_drops, METRICS};
use crate::problems::Problems;
use crate::profile_marker::{MarkerRef, ProfileMarker};
use crate::reader::Recording;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use tc_profile_format::marker_file::{Problem, ValueRules};
use tc_profile_format::schema::{data_type, declare_notes, draw_our_graphs_as_bars};
use tc_profile_format::{same_name_match, Dropped, Marker, OpenInterval};

/// Name of the instant marker that says a recording has no clean-end footer.
pub const ENDED_EARLY: &str = "Recording ended early";
/// Name of the instant marker that says what the reader dropped.
pub const LOG_DAMAGE: &str = "Log damage";
/// Name of the interval marker over a span whose lines did not reach the log.
pub const DATA_MISSING: &str = "Data missing";
/// Name of the instant marker that says what was dropped from marker files.
pub const MARKER_FILES: &str = "Marker files";

/// Value of `data.cutOff` on an interval closed by the finalizer.
const CUT_OFF: &str = "yes: still open when the recording ended";

/// What compaction did, besides copying markers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compaction {
    /// Intervals still open at the end, closed at the last time seen.
    pub cut_off: usize,
    /// Whether the log lacks its clean-end footer.
    pub ended_early: bool,
    /// Spans whose lines did not reach the log, each now a "Data missing" interval.
    pub data_missing: usize,
    /// `meta.profilingEndTime`.
    pub end_time: f64,
    /// What was dropped from marker files, ends without a begin included.
    pub marker_problems: Problems,
    /// Samples of long tracks merged to bound the profile (0 for recordings up to about
    /// an hour).
    pub merged_samples: usize,
}

/// The processed profile, ready to serialize.
pub struct Profile {
    pub(crate) meta: Map<String, Value>,
    /// Every field of the thread but its markers and strings.
    pub(crate) thread: Map<String, Value>,
    pub(crate) markers: Markers,
    /// A processed input's counters (the profile's own tracks, drawn from samples), as
    /// they were read; a log has none.
    pub(crate) counters: Vec<Map<String, Value>>,
    /// What a processed input holds that this profile does not carry ("samples", ...).
    pub(crate) left_out: Vec<&'static str>,
}

impl Profile {
    pub fn markers(&self) -> &Markers {
        &self.markers
    }

    pub fn meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// The end of the visible range: `meta.profilingEndTime`, else the last marker's end.
    pub(crate) fn end_time(&self) -> f64 {
        let last = self
            .markers
            .iter()
            .map(|m| m.end_time.unwrap_or(m.start_time));
        let end = self.meta.get("profilingEndTime").and_then(Value::as_f64);
        end.unwrap_or_else(|| last.fold(0.0, f64::max))
    }

    pub(crate) fn meta_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.meta
    }

    /// Adds markers (their categories and schemas declared in the meta), keeping the
    /// markers sorted by start time.
    pub(crate) fn add_markers(&mut self, markers: impl IntoIterator<Item = ProfileMarker>) {
        self.markers.extend(markers);
        self.markers.sort_by_start();
    }

    /// Parses a processed profile (ours, Mozilla's resource monitor's, or any with a marker
    /// table in its first thread) back into markers.
    pub fn from_processed(bytes: &[u8]) -> Result<Profile, ProfileError> {
        // The thread's keys as text: its marker table, most of the file, is then parsed
        // once, straight into columns, not into a tree of values first and written back
        // as text for its payloads (77 % of `fleet`'s time over 10,000 profiles).
        #[derive(Deserialize)]
        struct Document {
            meta: Map<String, Value>,
            threads: Vec<HashMap<String, Box<RawValue>>>,
            #[serde(default)]
            shared: Option<Shared>,
            #[serde(default)]
            counters: Vec<Map<String, Value>>,
        }
        #[derive(Deserialize)]
        struct Shared {
            #[serde(rename = "stringArray")]
            strings: Vec<String>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct MarkerTable {
            data: Vec<Option<Box<RawValue>>>,
            name: Vec<usize>,
            start_time: Vec<Option<f64>>,
            end_time: Vec<Option<f64>>,
            phase: Vec<u8>,
            category: Vec<u32>,
        }

        let mut document: Document = serde_json::from_slice(bytes)?;
        draw_our_graphs_as_bars(&mut document.meta);
        let mut left_out = Vec::new();
        if document.threads.len() > 1 {
            left_out.push("threads after the first");
        }
        let mut thread = document
            .threads
            .into_iter()
            .next()
            .ok_or(ProfileError::Shape("it has no thread"))?;
        let table: MarkerTable = serde_json::from_str(
            thread
                .remove("markers")
                .ok_or(ProfileError::Shape("its thread has no marker table"))?
                .get(),
        )?;
        // Since version 56 the strings are shared by all threads.
        let strings: Vec<String> = match (thread.remove("stringArray"), document.shared) {
            (Some(strings), _) => serde_json::from_str(strings.get())?,
            (None, Some(shared)) => shared.strings,
            (None, None) => return Err(ProfileError::Shape("it has no string table")),
        };
        let length = table.name.len();
        let lengths = [
            table.data.len(),
            table.start_time.len(),
            table.end_time.len(),
            table.phase.len(),
            table.category.len(),
        ];
        if lengths.iter().any(|&l| l != length) {
            return Err(ProfileError::Shape(
                "its marker table has columns of different lengths",
            ));
        }
        let unique_strings = UniqueStrings::of(&document.meta);
        let mut markers = Markers::default();
        for (i, name) in table.name.iter().enumerate() {
            let name = strings.get(*name).ok_or(ProfileError::Shape(
                "a marker name is not in the string table",
            ))?;
            // Phase 0 is an instant; 2 and 3 (only a start, only an end) become instants at
            // the time known.
            let (start, end) = (table.start_time[i], table.end_time[i]);
            let (start, end) = match table.phase[i] {
                1 => (start.unwrap_or(0.0), end),
                3 => (end.or(start).unwrap_or(0.0), None),
                _ => (start.or(end).unwrap_or(0.0), None),
            };
            let marker = MarkerRef {
                name,
                start_time: start,
                end_time: end,
                category: Some(table.category[i]),
                data: table.data[i].as_deref().map(RawValue::get),
            };
            match unique_strings.resolve(marker, &strings) {
                Some(data) => markers.push(MarkerRef {
                    data: Some(data.get()),
                    ..marker
                }),
                None => markers.push(marker),
            }
        }
        let thread = thread
            .into_iter()
            .map(|(key, raw)| Ok((key, serde_json::from_str(raw.get())?)))
            .collect::<Result<Map<String, Value>, serde_json::Error>>()?;
        if thread
            .get("samples")
            .and_then(|samples| samples.get("length"))
            .and_then(Value::as_u64)
            .is_some_and(|length| length > 0)
        {
            left_out.push("samples");
        }
        Ok(Profile {
            meta: document.meta,
            thread,
            markers,
            counters: document.counters,
            left_out,
        })
    }
}

/// Why a file is not a processed profile.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    #[error("not JSON of a processed profile: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Shape(&'static str),
}

/// Closes what is open, adds the notes, and sorts markers by start time.
pub fn compact(recording: Recording) -> (Profile, Compaction) {
    let (mut profile, compaction) = compact_markers(recording, MAX_SAMPLES_PER_TRACK);
    let runs = CommandRuns::of(&profile.markers);
    add_command_totals(&mut profile, &runs, compaction.end_time);
    (profile, compaction)
}

/// Adds a `CommandTotals` marker over each step that ran commands and over the whole task
/// (to `end_time`), from the `runs` of all its `Commands` markers: once a profile holds
/// all of them.
pub(crate) fn add_command_totals(profile: &mut Profile, runs: &CommandRuns, end_time: f64) {
    let totals = command_totals(&profile.meta, &profile.markers, runs, end_time);
    if !totals.is_empty() {
        profile.add_markers(totals);
    }
}

/// [`compact`] without the commands' totals, its graph tracks bounded to `max_samples`: of
/// one part of a span.
pub(crate) fn compact_markers(
    mut recording: Recording,
    max_samples: usize,
) -> (Profile, Compaction) {
    let end_time = recording
        .footer
        .as_ref()
        .map_or(recording.last_time, |f| f.end_time.max(recording.last_time));
    let mut meta = std::mem::take(&mut recording.meta);
    let notes = declare_notes(&mut meta);
    draw_our_graphs_as_bars(&mut meta);
    match_closes(&mut recording);
    let mut markers = std::mem::take(&mut recording.markers);
    let cut_off = recording.open.len();
    for open in std::mem::take(&mut recording.open).into_values() {
        let mut marker = open.close(end_time, None);
        flag_cut_off(&mut marker);
        markers.push(ProfileMarker::from(marker).as_ref());
    }
    drop_values_the_profiler_cannot_show(&mut markers, &recording.schemas, &mut recording.problems);
    let ended_early = recording.footer.is_none();
    if ended_early {
        let text = format!(
            "No clean-end footer: the recorder stopped at {end_time:.3} ms without finishing \
             (killed, crashed, or still running); {cut_off} open intervals were cut off there."
        );
        markers.push(note(ENDED_EARLY, end_time, notes, text).as_ref());
    }
    let data_missing = recording.gaps.len();
    let missing: Vec<(f64, f64)> = recording
        .gaps
        .iter()
        .map(|gap| (gap.start_time, gap.end_time))
        .collect();
    for gap in std::mem::take(&mut recording.gaps) {
        let text = if gap.lines == 0 {
            gap.reason
        } else {
            format!("{} lines lost: {}", gap.lines, gap.reason)
        };
        let missing = Marker::interval(DATA_MISSING, gap.start_time, gap.end_time)
            .with_category(notes)
            .with_data(json!({"type": data_type::TEXT, "text": text}));
        markers.push(ProfileMarker::from(missing).as_ref());
    }
    if !recording.damage.is_empty() {
        let text = recording.damage.summary();
        markers.push(note(LOG_DAMAGE, end_time, notes, text).as_ref());
    }
    if !recording.problems.is_empty() {
        let text = recording.problems.summary();
        markers.push(note(MARKER_FILES, end_time, notes, text).as_ref());
    }
    if let Some(text) = metric_drops(&markers) {
        markers.push(note(METRICS, end_time, notes, text).as_ref());
    }
    meta.insert("profilingEndTime".to_owned(), json!(end_time));
    add_schemas(&mut meta, recording.schemas);
    let interval_ms = meta.get("interval").and_then(Value::as_f64).unwrap_or(0.0);
    merge_metric_intervals(&mut markers, interval_ms, end_time);
    let merged_samples = bound_tracks(&mut markers, &meta, &missing, max_samples);
    markers.sort_by_start();
    let mut thread = recording.thread;
    thread.remove("markers");
    thread.remove("stringArray");
    let profile = Profile {
        meta,
        thread,
        markers,
        counters: Vec::new(),
        left_out: Vec::new(),
    };
    let compaction = Compaction {
        cut_off,
        ended_early,
        data_missing,
        end_time,
        marker_problems: recording.problems,
        merged_samples,
    };
    (profile, compaction)
}

/// Ends, with each `close` in time order, the latest open interval of its key begun at or
/// before it; a close without one is counted as an end without its begin.
pub(crate) fn match_closes(recording: &mut Recording) {
    let mut closes = std::mem::take(&mut recording.closes);
    closes.sort_by(|a, b| a.time.total_cmp(&b.time));
    for close in closes {
        let latest = |matches: &dyn Fn(&OpenInterval) -> bool| {
            let begun = recording.open.values().filter(|open| matches(open));
            begun
                .max_by(|a, b| a.start_time.total_cmp(&b.start_time))
                .map(|open| open.id)
        };
        let same_key = |open: &OpenInterval| {
            open.key.as_deref() == Some(&close.key) && open.start_time <= close.time
        };
        let same_name = |open: &OpenInterval| {
            let key = open.key.as_deref().unwrap_or_default();
            close.key.starts_with("file:") && same_name_match(key, open, &close.name, close.time)
        };
        let begun = latest(&same_key).or_else(|| latest(&same_name));
        match begun.and_then(|id| recording.open.remove(&id)) {
            Some(open) => recording
                .markers
                .push(ProfileMarker::from(open.close(close.time, close.data)).as_ref()),
            None => recording.problems.add(&Dropped {
                file: close.key,
                problem: Problem::EndWithoutBegin,
                count: 1,
                bytes: 0,
            }),
        }
    }
}

/// Drops the markers of the marker files' schemas whose values the front-end cannot show
/// ([`ValueRules`]: a string under a graph key would make it refuse the profile). Those
/// were logged before their schema, so the merger could not check them.
fn drop_values_the_profiler_cannot_show(
    markers: &mut Markers,
    schemas: &[Map<String, Value>],
    problems: &mut Problems,
) {
    let rules: HashMap<&str, ValueRules> = schemas
        .iter()
        .filter_map(|schema| Some((schema.get("name")?.as_str()?, ValueRules::of(schema)?)))
        .collect();
    if rules.is_empty() {
        return;
    }
    markers.retain(|_, marker| {
        // The recorder's own markers lead with their type, never a task's schema: unparsed.
        if marker
            .leading_type()
            .is_some_and(|kind| !rules.contains_key(kind))
        {
            return true;
        }
        let Some(Value::Object(data)) = marker.data_value() else {
            return true;
        };
        let kind = data.get("type").and_then(Value::as_str);
        let Some(Err(problem)) = kind
            .and_then(|kind| rules.get(kind))
            .map(|r| r.check(&data))
        else {
            return true;
        };
        problems.add(&Dropped {
            file: String::new(),
            problem,
            count: 1,
            bytes: 0,
        });
        false
    });
}

/// Appends the marker files' schemas whose names `meta.markerSchema` lacks.
fn add_schemas(meta: &mut Map<String, Value>, schemas: Vec<Map<String, Value>>) {
    let Some(Value::Array(known)) = meta.get_mut("markerSchema") else {
        return;
    };
    for schema in schemas {
        let name = schema.get("name");
        if !known.iter().any(|k| k.get("name") == name) {
            known.push(Value::Object(schema));
        }
    }
}

fn flag_cut_off(marker: &mut Marker) {
    match &mut marker.data {
        Some(Value::Object(data)) => {
            data.insert("cutOff".to_owned(), json!(CUT_OFF));
        }
        _ => {
            marker.data =
                Some(json!({"type": data_type::TEXT, "text": marker.name, "cutOff": CUT_OFF}));
        }
    }
}

fn note(name: &str, time: f64, category: u32, text: String) -> ProfileMarker {
    Marker::instant(name, time)
        .with_category(category)
        .with_data(json!({"type": data_type::TEXT, "text": text}))
        .into()
}

impl Serialize for Profile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Document<'a> {
            meta: &'a Map<String, Value>,
            libs: [(); 0],
            threads: [ThreadOut<'a>; 1],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            counters: &'a [Map<String, Value>],
        }
        Document {
            meta: &self.meta,
            libs: [],
            threads: [ThreadOut {
                base: &self.thread,
                markers: &self.markers,
                unique_strings: &UniqueStrings::of(&self.meta),
            }],
            counters: &self.counters,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::read_log;

    #[test]
    fn markers_logged_before_their_graph_schema_are_checked_when_compacting() {
        let log = concat!(
            r#"{"type":"meta","startTime":1000,"markerSchema":[]}"#,
            "\n",
            r#"{"type":"thread","name":"t"}"#,
            "\n",
            r#"{"type":"marker","name":"t","startTime":1,"endTime":null,"data":{"type":"T","v":"1GB"}}"#,
            "\n",
            r#"{"type":"marker","name":"t","startTime":2,"endTime":null,"data":{"v":2,"type":"T"}}"#,
            "\n",
            r#"{"type":"marker","name":"u","startTime":3,"endTime":null,"data":{"type":"U","v":"x"}}"#,
            "\n",
            r#"{"type":"schema","name":"T","display":[],"data":[],"graphs":[{"key":"v","type":"bar","color":"red"}]}"#,
            "\n",
        );
        let (profile, compaction) = compact(read_log(log.as_bytes()).unwrap());
        let kept: Vec<f64> = profile
            .markers()
            .iter()
            .filter(|m| m.name != MARKER_FILES && m.name != ENDED_EARLY)
            .map(|m| m.start_time)
            .collect();
        assert_eq!(kept, [2.0, 3.0]);
        let problems = &compaction.marker_problems;
        assert_eq!(problems.count(Problem::NonNumericGraphValue), 1);
        let note = profile.markers().iter().find(|m| m.name == MARKER_FILES);
        assert!(note.is_some_and(|n| n.data.unwrap().contains("not a number")));
    }
}
