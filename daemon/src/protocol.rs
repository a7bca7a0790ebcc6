//! The socket's protocol (SPEC.md, "Daemon protocol"): one JSON request line, one JSON
//! reply line, a version on every request.

use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;

/// The protocol version this daemon and its clients speak.
pub const VERSION: u32 = 1;
/// The longest request line.
pub const MAX_REQUEST_BYTES: u64 = 64 * 1024;

/// A request, with the version it was sent in.
#[derive(Debug, Serialize, Deserialize)]
pub struct Envelope {
    pub v: u32,
    #[serde(flatten)]
    pub request: Request,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    #[serde(rename_all = "camelCase")]
    TaskStart {
        task: String,
        #[serde(default)]
        run: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile_dir: Option<PathBuf>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cgroup: Option<PathBuf>,
        /// Whether the task may be the whole host: pid 1, or the root cgroup.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        allow_host: bool,
        /// Epoch ms the task's profile begins at, when the worker's own steps for it (a
        /// claim, downloads) came before this start; at most a day before it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<f64>,
        /// The user (and group) the task runs as: a profile directory the daemon creates is
        /// theirs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gid: Option<u32>,
        /// The worker's live log of the task (absolute), followed as `tail -F`: its lines
        /// `Log` markers, its stat lines metrics.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_log: Option<PathBuf>,
    },
    #[serde(rename_all = "camelCase")]
    TaskEnd {
        task: String,
        #[serde(default)]
        run: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_status: Option<i32>,
        output: PathBuf,
    },
    #[serde(rename_all = "camelCase")]
    WorkerProfile {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<f64>,
        output: PathBuf,
    },
    /// What the daemon is doing.
    Status,
}

/// What a task is given, as `task-start` replies: everything the worker hands the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStarted {
    /// `TASKCLUSTER_PROFILE_DIR`.
    pub profile_dir: PathBuf,
    /// The task's statsd listener (`HOST:PORT`, UDP), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statsd_address: Option<String>,
    /// The task's statsd Unix datagram socket, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statsd_socket: Option<PathBuf>,
    /// The task's InfluxDB endpoint (`TASKCLUSTER_INFLUX_URL`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub influx_url: Option<String>,
    /// The task's live profile, when the daemon serves HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_profile_url: Option<String>,
    /// The task's live log, when the daemon serves HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_log_url: Option<String>,
}

/// What the daemon is doing, as `status` replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// tc-profile's version.
    pub version: String,
    /// Epoch ms the daemon started at, and how long ago.
    pub started: f64,
    pub uptime_ms: f64,
    /// The open tasks, oldest first.
    pub tasks: Vec<TaskStatus>,
    /// The machine's segments, the one being written included, and their bytes.
    pub segments: usize,
    pub segment_bytes: u64,
    /// Bytes of the segments read for profiles since the daemon started: a task's end
    /// reads only the part of a segment its span needs.
    #[serde(default)]
    pub segment_bytes_read: u64,
    /// How many times the machine's files (/proc/stat, meminfo) were read for the segment
    /// and the tasks since the daemon started: once a tick for all of them.
    #[serde(default)]
    pub machine_reads: u64,
    /// The last housekeeping run (rotation and retention), if any yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub housekeeping: Option<Housekeeping>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub task: String,
    pub run: u32,
    /// Since its start, in ms.
    pub age_ms: f64,
    /// Whether its processes are followed.
    pub attached: bool,
    /// Whether its profile is being written.
    pub ending: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Housekeeping {
    /// Epoch ms.
    pub at: f64,
    /// Segments deleted by the retention.
    pub deleted: usize,
    /// Why the rotation failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why a request was not done: a code a client can act on, and one line for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ErrorReply {
    pub code: ErrorCode,
    pub message: String,
}

