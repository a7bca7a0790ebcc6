//! Categories and marker schemas that every log declares in its meta line (SPEC.md,
//! "Categories and schemas"). Resource tracks are marker graphs, drawn as Mozilla's resource
//! monitor draws them, so that profiles from both tools look alike; but all as bars, memory
//! too (see [`GRAPH_TYPE`]).

use metric::metric_schemas;
pub use parts::GRAPH_TYPE;
use parts::{field, graph, Field, Graph};
use serde_json::{json, Map, Value};

mod compare;
mod log;
mod metric;
mod parts;
mod task;
pub use compare::compare_schema;
pub use log::log_schema;
pub use task::as_task_schema;

/// Indices into `meta.categories`.
pub mod category {
    pub const OTHER: u32 = 0;
    /// Steps of the worker around the task (pull image, mount caches, upload artifacts).
    pub const WORKER: u32 = 1;
    /// Phases of the task itself (the wrapped command, its build steps).
    pub const TASK: u32 = 2;
    pub const USER: u32 = 3;
    /// Notes of the recorder about the recording itself (damage, an early end).
    pub const RECORDER: u32 = 4;
    /// Lines of the task's log (SPEC.md, "Log lines"); warnings and errors have their own
    /// categories, since the profiler colours a marker by its category alone.
    pub const LOG: u32 = 5;
    pub const LOG_WARNING: u32 = 6;
    pub const LOG_ERROR: u32 = 7;
}

/// Draws the graphs of our schemas in `meta.markerSchema` as [`GRAPH_TYPE`]: what a log
/// written before every graph of ours was a bar declares, and Mozilla's resource monitor's
/// `Mem` (whose schema names are ours). A task's own schemas keep what they declare: their
/// markers are the task's own, taken from its files across a recorder's outage.
pub fn draw_our_graphs_as_bars(meta: &mut Map<String, Value>) {
    let Some(Value::Array(schemas)) = meta.get_mut("markerSchema") else {
        return;
    };
    let ours = schemas.iter_mut().filter(|s| {
        s.get("name")
            .and_then(Value::as_str)
            .is_some_and(data_type::is_ours)
    });
    for schema in ours {
        let graphs = schema.get_mut("graphs").and_then(Value::as_array_mut);
        for graph in graphs
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            graph.insert("type".to_owned(), Value::from(GRAPH_TYPE));
        }
    }
}

/// Names of the sources in `meta.tcProfile.sources`. A source the machine lacks is left out
/// of that list and its schemas out of `meta.markerSchema`, so it is never drawn as zeros.
pub mod source {
    pub const CPU: &str = "cpu";
    pub const MEMORY: &str = "memory";
    pub const IO: &str = "io";
    pub const NET: &str = "net";
    /// The task's process tree against the rest, and a marker per process of the tree.
    pub const PROCESSES: &str = "processes";
    /// Every process of the task counted as it exits (taskstats): per-command totals.
    pub const PROCESS_EXITS: &str = "process-exits";
    pub const CGROUP_MEMORY: &str = "cgroup-memory";
    pub const CGROUP_CPU: &str = "cgroup-cpu";
    pub const CGROUP_IO: &str = "cgroup-io";
    /// The cgroup's OOM-kill counter.
    pub const OOM_KILLS: &str = "oom-kills";
    pub const PRESSURE: &str = "pressure";
    pub const LOAD: &str = "load";
    pub const SWAP: &str = "swap";
    pub const CPU_FREQUENCY: &str = "cpufreq";
    /// The statsd listener: metric tracks.
    pub const STATSD: &str = "statsd";
    /// The InfluxDB endpoint: the same metric tracks.
    pub const INFLUX: &str = "influx";
    /// The command's stdout and stderr: a `Log` marker a line, and metric tracks from
    /// `[taskcluster-task:stat]` lines.
    pub const LOG_LINES: &str = "log-lines";
}

