//! The daemon's answers to `task-start` and `task-end`, under one lock: the machine's
//! segment, the running tasks, and the state file that lists them.

use crate::check;
use crate::config::DaemonConfig;
use crate::error::DaemonError;
use crate::logs::{epoch_ms, open_complete};
use crate::profile_dir::{create_profile_dir, remove_profile_dir, task_owner};
use crate::protocol::{Reply, Request};
use crate::protocol::{Status, TaskStarted};
use crate::segments::{Sampling, Segments};
use crate::state::{EndedTask, Followed, OpenTask, StateFiles};
use crate::status::{status, task_started, Board};
use crate::tasks::{self, check_task_id};
use crate::token::Token;
use crate::worker;
use serde_json::{Map, Value};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tc_profile_finalizer::{remove_durably, Profile};
use tc_profile_fs::Owner;
use tc_profile_recorder::{Handover, Recorder};

/// A task being recorded.
pub struct Running {
    pub open: OpenTask,
    /// None when its next part could not be started: its end still writes the profile of
    /// the parts it has.
    pub recorder: Option<Recorder>,
}

pub struct Inner {
    /// None once stopped.
    pub segments: Option<Segments>,
    pub tasks: Vec<Running>,
    /// Tasks whose profile is being written: open for the state file, for a restart.
    pub ending: Vec<OpenTask>,
}

impl Inner {
    /// Every task open, being ended included: what the state file lists.
    fn open(&self) -> Vec<OpenTask> {
        let running = self.tasks.iter().map(|r| r.open.clone());
        running.chain(self.ending.iter().cloned()).collect()
    }
}

/// How long after a tick its lines are in the log, at most, on a machine that keeps up.
const SAMPLE_LAG: Duration = Duration::from_millis(50);

/// What every connection and the housekeeping thread share.
pub struct Shared {
    pub config: DaemonConfig,
    pub board: Board,
    /// How the segment and the tasks sample: one read of the machine's files a tick.
    pub sampling: Sampling,
    pub files: StateFiles,
    pub inner: Mutex<Inner>,
}

/// What a `task-start` gives a task.
struct Start {
    profile_dir: Option<PathBuf>,
    follow: Option<Followed>,
    since: Option<f64>,
    task_log: Option<PathBuf>,
    /// The user a profile directory the daemon creates is given to.
    owner: Option<Owner>,
}

/// How a task comes to its end.
struct Ending {
    exit_status: Option<i32>,
    timed_out: bool,
    output: PathBuf,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic in one request must not stop the others: the state is saved as it goes.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn handle(&self, request: Request) -> Reply {
        let result = match request {
            Request::TaskStart {
                task,
                run,
                profile_dir,
                pid,
                cgroup,
                allow_host,
                since,
                uid,
                gid,
                task_log,
            } => {
                let follow = pid.map(Followed::Pid).or(cgroup.map(Followed::Cgroup));
                task_owner(uid, gid)
                    .map(|owner| Start {
                        profile_dir,
                        follow,
                        since,
                        task_log,
                        owner,
                    })
                    .and_then(|start| {
                        check_start(&start, allow_host)?;
                        check_since(since)?;
                        self.start_task(&task, run, start)
                    })
                    .map(Reply::Started)
            }
            Request::Status => Ok(Reply::Status(Box::new(self.status()))),
            Request::TaskEnd {
                task,
                run,
                exit_status,
                output,
            } => {
                let ending = Ending {
                    exit_status,
                    timed_out: false,
                    output,
                };
                check::absolute("output", &ending.output)
                    .and_then(|()| self.end_task(&task, run, ending))
                    .map_err(|error| self.explain_not_open(error))
                    .map(|output| Reply::Output { output })
            }
            Request::WorkerProfile {
                since,
                until,
                output,
            } => check::absolute("output", &output)
                .and_then(|()| self.worker_profile(since, until, &output))
                .map(|()| Reply::Output { output }),
        };
        result.unwrap_or_else(|error| Reply::Error {
            error: error.reply(),
        })
    }

    fn status(&self) -> Status {
        let inner = self.lock();
        let running = inner.tasks.iter().map(|r| (&r.open, false));
        let open = running.chain(inner.ending.iter().map(|open| (open, true)));
        let machine_reads = self.sampling.machine.reads();
        status(&self.board, open, inner.segments.as_ref(), machine_reads)
    }

