//! The finalizing side of tc-profile: reads a log, whole or cut at any byte, and writes the
//! processed Firefox Profiler profile atomically; the log is removed only once the profile
//! is durable.
//!
//! Main items: [`finalize`] (log file to profile file), [`read_log`] (any reader to a
//! [`Recording`]), [`compact`] (a recording to a [`Profile`]), [`FinalizeReport`].
//!
//! ```no_run
//! use tc_profile_finalizer::{finalize, FinalizeOptions};
//!
//! let report = finalize("task.jsonl".as_ref(), &FinalizeOptions::default())?;
//! println!("{} markers in {}", report.markers, report.output.display());
//! # Ok::<(), tc_profile_finalizer::FinalizeError>(())
//! ```

mod output;
mod profile;
mod reader;

pub use output::write_atomically;
pub use profile::{compact, Compaction, Profile, ENDED_EARLY, LOG_DAMAGE};
pub use reader::{read_log, Damage, DropReason, ReadError, Recording};

use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

/// How to finalize.
#[derive(Clone, Debug, Default)]
pub struct FinalizeOptions {
    /// Where to write the profile; default: the log's path with `.jsonl` replaced by `.json`.
    pub output: Option<PathBuf>,
    /// Keep the log after the profile is durable.
    pub keep_log: bool,
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
    pub log_removed: bool,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizeError {
    #[error("cannot read {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("{path} is not a tc-profile log: {source}")]
    NotALog { path: PathBuf, source: ReadError },
    #[error("the output {path} would overwrite the log; choose another -o")]
    OutputIsLog { path: PathBuf },
    #[error("cannot write {path}: {source}; choose a writable place with -o")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path}: the profile is written, but the log could not be removed: {source}")]
    RemoveLog { path: PathBuf, source: io::Error },
}

/// The default profile path of a log: `.jsonl` replaced by `.json`, else `.json` added.
pub fn default_output(log: &Path) -> PathBuf {
    match log.to_str().and_then(|s| s.strip_suffix(".jsonl")) {
        Some(stem) => PathBuf::from(format!("{stem}.json")),
        None => {
            let mut name = log.as_os_str().to_owned();
            name.push(".json");
            PathBuf::from(name)
        }
    }
}

/// Reads `log`, writes the profile atomically, then removes the log unless asked to keep it.
pub fn finalize(log: &Path, options: &FinalizeOptions) -> Result<FinalizeReport, FinalizeError> {
    let output = options
        .output
        .clone()
        .unwrap_or_else(|| default_output(log));
    if output == log {
        return Err(FinalizeError::OutputIsLog { path: output });
    }
    let file = File::open(log).map_err(|source| FinalizeError::Open {
        path: log.to_owned(),
        source,
    })?;
    let recording =
        read_log(BufReader::with_capacity(1 << 20, file)).map_err(|source| match source {
            ReadError::Io(source) => FinalizeError::Open {
                path: log.to_owned(),
                source,
            },
            source => FinalizeError::NotALog {
                path: log.to_owned(),
                source,
            },
        })?;
    let damage = recording.damage.clone();
    let (profile, compaction) = compact(recording);
    let bytes_written = write_atomically(&output, |out| {
        serde_json::to_writer(&mut *out, &profile).map_err(io::Error::other)
    })
    .map_err(|source| FinalizeError::Write {
        path: output.clone(),
        source,
    })?;
    if !options.keep_log {
        output::remove_durably(log).map_err(|source| FinalizeError::RemoveLog {
            path: log.to_owned(),
            source,
        })?;
    }
    Ok(FinalizeReport {
        output,
        bytes_written,
        markers: profile.markers().len(),
        compaction,
        damage,
        log_removed: !options.keep_log,
    })
}
