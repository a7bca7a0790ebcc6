//! Two runs of a task compared step by step: [`compare`] matches their steps (`steps.rs`),
//! takes each step's figures from the summary of its window (`summarize_window`), ranks
//! them by how much of the difference each accounts for by itself (`rank.rs`), and says how
//! each run ended and which commands changed most. Text (`text.rs`) or JSON.

mod model;
mod rank;
mod steps;
mod text;

pub use model::{
    Comparison, ProcessDelta, RunEnding, StepDelta, StepFigures, StepSpan, COMPARE_VERSION,
};

use crate::summary::{summarize, summarize_window, Summary, Window};
use serde_json::Value;
use steps::{match_steps, run_steps, RunStep};
use tc_profile_finalizer::Profile;
use tc_profile_format::schema::data_type::COMMAND;
use tc_profile_format::schema::track::OOM_KILL;

/// One run to compare: its profile and the file it came from.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    pub source: &'a str,
    pub profile: &'a Profile,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum CompareError {
    #[error(
        "{base} and {new} have no step in common (no lifecycle step, task interval, command \
         or log component of the same name); compare two runs of one task"
    )]
    NoCommonStep { base: String, new: String },
    #[error("--align {step:?} names no step of {missing}; name a step of both runs: {common}")]
    AlignAbsent {
        step: String,
        missing: String,
        common: String,
    },
}

/// Compares `new` with `base`, aligned on the step named `align` (by name, or as the table
/// shows it), else on the first step they share.
pub fn compare(base: Run, new: Run, align: Option<&str>) -> Result<Comparison, CompareError> {
    let matched = match_steps(run_steps(base.profile), run_steps(new.profile));
    let (aligned_base, aligned_new) = aligned(&matched.pairs, base, new, align)?;
    let shift_ms = (start_time(base.profile) + aligned_base.start_ms)
        - (start_time(new.profile) + aligned_new.start_ms);
    let aligned_on = aligned_base.label.clone();
    let whole = (summarize(base.profile), summarize(new.profile));
    let steps = matched
        .pairs
        .iter()
        .map(|(b, n)| StepDelta {
            step: b.label.clone(),
            category: b.category.clone(),
            base: figures(base.profile, b),
            new: figures(new.profile, n),
            delta_ms: n.duration_ms() - b.duration_ms(),
            weight: 0.0,
        })
        .collect();
    let ranked = rank::rank(
        steps,
        &matched.pairs,
        whole.0.duration_ms.max(whole.1.duration_ms),
    );
    Ok(Comparison {
        compare_version: COMPARE_VERSION,
        base: ending(base, &whole.0),
        new: ending(new, &whole.1),
        aligned_on,
        shift_ms,
        steps: ranked,
        only_in_base: matched.only_in_base.iter().map(span).collect(),
        only_in_new: matched.only_in_new.iter().map(span).collect(),
        processes: rank::processes(&whole.0, &whole.1),
    })
}

impl Comparison {
    /// The table for a terminal (bold headings as ANSI escapes).
    pub fn to_text(&self) -> Vec<u8> {
        text::serialize(self)
    }

    pub fn to_json(&self) -> Vec<u8> {
        // Strings, numbers and options only: serializing cannot fail.
        let mut bytes = serde_json::to_vec_pretty(self)
            .unwrap_or_else(|e| unreachable!("serialize a comparison: {e}"));
        bytes.push(b'\n');
        bytes
    }
}

impl StepDelta {
    /// The change of duration as the table shows it: `+2.01s`.
    pub fn change(&self) -> String {
        text::signed_duration(self.delta_ms)
    }
}

/// The pair of steps to align: the one `align` names, else the first the runs share.
fn aligned<'p>(
    pairs: &'p [(RunStep, RunStep)],
    base: Run,
    new: Run,
    align: Option<&str>,
) -> Result<(&'p RunStep, &'p RunStep), CompareError> {
    let Some(wanted) = align else {
        let first = pairs
            .iter()
            .min_by(|a, b| a.0.start_ms.total_cmp(&b.0.start_ms));
        return first
            .map(|(b, n)| (b, n))
            .ok_or_else(|| CompareError::NoCommonStep {
                base: base.source.to_owned(),
                new: new.source.to_owned(),
            });
    };
    let named = |step: &RunStep| step.name == wanted || step.label == wanted;
    // As the table shows it first: `setup` is the interval before the log component.
    let pair = pairs
        .iter()
        .find(|(b, _)| b.label == wanted)
        .or_else(|| pairs.iter().find(|(b, _)| named(b)));
    if let Some((b, n)) = pair {
        return Ok((b, n));
    }
    let in_base = run_steps(base.profile).iter().any(named);
    let mut common: Vec<&str> = pairs.iter().map(|(b, _)| b.label.as_str()).collect();
    common.dedup();
    Err(CompareError::AlignAbsent {
        step: wanted.to_owned(),
        missing: if in_base { new.source } else { base.source }.to_owned(),
        common: if common.is_empty() {
            "they share none".to_owned()
        } else {
            common.join(", ")
        },
    })
}

fn start_time(profile: &Profile) -> f64 {
    profile
        .meta()
        .get("startTime")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// What a step used in its run: the summary of its window.
fn figures(profile: &Profile, step: &RunStep) -> StepFigures {
    let window = Window {
        from_ms: step.start_ms,
        to_ms: step.end_ms,
    };
    let summary = summarize_window(profile, window);
    let seconds = step.duration_ms() / 1000.0;
    let cores = summary.cpu.as_ref().and_then(|cpu| {
        let share = cpu.task.as_ref().unwrap_or(&cpu.all).average;
        Some(share * f64::from(summary.machine.logical_cpus?))
    });
    let memory = summary.memory.as_ref();
    StepFigures {
        start_ms: step.start_ms,
        duration_ms: step.duration_ms(),
        cut_off: step.cut_off,
        cpu_seconds: cores.map(|cores| cores * seconds),
        cores,
        peak_memory_bytes: memory.map(|m| m.task_peak_bytes.unwrap_or(m.peak_bytes)),
        disk_bytes: summary.disk.map(|d| d.read_bytes + d.written_bytes),
        network_bytes: summary.network.map(|n| n.received_bytes + n.sent_bytes),
    }
}

fn span(step: &RunStep) -> StepSpan {
    StepSpan {
        step: step.label.clone(),
        category: step.category.clone(),
        start_ms: step.start_ms,
        duration_ms: step.duration_ms(),
        cut_off: step.cut_off,
    }
}

/// How a run ended: its recording's end, its command's status, OOM kills, a timeout.
fn ending(run: Run, summary: &Summary) -> RunEnding {
    let markers = run.profile.markers();
    let exit_status = markers
        .iter()
        .filter(|m| m.name == COMMAND)
        .filter_map(|m| m.data_value()?.get("status")?.as_str().map(str::to_owned))
        .last();
    let timed_out = run
        .profile
        .meta()
        .get("tcProfile")
        .and_then(|tc| tc.get("timedOut"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    RunEnding {
        source: run.source.to_owned(),
        duration_ms: summary.duration_ms,
        complete: summary.complete,
        ended_early_at_ms: summary.ended_early_at_ms,
        exit_status,
        oom_kills: markers.iter().filter(|m| m.name == OOM_KILL).count(),
        timed_out,
    }
}