/// `data.type` of each schema declared here.
pub mod data_type {
    pub const CPU: &str = "CPU";
    pub const MEMORY: &str = "Mem";
    pub const IO: &str = "IO";
    pub const NET_IO: &str = "NetIO";
    pub const TEXT: &str = "Text";
    pub const COMMAND: &str = "Command";
    pub const TASK_CPU: &str = "TaskCPU";
    pub const OTHER_CPU: &str = "OtherCPU";
    pub const TASK_MEMORY: &str = "TaskMem";
    pub const OTHER_MEMORY: &str = "OtherMem";
    pub const PROCESS: &str = "Process";
    pub const COMMANDS: &str = "Commands";
    /// A step's (or the whole task's) commands added up by the finalizer.
    pub const COMMAND_TOTALS: &str = "CommandTotals";
    pub const OTHER_PROCESSES: &str = "OtherProcesses";
    /// The track of the task's processes that ended in each second.
    pub const PROCESSES_ENDED: &str = "ProcessesEnded";
    pub const CGROUP_MEMORY: &str = "CgroupMem";
    pub const CGROUP_CPU: &str = "CgroupCPU";
    pub const OOM_KILL: &str = "OOMKill";
    pub const PRESSURE: &str = "PSI";
    pub const LOAD: &str = "Load";
    pub const SWAP: &str = "Swap";
    pub const CPU_FREQUENCY: &str = "CPUFreq";
    pub const LOG: &str = "Log";
    /// A step of two runs side by side (`tc-profile compare`).
    pub const COMPARE: &str = "Compare";

    /// The types above but [`TEXT`]: those of the recorder's own tracks and markers.
    const OWN: [&str; 22] = [
        CPU,
        MEMORY,
        IO,
        NET_IO,
        COMMAND,
        TASK_CPU,
        OTHER_CPU,
        TASK_MEMORY,
        OTHER_MEMORY,
        PROCESS,
        COMMANDS,
        COMMAND_TOTALS,
        OTHER_PROCESSES,
        PROCESSES_ENDED,
        CGROUP_MEMORY,
        CGROUP_CPU,
        OOM_KILL,
        PRESSURE,
        LOAD,
        SWAP,
        CPU_FREQUENCY,
        LOG,
    ];

    /// Whether a task's marker may not use this `data.type` (SPEC.md, "Marker files"): the
    /// type of a resource track, of `Command`, `Process`, `OOMKill`, `Log`, of the metric tracks
    /// or of `MetricDrops`, whose markers only the recorder writes. `Text` is not: it is
    /// the free text that `tc-profile mark --text` writes, and draws no track.
    pub fn is_reserved(data_type: &str) -> bool {
        OWN.contains(&data_type)
            || crate::metric::MetricKind::from_data_type(data_type).is_some()
            || data_type == crate::metric::DROPPED_DATA_TYPE
    }

    /// Whether the recorder may declare a schema of this name: a task cannot declare it.
    pub fn is_ours(name: &str) -> bool {
        name == TEXT || is_reserved(name)
    }
}

/// Marker names of the resource tracks: Mozilla's monitor's names for the first four.
pub mod track {
    pub const CPU: &str = "CPU Use";
    pub const MEMORY: &str = "Memory";
    pub const IO: &str = "IO";
    pub const NET_IO: &str = "NetIO";
    pub const TASK_CPU: &str = "Task CPU";
    pub const OTHER_CPU: &str = "Other CPU";
    pub const TASK_MEMORY: &str = "Task Memory";
    pub const OTHER_MEMORY: &str = "Other Memory";
    pub const CGROUP_MEMORY: &str = "Cgroup Memory";
    pub const CGROUP_CPU: &str = "Cgroup CPU";
    pub const CGROUP_IO: &str = "Cgroup IO";
    pub const CPU_PRESSURE: &str = "CPU Pressure";
    pub const MEMORY_PRESSURE: &str = "Memory Pressure";
    pub const IO_PRESSURE: &str = "IO Pressure";
    pub const LOAD: &str = "Load";
    pub const SWAP: &str = "Swap";
    pub const CPU_FREQUENCY: &str = "CPU Frequency";
    /// The task's processes that ended, each second (every exit, from taskstats).
    pub const PROCESSES: &str = "Processes";
    /// An instant marker: the cgroup's OOM-kill counter went up.
    pub const OOM_KILL: &str = "OOM kill";
    /// Per-disk tracks are named this prefix and the device: `IO sda`.
    pub const DISK_PREFIX: &str = "IO ";
}

