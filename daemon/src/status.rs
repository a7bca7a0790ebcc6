//! What the daemon tells of itself and of a task: when it started, its last housekeeping
//! run, the open tasks ([`status`]), and what a started task is given ([`Board::started`]).

use crate::logs::epoch_ms;
use crate::protocol::{Housekeeping, Status, TaskStarted, TaskStatus};
use crate::segments::Segments;
use crate::state::OpenTask;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tc_profile_recorder::Recorder;

/// What the daemon notes of itself as it runs.
pub struct Board {
    /// Epoch ms.
    started: f64,
    housekeeping: Mutex<Option<Housekeeping>>,
    /// Bytes of machine segments read for profiles (task ends, live and worker profiles).
    pub segment_bytes_read: AtomicU64,
}

impl Board {
    pub fn new() -> Board {
        Board {
            started: epoch_ms(),
            housekeeping: Mutex::new(None),
            segment_bytes_read: AtomicU64::new(0),
        }
    }

    pub fn housekept(&self, deleted: usize, error: Option<String>) {
        let run = Housekeeping {
            at: epoch_ms(),
            deleted,
            error,
        };
        *self.housekeeping.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
    }
}

/// What the worker hands a task just started (or attached), `recorder` the part that
/// follows its profile directory, `live_server` the daemon's live server if it has one.
pub fn task_started(
    open: &OpenTask,
    recorder: Option<&Recorder>,
    live_server: Option<&str>,
) -> TaskStarted {
    let live = |file: &str| {
        let base = live_server?;
        // The token is the run's: no `?run=` needed.
        Some(format!(
            "{base}/tasks/{}/{}/{file}",
            open.task,
            open.token.as_str()
        ))
    };
    TaskStarted {
        profile_dir: open.profile_dir.clone(),
        statsd_address: recorder
            .and_then(|r| r.statsd_address())
            .map(|a| a.to_string()),
        statsd_socket: recorder.and_then(|r| r.statsd_socket()).map(Path::to_owned),
        influx_url: recorder.and_then(|r| r.influx_url()),
        live_profile_url: live("profile.json"),
        live_log_url: live("log.jsonl"),
    }
}

/// The daemon's status now: `open` the tasks open, each with whether it is ending;
/// `machine_reads`, the machine's files read so far for all its recorders.
pub fn status<'a>(
    board: &Board,
    open: impl Iterator<Item = (&'a OpenTask, bool)>,
    segments: Option<&Segments>,
    machine_reads: u64,
) -> Status {
    let now = epoch_ms();
    let mut tasks: Vec<TaskStatus> = open
        .map(|(open, ending)| TaskStatus {
            task: open.task.clone(),
            run: open.run,
            age_ms: now - open.start_time,
            attached: open.follow.is_some(),
            ending,
        })
        .collect();
    tasks.sort_by(|a, b| b.age_ms.total_cmp(&a.age_ms));
    let (segments, segment_bytes) = segments.map_or((0, 0), Segments::usage);
    let housekeeping = board.housekeeping.lock().unwrap_or_else(|e| e.into_inner());
    Status {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        started: board.started,
        uptime_ms: now - board.started,
        tasks,
        segments,
        segment_bytes,
        segment_bytes_read: board.segment_bytes_read.load(Ordering::Relaxed),
        machine_reads,
        housekeeping: housekeeping.clone(),
    }
}
