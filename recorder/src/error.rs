//! What can stop a recording from starting or ending cleanly, and the named threads whose
//! start can fail with it.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecorderError {
    #[error(
        "{path}: a log is already there; finalize it (tc-profile finalize) or remove it first"
    )]
    LogExists { path: PathBuf },
    #[error("{path}: cannot create the log: {source}")]
    CreateLog {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "'{0}' is not a metric prefix: segments of letters, digits, _ and -, each followed by \
         a dot (so that no series is named like a track of the recorder)"
    )]
    MetricPrefix(String),
    #[error("cannot open the statsd port on 127.0.0.1: {0}")]
    Statsd(std::io::Error),
    #[error("{path}: cannot make the statsd socket: {source}")]
    StatsdSocket {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the InfluxDB endpoint on 127.0.0.1: {0}")]
    Influx(std::io::Error),
    #[error("cannot start the {thread} thread: {source}")]
    Thread {
        thread: &'static str,
        source: std::io::Error,
    },
    #[error("{path}: cannot use it as the profile directory: {source}")]
    ProfileDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the recording was started without log lines (RecorderConfig::log_lines)")]
    LogLinesOff,
    #[error("the writer thread panicked; the log ends at its last complete line")]
    WriterPanicked,
    #[error(
        "{path}: the disk did not take the log's last lines within {} s; the log is left as a \
         killed recorder leaves it, locked until this process exits: finalize it then \
         (tc-profile finalize, or recover --state-dir)",
        waited.as_secs()
    )]
    WriterHung { path: PathBuf, waited: Duration },
}

/// Starts a thread named `name` (as `ps -L` and panics show it).
pub(crate) fn spawn<T: Send + 'static>(
    name: &'static str,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, RecorderError> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(body)
        .map_err(|source| RecorderError::Thread {
            thread: name,
            source,
        })
}
