//! Builders of the meta and thread lines (SPEC.md, "meta" and "thread").

use crate::{lines::Line, schema};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// Version of the log's own extension lines (`meta.tcProfile.logVersion`). Readers accept
/// every version up to this one and skip line kinds they do not know.
pub const LOG_FORMAT_VERSION: u32 = 1;
/// The processed-profile version that both the log and the finalized profile declare.
pub const PREPROCESSED_PROFILE_VERSION: u32 = 47;
/// The Gecko profile version (`meta.version`) that goes with [`PREPROCESSED_PROFILE_VERSION`].
pub const GECKO_PROFILE_VERSION: u32 = 27;
/// Every log starts with these bytes; the Firefox Profiler detects a streamed profile by them.
pub const META_PREFIX: &[u8] = br#"{"type":"meta""#;

/// The machine a task ran on. Every field is optional: a reader shows what is known.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Machine {
    pub logical_cpus: Option<u32>,
    pub physical_cpus: Option<u32>,
    pub main_memory: Option<u64>,
    pub cpu_name: Option<String>,
    pub os: Option<String>,
}

/// The task, from TASK_ID, RUN_ID and the TASKCLUSTER_* variables when present.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TaskInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_url: Option<String>,
    /// The task definition's `metadata.name` (`--task-definition`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Tag keys that name the task in what is sent to a time-series database; a metric's own
/// tag with one of these keys is dropped, so that a task cannot write under another task's
/// identity.
pub const TASK_TAGS: [&str; 4] = ["task_id", "run_id", "worker_type", "instance_type"];

impl TaskInfo {
    /// The task's identity as tags: those of [`TASK_TAGS`] that are known, in that order.
    pub fn tags(&self) -> Vec<(String, String)> {
        let values = [
            &self.task_id,
            &self.run_id,
            &self.worker_type,
            &self.instance_type,
        ];
        TASK_TAGS
            .iter()
            .zip(values)
            .filter_map(|(tag, value)| {
                let value = value.as_ref().filter(|v| !v.is_empty())?;
                Some(((*tag).to_owned(), value.clone()))
            })
            .collect()
    }
}

/// The statsd listener of a recording, as `meta.tcProfile.statsd` says it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatsdInfo {
    /// `127.0.0.1:PORT`, as exported to the task, when the UDP port is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The Unix datagram socket in the profile directory, as exported to the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// Every series name starts with it (`task.`).
    pub prefix: String,
    /// Longer packets are dropped whole.
    pub max_packet_bytes: usize,
    /// Metrics of further series are dropped.
    pub max_series: usize,
}

/// The InfluxDB endpoint of a recording, as `meta.tcProfile.influx` says it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InfluxInfo {
    /// `http://127.0.0.1:PORT`: `TASKCLUSTER_INFLUX_URL` without its token.
    pub url: String,
    /// Every series name starts with it (`task.`).
    pub prefix: String,
    /// Longer request bodies are refused whole (413).
    pub max_body_bytes: usize,
    /// Points of further series are dropped.
    pub max_series: usize,
}

/// The task's cgroup, as `meta.tcProfile.cgroup` says it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CgroupInfo {
    /// Its directory, for example `/sys/fs/cgroup/memory/tc-profile-4242`.
    pub path: String,
    /// `v2`, or `v1-memory` for the v1 memory controller.
    pub hierarchy: String,
    /// Whether the recorder created it for the task (`run --own-cgroup`): one left behind by
    /// a killed recorder is removed by the next `recover`.
    pub created: bool,
}

