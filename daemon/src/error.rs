//! Why the daemon could not start, or a request could not be done: each names the problem
//! and what to do, in one line (a request's error is its reply).

use crate::protocol::{ErrorCode, ErrorReply};
use std::io;
use std::path::PathBuf;
use tc_profile_recorder::RecorderError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    #[error("{path}: {source}; check --state-dir")]
    StateDir { path: PathBuf, source: io::Error },
    #[error("{path}: cannot create the task's profile directory: {source}; check --profile-dir and --user")]
    ProfileDir { path: PathBuf, source: io::Error },
    #[error("{path} is in use by another daemon; give each daemon its own --state-dir")]
    StateDirLocked { path: PathBuf },
    #[error("{path}: cannot listen there: {source}; check --socket")]
    Socket { path: PathBuf, source: io::Error },
    #[error("{path}: another daemon listens there; stop it or choose another --socket")]
    SocketInUse { path: PathBuf },
    #[error("{address}: cannot serve HTTP there: {source}; check --http")]
    Http { address: String, source: io::Error },
    #[error("cannot record: {0}")]
    Recorder(#[from] RecorderError),
    #[error("{path}: {source}")]
    Log { path: PathBuf, source: io::Error },
    #[error("{path}: cannot write the profile: {source}; choose a writable place with -o")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot start a thread: {0}")]
    Thread(io::Error),
    #[error("task {task} run {run} is not open; start it first")]
    NotOpen { task: String, run: u32 },
    #[error("task {task} is not recorded here; check the live profile's URL")]
    NotRecorded { task: String },
    #[error("cannot draw a random token: {0}")]
    Random(String),
    #[error("{0}")]
    Request(String),
    #[error("no process {pid}: give the pid of the task's running process")]
    NoSuchProcess { pid: u32 },
    #[error("{path}: no such cgroup (no cgroup.procs there); give the task's cgroup directory")]
    NoSuchCgroup { path: PathBuf },
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Busy(String),
    #[error(
        "task {task} run {run} is already open; give --pid or --cgroup to attach its processes \
         once, or end it first"
    )]
    AlreadyOpen { task: String, run: u32 },
    #[error("task {task} run {run} was ended by --task-timeout; its profile is {profile}")]
    TimedOut {
        task: String,
        run: u32,
        profile: PathBuf,
    },
}

impl DaemonError {
    /// The code a client is told with the message.
    pub fn code(&self) -> ErrorCode {
        match self {
            DaemonError::Request(_) => ErrorCode::BadRequest,
            DaemonError::NoSuchProcess { .. } => ErrorCode::NoSuchProcess,
            DaemonError::NoSuchCgroup { .. } => ErrorCode::NoSuchCgroup,
            DaemonError::Refused(_) | DaemonError::NotRecorded { .. } => ErrorCode::Refused,
            DaemonError::NotOpen { .. } => ErrorCode::NotOpen,
            DaemonError::AlreadyOpen { .. } => ErrorCode::AlreadyOpen,
            DaemonError::TimedOut { .. } => ErrorCode::TimedOut,
            DaemonError::Busy(_) | DaemonError::StateDirLocked { .. } => ErrorCode::Busy,
            DaemonError::SocketInUse { .. } => ErrorCode::Busy,
            DaemonError::StateDir { .. }
            | DaemonError::ProfileDir { .. }
            | DaemonError::Socket { .. }
            | DaemonError::Http { .. }
            | DaemonError::Log { .. }
            | DaemonError::Write { .. } => ErrorCode::Io,
            DaemonError::Recorder(_) | DaemonError::Thread(_) | DaemonError::Random(_) => {
                ErrorCode::Internal
            }
        }
    }

    /// The error as a client is told it.
    pub fn reply(&self) -> ErrorReply {
        ErrorReply::new(self.code(), self.to_string())
    }

    pub(crate) fn state(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> DaemonError {
        let path = path.into();
        move |source| DaemonError::StateDir { path, source }
    }
}