    /// A task not open because the timeout ended it: says where its profile went.
    fn explain_not_open(&self, error: DaemonError) -> DaemonError {
        let DaemonError::NotOpen { task, run } = &error else {
            return error;
        };
        let history = self.files.history().unwrap_or_default();
        match history
            .iter()
            .rev()
            .find(|ended| ended.task == *task && ended.run == *run)
        {
            Some(ended) if ended.timed_out => DaemonError::TimedOut {
                task: task.clone(),
                run: *run,
                profile: self.timed_out_path(task, *run),
            },
            _ => error,
        }
    }

    /// Where the timeout writes a task's profile.
    fn timed_out_path(&self, task: &str, run: u32) -> PathBuf {
        let name = format!("{task}-{run}.json");
        self.config.state_dir.join("timed-out").join(name)
    }

    fn profiles_dir(&self) -> PathBuf {
        self.config.state_dir.join("profiles")
    }

    fn segments_dir(&self) -> PathBuf {
        self.config.state_dir.join("segments")
    }

    /// Begins a task (its profile from `since`, else now), or attaches the process tree of
    /// one already open; returns what the task is given.
    fn start_task(&self, task: &str, run: u32, start: Start) -> Result<TaskStarted, DaemonError> {
        let Start {
            profile_dir,
            follow,
            since,
            task_log,
            owner,
        } = start;
        check_task_id(task)?;
        self.end_timed_out();
        let mut inner = self.lock();
        if inner.ending.iter().any(|open| open.is(task, run)) {
            return Err(DaemonError::Busy(format!(
                "task {task} run {run} is ending: its profile is being written; wait for its \
                 `task end` to answer, then start it again"
            )));
        }
        if let Some(running) = inner.tasks.iter_mut().find(|r| r.open.is(task, run)) {
            if task_log.is_some() {
                return Err(DaemonError::Request(format!(
                    "task {task} run {run} is open: give --task-log at its first start"
                )));
            }
            let attached = self.attach(running, follow);
            let started = task_started(
                &running.open,
                running.recorder.as_ref(),
                self.config.live_server().as_deref(),
            );
            self.save_locked(&inner)?;
            return attached.map(|()| started);
        }
        let name = format!("{task}-{run}");
        let created = match &profile_dir {
            Some(dir) => create_profile_dir(None, dir, owner),
            None => create_profile_dir(Some(&self.profiles_dir()), Path::new(&name), owner),
        }?;
        let dir = profile_dir.unwrap_or_else(|| self.profiles_dir().join(name));
        let dir = std::path::absolute(&dir).map_err(DaemonError::state(&dir))?;
        let mut open = OpenTask {
            task: task.to_owned(),
            run,
            profile_dir: dir.clone(),
            created_dir: created.is_some(),
            created_dir_id: created,
            follow,
            task_log,
            parts: Vec::new(),
            start_time: since.unwrap_or_else(epoch_ms),
            token: Token::new()?,
        };
        let recorder =
            tasks::start_part(&mut open, &self.config, &self.sampling, Handover::default())
                .inspect_err(|_| remove_profile_dir(&open))?;
        let running = Running {
            open,
            recorder: Some(recorder),
        };
        let started = task_started(
            &running.open,
            running.recorder.as_ref(),
            self.config.live_server().as_deref(),
        );
        inner.tasks.push(running);
        self.save_locked(&inner)?;
        Ok(started)
    }

    /// A second start of an open task gives it the process tree it did not have, from
    /// now on: its part ends and the next follows the tree too, resuming the marker files
    /// as after a restart. One part at a time: one log to sync a second, where a part of
    /// the tree's own beside it cost a second writer and sync (a tenth to a fifth of the
    /// daemon's CPU with 16 tasks at 1 s), and never two parts on the marker files, which
    /// would take the same lines.
    fn attach(&self, running: &mut Running, follow: Option<Followed>) -> Result<(), DaemonError> {
        let open = &mut running.open;
        if follow.is_none() || open.follow.is_some() {
            return Err(DaemonError::AlreadyOpen {
                task: open.task.clone(),
                run: open.run,
            });
        }
        // A part that cannot be finished (its disk full) is read up to its last whole line.
        let handover = match running.recorder.take().map(tasks::hand_over_part) {
            Some(Ok(handover)) => handover,
            Some(Err(error)) => {
                warn(&error);
                Handover::default()
            }
            None => Handover::default(),
        };
        open.follow = follow;
        match tasks::start_part(open, &self.config, &self.sampling, handover) {
            Ok(recorder) => {
                running.recorder = Some(recorder);
                Ok(())
            }
            Err(error) => {
                // The task goes on with its profile directory alone.
                open.follow = None;
                running.recorder =
                    tasks::start_part(open, &self.config, &self.sampling, Handover::default()).ok();
                Err(error)
            }
        }
    }

