//! `tc-profile compare`: two runs compared step by step on stdout, and merged into one
//! profile with the new run aligned on a step.

use crate::cli::CompareArgs;
use crate::output;
use anyhow::Result;
use std::path::Path;
use tc_profile_finalizer::{
    escape_controls, merge_inputs, read_inputs, MergeOptions, StepCompared,
};
use tc_profile_reports::{compare as compare_runs, Comparison, Run};

pub fn compare(args: CompareArgs) -> Result<u8> {
    let options = MergeOptions {
        output: args.output,
        force: args.force,
        input_caps: args.input_caps.caps(),
    };
    let mut inputs = read_inputs(&[args.base.clone(), args.new.clone()], &options)?;
    let (base_name, new_name) = (file_name(&args.base), file_name(&args.new));
    let comparison = compare_runs(
        Run {
            source: &base_name,
            profile: inputs[0].profile(),
        },
        Run {
            source: &new_name,
            profile: inputs[1].profile(),
        },
        args.align.as_deref(),
    )?;
    inputs[1].shift(comparison.shift_ms);
    inputs[1].add_compared_steps(&compared_steps(&comparison));
    let report = merge_inputs(inputs, &options)?;
    let text = match args.json {
        true => comparison.to_json(),
        false => comparison.to_text(),
    };
    output::to_stdout(&text)?;
    // Step names come from the inputs, which a task may have written.
    eprintln!(
        "tc-profile: both runs merged into {}, the new one aligned on {}",
        report.output.display(),
        escape_controls(&comparison.aligned_on)
    );
    Ok(0)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// A `Compare` marker per matched step, over the step in the new run.
fn compared_steps(comparison: &Comparison) -> Vec<StepCompared> {
    let steps = comparison.steps.iter();
    steps
        .map(|step| StepCompared {
            step: step.step.clone(),
            start_ms: step.new.start_ms,
            end_ms: step.new.start_ms + step.new.duration_ms,
            base_ms: step.base.duration_ms,
            new_ms: step.new.duration_ms,
            change: step.change(),
        })
        .collect()
}
