//! One log per task, in parts (`tasks/<task>-<run>-<n>.jsonl`): each part an ordinary
//! [`Recorder`] with only the task's own sources (its process tree or cgroup, its profile
//! directory), resuming the marker files from the earlier parts' checkpoints; and a task's
//! profile cut from its parts and the machine's segments.

use crate::config::DaemonConfig;
use crate::error::DaemonError;
use crate::logs::{epoch_ms, read_complete, read_complete_within};
use crate::segments::{self, Sampling};
use crate::state::{Followed, OpenTask};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tc_profile_finalizer::{compact_span, Profile, Recording, Span, SpanLogs};
use tc_profile_format::{EndReason, FileProgress, TaskInfo};
use tc_profile_recorder::{
    Follow, Handover, ProfileDirConfig, Recorder, RecorderConfig, MIN_SYNC_PERIOD,
};

/// The least time between two scans of a task's profile directory while its files grow,
/// whatever the interval: a scan a second, not one a marker (16 tasks each writing 100
/// markers a second, one a write, took 12 % of a core at `record`'s 1 ms gap, 1.9 % at
/// 100 ms), nor one a tick at 0.1 s (the marker threads' wake-ups and scans, a fifth of
/// the daemon's CPU with 16 such tasks). Their lines are durable at the log's sync, once
/// a second at the most often ([`MIN_SYNC_PERIOD`]), so no sooner for being scanned
/// sooner; a write after a quiet spell is still taken at once (inotify), and a task's end
/// takes what is left.
const MARKER_SCAN_GAP: Duration = MIN_SYNC_PERIOD;

/// Task ids and run ids name files: Taskcluster's slugids fit, paths do not.
pub fn check_task_id(task: &str) -> Result<(), DaemonError> {
    let fits = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if task.is_empty() || task.len() > 64 || !task.chars().all(fits) {
        return Err(DaemonError::Request(format!(
            "{task:?} is not a task id: 1 to 64 letters, digits, '-' or '_'"
        )));
    }
    Ok(())
}

/// The next part's log (after the last one in `open.parts`) and what every part records:
/// the task's processes when it has them, from their real start; the machine's files as
/// the daemon reads them once a tick for all its recorders; the live server, if any.
fn part_config(
    open: &OpenTask,
    daemon: &DaemonConfig,
    sampling: &Sampling,
) -> (PathBuf, RecorderConfig) {
    let path = daemon.tasks_dir().join(format!(
        "{}-{}-{}.jsonl",
        open.task,
        open.run,
        open.parts.len() + 1
    ));
    let mut config = RecorderConfig::new(path.clone());
    sampling.apply(&mut config);
    config.machine_tracks = false;
    // The statsd listener stays on, on its socket in the task's profile directory (no UDP
    // port, which any local user could send to): with it the metric lines of marker files
    // have their schemas too. The InfluxDB endpoint, a listener and two threads per task,
    // stays off.
    config.influx = false;
    config.task = TaskInfo {
        task_id: Some(open.task.clone()),
        run_id: Some(open.run.to_string()),
        ..TaskInfo::default()
    };
    config.follow = open.follow.as_ref().map(|follow| match follow {
        Followed::Pid(pid) => Follow::Pid(*pid),
        Followed::Cgroup(path) => Follow::Cgroup(path.clone()),
    });
    // A process alive at an attach or a restart keeps its start, within the task's span.
    config.processes_since = Some(open.start_time);
    config.live_server = daemon.live_server();
    (path, config)
}

