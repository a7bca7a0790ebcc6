//! The steps of a task: its Worker, Task and phase intervals, each with the CPU and memory
//! of the samples it overlaps.

use crate::summary::model::Step;
use crate::summary::tracks::{overlapping, Sample, Tracks};
use serde_json::{Map, Value};
use tc_profile_finalizer::{MarkerRef, Markers};
use tc_profile_format::schema::data_type::{COMMANDS, PROCESS};

/// Categories whose intervals are steps: ours, and Mozilla's resource monitor's phases.
pub(crate) const STEP_CATEGORIES: [&str; 3] = ["Worker", "Task", "Phases"];
/// The types of the task's intervals that are no steps: its processes, and its commands'
/// totals.
const NOT_STEPS: [&str; 2] = [PROCESS, COMMANDS];
/// Commands listed per step.
const STEP_COMMANDS: usize = 3;

/// An interval marker of a step's category, with what a step shows of it.
pub(crate) struct StepMarker<'a> {
    pub(crate) marker: MarkerRef<'a>,
    pub(crate) end: f64,
    pub(crate) category: &'a str,
    pub(crate) data: Option<Value>,
}

impl StepMarker<'_> {
    /// The command, text or phase the marker carries.
    pub(crate) fn detail(&self) -> Option<String> {
        let text = |key: &str| self.data.as_ref()?.get(key)?.as_str().map(str::to_owned);
        text("command")
            .or_else(|| text("phase"))
            .or_else(|| text("text"))
    }

    /// Still open when the recording ended: closed there.
    pub(crate) fn cut_off(&self) -> bool {
        self.data.as_ref().and_then(|d| d.get("cutOff")).is_some()
    }
}

/// The names of `meta.categories`, by index.
pub(crate) fn category_names(meta: &Map<String, Value>) -> Vec<&str> {
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
pub(crate) fn step_markers<'a>(
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

pub(super) fn steps(meta: &Map<String, Value>, markers: &Markers, tracks: &Tracks) -> Vec<Step> {
    step_markers(meta, markers, &STEP_CATEGORIES)
        .map(|step| {
            let (start, end) = (step.marker.start_time, step.end);
            let cpu: Vec<(Sample, f64)> = overlapping(&tracks.cpu, start, end).collect();
            let weight: f64 = cpu.iter().map(|(_, w)| w).sum();
            Step {
                name: step.marker.name.to_owned(),
                detail: step.detail(),
                category: step.category.to_owned(),
                start_ms: start,
                duration_ms: end - start,
                cut_off: step.cut_off(),
                cpu_average: (weight > 0.0)
                    .then(|| cpu.iter().map(|(s, w)| s.value * w).sum::<f64>() / weight),
                cpu_peak: cpu.iter().map(|(s, _)| s.peak).reduce(f64::max),
                peak_memory_bytes: overlapping(&tracks.memory, start, end)
                    .map(|(s, _)| s.peak)
                    .reduce(f64::max)
                    .map(|bytes| bytes as u64),
                top_commands: tracks.top_commands_within(start, end, STEP_COMMANDS),
            }
        })
        .collect()
}
