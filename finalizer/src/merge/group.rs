//! Profiles put side by side on one wall-clock axis: the group starts at the earliest
//! `meta.startTime`, and every time of a profile moves by its start's distance from that
//! one. Each profile becomes one process (its own pid, named by its task), whose tracks the
//! front-end draws under it: graph tracks are made per thread, so CPU of one task never
//! mixes with another's.

use super::tables::{Categories, Schemas};
use crate::marker_columns::Markers;
use crate::marker_table::UniqueStrings;
use crate::profile::Profile;
use crate::profile_marker::ProfileMarker;
use serde_json::value::to_raw_value;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use tc_profile_format::{
    thread_fields, TaskInfo, GECKO_PROFILE_VERSION, PREPROCESSED_PROFILE_VERSION,
};

/// One profile to merge.
pub(crate) struct Member {
    /// Where it came from (the file's name), for a profile that names no task.
    pub source: String,
    /// Its `meta.startTime`, checked to be there.
    pub start_time: f64,
    /// How much later than its start it is placed (ms).
    pub shift: f64,
    pub profile: Profile,
}

impl Member {
    /// Where its time 0 lies on the group's axis (epoch ms).
    fn placed_at(&self) -> f64 {
        self.start_time + self.shift
    }
}

/// The merged profile: one meta, a thread (fields and markers) per member.
pub(crate) struct Group {
    pub meta: Map<String, Value>,
    pub threads: Vec<(Map<String, Value>, Markers)>,
    /// Schemas kept under a name of their own, as `OLD -> NEW`.
    pub renamed: Vec<String>,
    /// Every member's counters, each under its process.
    pub counters: Vec<Map<String, Value>>,
    /// The `unique-string` fields of the group's schemas, interned when written.
    pub unique_strings: UniqueStrings,
}

pub(crate) fn group(members: Vec<Member>) -> Group {
    let start = members
        .iter()
        .map(Member::placed_at)
        .fold(f64::INFINITY, f64::min);
    let interval = members
        .iter()
        .filter_map(|m| m.profile.meta.get("interval")?.as_f64())
        .fold(f64::INFINITY, f64::min);
    let mut builder = Builder::default();
    for (index, member) in members.into_iter().enumerate() {
        builder.add(index, member, start);
    }
    builder.finish(start, if interval.is_finite() { interval } else { 1.0 })
}

/// The group as it is built, one member after the other.
#[derive(Default)]
struct Builder {
    categories: Categories,
    schemas: Schemas,
    threads: Vec<(Map<String, Value>, Markers)>,
    /// `meta.tcProfile.group`.
    processes: Vec<Value>,
    renamed: Vec<String>,
    counters: Vec<Map<String, Value>>,
    end: f64,
}

impl Builder {
    /// Adds the `index`-th member to a group that starts at `group_start` (epoch ms).
    fn add(&mut self, index: usize, member: Member, group_start: f64) {
        let offset = member.placed_at() - group_start;
        let mut meta = member.profile.meta;
        let category_of = self.categories.add(&own_categories(&mut meta));
        let own_schemas = take_list(&mut meta, "markerSchema");
        let renamed = self.schemas.add(&own_schemas, index + 1);
        let described = renamed.iter().map(|(old, new)| format!("{old} -> {new}"));
        self.renamed.extend(described);
        let retarget = Retarget {
            renamed,
            time_keys: time_keys(&own_schemas),
            offset,
        };
        let mut markers = member.profile.markers.to_vec();
        for marker in &mut markers {
            retarget.apply(marker);
            let category = marker.category.unwrap_or(0) as usize;
            marker.category = Some(category_of.get(category).copied().unwrap_or(0));
        }
        // A counter names its category rather than indexing it: it moves as it is.
        for mut counter in member.profile.counters {
            move_counter(&mut counter, index, offset);
            self.counters.push(counter);
        }
        let own_end = meta
            .get("profilingEndTime")
            .and_then(Value::as_f64)
            .unwrap_or_else(|| last_time(&markers) - offset);
        self.end = self.end.max(offset + own_end);
        let name = label(&meta, &member.source);
        let thread = process_thread(&name, index + 1, offset, offset + own_end);
        let mut process = json!({"pid": thread["pid"], "name": name,
            "source": member.source, "offset": offset, "meta": meta});
        if member.shift != 0.0 {
            process["shift"] = json!(member.shift);
        }
        self.processes.push(process);
        self.threads.push((thread, markers.into_iter().collect()));
    }