/// What the meta line says about a recording.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaInfo {
    /// Unix epoch milliseconds of time 0.
    pub start_time: f64,
    /// Sampling interval in milliseconds.
    pub interval_ms: f64,
    pub machine: Machine,
    pub task: TaskInfo,
    /// The sources that were on (for example "cpu", "memory", "io", "net").
    pub sources: Vec<String>,
    /// The `--sync` policy, as SPEC.md names it.
    pub sync_policy: String,
    /// `tc-profile x.y.z`.
    pub recorder: String,
    /// The statsd listener, when one is on.
    pub statsd: Option<StatsdInfo>,
    /// The InfluxDB endpoint, when one is on.
    pub influx: Option<InfluxInfo>,
    /// The scopes granted to the task's metrics (SPEC.md, "Metric scopes"); none: all open.
    pub metric_scopes: Vec<String>,
    /// The profile directory whose marker files are merged, as an absolute path.
    pub profile_dir: Option<String>,
    /// The task's cgroup, when its counters are recorded.
    pub cgroup: Option<CgroupInfo>,
    /// Schemas of the task declared before the recording (`--schema`), so that a raw log
    /// shows their markers; placed after ours, and a name of ours (declared here or not)
    /// stays ours.
    pub task_schemas: Vec<Map<String, Value>>,
    /// The task's log file followed (`record --task-log`), as an absolute path.
    pub task_log: Option<String>,
    /// The live profile's server (`--http`), `http://HOST:PORT`: its URLs without the token.
    pub live_server: Option<String>,
    /// How the task's processes were seen, when they were followed: `taskstats` (every
    /// exit, from the kernel) or `sampling` (only those a tick found alive).
    pub process_exits: Option<String>,
    /// What the CPU of the kernel's exits is counted from: `run-time` (the scheduler's
    /// figures) or `ticks` (whole clock ticks); absent with `sampling`.
    pub process_cpu: Option<String>,
}

fn marker_schemas(info: &MetaInfo) -> Value {
    let mut schemas = schema::marker_schemas(&info.sources);
    let Value::Array(list) = &mut schemas else {
        return schemas;
    };
    for task_schema in &info.task_schemas {
        let name = task_schema.get("name").and_then(Value::as_str);
        let ours = name.is_some_and(schema::data_type::is_ours);
        if !ours
            && !list
                .iter()
                .any(|known| known["name"] == task_schema["name"])
        {
            list.push(Value::Object(task_schema.clone()));
        }
    }
    schemas
}

/// The meta line: what the profiler needs at version 47, plus our `tcProfile` object.
pub fn meta_line(info: &MetaInfo) -> Line {
    let mut meta = Map::new();
    let mut put = |key: &str, value: Value| {
        meta.insert(key.to_owned(), value);
    };
    put("version", json!(GECKO_PROFILE_VERSION));
    put(
        "preprocessedProfileVersion",
        json!(PREPROCESSED_PROFILE_VERSION),
    );
    put("processType", json!(0));
    put("product", json!(product_name(&info.task)));
    put("stackwalk", json!(0));
    put("interval", json!(info.interval_ms));
    put("startTime", json!(info.start_time));
    put("profilingStartTime", json!(0));
    put("symbolicationNotSupported", json!(true));
    put("usesOnlyOneStackType", json!(true));
    put("categories", schema::categories());
    put("markerSchema", marker_schemas(info));
    let tc_profile = json!({
        "logVersion": LOG_FORMAT_VERSION,
        "recorder": info.recorder,
        "syncPolicy": info.sync_policy,
        "sources": info.sources,
        "task": info.task,
    });
    let Value::Object(mut tc_profile) = tc_profile else {
        unreachable!("json! object literal")
    };
    insert_present(
        &mut tc_profile,
        [
            ("statsd", info.statsd.as_ref().map(|statsd| json!(statsd))),
            ("influx", info.influx.as_ref().map(|influx| json!(influx))),
            (
                "metricScopes",
                (!info.metric_scopes.is_empty()).then(|| json!(info.metric_scopes)),
            ),
            ("profileDir", info.profile_dir.clone().map(Value::from)),
            ("taskLog", info.task_log.clone().map(Value::from)),
            ("liveServer", info.live_server.clone().map(Value::from)),
            ("processExits", info.process_exits.clone().map(Value::from)),
            ("processCpu", info.process_cpu.clone().map(Value::from)),
            ("cgroup", info.cgroup.as_ref().map(|cgroup| json!(cgroup))),
        ],
    );
    put("tcProfile", Value::Object(tc_profile));
    let machine = &info.machine;
    insert_present(
        &mut meta,
        [
            ("logicalCPUs", machine.logical_cpus.map(Value::from)),
            ("physicalCPUs", machine.physical_cpus.map(Value::from)),
            ("mainMemory", machine.main_memory.map(Value::from)),
            ("CPUName", machine.cpu_name.clone().map(Value::from)),
            ("oscpu", machine.os.clone().map(Value::from)),
        ],
    );
    Line::Meta(meta)
}

