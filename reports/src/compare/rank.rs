//! Which steps and commands account for the difference between two runs. A step's own
//! change is what the steps inside it do not explain: the change of its time outside them
//! (steps inside may overlap: their union is taken out), its change of peak memory less the
//! largest of theirs; so that the wrapped command, which holds every step of the task,
//! comes first only when the time went outside them.

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
            let outside = |run: fn(&(RunStep, RunStep)) -> &RunStep| {
                let step = run(&pairs[at]);
                step.duration_ms() - covered(inner.iter().map(|&i| run(&pairs[i])))
            };
            let own_ms = outside(|pair| &pair.1) - outside(|pair| &pair.0);
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

/// The time the `steps` cover, those that overlap counted once.
fn covered<'a>(steps: impl Iterator<Item = &'a RunStep>) -> f64 {
    let mut spans: Vec<(f64, f64)> = steps.map(|s| (s.start_ms, s.end_ms)).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut reached = f64::NEG_INFINITY;
    for (start, end) in spans {
        total += (end - start.max(reached)).max(0.0);
        reached = reached.max(end);
    }
    total
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::model::StepFigures;

    fn step(start_ms: f64, end_ms: f64) -> RunStep {
        RunStep {
            category: "User".to_owned(),
            name: format!("{start_ms}"),
            occurrence: 0,
            label: String::new(),
            start_ms,
            end_ms,
            cut_off: false,
        }
    }

    fn delta(pair: &(RunStep, RunStep), peaks: (u64, u64)) -> StepDelta {
        let figures = |step: &RunStep, peak: u64| StepFigures {
            start_ms: step.start_ms,
            duration_ms: step.duration_ms(),
            cut_off: false,
            cpu_seconds: None,
            cores: None,
            peak_memory_bytes: Some(peak),
            disk_bytes: None,
            network_bytes: None,
        };
        StepDelta {
            step: pair.0.name.clone(),
            category: pair.0.category.clone(),
            base: figures(&pair.0, peaks.0),
            new: figures(&pair.1, peaks.1),
            delta_ms: pair.1.duration_ms() - pair.0.duration_ms(),
            weight: 0.0,
        }
    }

    #[test]
    fn the_steps_inside_the_command_explain_its_change_before_it() {
        let pairs = [
            (step(0.0, 5000.0), step(0.0, 7000.0)),      // the command
            (step(100.0, 600.0), step(100.0, 2600.0)),   // 2 s slower
            (step(700.0, 1700.0), step(2700.0, 3700.0)), // 300 MB more
        ];
        let mb = 1_000_000;
        let steps = pairs
            .iter()
            .zip([
                (400 * mb, 700 * mb),
                (10 * mb, 10 * mb),
                (400 * mb, 700 * mb),
            ])
            .map(|(pair, peaks)| delta(pair, peaks))
            .collect();
        let ranked = rank(steps, &pairs, 7000.0);
        let names: Vec<&str> = ranked.iter().map(|s| s.step.as_str()).collect();
        assert_eq!(names, ["700", "100", "0"], "{ranked:#?}");
        assert_eq!(ranked[2].weight, 0.0, "the command's change is all inside");
    }

    #[test]
    fn overlapping_steps_cover_their_union() {
        let steps = [
            step(0.0, 10.0),
            step(5.0, 12.0),
            step(20.0, 25.0),
            step(21.0, 22.0),
        ];
        assert_eq!(covered(steps.iter()), 17.0);
    }
}