    /// Ends a task: its part finished, its profile written atomically, then the task gone
    /// from the state, its history line appended, and its logs removed. A profile that
    /// cannot be written leaves the task open (a new part), for an end with another output.
    fn end_task(&self, task: &str, run: u32, ending: Ending) -> Result<PathBuf, DaemonError> {
        let mut inner = self.lock();
        let index = inner
            .tasks
            .iter()
            .position(|r| r.open.is(task, run))
            .ok_or_else(|| not_open(task, run))?;
        let Running { mut open, recorder } = inner.tasks.remove(index);
        // Still in the state file until its profile is written.
        inner.ending.push(open.clone());
        drop(inner);
        // A part that cannot be finished (its disk full) is read up to its last whole line
        // all the same: returning here would leave the task in `ending`, never to end.
        if let Some(Err(error)) = recorder.map(tasks::finish_part) {
            warn(&error);
        }
        let end_time = epoch_ms();
        self.sample_machine_now();
        let read = &self.board.segment_bytes_read;
        let written =
            tasks::task_profile(&open, &self.segments_dir(), end_time, ending.notes(), read)
                .and_then(|profile| write_profile(&ending.output, &profile));
        let mut inner = self.lock();
        inner.ending.retain(|o| !o.is(task, run));
        // The task has ended once the state file says so, and only then is its profile kept:
        // otherwise it is open again, for another end, and a restart never ends it twice.
        let saved = written.and_then(|()| {
            self.save_locked(&inner).inspect_err(|_| {
                let _ = remove_durably(&ending.output);
            })
        });
        if let Err(error) = saved {
            let recorder =
                tasks::start_part(&mut open, &self.config, &self.sampling, Handover::default());
            inner.tasks.push(Running {
                open,
                recorder: recorder.ok(),
            });
            if let Err(also) = self.save_locked(&inner) {
                warn(&also);
            }
            return Err(error);
        }
        drop(inner);
        let ended = EndedTask {
            task: open.task.clone(),
            run,
            start_time: open.start_time,
            end_time,
            exit_status: ending.exit_status,
            timed_out: ending.timed_out,
        };
        // Ended all the same: only the worker's profile misses it.
        if let Err(error) = self.files.append_history(&ended) {
            warn(&DaemonError::state(&self.config.state_dir)(error));
        }
        remove_task_files(&open);
        Ok(ending.output)
    }

    /// Takes the machine's sample that covers a task's end now, rather than at the next
    /// tick, up to an interval later, and waits until it is in the segment: as long as an
    /// interval at most, then the end goes on without it.
    fn sample_machine_now(&self) {
        let taken = self.lock().segments.as_ref().map(Segments::sample_now);
        if let Some(taken) = taken {
            if !taken.wait(self.config.interval + SAMPLE_LAG) {
                eprintln!(
                    "tc-profile daemon: warning: the machine's last sample of a task came late"
                );
            }
        }
    }

    /// Ends the tasks open longer than `--task-timeout`, into
    /// `STATE/timed-out/<task>-<run>.json`.
    fn end_timed_out(&self) {
        let limit = self.config.task_timeout.as_secs_f64() * 1000.0;
        let now = epoch_ms();
        let expired: Vec<(String, u32)> = self
            .lock()
            .tasks
            .iter()
            .filter(|r| now - r.open.start_time > limit)
            .map(|r| (r.open.task.clone(), r.open.run))
            .collect();
        for (task, run) in expired {
            let ending = Ending {
                exit_status: None,
                timed_out: true,
                output: self.timed_out_path(&task, run),
            };
            if let Err(error) = self.end_task(&task, run, ending) {
                warn(&error);
            }
        }
    }

    fn worker_profile(
        &self,
        since: Option<f64>,
        until: Option<f64>,
        output: &Path,
    ) -> Result<(), DaemonError> {
        write_profile(output, &self.worker_profile_now(since, until, None)?)
    }

    /// The worker's profile over `since..until`, in memory; a span over `max_span` is
    /// refused, and without `since` it starts no earlier than `max_span` before its end.
    pub fn worker_profile_now(
        &self,
        since: Option<f64>,
        until: Option<f64>,
        max_span: Option<Duration>,
    ) -> Result<Profile, DaemonError> {
        let open = self.open_tasks();
        let history = self
            .files
            .history()
            .map_err(DaemonError::state(&self.config.state_dir))?;
        let span = worker::Span {
            since,
            until,
            max: max_span,
        };
        let read = &self.board.segment_bytes_read;
        worker::worker_profile(&self.segments_dir(), &history, &open, span, read)
    }