/// Adds the entries that have a value: what is not known is left out, not written as null.
fn insert_present<const N: usize>(
    object: &mut Map<String, Value>,
    entries: [(&str, Option<Value>); N],
) {
    for (key, value) in entries {
        if let Some(value) = value {
            object.insert(key.to_owned(), value);
        }
    }
}

fn product_name(task: &TaskInfo) -> String {
    match &task.task_id {
        Some(id) => format!("tc-profile {id}"),
        None => "tc-profile".to_owned(),
    }
}

fn empty_table(columns: &[&str]) -> Value {
    let mut table: Map<String, Value> = columns
        .iter()
        .map(|c| ((*c).to_owned(), json!([])))
        .collect();
    table.insert("length".to_owned(), json!(0));
    Value::Object(table)
}

/// The one thread line, with the complete, empty per-thread tables of version 47.
pub fn thread_line(name: &str) -> Line {
    Line::Thread(thread_fields(name))
}

/// The fields of a thread named `name` (its process too) with no markers: pid "0", tid 0,
/// and the complete, empty per-thread tables of version 47.
pub fn thread_fields(name: &str) -> Map<String, Value> {
    let mut samples = empty_table(&["stack", "time"]);
    samples["weightType"] = json!("samples");
    samples["weight"] = Value::Null;
    let thread = json!({
        "processType": "default",
        "processName": name,
        "processStartupTime": 0,
        "processShutdownTime": null,
        "registerTime": 0,
        "unregisterTime": null,
        "pausedRanges": [],
        "showMarkersInTimeline": true,
        "name": name,
        "isMainThread": true,
        "pid": "0",
        "tid": 0,
        "samples": samples,
        "stackTable": empty_table(&["frame", "prefix", "category", "subcategory"]),
        "frameTable": empty_table(&["address", "inlineDepth", "category", "subcategory", "func",
            "nativeSymbol", "innerWindowID", "implementation", "line", "column"]),
        "funcTable": empty_table(&["isJS", "relevantForJS", "name", "resource", "fileName",
            "lineNumber", "columnNumber"]),
        "resourceTable": empty_table(&["lib", "name", "host", "type"]),
        "nativeSymbols": empty_table(&["libIndex", "address", "name", "functionSize"]),
    });
    match thread {
        Value::Object(map) => map,
        _ => unreachable!("json! object literal"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_schema_named_like_ours_is_left_out_even_when_its_source_is_off() {
        let schema = |name: &str| match json!({"name": name, "display": [], "data": []}) {
            Value::Object(map) => map,
            _ => unreachable!(),
        };
        let info = MetaInfo {
            start_time: 0.0,
            interval_ms: 100.0,
            machine: Machine::default(),
            task: TaskInfo::default(),
            sources: Vec::new(),
            sync_policy: "interval".to_owned(),
            recorder: "test".to_owned(),
            statsd: None,
            influx: None,
            metric_scopes: Vec::new(),
            profile_dir: None,
            cgroup: None,
            task_schemas: vec![schema("CPU"), schema("Text"), schema("Test")],
            task_log: None,
            live_server: None,
            process_exits: None,
            process_cpu: None,
        };
        let Line::Meta(meta) = meta_line(&info) else {
            panic!("a meta line");
        };
        let names: Vec<&str> = meta["markerSchema"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Text", "Command", "Test"]);
    }
}
