//! What tc-profile says about a profile it wrote, and about its errors.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tc_profile_finalizer::{FinalizeReport, LockHolder, LockWait};
use tc_profile_recorder::{own_cgroup_name, remove_created_cgroup};

/// The error and its causes, each once: the libraries' errors quote their source already.
pub fn describe_error(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1).map(ToString::to_string) {
        // A message that names its cause and then says what to do has it inside, not last.
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Waiting up to `limit` for a log's lock, with one line on stderr when the wait begins.
pub fn lock_wait(limit: Duration) -> LockWait {
    LockWait {
        limit,
        on_wait: Some(Arc::new(
            |log: &Path, holder: &LockHolder, limit: Duration| {
                eprintln!(
                    "tc-profile: {} is locked by {holder}; waiting up to {} s for it to let go",
                    log.display(),
                    limit.as_secs_f64()
                )
            },
        )),
    }
}

/// "profile written to P (N markers); recording ended early at ...; ...".
pub fn describe_finalized(report: &FinalizeReport) -> String {
    let mut text = format!(
        "profile written to {} ({} markers)",
        report.output.display(),
        report.markers
    );
    let compaction = &report.compaction;
    if compaction.ended_early {
        text.push_str(&format!(
            "; recording ended early at {:.3} s, {} intervals cut off",
            compaction.end_time / 1000.0,
            compaction.cut_off
        ));
    }
    if compaction.data_missing > 0 {
        text.push_str(&format!(
            "; {} spans of missing data",
            compaction.data_missing
        ));
    }
    if !report.damage.is_empty() {
        text.push_str(&format!("; {}", report.damage.summary()));
    }
    if !report.marker_problems.is_empty() {
        text.push_str(&format!("; {}", report.marker_problems.summary()));
    }
    text
}

/// Removes the cgroup that a killed recorder left behind (`run --own-cgroup`); a warning
/// when it cannot: the profile is written all the same.
pub fn remove_left_cgroup(report: &FinalizeReport) {
    let Some(path) = report.left_cgroup.as_deref().filter(|p| p.exists()) else {
        return;
    };
    // A killed recorder that had our pid: `run --own-cgroup` has already removed its cgroup
    // and made one of the same name for this task.
    if path.file_name() == Some(std::ffi::OsStr::new(&own_cgroup_name())) {
        return;
    }
    match remove_created_cgroup(path) {
        Ok(()) => eprintln!(
            "tc-profile: removed {}, the cgroup its recorder left",
            path.display()
        ),
        Err(error) => eprintln!("tc-profile: warning: {error}"),
    }
}