    /// The open task whose live URLs carry `token` (and of `run`, if asked for): without
    /// it, the same error as for a task not open.
    pub fn live_task(
        &self,
        task: &str,
        token: &str,
        run: Option<u32>,
    ) -> Result<OpenTask, DaemonError> {
        let fits = |o: &OpenTask| {
            o.task == task && run.is_none_or(|run| o.run == run) && o.token.matches(token)
        };
        let open = self.open_tasks().into_iter().find(fits);
        open.ok_or_else(|| not_open(task, run.unwrap_or(0)))
    }

    /// A running task's profile so far, from its logs as they are (left untouched).
    pub fn live_task_profile(&self, open: &OpenTask) -> Result<Profile, DaemonError> {
        let read = &self.board.segment_bytes_read;
        tasks::task_profile(open, &self.segments_dir(), epoch_ms(), Map::new(), read)
    }

    /// The log a running task's part is being written to, opened, and the length of its
    /// complete lines.
    pub fn live_task_log(&self, open: &OpenTask) -> Result<(File, u64), DaemonError> {
        match open.parts.last() {
            Some(part) => open_complete(part),
            None => Err(not_open(&open.task, open.run)),
        }
    }

    /// Every task open, being ended included.
    fn open_tasks(&self) -> Vec<OpenTask> {
        self.lock().open()
    }

    pub fn save(&self) -> Result<(), DaemonError> {
        self.save_locked(&self.lock())
    }

    fn save_locked(&self, inner: &Inner) -> Result<(), DaemonError> {
        self.files
            .save(&inner.open())
            .map_err(DaemonError::state(&self.config.state_dir))
    }

    /// Rotates the machine's segment when due, and applies the retention.
    pub fn housekeeping(&self) {
        let mut inner = self.lock();
        let needed_from = inner
            .open()
            .iter()
            .map(|open| open.start_time)
            .fold(f64::INFINITY, f64::min);
        let Some(segments) = &mut inner.segments else {
            return;
        };
        let rotated = segments.rotate_if_due();
        if let Err(error) = &rotated {
            warn(error);
        }
        let deleted = segments.apply_retention(self.config.retain, needed_from, epoch_ms());
        self.board
            .housekept(deleted, rotated.err().map(|e| e.to_string()));
    }

    /// Ends every part and the segment; the tasks stay open in the state file.
    pub fn stop(&self) -> Result<(), DaemonError> {
        let mut inner = self.lock();
        // Every part and the segment get their footer, whichever fails first.
        let parts = std::mem::take(&mut inner.tasks)
            .into_iter()
            .filter_map(|r| r.recorder)
            .map(tasks::suspend_part);
        let segment = inner.segments.take().map(|segments| segments.finish());
        let mut first = Ok(());
        for result in parts.chain(segment) {
            first = first.and(result);
        }
        first
    }
}

/// Writes a profile atomically, compressed by its name (`.gz`, `.zst`).
pub fn write_profile(path: &Path, profile: &Profile) -> Result<(), DaemonError> {
    tc_profile_finalizer::write_profile(path, profile)
        .map(drop)
        .map_err(|source| DaemonError::Write {
            path: path.to_owned(),
            source,
        })
}

/// The longest a task's profile may begin before its `task start`.
const SINCE_AT_MOST: f64 = 86_400_000.0;

/// A start's `since`: past, by a day at most.
fn check_since(since: Option<f64>) -> Result<(), DaemonError> {
    let now = epoch_ms();
    match since {
        Some(since) if !(now - SINCE_AT_MOST..=now).contains(&since) => Err(DaemonError::Request(
            format!("since {since} is not epoch ms within the day before now ({now:.0})"),
        )),
        _ => Ok(()),
    }
}

/// A start's paths and processes, checked before anything is made for it.
fn check_start(start: &Start, allow_host: bool) -> Result<(), DaemonError> {
    if let Some(dir) = &start.profile_dir {
        check::absolute("profileDir", dir)?;
    }
    if let Some(file) = &start.task_log {
        check::absolute("taskLog", file)?;
    }
    let follow = start.follow.as_ref();
    follow.map_or(Ok(()), |follow| check::follow(follow, allow_host))
}

