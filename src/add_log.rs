//! `tc-profile add-log`: a task's log added to a profile or a log, aligned by its
//! timestamps.

use crate::cli::AddLogArgs;
use anyhow::Result;

pub fn add_log(args: AddLogArgs) -> Result<u8> {
    let caps = args.input_caps.caps();
    let lines = tc_profile_finalizer::add_log(&args.input, caps, &args.task_log, &args.output)?;
    eprintln!(
        "tc-profile: {} written, with {lines} lines of {}",
        args.output.display(),
        args.task_log.display()
    );
    Ok(0)
}