/// The `meta.categories` list. The profiler needs one category coloured grey, and each
/// category's subcategories to start with "Other".
pub fn categories() -> Value {
    let category =
        |name: &str, color: &str| json!({"name": name, "color": color, "subcategories": ["Other"]});
    // An array of the values themselves: json! would copy each through the serializer.
    Value::Array(vec![
        category("Other", "grey"),
        category("Worker", "blue"),
        category("Task", "green"),
        category("User", "yellow"),
        category("Recorder", "red"),
        category("Log", "lightblue"),
        category("Log warning", "orange"),
        category("Log error", "red"),
    ])
}

/// Where a log's meta puts the finalizer's notes (`Text` markers in the Recorder category):
/// the index of its `Recorder` category, and the `Text` schema, both declared first when the
/// log is another tool's (Mozilla's resource monitor declares three categories).
pub fn declare_notes(meta: &mut Map<String, Value>) -> u32 {
    declare_schema(meta, text_schema());
    declare_category(meta, category::RECORDER)
}

/// Where a log's meta puts `Log` markers added after the recording (`add-log`): the
/// indices of its `Log`, `Log warning` and `Log error` categories, and the `Log` schema,
/// declared when the log lacks them.
pub fn declare_log(meta: &mut Map<String, Value>) -> [u32; 3] {
    declare_schema(meta, log_schema());
    [category::LOG, category::LOG_WARNING, category::LOG_ERROR]
        .map(|ours| declare_category(meta, ours))
}

/// Declares in `meta` the `Compare` schema and the category of its markers (Recorder:
/// tc-profile's notes), whose index it returns.
pub fn declare_compare(meta: &mut Map<String, Value>) -> u32 {
    declare_schema(meta, compare_schema());
    declare_category(meta, category::RECORDER)
}

fn declare_schema(meta: &mut Map<String, Value>, schema: Value) {
    if let Some(Value::Array(schemas)) = meta.get_mut("markerSchema") {
        if !schemas.iter().any(|s| s["name"] == schema["name"]) {
            schemas.push(schema);
        }
    }
}

/// The index in the meta of our category `ours`, found by name or added.
fn declare_category(meta: &mut Map<String, Value>, ours: u32) -> u32 {
    let wanted = categories()[ours as usize].clone();
    let Some(Value::Array(categories)) = meta.get_mut("categories") else {
        meta.insert("categories".to_owned(), self::categories());
        return ours;
    };
    let index = match categories.iter().position(|c| c["name"] == wanted["name"]) {
        Some(index) => index,
        None => {
            categories.push(wanted);
            categories.len() - 1
        }
    };
    index as u32
}

/// The `meta.markerSchema` list (fields under `data`, as version 47 wants): `Text` and
/// `Command`, and the schemas of the sources that are on.
pub fn marker_schemas(sources: &[String]) -> Value {
    let mut schemas = vec![text_schema(), command_schema()];
    let mut metrics = false;
    for source in sources {
        schemas.extend(source_schemas(source));
        // The statsd listener, the InfluxDB endpoint and stat lines share the metric
        // schemas: built once, after the first of them (each build took as long as all
        // the other sources' schemas).
        if !metrics
            && matches!(
                source.as_str(),
                source::STATSD | source::INFLUX | source::LOG_LINES
            )
        {
            metrics = true;
            schemas.extend(metric_schemas());
        }
    }
    Value::Array(schemas)
}

