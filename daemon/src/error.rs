//! Why the daemon could not start, or a request could not be done: each names the problem
//! and what to do, in one line (a request's error is its reply).

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
    #[error("task {task} is not recorded here: GET /profile.json for the one that is")]
    NotRecorded { task: String },
    #[error("{0}")]
    Request(String),
}

impl DaemonError {
    pub(crate) fn state(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> DaemonError {
        let path = path.into();
        move |source| DaemonError::StateDir { path, source }
    }
}
