//! CPU and memory over the whole recording: time-weighted averages, percentiles and peaks.

use crate::summary::model::{CpuFigures, CpuUse, MemoryUse};
use crate::summary::tracks::{Sample, Tracks};

pub(super) fn cpu_use(tracks: &Tracks) -> Option<CpuUse> {
    Some(CpuUse {
        all: cpu_figures(&tracks.cpu)?,
        task: cpu_figures(&tracks.task_cpu),
        other: cpu_figures(&tracks.other_cpu),
    })
}

fn cpu_figures(samples: &[Sample]) -> Option<CpuFigures> {
    let total: f64 = samples.iter().map(Sample::duration).sum();
    if samples.is_empty() || total <= 0.0 {
        return None;
    }
    let average = samples.iter().map(|s| s.value * s.duration()).sum::<f64>() / total;
    Some(CpuFigures {
        average,
        p95: weighted_percentile(samples, 0.95),
        peak: samples.iter().map(|s| s.peak).fold(0.0, f64::max),
    })
}

/// The smallest value at or under which `share` of the samples' time lies.
fn weighted_percentile(samples: &[Sample], share: f64) -> f64 {
    let mut sorted: Vec<(f64, f64)> = samples.iter().map(|s| (s.value, s.duration())).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = sorted.iter().map(|(_, weight)| weight).sum();
    let target = share * total * (1.0 - 1e-9);
    let mut covered = 0.0;
    for (value, weight) in &sorted {
        covered += weight;
        if covered >= target {
            return *value;
        }
    }
    sorted.last().map_or(0.0, |(value, _)| *value)
}

pub(super) fn memory_use(tracks: &Tracks) -> Option<MemoryUse> {
    let highest = |samples: &[Sample]| samples.iter().map(|s| s.peak).reduce(f64::max);
    let peak = tracks
        .memory
        .iter()
        .max_by(|a, b| a.peak.total_cmp(&b.peak))?;
    Some(MemoryUse {
        peak_bytes: peak.peak as u64,
        peak_at_ms: peak.start,
        peak_swap_bytes: highest(&tracks.swap).unwrap_or(0.0) as u64,
        task_peak_bytes: highest(&tracks.task_memory).map(|bytes| bytes as u64),
    })
}
