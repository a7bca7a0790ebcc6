//! The socket's protocol (SPEC.md, "Daemon protocol"): one JSON request line, one JSON
//! reply line, a version on every request.

use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;
use tc_profile_recorder::STATSD_SOCKET_NAME;

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
}

/// A reply: what was done, or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reply {
    #[serde(rename_all = "camelCase")]
    ProfileDir {
        profile_dir: PathBuf,
        /// The task's statsd socket, in its profile directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        statsd_socket: Option<PathBuf>,
    },
    Output {
        output: PathBuf,
    },
    Error {
        error: String,
    },
}

impl Reply {
    /// The answer to a task start: its profile directory, and the statsd socket there.
    pub fn task_started(profile_dir: PathBuf) -> Reply {
        let statsd_socket = Some(profile_dir.join(STATSD_SOCKET_NAME));
        Reply::ProfileDir {
            profile_dir,
            statsd_socket,
        }
    }
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
        let reply: Reply = serde_json::from_str(r#"{"error":"no such task"}"#).unwrap();
        assert_eq!(
            reply,
            Reply::Error {
                error: "no such task".into()
            }
        );
        let reply: Reply = serde_json::from_str(r#"{"profileDir":"/p"}"#).unwrap();
        assert_eq!(
            reply,
            Reply::ProfileDir {
                profile_dir: "/p".into(),
                statsd_socket: None
            }
        );
    }
}
