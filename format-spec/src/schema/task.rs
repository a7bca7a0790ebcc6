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
