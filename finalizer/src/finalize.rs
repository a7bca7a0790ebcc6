//! Finalizing one log: lock it, read it through the lock, merge the marker files it did
//! not take, compact, write the profile atomically, and only then remove the log.

use crate::compression::{InputCaps, OverCap};
use crate::input::{self, ProgressFn};
use crate::lock_holder::LockHolder;
use crate::markers::{merge_profile_dir, profile_dir_of};
use crate::output::{self, names_file, write_profile};
use crate::problems::Problems;
use crate::profile::{compact, Compaction, Profile};
use crate::reader::{read_log, Damage, ReadError, Recording};
use crate::task_log::{merge_followed_task_log, merge_task_log};
use std::fs::{File, TryLockError};
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use tc_profile_format::marker_file::{Limits, Problem};
use tc_profile_format::{CgroupInfo, Gap};

/// How to finalize.
#[derive(Clone, Default)]
pub struct FinalizeOptions {
    /// Where to write the profile; default: [`default_output`]. A `.gz` or `.zst` name is
    /// compressed.
    pub output: Option<PathBuf>,
    /// Keep the log after the profile is durable.
    pub keep_log: bool,
    /// The profile directory whose marker files to merge; default: the log's
    /// `meta.tcProfile.profileDir`, when it still exists.
    pub profile_dir: Option<PathBuf>,
    /// Caps on reading the profile directory.
    pub limits: Limits,
    /// A task's log file to add (`finalize --task-log`); default: the file the recorder
    /// followed, from its last checkpoint.
    pub task_log: Option<PathBuf>,
    /// Spans missing from the log that its recorder knows of but could not write into it
    /// (its disk still failed at the end).
    pub unwritten_gaps: Vec<Gap>,
    /// Told how far reading the log has come.
    pub progress: Option<Arc<ProgressFn>>,
    /// How far a compressed log may decompress.
    pub input_caps: InputCaps,
}

/// What finalizing did.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalizeReport {
    pub output: PathBuf,
    pub bytes_written: u64,
    /// Markers in the profile, notes included.
    pub markers: usize,
    pub compaction: Compaction,
    pub damage: Damage,
    /// The profile directory merged, if any.
    pub profile_dir: Option<PathBuf>,
    /// What was dropped from its marker files (by the recorder and here).
    pub marker_problems: Problems,
    pub log_removed: bool,
    /// The cgroup that the log's recorder created for its task (`run --own-cgroup`), when the
    /// recording ended early: a killed recorder leaves it behind, for the caller to remove.
    pub left_cgroup: Option<PathBuf>,
}

/// A log finalized: what was done, and the profile written, still in memory for whoever
/// reports on it next (the end of `run` and `record`), so that it is not read back.
pub struct Finalized {
    pub report: FinalizeReport,
    pub profile: Profile,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizeError {
    #[error("cannot read {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("{path} {source}")]
    OverCap { path: PathBuf, source: OverCap },
    #[error("{path} is not a tc-profile log: {source}")]
    NotALog { path: PathBuf, source: ReadError },
    #[error("the output {path} would overwrite the log; choose another -o")]
    OutputIsLog { path: PathBuf },
    #[error("cannot read the profile directory {path}: {source}; check --profile-dir")]
    ProfileDir { path: PathBuf, source: io::Error },
    #[error("cannot read the task log {path}: {source}; check --task-log")]
    TaskLog { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}; choose a writable place with -o")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path}: the profile is written, but the log could not be removed: {source}")]
    RemoveLog { path: PathBuf, source: io::Error },
    #[error("{path} is locked by {holder}{}", refusal_advice(.holder, *.waited))]
    Busy {
        path: PathBuf,
        holder: LockHolder,
        /// How long the lock was waited for.
        waited: Duration,
    },
    #[error("{path} was finalized and removed by another tc-profile meanwhile")]
    Gone { path: PathBuf },
}

/// How long to wait for a log's lock held by a process that is exiting, and what to tell
/// meanwhile. A SIGKILLed recorder holds its lock until the kernel has closed its files,
/// which may be a while after it looks dead (SPEC.md, "Locking and recovery").
#[derive(Clone)]
pub struct LockWait {
    /// The longest wait; zero: one try.
    pub limit: Duration,
    /// Told once, when waiting begins: the log, its lock's holder, and the limit.
    pub on_wait: Option<Arc<LockWaitFn>>,
}

pub type LockWaitFn = dyn Fn(&Path, &LockHolder, Duration) + Send + Sync;

/// What `tc-profile finalize` and `recover` wait by default.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// How often a held lock is tried again while waiting: a SIGKILLed recorder's lock is
/// usually free 10 to 30 ms after the kill.
const LOCK_POLL: Duration = Duration::from_millis(20);

