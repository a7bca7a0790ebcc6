//! The schema of a task-log line (SPEC.md, "Log lines"): the component (or stream) as the
//! marker's name, the message in the chart, the table and the search.

use serde_json::{json, Value};

/// The `Log` schema. `searchable` is what version 47 reads; later front-ends search every
/// string field and drop the key when they upgrade the profile.
pub fn log_schema() -> Value {
    let field = |key: &str, label: &str, format: &str| json!({"key": key, "label": label, "format": format, "searchable": true});
    json!({
        "name": "Log",
        "tooltipLabel": "{marker.name}: {marker.data.message}",
        "tableLabel": "{marker.data.message}",
        "chartLabel": "{marker.data.message}",
        "display": ["marker-chart", "marker-table"],
        "colorField": "color",
        "description": "A line of the task's log, at its own timestamp when it has one.",
        "data": [
            field("message", "Message", "string"),
            field("level", "Level", "string"),
            field("stream", "Stream", "string"),
            {"key": "length", "label": "Bytes (cut at 1 KiB)", "format": "bytes"},
            {"key": "invalidUtf8", "label": "Invalid UTF-8", "format": "string"},
        ],
    })
}