fn source_schemas(name: &str) -> Vec<Value> {
    match name {
        source::CPU => vec![cpu_schema()],
        source::MEMORY => vec![track_schema(
            data_type::MEMORY,
            &[
                field("used", "Used", "bytes"),
                field("available", "Available", "bytes"),
                field("cached", "Cached", "bytes"),
                field("buffers", "Buffers", "bytes"),
                field("swap", "Swap used", "bytes"),
            ],
            &[graph("used", "orange")],
        )],
        source::IO => vec![track_schema(
            data_type::IO,
            &[
                field("read_bytes", "Read", "bytes"),
                field("read_count", "Read operations", "integer"),
                field("write_bytes", "Written", "bytes"),
                field("write_count", "Write operations", "integer"),
            ],
            &[graph("read_bytes", "green"), graph("write_bytes", "red")],
        )],
        source::NET => vec![track_schema(
            data_type::NET_IO,
            &[
                field("recv_bytes", "Received", "bytes"),
                field("recv_count", "Packets received", "integer"),
                field("sent_bytes", "Sent", "bytes"),
                field("sent_count", "Packets sent", "integer"),
            ],
            &[graph("recv_bytes", "blue"), graph("sent_bytes", "orange")],
        )],
        source::PROCESSES => process_schemas(),
        source::PROCESS_EXITS => exit_schemas(),
        source::CGROUP_MEMORY => vec![track_schema(
            data_type::CGROUP_MEMORY,
            &[
                field("current", "Current", "bytes"),
                field("peak", "Peak", "bytes"),
                field("limit", "Limit", "bytes"),
                field("failcnt", "Times at the limit", "integer"),
            ],
            &[graph("current", "purple")],
        )],
        source::CGROUP_CPU => vec![track_schema(
            data_type::CGROUP_CPU,
            &[
                field("cpuPercent", "CPU", "percentage"),
                field("throttled", "Throttled share of the interval", "percentage"),
                field("throttledCount", "Periods throttled", "integer"),
            ],
            &[graph("cpu", "purple")],
        )],
        source::OOM_KILLS => vec![oom_kill_schema()],
        source::PRESSURE => vec![track_schema(
            data_type::PRESSURE,
            &[
                field("some", "Some tasks stalled", "percentage"),
                field("full", "All tasks stalled", "percentage"),
            ],
            &[graph("some", "orange"), graph("full", "red")],
        )],
        source::LOAD => vec![track_schema(
            data_type::LOAD,
            &[
                field("load1", "Load, 1 min", "decimal"),
                field("load5", "Load, 5 min", "decimal"),
                field("load15", "Load, 15 min", "decimal"),
                field("runnable", "Runnable threads", "integer"),
            ],
            &[graph("load1", "ink")],
        )],
        source::SWAP => vec![track_schema(
            data_type::SWAP,
            &[
                field("swap_in", "Swapped in", "bytes"),
                field("swap_out", "Swapped out", "bytes"),
            ],
            &[graph("swap_in", "blue"), graph("swap_out", "magenta")],
        )],
        source::LOG_LINES => vec![log_schema()],
        source::CPU_FREQUENCY => vec![track_schema(
            data_type::CPU_FREQUENCY,
            &[
                field("mhz", "Mean over the CPUs, MHz", "integer"),
                field("min_mhz", "Lowest CPU, MHz", "integer"),
                field("max_mhz", "Highest CPU, MHz", "integer"),
            ],
            &[graph("mhz", "teal")],
        )],
        _ => Vec::new(),
    }
}

/// A resource track's schema: drawn only as a graph, named in the tooltip.
fn track_schema(name: &str, fields: &[Field], graphs: &[Graph]) -> Value {
    json!({
        "name": name,
        "tooltipLabel": "{marker.name}",
        "display": [],
        "data": fields,
        "graphs": graphs,
    })
}

