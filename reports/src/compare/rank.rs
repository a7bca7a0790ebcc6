//! Which steps and commands account for the difference between two runs. A step's own
//! change is what the steps inside it do not explain: its change of duration less theirs,
//! its change of peak memory less the largest of theirs; so that the wrapped command, which
//! holds every step of the task, comes first only when the time went outside them.

use super::model::{ProcessDelta, StepDelta};
use super::steps::RunStep;
use crate::summary::Summary;
use std::collections::BTreeMap;

/// Commands listed.
const TOP_PROCESSES: usize = 5;
/// A command whose change is under this share of the largest figure is not listed.
const NOTABLE: f64 = 0.01;

/// `steps` (one a pair of `pairs`, in its order) weighted and sorted, the heaviest first;
/// `longest_ms` is the longer run's duration.
pub(super) fn rank(
    mut steps: Vec<StepDelta>,
    pairs: &[(RunStep, RunStep)],
    longest_ms: f64,
) -> Vec<StepDelta> {
    let highest_memory = steps
        .iter()
        .flat_map(|s| [s.base.peak_memory_bytes, s.new.peak_memory_bytes])
        .flatten()
        .max()
        .unwrap_or(0) as f64;
    let weights: Vec<f64> = (0..steps.len())
        .map(|at| {
            let inner = directly_inside(pairs, at);
            let own_ms = steps[at].delta_ms - inner.iter().map(|&i| steps[i].delta_ms).sum::<f64>();
            let memory = |i: usize| memory_delta(&steps[i]);
            let largest_inner = inner
                .iter()
                .map(|&i| memory(i))
                .max_by(|a, b| a.abs().total_cmp(&b.abs()))
                .unwrap_or(0.0);
            let own_bytes = memory(at) - largest_inner;
            share(own_ms, longest_ms).max(share(own_bytes, highest_memory))
        })
        .collect();
    for (step, weight) in steps.iter_mut().zip(weights) {
        step.weight = weight;
    }
    steps.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    steps
}

/// The pairs inside the pair `at` in both runs and inside no other such pair.
fn directly_inside(pairs: &[(RunStep, RunStep)], at: usize) -> Vec<usize> {
    let (base, new) = &pairs[at];
    let inside: Vec<usize> = (0..pairs.len())
        .filter(|&i| i != at && base.holds(&pairs[i].0) && new.holds(&pairs[i].1))
        .collect();
    let held_by_another = |i: usize| {
        inside
            .iter()
            .any(|&o| o != i && pairs[o].0.holds(&pairs[i].0) && pairs[o].1.holds(&pairs[i].1))
    };
    inside
        .iter()
        .copied()
        .filter(|&i| !held_by_another(i))
        .collect()
}

fn memory_delta(step: &StepDelta) -> f64 {
    match (step.base.peak_memory_bytes, step.new.peak_memory_bytes) {
        (Some(base), Some(new)) => new as f64 - base as f64,
        _ => 0.0,
    }
}

/// `part` of `whole`, unsigned; 0 of nothing.
fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part.abs() / whole
    } else {
        0.0
    }
}

/// The commands (else the processes) of both runs whose CPU time or peak RSS changed most,
/// each against the largest of either run.
pub(super) fn processes(base: &Summary, new: &Summary) -> Vec<ProcessDelta> {
    let by_command = !base.top_commands.is_empty() || !new.top_commands.is_empty();
    let mut rows: BTreeMap<String, ProcessDelta> = BTreeMap::new();
    for (summary, is_new) in [(base, false), (new, true)] {
        let uses: Vec<(String, f64, Option<u64>)> = if by_command {
            let commands = summary.top_commands.iter();
            commands
                .map(|c| (c.command.clone(), c.cpu_ms, Some(c.peak_rss_bytes)))
                .collect()
        } else {
            let processes = summary.top_processes.iter();
            processes
                .map(|p| {
                    let command = p.command.clone().unwrap_or_else(|| p.name.clone());
                    (command, p.cpu_ms, p.peak_rss_bytes)
                })
                .collect()
        };
        for (command, cpu_ms, peak) in uses {
            let row = rows.entry(command.clone()).or_insert(ProcessDelta {
                command,
                base_cpu_ms: 0.0,
                new_cpu_ms: 0.0,
                base_peak_rss_bytes: None,
                new_peak_rss_bytes: None,
            });
            let (cpu, rss) = match is_new {
                false => (&mut row.base_cpu_ms, &mut row.base_peak_rss_bytes),
                true => (&mut row.new_cpu_ms, &mut row.new_peak_rss_bytes),
            };
            *cpu += cpu_ms;
            *rss = (*rss).max(peak);
        }
    }
    let rows: Vec<ProcessDelta> = rows.into_values().collect();
    let most_cpu = rows
        .iter()
        .map(|r| r.base_cpu_ms.max(r.new_cpu_ms))
        .fold(0.0, f64::max);
    let rss = |r: &ProcessDelta| {
        let bytes = |b: Option<u64>| b.unwrap_or(0) as f64;
        (bytes(r.base_peak_rss_bytes), bytes(r.new_peak_rss_bytes))
    };
    let most_rss = rows
        .iter()
        .map(|r| rss(r).0.max(rss(r).1))
        .fold(0.0, f64::max);
    let change = |r: &ProcessDelta| {
        let (base, new) = rss(r);
        share(r.new_cpu_ms - r.base_cpu_ms, most_cpu).max(share(new - base, most_rss))
    };
    let mut ranked: Vec<(f64, ProcessDelta)> = rows
        .into_iter()
        .map(|r| (change(&r), r))
        .filter(|(weight, _)| *weight >= NOTABLE)
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    ranked.truncate(TOP_PROCESSES);
    ranked.into_iter().map(|(_, row)| row).collect()
}
