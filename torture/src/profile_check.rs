//! What every finalized profile must be for the Firefox Profiler (processed format 47), as
//! the e2e tests assert it, returning errors instead of panicking so the suite can count.

use serde_json::Value;

/// A marker of a profile: name, and `data.text` when there is one.
pub struct Row {
    pub name: String,
    pub text: Option<String>,
    pub cut_off: bool,
}

pub fn check_profile(profile: &Value) -> Result<Vec<Row>, String> {
    let meta = &profile["meta"];
    if meta["preprocessedProfileVersion"] != 47 || meta["version"] != 27 {
        return Err("meta versions are not 47 and 27".into());
    }
    if !meta["profilingEndTime"].is_number() || !meta["startTime"].is_number() {
        return Err("meta lacks startTime or profilingEndTime".into());
    }
    if profile["libs"] != serde_json::json!([]) {
        return Err("libs is not []".into());
    }
    let threads = profile["threads"].as_array().ok_or("no threads")?;
    if threads.len() != 1 {
        return Err(format!("{} threads", threads.len()));
    }
    let thread = &threads[0];
    if thread["samples"]["length"] != 0 || !thread["pid"].is_string() {
        return Err("thread samples or pid".into());
    }
    let strings = thread["stringArray"].as_array().ok_or("no stringArray")?;
    let table = &thread["markers"];
    let length = table["length"].as_u64().ok_or("no markers.length")? as usize;
    for column in ["data", "name", "startTime", "endTime", "phase", "category"] {
        if table[column].as_array().map(Vec::len) != Some(length) {
            return Err(format!("markers.{column} is not {length} long"));
        }
    }
    let graph_keys = graph_keys(meta);
    (0..length)
        .map(|i| {
            let name = table["name"][i]
                .as_u64()
                .and_then(|n| strings.get(n as usize))
                .and_then(Value::as_str)
                .ok_or(format!("marker {i}: name not in stringArray"))?;
            let end = &table["endTime"][i];
            let phase = table["phase"][i].as_u64();
            let expected_phase = if end.is_null() { 0 } else { 1 };
            if !table["startTime"][i].is_number() || phase != Some(expected_phase) {
                return Err(format!("marker {i} ({name}): times or phase"));
            }
            let data = &table["data"][i];
            if let Some((_, keys)) = graph_keys.iter().find(|(t, _)| data["type"] == **t) {
                if keys.iter().any(|k| !data[k].is_number()) {
                    return Err(format!("marker {i} ({name}): a graph key is not a number"));
                }
            }
            Ok(Row {
                name: name.to_owned(),
                text: data["text"].as_str().map(str::to_owned),
                cut_off: data["cutOff"].is_string(),
            })
        })
        .collect()
}

fn graph_keys(meta: &Value) -> Vec<(String, Vec<String>)> {
    let schemas = meta["markerSchema"].as_array().cloned().unwrap_or_default();
    schemas
        .iter()
        .filter_map(|schema| {
            let keys = schema["graphs"]
                .as_array()?
                .iter()
                .filter_map(|g| g["key"].as_str().map(str::to_owned))
                .collect();
            Some((schema["name"].as_str()?.to_owned(), keys))
        })
        .collect()
}