fn cpu_schema() -> Value {
    json!({
        "name": data_type::CPU,
        "tooltipLabel": "{marker.name} {marker.data.cpuPercent}",
        "display": [],
        "description": "Cumulative fractions of all cores: each bar includes the ones below it.",
        "data": [
            field("cpuPercent", "CPU", "percentage"),
            field("user_pct", "User", "percentage"),
            field("system_pct", "System", "percentage"),
            field("iowait_pct", "IO wait", "percentage"),
            field("nice_pct", "Nice", "percentage"),
            field("irq_pct", "IRQ", "percentage"),
            field("steal_pct", "Steal", "percentage"),
            field("idle_pct", "Idle", "percentage"),
            field("peak", "Highest of the samples merged", "percentage"),
        ],
        "graphs": [
            graph("steal", "purple"),
            graph("softirq", "orange"),
            graph("iowait", "red"),
            graph("system", "grey"),
            graph("user", "yellow"),
            graph("nice", "blue"),
        ],
    })
}

/// The task's tree against the rest (fractions of all cores, bytes), and one interval
/// marker per process of the tree, named after the process.
fn process_schemas() -> Vec<Value> {
    let cpu_fields = [
        field("cpuPercent", "CPU", "percentage"),
        field("processes", "Live processes of the task", "integer"),
    ];
    vec![
        track_schema(data_type::TASK_CPU, &cpu_fields, &[graph("cpu", "green")]),
        track_schema(
            data_type::OTHER_CPU,
            &cpu_fields[..1],
            &[graph("cpu", "grey")],
        ),
        track_schema(
            data_type::TASK_MEMORY,
            &[
                field("rss", "Resident (RSS)", "bytes"),
                field("processes", "Live processes of the task", "integer"),
            ],
            &[graph("rss", "green")],
        ),
        track_schema(
            data_type::OTHER_MEMORY,
            &[field("used", "Used outside the task's RSS", "bytes")],
            &[graph("used", "grey")],
        ),
        json!({
            "name": data_type::PROCESS,
            "tooltipLabel": "{marker.data.command}",
            "tableLabel": "{marker.data.command} — CPU {marker.data.cpuTime}, peak RSS {marker.data.peakRss}, {marker.data.status}",
            "chartLabel": "{marker.data.command}",
            "display": ["marker-chart", "marker-table"],
            "description": "A process of the task, written when it ended. Peak RSS is the highest seen at a sample.",
            "data": [
                field("command", "Command", "string"),
                field("pid", "PID", "pid"),
                field("ppid", "Parent PID", "pid"),
                field("cpuTime", "CPU time", "milliseconds"),
                field("peakRss", "Peak RSS", "bytes"),
                field("status", "Status", "string"),
                field("readBytes", "Read from storage", "bytes"),
                field("writeBytes", "Written to storage", "bytes"),
            ],
        }),
    ]
}

