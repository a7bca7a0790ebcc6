//! Categories and marker schemas that every log declares in its meta line (SPEC.md,
//! "Categories and schemas"). Resource tracks are marker graphs, drawn as Mozilla's resource
//! monitor draws them, so that profiles from both tools look alike.

use crate::metric::{self, MetricKind};
use serde_json::{json, Value};

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
}

/// `data.type` of each schema declared here.
pub mod data_type {
    pub const CPU: &str = "CPU";
    pub const MEMORY: &str = "Mem";
    pub const IO: &str = "IO";
    pub const NET_IO: &str = "NetIO";
    pub const TEXT: &str = "Text";
    pub const COMMAND: &str = "Command";
}

/// Marker names of the resource tracks, as Mozilla's monitor names them.
pub mod track {
    pub const CPU: &str = "CPU Use";
    pub const MEMORY: &str = "Memory";
    pub const IO: &str = "IO";
    pub const NET_IO: &str = "NetIO";
}

/// The `meta.categories` list. The profiler needs one category coloured grey, and each
/// category's subcategories to start with "Other".
pub fn categories() -> Value {
    let category =
        |name: &str, color: &str| json!({"name": name, "color": color, "subcategories": ["Other"]});
    json!([
        category("Other", "grey"),
        category("Worker", "blue"),
        category("Task", "green"),
        category("User", "yellow"),
        category("Recorder", "red"),
    ])
}

fn field(key: &str, label: &str, format: &str) -> Value {
    json!({"key": key, "label": label, "format": format})
}

fn graph(key: &str, kind: &str, color: &str) -> Value {
    json!({"key": key, "type": kind, "color": color})
}

/// The `meta.markerSchema` list (fields under `data`, as version 47 wants).
pub fn marker_schemas() -> Value {
    let mut schemas = resource_and_text_schemas();
    if let Value::Array(list) = &mut schemas {
        list.extend(MetricKind::ALL.into_iter().map(metric_schema));
        list.push(metric_drops_schema());
    }
    schemas
}

/// One fixed schema per metric kind: a graph track per series (marker name).
fn metric_schema(kind: MetricKind) -> Value {
    let identity = [
        field(metric::key::METRIC, "Metric", "unique-string"),
        field(metric::key::TAGS, "Tags", "string"),
    ];
    let (values, graphs): (Vec<Value>, Vec<Value>) = match kind {
        MetricKind::Counter => (
            vec![field("value", "Sum in the interval", "decimal")],
            vec![graph("value", "bar", "teal")],
        ),
        MetricKind::Gauge => (
            vec![field("value", "Value", "decimal")],
            vec![graph("value", "line-filled", "blue")],
        ),
        MetricKind::Timer | MetricKind::Histogram => {
            let unit = if kind == MetricKind::Timer {
                "milliseconds"
            } else {
                "decimal"
            };
            (
                vec![
                    field("count", "Count", "decimal"),
                    field("min", "Min", unit),
                    field("mean", "Mean", unit),
                    field("max", "Max", unit),
                ],
                vec![
                    graph("max", "line", "red"),
                    graph("mean", "line", "orange"),
                    graph("min", "line", "green"),
                    graph("count", "bar", "grey"),
                ],
            )
        }
        MetricKind::Set => (
            vec![field("distinct", "Distinct members", "integer")],
            vec![graph("distinct", "bar", "purple")],
        ),
    };
    let label = kind
        .value_keys()
        .iter()
        .map(|k| format!("{k} {{marker.data.{k}}}"));
    json!({
        "name": kind.data_type(),
        "tooltipLabel": format!("{{marker.name}}: {}", label.collect::<Vec<_>>().join(", ")),
        "display": [],
        "data": identity.into_iter().chain(values).collect::<Vec<_>>(),
        "graphs": graphs,
    })
}

fn metric_drops_schema() -> Value {
    json!({
        "name": metric::DROPPED_DATA_TYPE,
        "tooltipLabel": "{marker.name}",
        "tableLabel": "{marker.name}: {marker.data.malformed} malformed, {marker.data.oversized} oversized, {marker.data.overSeriesCap} over the series cap",
        "display": ["marker-chart", "marker-table"],
        "data": [
            field("malformed", "Malformed lines", "integer"),
            field("oversized", "Packets over the size cap", "integer"),
            field("overSeriesCap", "Metrics over the series cap", "integer"),
            field("overSetCap", "Set members over the set cap", "integer"),
            field("kernelDropped", "Packets the kernel dropped (buffer full)", "integer"),
            field("example", "First malformed line", "string"),
        ],
    })
}

fn resource_and_text_schemas() -> Value {
    json!([
        {
            "name": data_type::CPU,
            "tooltipLabel": "{marker.name} {marker.data.cpuPercent}",
            "display": [],
            "description": "Cumulative fractions of all cores: each bar includes the ones below it.",
            "data": [
                field("cpuPercent", "CPU Percent", "string"),
                field("user_pct", "User %", "string"),
                field("system_pct", "System %", "string"),
                field("iowait_pct", "IO Wait %", "string"),
                field("nice_pct", "Nice %", "string"),
                field("irq_pct", "IRQ %", "string"),
                field("steal_pct", "Steal %", "string"),
                field("idle_pct", "Idle %", "string"),
            ],
            "graphs": [
                graph("steal", "bar", "purple"),
                graph("softirq", "bar", "orange"),
                graph("iowait", "bar", "red"),
                graph("system", "bar", "grey"),
                graph("user", "bar", "yellow"),
                graph("nice", "bar", "blue"),
            ],
        },
        {
            "name": data_type::MEMORY,
            "tooltipLabel": "{marker.name}: {marker.data.used}",
            "display": [],
            "data": [
                field("used", "Used", "bytes"),
                field("available", "Available", "bytes"),
                field("cached", "Cached", "bytes"),
                field("buffers", "Buffers", "bytes"),
                field("swap", "Swap used", "bytes"),
            ],
            "graphs": [graph("used", "line-filled", "orange")],
        },
        {
            "name": data_type::IO,
            "tooltipLabel": "{marker.name}",
            "display": [],
            "data": [
                field("read_bytes", "Read", "bytes"),
                field("read_count", "Read operations", "integer"),
                field("write_bytes", "Written", "bytes"),
                field("write_count", "Write operations", "integer"),
            ],
            "graphs": [graph("read_bytes", "bar", "green"), graph("write_bytes", "bar", "red")],
        },
        {
            "name": data_type::NET_IO,
            "tooltipLabel": "{marker.name}",
            "display": [],
            "data": [
                field("recv_bytes", "Received", "bytes"),
                field("recv_count", "Packets received", "integer"),
                field("sent_bytes", "Sent", "bytes"),
                field("sent_count", "Packets sent", "integer"),
            ],
            "graphs": [graph("recv_bytes", "bar", "blue"), graph("sent_bytes", "bar", "orange")],
        },
        {
            "name": data_type::TEXT,
            "tooltipLabel": "{marker.name}",
            "tableLabel": "{marker.name} — {marker.data.text}",
            "chartLabel": "{marker.data.text}",
            "display": ["marker-chart", "marker-table", "timeline-overview"],
            "data": [field("text", "Description", "string"), field("cutOff", "Cut off", "string")],
        },
        {
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
        },
    ])
}