impl Ending {
    /// What `meta.tcProfile` says of the end: `exitStatus`, `timedOut`.
    fn notes(&self) -> Map<String, Value> {
        let mut notes = Map::new();
        if let Some(status) = self.exit_status {
            notes.insert("exitStatus".to_owned(), status.into());
        }
        if self.timed_out {
            notes.insert("timedOut".to_owned(), true.into());
        }
        notes
    }
}

fn not_open(task: &str, run: u32) -> DaemonError {
    DaemonError::NotOpen {
        task: task.to_owned(),
        run,
    }
}

/// Removes an ended task's logs, and its profile directory when the daemon made it.
fn remove_task_files(open: &OpenTask) {
    for part in &open.parts {
        let _ = std::fs::remove_file(part);
    }
    remove_profile_dir(open);
}

/// A problem of the daemon's own upkeep, which no request is waiting for: told on stderr,
/// the service's log.
pub fn warn(error: &DaemonError) {
    eprintln!("tc-profile daemon: warning: {error}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_of_a_task_being_ended_says_so_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().to_owned();
        let ending = OpenTask {
            task: "t1".to_owned(),
            run: 0,
            profile_dir: state.join("profiles/t1-0"),
            created_dir: true,
            created_dir_id: None,
            follow: None,
            task_log: None,
            parts: vec![state.join("tasks/t1-0-0.jsonl")],
            start_time: epoch_ms(),
            token: Token::new().unwrap(),
        };
        let config = DaemonConfig::new(state.clone(), state.join("socket"));
        let shared = Shared {
            sampling: Sampling::new(config.interval),
            config,
            board: Board::new(),
            files: StateFiles::new(&state),
            inner: Mutex::new(Inner {
                segments: None,
                tasks: Vec::new(),
                ending: vec![ending],
            }),
        };
        let reply = shared.handle(Request::TaskStart {
            task: "t1".to_owned(),
            run: 0,
            profile_dir: None,
            pid: None,
            cgroup: None,
            allow_host: false,
            since: None,
            uid: None,
            gid: None,
            task_log: None,
        });
        let Reply::Error { error } = reply else {
            panic!("{reply:?}");
        };
        assert_eq!(error.code, crate::ErrorCode::Busy);
        let error = error.message;
        assert!(
            error.contains("is ending") && error.contains("wait"),
            "{error}"
        );
    }

    #[test]
    fn a_task_end_whose_state_cannot_be_saved_keeps_no_profile_and_can_be_retried() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        crate::state::prepare(&state).unwrap();
        let mut config = DaemonConfig::new(state.clone(), state.join("socket"));
        config.interval = Duration::from_millis(10);
        let shared = Shared {
            sampling: Sampling::new(config.interval),
            config,
            board: Board::new(),
            files: StateFiles::new(&state),
            inner: Mutex::new(Inner {
                segments: None,
                tasks: Vec::new(),
                ending: Vec::new(),
            }),
        };
        let start = Request::TaskStart {
            task: "t1".to_owned(),
            run: 0,
            profile_dir: None,
            pid: None,
            cgroup: None,
            allow_host: false,
            since: None,
            uid: None,
            gid: None,
            task_log: None,
        };
        assert!(matches!(shared.handle(start), Reply::Started(_)));
        let output = dir.path().join("t1.json");
        let end = Request::TaskEnd {
            task: "t1".to_owned(),
            run: 0,
            exit_status: Some(0),
            output: output.clone(),
        };
        // The state file cannot be replaced (as on a full disk): a directory is in the way
        // of its temporary.
        let blocker = state.join(".state.json.tmp");
        std::fs::create_dir(&blocker).unwrap();
        let reply = shared.handle(end.clone());
        let Reply::Error { error } = reply else {
            panic!("{reply:?}");
        };
        assert!(error.message.contains("is a directory"), "{error:?}");
        assert!(!output.exists(), "a profile kept for a task still open");
        let open = shared.files.load().unwrap();
        assert_eq!(open.len(), 1, "a restart finds the task open, to end once");
        assert_eq!(shared.open_tasks().len(), 1);
        std::fs::remove_dir(&blocker).unwrap();
        assert_eq!(
            shared.handle(end.clone()),
            Reply::Output {
                output: output.clone()
            }
        );
        assert!(output.exists());
        assert_eq!(shared.files.load().unwrap(), []);
        assert_eq!(shared.files.history().unwrap().len(), 1);
        assert!(matches!(shared.handle(end), Reply::Error { .. }));
        assert!(shared.stop().is_ok());
    }
}