    fn finish(mut self, start: f64, interval: f64) -> Group {
        self.renamed.sort();
        let meta = json!({
            "version": GECKO_PROFILE_VERSION,
            "preprocessedProfileVersion": PREPROCESSED_PROFILE_VERSION,
            "processType": 0,
            "product": format!("tc-profile group of {}", self.threads.len()),
            "stackwalk": 0,
            "interval": interval,
            "startTime": start,
            "profilingStartTime": 0,
            "profilingEndTime": self.end,
            "symbolicationNotSupported": true,
            "usesOnlyOneStackType": true,
            "categories": self.categories.into_list(),
            "markerSchema": self.schemas.into_list(),
            "tcProfile": {"group": self.processes},
        });
        let Value::Object(meta) = meta else {
            unreachable!("json! object literal")
        };
        Group {
            unique_strings: UniqueStrings::of(&meta),
            meta,
            threads: self.threads,
            renamed: self.renamed,
            counters: self.counters,
        }
    }
}

/// A member's categories; a grey "Other" when it declares none, since its markers are
/// then all of category 0, which the front-end needs declared.
fn own_categories(meta: &mut Map<String, Value>) -> Vec<Value> {
    let mut categories = take_list(meta, "categories");
    if categories.is_empty() {
        categories.push(json!({"name": "Other", "color": "grey", "subcategories": ["Other"]}));
    }
    categories
}

/// The process's name: the task's name and id (and run) from `meta.tcProfile.task`, else
/// the file's name (Mozilla's profiles name no task).
fn label(meta: &Map<String, Value>, source: &str) -> String {
    let task: TaskInfo = meta
        .get("tcProfile")
        .and_then(|tc| tc.get("task"))
        .and_then(|task| serde_json::from_value(task.clone()).ok())
        .unwrap_or_default();
    let id = match (task.task_id, task.run_id) {
        (Some(id), Some(run)) => Some(format!("{id} run {run}")),
        (id, _) => id,
    };
    match (task.name, id) {
        (Some(name), Some(id)) => format!("{name} ({id})"),
        (Some(label), None) | (None, Some(label)) => label,
        (None, None) => source.to_owned(),
    }
}

/// A thread of its own process, living over the member's span of the group.
fn process_thread(name: &str, number: usize, start: f64, end: f64) -> Map<String, Value> {
    let mut thread = thread_fields(name);
    thread.insert("pid".to_owned(), json!(number.to_string()));
    thread.insert("tid".to_owned(), json!(number));
    for key in ["processStartupTime", "registerTime"] {
        thread.insert(key.to_owned(), json!(start));
    }
    for key in ["processShutdownTime", "unregisterTime"] {
        thread.insert(key.to_owned(), json!(end));
    }
    thread
}

/// A counter of the member `index` under its process, its sample times on the group's axis.
fn move_counter(counter: &mut Map<String, Value>, index: usize, offset: f64) {
    counter.insert("pid".to_owned(), json!((index + 1).to_string()));
    counter.insert("mainThreadIndex".to_owned(), json!(index));
    // At version 47 a counter's samples are in `sampleGroups` (one group since version 43).
    let groups = counter
        .get_mut("sampleGroups")
        .and_then(Value::as_array_mut);
    for group in groups.into_iter().flatten() {
        let times = group["samples"]
            .get_mut("time")
            .and_then(Value::as_array_mut);
        for time in times.into_iter().flatten() {
            if let Some(t) = time.as_f64() {
                *time = json!(shifted(t, offset));
            }
        }
    }
}

fn take_list(meta: &mut Map<String, Value>, key: &str) -> Vec<Value> {
    match meta.remove(key) {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    }
}

/// Schema name to the keys of its fields of format `time`: times since the profile's
/// start, which move with the markers.
fn time_keys(schemas: &[Value]) -> HashMap<String, Vec<String>> {
    let keyed = schemas.iter().filter_map(|schema| {
        let keys: Vec<String> = schema["data"]
            .as_array()?
            .iter()
            .filter(|field| field["format"] == "time")
            .filter_map(|field| Some(field["key"].as_str()?.to_owned()))
            .collect();
        (!keys.is_empty()).then(|| Some((schema["name"].as_str()?.to_owned(), keys)))?
    });
    keyed.collect()
}

fn last_time(markers: &[ProfileMarker]) -> f64 {
    markers
        .iter()
        .map(|m| m.end_time.unwrap_or(m.start_time))
        .fold(0.0, f64::max)
}

/// What moves one member's markers into the group.
struct Retarget {
    /// Its schemas kept under another name.
    renamed: HashMap<String, String>,
    time_keys: HashMap<String, Vec<String>>,
    offset: f64,
}

