//! The steps of a task: its Worker, Task and phase intervals, which `summary` and `compare`
//! report on and which the finalizer gives their commands' totals.

use crate::{MarkerRef, Markers};
use serde_json::{Map, Value};
use tc_profile_format::schema::data_type::{COMMANDS, COMMAND_TOTALS, PROCESS};

/// Categories whose intervals are steps: ours, and Mozilla's resource monitor's phases.
pub const STEP_CATEGORIES: [&str; 3] = ["Worker", "Task", "Phases"];
/// The types of the task's intervals that are no steps: its processes, and its commands'
/// totals (each second's, and each step's).
const NOT_STEPS: [&str; 3] = [PROCESS, COMMANDS, COMMAND_TOTALS];
/// An interval marker of a step's category, with what a step shows of it.
pub struct StepMarker<'a> {
    pub marker: MarkerRef<'a>,
    pub end: f64,
    pub category: &'a str,
    pub data: Option<Value>,
}

impl StepMarker<'_> {
    /// The command, text or phase the marker carries.
    pub fn detail(&self) -> Option<String> {
        let text = |key: &str| self.data.as_ref()?.get(key)?.as_str().map(str::to_owned);
        text("command")
            .or_else(|| text("phase"))
            .or_else(|| text("text"))
    }

    /// Still open when the recording ended: closed there.
    pub fn cut_off(&self) -> bool {
        self.data.as_ref().and_then(|d| d.get("cutOff")).is_some()
    }
}

/// The names of `meta.categories`, by index.
pub fn category_names(meta: &Map<String, Value>) -> Vec<&str> {
    meta.get("categories")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
                .collect()
        })
        .unwrap_or_default()
}

/// The intervals of the `categories` named that are steps (not a process's or a command's).
pub fn step_markers<'a>(
    meta: &'a Map<String, Value>,
    markers: &'a Markers,
    categories: &'a [&'a str],
) -> impl Iterator<Item = StepMarker<'a>> + 'a {
    let names = category_names(meta);
    markers.iter().filter_map(move |marker| {
        let end = marker.end_time?;
        let category = *names.get(marker.category.unwrap_or(0) as usize)?;
        if !categories.contains(&category) {
            return None;
        }
        // A process of the task is no step: most say so first, and are not parsed.
        if marker
            .leading_type()
            .is_some_and(|t| NOT_STEPS.contains(&t))
        {
            return None;
        }
        let data = marker.data_value();
        let data_type = data.as_ref().and_then(|d| d.get("type")?.as_str());
        if data_type.is_some_and(|t| NOT_STEPS.contains(&t)) {
            return None;
        }
        Some(StepMarker {
            marker,
            end,
            category,
            data,
        })
    })
}