/// Starts the task's next part: a new log after the last one in `open.parts`, on what the
/// part before handed over, if it did.
pub fn start_part(
    open: &mut OpenTask,
    daemon: &DaemonConfig,
    sampling: &Sampling,
    handover: Handover,
) -> Result<Recorder, DaemonError> {
    let (path, mut config) = part_config(open, daemon, sampling);
    let interval = sampling.interval;
    // The statsd listener stays on (its address in the log's meta): with it the metric
    // lines of marker files have their schemas. The InfluxDB endpoint, a listener and two
    // threads per task, stays off.
    config.influx = false;
    let mut dir = ProfileDirConfig::new(open.profile_dir.clone());
    // Lines as old as the task's start (a worker's steps before it: --since) are taken.
    dir.limits.time_slack_ms += (epoch_ms() - open.start_time).max(0.0);
    dir.poll_interval = interval.min(Duration::from_millis(100));
    dir.scan_gap = MARKER_SCAN_GAP;
    let resume = resume_points(&open.parts);
    config.task_log.clone_from(&open.task_log);
    // The follower's checkpoints name the file by its path made absolute, as here.
    let task_log = config
        .task_log
        .as_deref()
        .map(|path| path.to_string_lossy());
    (config.task_log_resume, dir.resume) = (resume.progress.into_iter())
        .partition(|progress| Some(progress.name.as_str()) == task_log.as_deref());
    dir.resume_schemas = resume.schemas;
    config.profile_dir = Some(dir);
    let recorder = Recorder::take_over(config, handover)?;
    open.parts.push(path);
    Ok(recorder)
}

/// Where the parts left off.
struct ResumePoints {
    /// How far they took each marker file and the task's log file (the latest checkpoint
    /// of each).
    progress: Vec<FileProgress>,
    /// The schemas the marker files declared in them.
    schemas: Vec<Map<String, Value>>,
}

fn resume_points(parts: &[PathBuf]) -> ResumePoints {
    let mut progress = HashMap::new();
    let mut schemas = Vec::new();
    for part in parts {
        // A part that cannot be read took nothing that counts.
        if let Ok(recording) = read_complete(part) {
            progress.extend(recording.progress);
            schemas.extend(recording.schemas);
        }
    }
    ResumePoints {
        progress: progress.into_values().collect(),
        schemas,
    }
}

/// Ends a part cleanly at the task's end: its last marker lines and task log lines, its
/// footer, durable.
pub fn finish_part(recorder: Recorder) -> Result<(), DaemonError> {
    drop(recorder.finish(EndReason::Stopped)?);
    Ok(())
}

/// Ends a part cleanly for the next, which takes over at once: the same, except that the
/// task's log file is left open and the statsd socket handed over.
pub fn hand_over_part(recorder: Recorder) -> Result<Handover, DaemonError> {
    let (finished, handover) = recorder.hand_over()?;
    drop(finished);
    Ok(handover)
}

/// Ends a part cleanly while its task goes on (the daemon stops): the same, except that
/// the task's log file is left for the next daemon's part, which resumes it.
pub fn suspend_part(mut recorder: Recorder) -> Result<(), DaemonError> {
    recorder.leave_task_log_open();
    finish_part(recorder)
}

/// The task's profile over `start..end` (epoch ms): its parts and the machine's segments
/// (the bytes read of them added to `segment_bytes_read`), `notes` added to
/// `meta.tcProfile`.
pub fn task_profile(
    open: &OpenTask,
    segments_dir: &Path,
    end: f64,
    notes: Map<String, Value>,
    segment_bytes_read: &AtomicU64,
) -> Result<Profile, DaemonError> {
    let own = open
        .parts
        .iter()
        .map(|part| read_complete(part))
        .collect::<Result<_, _>>()?;
    let span = Span {
        start: open.start_time,
        end,
    };
    let logs = SpanLogs {
        own,
        extra: Vec::new(),
        tc_profile: notes,
    };
    let machine = machine_logs(segments_dir, span, segment_bytes_read)?;
    compact_span(logs, machine, span)
}

/// The machine's segments over `span`, each read for the span only (SPEC.md, "Reading a
/// span of a machine log") when it is taken, the bytes that took added to `bytes_read`:
/// [`compact_span`] takes the next once it has folded in the one before, so that one
/// segment's lines are held at a time however many the span has.
pub fn machine_logs<'a>(
    segments_dir: &Path,
    span: Span,
    bytes_read: &'a AtomicU64,
) -> Result<impl Iterator<Item = Result<Recording, DaemonError>> + 'a, DaemonError> {
    let segments = segments::list(segments_dir)?;
    let overlapping = segments::overlapping(&segments, span.start, span.end);
    Ok(overlapping.into_iter().map(move |path| {
        let read = read_complete_within(&path, span)?;
        bytes_read.fetch_add(read.bytes_read, Ordering::Relaxed);
        Ok(read.recording)
    }))
}