impl Retarget {
    fn apply(&self, marker: &mut ProfileMarker) {
        marker.start_time = shifted(marker.start_time, self.offset);
        marker.end_time = marker.end_time.map(|t| shifted(t, self.offset));
        if self.renamed.is_empty() && self.time_keys.is_empty() {
            return;
        }
        // The recorder's payloads lead with their type: most are passed over unparsed.
        if marker.as_ref().leading_type().is_some_and(|kind| {
            !self.renamed.contains_key(kind) && !self.time_keys.contains_key(kind)
        }) {
            return;
        }
        let Some(Value::Object(mut data)) = marker.as_ref().data_value() else {
            return;
        };
        let Some(kind) = data.get("type").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        let new_name = self.renamed.get(&kind);
        let keys = self.time_keys.get(&kind);
        if new_name.is_none() && keys.is_none() {
            return;
        }
        if let Some(new_name) = new_name {
            data.insert("type".to_owned(), json!(new_name));
        }
        for key in keys.into_iter().flatten() {
            if let Some(time) = data.get(key).and_then(Value::as_f64) {
                data.insert(key.clone(), json!(shifted(time, self.offset)));
            }
        }
        if let Ok(data) = to_raw_value(&data) {
            marker.data = Some(data);
        }
    }
}

/// A time moved by `offset`, rounded to the microsecond as log times are.
fn shifted(time: f64, offset: f64) -> f64 {
    ((time + offset) * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(source: &str, start: f64, categories: Value, schema: Value, data: Value) -> Member {
        let document = json!({
            "meta": {"startTime": start, "interval": 100.0, "categories": categories,
                "markerSchema": [schema], "profilingEndTime": 50.0},
            "threads": [{"stringArray": ["step"], "markers": {"data": [data], "name": [0],
                "startTime": [10.0], "endTime": [20.0], "phase": [1], "category": [1]}}]
        });
        let profile = Profile::from_processed(document.to_string().as_bytes()).unwrap();
        Member {
            source: source.to_owned(),
            start_time: start,
            shift: 0.0,
            profile,
        }
    }

    #[test]
    fn a_later_profile_moves_by_its_start_with_its_time_fields_categories_and_schemas() {
        let grey = json!({"name": "Other", "color": "grey", "subcategories": ["Other"]});
        let first = member(
            "a.json",
            1000.0,
            json!([grey, {"name": "Task", "color": "blue", "subcategories": ["Other"]}]),
            json!({"name": "Step", "data": [{"key": "at", "format": "integer"}]}),
            json!({"type": "Step", "at": 12}),
        );
        let second = member(
            "b.json",
            1250.5,
            json!([grey, {"name": "Log", "color": "red", "subcategories": ["Other"]}]),
            json!({"name": "Step", "data": [{"key": "at", "format": "time"}]}),
            json!({"type": "Step", "at": 12}),
        );
        let group = group(vec![first, second]);
        assert_eq!(group.meta["startTime"], 1000.0);
        assert_eq!(group.meta["profilingEndTime"], 300.5);
        let (thread, markers) = &group.threads[1];
        assert_eq!(thread["pid"], "2");
        assert_eq!(thread["processName"], "b.json");
        assert_eq!(thread["registerTime"], 250.5);
        let marker = markers.get(0);
        assert_eq!((marker.start_time, marker.end_time), (260.5, Some(270.5)));
        assert_eq!(marker.category, Some(2), "Log, after Other and Task");
        let data = marker.data_value().unwrap();
        assert_eq!(data, json!({"type": "Step (2)", "at": 262.5}));
        let first_data = group.threads[0].1.get(0).data_value().unwrap();
        assert_eq!(first_data, json!({"type": "Step", "at": 12}), "unmoved");
        assert_eq!(group.renamed, ["Step -> Step (2)"]);
    }

    #[test]
    fn a_shifted_profile_moves_by_its_shift_beyond_its_start() {
        let schema = json!({"name": "Step", "data": []});
        let first = member(
            "a.json",
            1000.0,
            json!([]),
            schema.clone(),
            json!({"type": "Step"}),
        );
        let mut second = member("b.json", 1250.0, json!([]), schema, json!({"type": "Step"}));
        second.shift = -200.0;
        let group = group(vec![first, second]);
        let marker = group.threads[1].1.get(0);
        assert_eq!(marker.start_time, 60.0, "10 ms into b, b at 1050 ms");
        let entry = &group.meta["tcProfile"]["group"][1];
        assert_eq!(
            (entry["offset"].as_f64(), entry["shift"].as_f64()),
            (Some(50.0), Some(-200.0))
        );
        assert_eq!(group.meta["tcProfile"]["group"][0].get("shift"), None);
    }

    #[test]
    fn a_process_is_named_by_as_much_of_its_task_as_is_known() {
        let named = |task: Value| {
            let meta = json!({"tcProfile": {"task": task}});
            label(meta.as_object().unwrap(), "file.json")
        };
        let all = json!({"taskId": "T", "runId": "1", "name": "build"});
        assert_eq!(named(all), "build (T run 1)");
        assert_eq!(named(json!({"taskId": "T"})), "T");
        assert_eq!(named(json!({"name": "build"})), "build");
        assert_eq!(named(json!({})), "file.json");
    }
}
