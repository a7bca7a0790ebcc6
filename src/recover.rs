//! `tc-profile recover`, and the recovery that `run --state-dir` does before it records.

use crate::cli::RecoverArgs;
use crate::os::remove_left_cgroup;
use crate::report::{describe_finalized, lock_wait};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::Duration;
use tc_profile_finalizer::{recover, Recovery};

pub fn recover_command(args: RecoverArgs) -> Result<u8> {
    let failed = recover_state_dir(&args.state_dir, args.lock_wait.wait, true)?;
    if failed > 0 {
        bail!(
            "{failed} logs in {} could not be recovered (see above)",
            args.state_dir.display()
        );
    }
    Ok(0)
}

/// Recovers `dir`, one line per log (logs in use only when `show_in_use`), waiting up to
/// `wait` for each log whose recorder is exiting; returns how many logs failed.
pub fn recover_state_dir(dir: &Path, wait: Duration, show_in_use: bool) -> Result<usize> {
    let outcomes = recover(dir, &lock_wait(wait))
        .with_context(|| format!("cannot list the state directory {}", dir.display()))?;
    let mut failed = 0;
    for (log, outcome) in outcomes {
        let log = log.display();
        match outcome {
            Recovery::Finalized(report) => {
                eprintln!(
                    "tc-profile: recovered {log}: {}",
                    describe_finalized(&report)
                );
                remove_left_cgroup(&report);
            }
            Recovery::InUse if show_in_use => {
                eprintln!("tc-profile: {log} is being recorded (locked); left alone")
            }
            Recovery::RemovedEmpty => {
                eprintln!("tc-profile: removed {log}: its recorder died before recording")
            }
            Recovery::Failed(error) => {
                failed += 1;
                eprintln!("tc-profile: error: {error:#}; left as it is")
            }
            _ => {}
        }
    }
    Ok(failed)
}
