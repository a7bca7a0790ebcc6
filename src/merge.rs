//! `tc-profile merge`: several profiles or logs in one profile, a process each.

use crate::cli::MergeArgs;
use anyhow::Result;
use tc_profile_finalizer::{escape_controls, merge as merge_profiles, MergeOptions};

pub fn merge(args: MergeArgs) -> Result<u8> {
    let report = merge_profiles(
        &args.inputs,
        &MergeOptions {
            output: args.output,
            force: args.force,
            input_caps: args.input_caps.caps(),
        },
    )?;
    let mut text = format!(
        "tc-profile: {} profiles merged into {} ({} markers): {}",
        report.processes.len(),
        report.output.display(),
        report.markers,
        report.processes.join(", ")
    );
    if !report.renamed_schemas.is_empty() {
        text.push_str(&format!(
            "; schemas declared differently kept apart: {}",
            report.renamed_schemas.join(", ")
        ));
    }
    // Process and schema names come from the inputs, which a task may have written.
    eprintln!("{}", escape_controls(&text));
    Ok(0)
}