/// What kind of failure an [`ErrorReply`] is (SPEC.md, "Daemon protocol").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// Not a request of this protocol, or a value it does not take (a task id, a relative
    /// path).
    BadRequest,
    /// No process of that pid.
    NoSuchProcess,
    /// No cgroup at that path.
    NoSuchCgroup,
    /// A process or cgroup a task may not be: pid 0, the daemon's own, the whole host
    /// without `allowHost`.
    Refused,
    /// The task is not open.
    NotOpen,
    /// The task is open already, with its processes.
    AlreadyOpen,
    /// The task was finalized by the timeout; the message names its profile.
    TimedOut,
    /// Try again: the daemon is serving as many requests as it takes, or the task is ending.
    Busy,
    /// A file could not be read or written: the state directory, a log, the output.
    Io,
    /// A fault of the daemon's own (a thread or a recorder that could not start).
    Internal,
}

impl ErrorReply {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorReply {
        ErrorReply {
            code,
            message: message.into(),
        }
    }
}

/// A reply: what was done, or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reply {
    Started(TaskStarted),
    Status(Box<Status>),
    Output { output: PathBuf },
    Error { error: ErrorReply },
}

/// Reads one request line of at most [`MAX_REQUEST_BYTES`]; a refusal is the reply's text.
pub fn read_request(input: impl Read) -> Result<Request, String> {
    let mut line = Vec::new();
    let mut limited = io::BufReader::new(input.take(MAX_REQUEST_BYTES + 1));
    limited
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("cannot read the request: {e}"))?;
    if line.len() as u64 > MAX_REQUEST_BYTES {
        return Err(format!("the request is over {MAX_REQUEST_BYTES} bytes"));
    }
    let envelope: Envelope =
        serde_json::from_slice(&line).map_err(|e| format!("not a request: {e}"))?;
    if envelope.v != VERSION {
        return Err(format!(
            "protocol version {} is not spoken here (this daemon speaks {VERSION})",
            envelope.v
        ));
    }
    Ok(envelope.request)
}

/// Writes `value` as one line.
pub fn write_line(mut output: impl Write, value: &impl Serialize) -> io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    output.write_all(&line)?;
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_and_a_wrong_version_is_refused() {
        let request = Request::TaskEnd {
            task: "abc".into(),
            run: 2,
            exit_status: Some(1),
            output: "/tmp/p.json".into(),
        };
        let mut line = Vec::new();
        write_line(
            &mut line,
            &Envelope {
                v: VERSION,
                request: request.clone(),
            },
        )
        .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&line),
            "{\"v\":1,\"op\":\"task-end\",\"task\":\"abc\",\"run\":2,\"exitStatus\":1,\"output\":\"/tmp/p.json\"}\n"
        );
        assert_eq!(read_request(&line[..]), Ok(request));
        let other = br#"{"v":2,"op":"task-start","task":"abc"}"#;
        assert!(read_request(&other[..]).unwrap_err().contains("version 2"));
    }

    #[test]
    fn an_overlong_request_is_refused_without_reading_it_all() {
        let long = vec![b' '; MAX_REQUEST_BYTES as usize * 4];
        assert!(read_request(&long[..]).unwrap_err().contains("over"));
    }

    #[test]
    fn replies_are_told_apart_by_their_keys() {
        let line = r#"{"error":{"code":"not-open","message":"no such task"}}"#;
        let reply: Reply = serde_json::from_str(line).unwrap();
        let error = ErrorReply::new(ErrorCode::NotOpen, "no such task");
        assert_eq!(reply, Reply::Error { error });
        let reply: Reply = serde_json::from_str(r#"{"profileDir":"/p"}"#).unwrap();
        let Reply::Started(started) = reply else {
            panic!("{reply:?}");
        };
        assert_eq!(started.profile_dir, PathBuf::from("/p"));
        let reply: Reply = serde_json::from_str(r#"{"output":"/o"}"#).unwrap();
        assert_eq!(
            reply,
            Reply::Output {
                output: "/o".into()
            }
        );
    }
}
