//! The steps of a task: its Worker, Task and phase intervals, each with the CPU and memory
//! of the samples it overlaps.

use crate::summary::model::Step;
use crate::summary::tracks::{overlapping, Sample, Tracks};
use serde_json::{Map, Value};
use tc_profile_finalizer::{step_markers, Markers, STEP_CATEGORIES};

/// Commands listed per step.
const STEP_COMMANDS: usize = 3;

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
