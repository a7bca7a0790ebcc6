//! Recovery at the next start: every log in a state directory whose recorder is gone is
//! finalized once, beside itself. A live recorder holds its log's lock, and so does a
//! recoverer while it finalizes, so two recoverers never finalize the same log. A log whose
//! recorder is still exiting is waited for; one held by a running process is passed over at
//! once, so that a directory of live recordings costs no waiting.

use crate::finalize::{
    finalize_locked, FinalizeError, FinalizeOptions, FinalizeReport, LockWait, LockedLog, Patience,
};
use crate::lock_holder::LockHolder;
use crate::output::remove_if_named;
use crate::reader::ReadError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A recorder locks its log microseconds after creating it; an unlocked log without its
/// first two lines that is older than this was left by a recorder that died starting.
const STARTING_GRACE: Duration = Duration::from_secs(10);

/// What recovery did with one log.
#[derive(Debug)]
#[non_exhaustive]
pub enum Recovery {
    /// Finalized into a profile beside it; the log is removed.
    Finalized(FinalizeReport),
    /// A running recorder, or another recoverer, holds it (or a process that cannot be
    /// identified).
    InUse,
    /// Its recorder died before the log held a recording; the log is removed.
    RemovedEmpty,
    /// Left as it is, for this reason; [`FinalizeError::Busy`] when its recorder was still
    /// exiting, holding the lock, when the wait ended.
    Failed(FinalizeError),
}

/// Recovers every `*.jsonl` log directly in `dir`, in name order, waiting as `wait` says for
/// the lock of each whose holder is exiting. A missing directory has nothing to recover.
pub fn recover(dir: &Path, wait: &LockWait) -> io::Result<Vec<(PathBuf, Recovery)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut logs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .map(|entry| entry.path())
        .filter(|path| is_log_name(path))
        .collect();
    logs.sort();
    Ok(logs
        .into_iter()
        .filter_map(|log| recover_one(&log, wait).map(|outcome| (log, outcome)))
        .collect())
}

fn is_log_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".jsonl") && !name.starts_with('.')
}

/// None when another recoverer finished the log meanwhile.
fn recover_one(log: &Path, wait: &LockWait) -> Option<Recovery> {
    let locked = match LockedLog::lock(log, wait, Patience::Exiting) {
        Ok(locked) => locked,
        Err(
            error @ FinalizeError::Busy {
                holder: LockHolder::Exiting { .. },
                ..
            },
        ) => return Some(Recovery::Failed(error)),
        Err(FinalizeError::Busy { .. }) => return Some(Recovery::InUse),
        Err(FinalizeError::Gone { .. }) => return None,
        Err(FinalizeError::Open { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return None
        }
        Err(error) => return Some(Recovery::Failed(error)),
    };
    match finalize_locked(&locked, &FinalizeOptions::default()) {
        Ok(finalized) => Some(Recovery::Finalized(finalized.report)),
        Err(FinalizeError::NotALog {
            source: ReadError::Empty | ReadError::BadMeta | ReadError::NoThread,
            ..
        }) if is_stale(log) => Some(match remove_if_named(log, &locked.file) {
            // Not named: another recoverer removed it meanwhile.
            Ok(_) => Recovery::RemovedEmpty,
            Err(source) => Recovery::Failed(FinalizeError::RemoveLog {
                path: log.to_owned(),
                source,
            }),
        }),
        Err(FinalizeError::NotALog {
            source: ReadError::Empty | ReadError::BadMeta | ReadError::NoThread,
            ..
        }) => Some(Recovery::InUse),
        Err(error) => Some(Recovery::Failed(error)),
    }
}

fn is_stale(path: &Path) -> bool {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age > STARTING_GRACE))
}
