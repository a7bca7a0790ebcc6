//! The pieces every schema is made of: a field under `data`, and a graph of a track.

use serde_json::{json, Value};

pub(super) fn field(key: &str, label: &str, format: &str) -> Value {
    json!({"key": key, "label": label, "format": format})
}

pub(super) fn graph(key: &str, kind: &str, color: &str) -> Value {
    json!({"key": key, "type": kind, "color": color})
}