impl Default for LockWait {
    fn default() -> LockWait {
        LockWait {
            limit: DEFAULT_LOCK_WAIT,
            on_wait: None,
        }
    }
}

/// Which holders of a log's lock are worth waiting for. A running one is never: it holds
/// the log for as long as it records.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Patience {
    /// Only a holder that is exiting: recovery, which must pass over live logs at once.
    Exiting,
    /// Also one that cannot be identified: a log named by the user, who wants it.
    ExitingOrUnknown,
}

impl Patience {
    fn waits_for(self, holder: &LockHolder) -> bool {
        match holder {
            LockHolder::Running { .. } => false,
            LockHolder::Exiting { .. } => true,
            LockHolder::Unknown => self == Patience::ExitingOrUnknown,
        }
    }
}

/// What to do about a lock that stayed held, after the holder that [`FinalizeError::Busy`]
/// names.
fn refusal_advice(holder: &LockHolder, waited: Duration) -> String {
    let waited = waited.as_secs_f64();
    match holder {
        LockHolder::Running { .. } => ": a recorder, or another finalize; stop it first, or \
            finalize a copy of the log"
            .to_owned(),
        LockHolder::Exiting { .. } => format!(
            ", and still held it after {waited:.1} s; finalize again once it has ended, or \
             finalize a copy of the log"
        ),
        LockHolder::Unknown => format!(
            ", still after {waited:.1} s; stop what holds it (a recorder, or another \
             finalize), or finalize a copy of the log"
        ),
    }
}

/// A log under its exclusive lock (SPEC.md, "Locking and recovery"): while it is held, no
/// recorder appends to the log and no other finalizer reads it.
pub struct LockedLog {
    path: PathBuf,
    pub(crate) file: File,
}

