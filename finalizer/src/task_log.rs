//! A task's log file in the profile (SPEC.md, "Following a task's log" and "Adding a log
//! afterwards"): the rest of the file a killed recorder followed, from its last
//! checkpoint, so that each line is in the profile once; or a finished log added whole,
//! aligned by its timestamps.

use crate::reader::Recording;
use serde_json::Value;
use std::io;
use std::path::{Path, PathBuf};
use tc_profile_format::schema::{category, declare_log};
use tc_profile_format::task_log::{LogFollower, Placement};
use tc_profile_format::Line;

/// The log file the recorder followed (`meta.tcProfile.taskLog`).
pub fn task_log_of(recording: &Recording) -> Option<PathBuf> {
    let path = recording.meta.get("tcProfile")?.get("taskLog")?.as_str()?;
    Some(PathBuf::from(path))
}

/// Adds the lines of the log file at `path` to the recording as `Log` markers: from the
/// recorder's last checkpoint when it followed this very file, else all of them. A line's
/// timestamp places it, clamped into the recording; a line without one takes the time of
/// the last one with (the recording's end after a checkpoint, its start before any).
/// Returns the lines added.
pub fn merge_task_log(recording: &mut Recording, path: &Path) -> io::Result<usize> {
    std::fs::File::open(path)?;
    let path = std::path::absolute(path)?;
    let mut follower = LogFollower::new(&path);
    let name = follower.name();
    let checkpoints: Vec<_> = recording
        .progress
        .values()
        .filter(|p| p.name == name)
        .collect();
    let end = recording
        .footer
        .as_ref()
        .map_or(recording.last_time, |footer| footer.end_time);
    let mut placement = Placement {
        start_epoch_ms: recording
            .meta
            .get("startTime")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        latest: end,
        fallback: if checkpoints.is_empty() { 0.0 } else { end },
    };
    for checkpoint in checkpoints {
        follower.resume(checkpoint);
    }
    let [log, warning, error] = declare_log(&mut recording.meta);
    let mut added = 0;
    loop {
        let mut markers = Vec::new();
        let read = follower.read(true, &mut |line| markers.push(placement.file_marker(&line)));
        added += markers.len();
        for mut marker in markers {
            marker.category = marker.category.map(|ours| match ours {
                category::LOG_WARNING => warning,
                category::LOG_ERROR => error,
                _ => log,
            });
            // A marker is never refused: only a second header line is.
            let _ = recording.apply(Line::Marker(marker));
        }
        if !read.more {
            return Ok(added);
        }
    }
}
