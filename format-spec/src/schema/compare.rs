//! The schema of a step compared between two runs (`tc-profile compare`; SPEC.md, "A
//! merged profile"): the step's name, its duration in each run and the difference (in ms,
//! and as the table shows it).

use serde_json::{json, Value};

/// The `Compare` schema.
pub fn compare_schema() -> Value {
    json!({
        "name": "Compare",
        "tooltipLabel": "{marker.data.step}: {marker.data.change} ({marker.data.base} then {marker.data.new})",
        "tableLabel": "{marker.data.step}: {marker.data.change}, {marker.data.base} then {marker.data.new}",
        "chartLabel": "{marker.data.step} {marker.data.change}",
        "display": ["marker-chart", "marker-table"],
        "description": "A step of the compared runs: its duration in the base run and in the new one.",
        "data": [
            {"key": "step", "label": "Step", "format": "string", "searchable": true},
            {"key": "base", "label": "Base run", "format": "duration"},
            {"key": "new", "label": "New run", "format": "duration"},
            {"key": "delta", "label": "Difference", "format": "milliseconds"},
            {"key": "change", "label": "Change", "format": "string"},
        ],
    })
}