/// Every process of the task counted as it exits: one marker per command and interval
/// (its totals over the interval), and the processes not the task's, counted apart.
fn exit_schemas() -> Vec<Value> {
    vec![
        track_schema(
            data_type::PROCESSES_ENDED,
            &[
                field("runs", "Processes of the task that ended", "integer"),
                field(
                    "failures",
                    "Failed (non-zero status or a signal)",
                    "integer",
                ),
            ],
            &[graph("runs", "teal")],
        ),
        json!({
            "name": data_type::COMMANDS,
            "tooltipLabel": "{marker.data.command} × {marker.data.runs}",
            "tableLabel": "{marker.data.command} × {marker.data.runs}, CPU {marker.data.cpuTime}, failed {marker.data.failures}",
            "chartLabel": "{marker.data.runs}",
            "display": ["marker-chart", "marker-table"],
            "description": "The task's processes of one command that exited in the interval, however short: every exit the kernel reported (taskstats or the proc connector).",
            "data": [
                field("command", "Command", "string"),
                field("runs", "Runs", "integer"),
                field("failures", "Failed (non-zero status or a signal)", "integer"),
                field("cpuTime", "CPU time", "milliseconds"),
                field("peakRss", "Highest peak RSS", "bytes"),
                field("undrawn", "Process markers left out (over 200 a second)", "integer"),
                field("commands", "Commands added up", "integer"),
            ],
        }),
        json!({
            "name": data_type::COMMAND_TOTALS,
            "tooltipLabel": "{marker.data.step}: {marker.data.runs} processes of {marker.data.commands} commands",
            "tableLabel": "{marker.data.step}: {marker.data.runs} processes, {marker.data.failures} failed, CPU {marker.data.cpuTime}",
            "chartLabel": "{marker.data.step}: {marker.data.runs} processes",
            "display": ["marker-chart", "marker-table"],
            "description": "The commands of a step, or of the whole task, added up when the profile was written from the Commands markers whose middle is in it: every run counted, the commands that used the most CPU listed.",
            "data": [
                field("step", "Step", "string"),
                field("runs", "Runs", "integer"),
                field("failures", "Failed (non-zero status or a signal)", "integer"),
                field("cpuTime", "CPU time", "milliseconds"),
                field("commands", "Commands", "integer"),
                {
                    "key": "top",
                    "label": "Top commands by CPU",
                    "format": {
                        "type": "table",
                        "columns": [
                            {"label": "Command", "type": "string"},
                            {"label": "Runs", "type": "integer"},
                            {"label": "Failed", "type": "integer"},
                            {"label": "CPU", "type": "milliseconds"},
                            {"label": "Peak RSS", "type": "bytes"},
                        ],
                    },
                },
            ],
        }),
        json!({
            "name": data_type::OTHER_PROCESSES,
            "tooltipLabel": "Other processes × {marker.data.runs}",
            "tableLabel": "Processes not the task's × {marker.data.runs}, CPU {marker.data.cpuTime}",
            "display": ["marker-table"],
            "description": "Processes of the machine outside the task that exited in the interval, counted and never named; overruns: times the kernel's queue overflowed and exits were lost.",
            "data": [
                field("runs", "Exits", "integer"),
                field("cpuTime", "CPU time", "milliseconds"),
                field("overruns", "Queue overruns", "integer"),
            ],
        }),
    ]
}

fn oom_kill_schema() -> Value {
    json!({
        "name": data_type::OOM_KILL,
        "tooltipLabel": "{marker.name}: {marker.data.process}",
        "tableLabel": "{marker.name} in {marker.data.cgroup}: {marker.data.process} ({marker.data.pid})",
        "chartLabel": "{marker.data.process}",
        "display": ["marker-chart", "marker-table", "timeline-overview"],
        "data": [
            field("kills", "Kills since the previous sample", "integer"),
            field("process", "Victim", "string"),
            field("pid", "Victim PID", "pid"),
            field("cgroup", "Cgroup", "file-path"),
        ],
    })
}

fn text_schema() -> Value {
    json!({
        "name": data_type::TEXT,
        "tooltipLabel": "{marker.name}",
        "tableLabel": "{marker.name} — {marker.data.text}",
        "chartLabel": "{marker.data.text}",
        "display": ["marker-chart", "marker-table", "timeline-overview"],
        "data": [field("text", "Description", "string"), field("cutOff", "Cut off", "string")],
    })
}

fn command_schema() -> Value {
    json!({
        "name": data_type::COMMAND,
        "tooltipLabel": "{marker.data.command}",
        "tableLabel": "{marker.data.command} — {marker.data.status}",
        "chartLabel": "{marker.data.command}",
        "display": ["marker-chart", "marker-table", "timeline-overview"],
        "data": [
            field("command", "Command", "string"),
            field("status", "Status", "string"),
            field("pid", "PID", "pid"),
            field("cutOff", "Cut off", "string"),
        ],
    })
}

#[cfg(test)]
mod tests;
