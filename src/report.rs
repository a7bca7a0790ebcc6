//! What tc-profile says about a profile it wrote, and about its errors.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tc_profile_finalizer::{FinalizeReport, LockHolder, LockWait};

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
