//! The steps of a task: its Worker, Task and phase intervals, each with the CPU and memory
//! of the samples it overlaps.

use crate::summary::model::Step;
use crate::summary::tracks::{overlapping, Sample, Tracks};
use serde_json::{Map, Value};
use tc_profile_finalizer::Markers;
use tc_profile_format::schema::data_type::{COMMANDS, PROCESS};

/// Categories whose intervals are steps: ours, and Mozilla's resource monitor's phases.
const STEP_CATEGORIES: [&str; 3] = ["Worker", "Task", "Phases"];
/// The types of the task's intervals that are no steps: its processes, and its commands'
/// totals.
const NOT_STEPS: [&str; 2] = [PROCESS, COMMANDS];
/// Commands listed per step.
const STEP_COMMANDS: usize = 3;

pub(super) fn steps(meta: &Map<String, Value>, markers: &Markers, tracks: &Tracks) -> Vec<Step> {
    let categories: Vec<&str> = meta
        .get("categories")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
                .collect()
        })
        .unwrap_or_default();
    markers
        .iter()
        .filter_map(|marker| {
            let end = marker.end_time?;
            let category = *categories.get(marker.category.unwrap_or(0) as usize)?;
            if !STEP_CATEGORIES.contains(&category) {
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
            let data = data.as_ref();
            let data_type = data.and_then(|d| d.get("type")).and_then(Value::as_str);
            if data_type.is_some_and(|t| NOT_STEPS.contains(&t)) {
                return None;
            }
            let text = |key: &str| data?.get(key)?.as_str().map(str::to_owned);
            let cpu: Vec<(Sample, f64)> =
                overlapping(&tracks.cpu, marker.start_time, end).collect();
            let weight: f64 = cpu.iter().map(|(_, w)| w).sum();
            Some(Step {
                name: marker.name.to_owned(),
                detail: text("command")
                    .or_else(|| text("phase"))
                    .or_else(|| text("text")),
                category: category.to_owned(),
                start_ms: marker.start_time,
                duration_ms: end - marker.start_time,
                cut_off: data.and_then(|d| d.get("cutOff")).is_some(),
                cpu_average: (weight > 0.0)
                    .then(|| cpu.iter().map(|(s, w)| s.value * w).sum::<f64>() / weight),
                cpu_peak: cpu.iter().map(|(s, _)| s.peak).reduce(f64::max),
                peak_memory_bytes: overlapping(&tracks.memory, marker.start_time, end)
                    .map(|(s, _)| s.peak)
                    .reduce(f64::max)
                    .map(|bytes| bytes as u64),
                top_commands: tracks.top_commands_within(marker.start_time, end, STEP_COMMANDS),
            })
        })
        .collect()
}
