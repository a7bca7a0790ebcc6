//! What a task's own schemas may hold, and what a marker of one must hold to be drawn
//! (SPEC.md, "Marker files"): beside the recorder's schemas, which a task cannot use.

use serde_json::{json, Map, Value};

/// A task's schema as the profile can show it: a `unique-string` field becomes `string`,
/// since its value must be an index into the profile's string table, which a task cannot
/// know; the task's text is shown as it wrote it.
pub fn as_task_schema(schema: &mut Map<String, Value>) {
    let Some(Value::Array(fields)) = schema.get_mut("data") else {
        return;
    };
    for field in fields {
        if field["format"] == "unique-string" {
            field["format"] = json!("string");
        }
    }
}

/// The keys of a schema's `graphs`: a marker of the schema with every one of them is drawn
/// on its graph track, and the front-end refuses the profile if one of them is not a number.
pub fn graph_keys(schema: &Map<String, Value>) -> Vec<String> {
    let graphs = schema.get("graphs").and_then(Value::as_array);
    graphs
        .into_iter()
        .flatten()
        .filter_map(|graph| Some(graph.get("key")?.as_str()?.to_owned()))
        .collect()
}

/// Whether `data` holds a number under every graph key (SPEC.md, "Marker files").
pub fn graph_values_are_numbers(graph_keys: &[String], data: &Map<String, Value>) -> bool {
    graph_keys
        .iter()
        .all(|key| data.get(key).is_some_and(Value::is_number))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_graph_key_must_hold_a_number() {
        let schema = json!({"name": "T", "graphs": [{"key": "a"}, {"key": "b"}]});
        let keys = graph_keys(schema.as_object().unwrap());
        assert_eq!(keys, ["a", "b"]);
        let ok = |data: Value| graph_values_are_numbers(&keys, data.as_object().unwrap());
        assert!(ok(json!({"type": "T", "a": 1, "b": 2.5})));
        assert!(!ok(json!({"type": "T", "a": 1})));
        assert!(!ok(json!({"type": "T", "a": 1, "b": "2"})));
        assert!(!ok(json!({"type": "T", "a": null})));
        assert!(graph_keys(&Map::new()).is_empty());
    }
}