impl LockedLog {
    /// Locks the log at `path`; while the lock's holder is one that `patience` waits for,
    /// tries again every [`LOCK_POLL`] until `wait.limit`.
    pub(crate) fn lock(
        path: &Path,
        wait: &LockWait,
        patience: Patience,
    ) -> Result<LockedLog, FinalizeError> {
        let open_error = |source| FinalizeError::Open {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(open_error)?;
        let try_lock = || match file.try_lock() {
            Ok(()) => Ok(true),
            Err(TryLockError::WouldBlock) => Ok(false),
            Err(TryLockError::Error(source)) => Err(open_error(source)),
        };
        let started = Instant::now();
        let mut told = false;
        loop {
            if try_lock()? {
                break;
            }
            // Asked again each time: a holder unknown at first may turn out to be running.
            let holder = LockHolder::of(&file);
            // A lock let go between the try and the look-up has left /proc/locks already.
            if holder == LockHolder::Unknown && try_lock()? {
                break;
            }
            let waited = started.elapsed();
            if waited >= wait.limit || !patience.waits_for(&holder) {
                return Err(FinalizeError::Busy {
                    path: path.to_owned(),
                    holder,
                    waited,
                });
            }
            if !std::mem::replace(&mut told, true) {
                if let Some(on_wait) = &wait.on_wait {
                    on_wait(path, &holder, wait.limit);
                }
            }
            thread::sleep(LOCK_POLL.min(wait.limit - waited));
        }
        // Another finalizer may have removed it between the open and the lock.
        if !names_file(path, &file) {
            return Err(FinalizeError::Gone {
                path: path.to_owned(),
            });
        }
        Ok(LockedLog {
            path: path.to_owned(),
            file,
        })
    }

    /// A log whose lock the caller already holds through `file`, opened for reading: the
    /// recorder hands over its own, so that no recoverer can take the log in between.
    pub fn held(path: PathBuf, file: File) -> LockedLog {
        LockedLog { path, file }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The default profile path of a log: `.jsonl` replaced by `.json`, keeping a `.gz` or
/// `.zst` after it; else `.json` added.
pub fn default_output(log: &Path) -> PathBuf {
    let name = log.to_string_lossy();
    for compressed in ["", ".gz", ".zst"] {
        if let Some(stem) = name.strip_suffix(&format!(".jsonl{compressed}")) {
            return PathBuf::from(format!("{stem}.json{compressed}"));
        }
    }
    let mut name = log.as_os_str().to_owned();
    name.push(".json");
    PathBuf::from(name)
}

/// Locks `log` (waiting, as `wait` says, while its lock's holder is exiting or cannot be
/// identified), reads it, writes the profile atomically, then removes the log unless asked
/// to keep it.
pub fn finalize(
    log: &Path,
    wait: &LockWait,
    options: &FinalizeOptions,
) -> Result<FinalizeReport, FinalizeError> {
    let locked = LockedLog::lock(log, wait, Patience::ExitingOrUnknown)?;
    finalize_locked(&locked, options).map(|finalized| finalized.report)
}

/// [`finalize`] of a log already locked. The log is read through the locked handle, so a
/// log deleted from under its recorder is still finalized whole; it is removed only if its
/// path still names it.
pub fn finalize_locked(
    locked: &LockedLog,
    options: &FinalizeOptions,
) -> Result<Finalized, FinalizeError> {
    let log = locked.path.as_path();
    let output = options
        .output
        .clone()
        .unwrap_or_else(|| default_output(log));
    if output == log {
        return Err(FinalizeError::OutputIsLog { path: output });
    }
    let mut file = &locked.file;
    file.seek(SeekFrom::Start(0))
        .map_err(|source| FinalizeError::Open {
            path: log.to_owned(),
            source,
        })?;
    let size = file.metadata().map_or(0, |m| m.len());
    let progress = options.progress.as_deref();
    let input = input::decoded(file, size, options.input_caps, progress)
        .map_err(|source| read_error(log, source))?;
    let mut recording = read_log(input).map_err(|source| match source {
        ReadError::Io(source) => read_error(log, source),
        source => FinalizeError::NotALog {
            path: log.to_owned(),
            source,
        },
    })?;
    let profile_dir = merge_markers(&mut recording, options)?;
    merge_log_file(&mut recording, options)?;
    let damage = recording.damage.clone();
    recording
        .gaps
        .extend(options.unwritten_gaps.iter().cloned());
    let (profile, compaction) = compact(recording);
    let marker_problems = compaction.marker_problems.clone();
    let bytes_written =
        write_profile(&output, &profile).map_err(|source| FinalizeError::Write {
            path: output.clone(),
            source,
        })?;
    let remove = !options.keep_log
        && output::remove_if_named(log, &locked.file).map_err(|source| {
            FinalizeError::RemoveLog {
                path: log.to_owned(),
                source,
            }
        })?;
    let left_cgroup = compaction
        .ended_early
        .then(|| created_cgroup(profile.meta()))
        .flatten();
    let report = FinalizeReport {
        left_cgroup,
        output,
        bytes_written,
        markers: profile.markers().len(),
        compaction,
        damage,
        profile_dir,
        marker_problems,
        log_removed: remove,
    };
    Ok(Finalized { report, profile })
}

/// Merges the marker files the recorder had not taken; returns the directory read. The
/// directory the log names may be gone or replaced (task code writes there): then it is
/// skipped (with a note after a kill, unless simply absent), and the unfinished batch, which cannot be read again, is used as
/// it is. Only a directory given explicitly must be readable.
/// An error reading the log: past a decompression cap, or of the file.
fn read_error(log: &Path, source: io::Error) -> FinalizeError {
    let path = log.to_owned();
    match OverCap::of(&source) {
        Some(source) => FinalizeError::OverCap { path, source },
        None => FinalizeError::Open { path, source },
    }
}

fn merge_markers(
    recording: &mut Recording,
    options: &FinalizeOptions,
) -> Result<Option<PathBuf>, FinalizeError> {
    if let Some(dir) = &options.profile_dir {
        return match merge_profile_dir(recording, dir, &options.limits) {
            Ok(()) => Ok(Some(dir.clone())),
            Err(source) => Err(FinalizeError::ProfileDir {
                path: dir.clone(),
                source,
            }),
        };
    }
    let Some(dir) = profile_dir_of(recording) else {
        recording.use_unfinished_batch();
        return Ok(None);
    };
    match merge_profile_dir(recording, &dir, &options.limits) {
        Ok(()) => Ok(Some(dir)),
        Err(error) => {
            recording.use_unfinished_batch();
            // Absent is usual (a log finalized on another machine); anything else is news.
            if recording.footer.is_none() && error.kind() != std::io::ErrorKind::NotFound {
                recording.problems.add(&tc_profile_format::Dropped {
                    file: dir.display().to_string(),
                    problem: Problem::DirectoryUnreadable,
                    count: 1,
                    bytes: 0,
                });
            }
            Ok(None)
        }
    }
}

/// Adds the task's log file given, or takes the rest of the one the recorder followed (gone
/// or unreadable: nothing to take).
fn merge_log_file(
    recording: &mut Recording,
    options: &FinalizeOptions,
) -> Result<(), FinalizeError> {
    if let Some(path) = &options.task_log {
        return match merge_task_log(recording, path) {
            Ok(_) => Ok(()),
            Err(source) => Err(FinalizeError::TaskLog {
                path: path.clone(),
                source,
            }),
        };
    }
    let _ = merge_followed_task_log(recording);
    Ok(())
}

/// The cgroup that `meta.tcProfile.cgroup` says the recorder created.
fn created_cgroup(meta: &serde_json::Map<String, serde_json::Value>) -> Option<PathBuf> {
    let cgroup: CgroupInfo =
        serde_json::from_value(meta.get("tcProfile")?.get("cgroup")?.clone()).ok()?;
    cgroup.created.then(|| PathBuf::from(cgroup.path))
}
