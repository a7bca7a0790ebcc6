//! A task's log file in the profile (SPEC.md, "Following a task's log" and "Adding a log
//! afterwards"): the rest of the file a killed recorder followed, from its last
//! checkpoint, so that each line is in the profile once; or a finished log added whole,
//! aligned by its timestamps, to a log or a finished profile (`add-log`).

use crate::compression::InputCaps;
use crate::input::{read_input, Input, InputError};
use crate::output::write_profile;
use crate::profile::compact;
use crate::reader::Recording;
use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};
use tc_profile_format::schema::{category, declare_log};
use tc_profile_format::task_log::{LogFollower, Placement};
use tc_profile_format::{FileProgress, Line, Marker};

/// Why `add-log` wrote nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddLogError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("cannot read the task log {path}: {source}; check its path")]
    TaskLog { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}; choose a writable place with -o")]
    Write { path: PathBuf, source: io::Error },
}

/// The log file the recorder followed (`meta.tcProfile.taskLog`).
pub fn task_log_of(recording: &Recording) -> Option<PathBuf> {
    let path = recording.meta.get("tcProfile")?.get("taskLog")?.as_str()?;
    Some(PathBuf::from(path))
}

/// Adds the lines of the log file at `path` to the recording: from the recorder's last
/// checkpoint when it followed this very file (whatever the path's spelling), none when it
/// read it to its end, else all of them. Returns the lines added. The batch the recorder
/// was cut off writing is used only when the file cannot be read again.
pub fn merge_task_log(recording: &mut Recording, path: &Path) -> io::Result<usize> {
    // The path given is followed as the user spelt it, a symbolic link included.
    merge(recording, &std::fs::canonicalize(path)?, true)
}

/// Takes the rest of the log file the recorder followed, from its checkpoint of the file
/// now at the path. After a clean end (a footer) the recorder's reads are final: a file it
/// never read (one that appeared, or replaced the one it read, after the end) adds nothing.
pub fn merge_followed_task_log(recording: &mut Recording) -> io::Result<usize> {
    let Some(path) = task_log_of(recording) else {
        return Ok(0);
    };
    let unread_whole = recording.footer.is_none();
    merge(recording, &path, unread_whole)
}

/// Adds the lines of the log file at `path` past its checkpoint; a file no checkpoint
/// names whole when `unread_whole`, else not at all.
fn merge(recording: &mut Recording, path: &Path, unread_whole: bool) -> io::Result<usize> {
    let end = recording
        .footer
        .as_ref()
        .map_or(recording.last_time, |footer| footer.end_time);
    let followed = task_log_of(recording);
    let checkpoints: Vec<FileProgress> = recording
        .progress
        .values()
        .filter(|c| followed.as_deref() == Some(Path::new(&c.name)))
        .cloned()
        .collect();
    let markers = match log_markers(&mut recording.meta, path, &checkpoints, end, unread_whole) {
        Ok(markers) => markers,
        Err(error) => {
            recording.use_unfinished_task_log_batch();
            return Err(error);
        }
    };
    recording.unfinished_task_log_batch = None;
    let added = markers.len();
    for marker in markers {
        // A marker is never refused: only a second header line is.
        let _ = recording.apply(Line::Marker(marker));
    }
    Ok(added)
}

/// Writes to `output` the log or profile at `input` (decompressed within `caps`) with the
/// lines of the log file at `log_file` added, compressed by `output`'s extension. Returns
/// the lines added.
pub fn add_log(
    input: &Path,
    caps: InputCaps,
    log_file: &Path,
    output: &Path,
) -> Result<usize, AddLogError> {
    let log_error = |source| AddLogError::TaskLog {
        path: log_file.to_owned(),
        source,
    };
    let (profile, added) = match read_input(input, caps, None)? {
        Input::Log(mut recording) => {
            let added = merge_task_log(&mut recording, log_file).map_err(log_error)?;
            (compact(*recording).0, added)
        }
        input_profile => {
            let mut profile = input_profile.into_profile(input)?;
            let end = profile.end_time();
            let path = std::fs::canonicalize(log_file).map_err(log_error)?;
            let markers =
                log_markers(profile.meta_mut(), &path, &[], end, true).map_err(log_error)?;
            let added = markers.len();
            profile.add_markers(markers.into_iter().map(Into::into));
            (profile, added)
        }
    };
    write_profile(output, &profile).map_err(|source| AddLogError::Write {
        path: output.to_owned(),
        source,
    })?;
    Ok(added)
}

/// The `Log` markers of the log file at `path`, from the checkpoint of the file now at the
/// path when `checkpoints` has one (else from its start when `unread_whole`, else none),
/// declaring their categories and schema in `meta`. A line's timestamp places it, clamped
/// into `[0, end]`; a line without one takes the time of the last one with (`end` after a
/// checkpoint, 0 before any).
fn log_markers(
    meta: &mut Map<String, Value>,
    path: &Path,
    checkpoints: &[FileProgress],
    end: f64,
    unread_whole: bool,
) -> io::Result<Vec<Marker>> {
    std::fs::File::open(path)?;
    let mut follower = LogFollower::new(&std::path::absolute(path)?);
    let resumed = follower.resume(checkpoints);
    if !resumed && !unread_whole {
        return Ok(Vec::new());
    }
    let mut placement = Placement {
        start_epoch_ms: meta.get("startTime").and_then(Value::as_f64).unwrap_or(0.0),
        latest: end,
        fallback: if resumed { end } else { 0.0 },
    };
    let [log, warning, error] = declare_log(meta);
    let mut markers = Vec::new();
    loop {
        let read = follower.read(true, &mut |line| {
            let mut marker = placement.file_marker(&line);
            marker.category = Some(match marker.category {
                Some(category::LOG_WARNING) => warning,
                Some(category::LOG_ERROR) => error,
                _ => log,
            });
            markers.push(marker);
        });
        if !read.more {
            return Ok(markers);
        }
    }
}
