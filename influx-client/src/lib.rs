//! The InfluxDB 1.x client that the end-of-run export (reports) and the forwarding during
//! the task (recorder) share: where to write, with which credentials, and one write with
//! retries and backoff whose errors say what to fix; and one InfluxQL query read a chunk
//! at a time ([`query_influx`], `query.rs`), `fleet`'s reading of the tasks' summaries. A crate of its own at the
//! bottom, because the recorder may not depend on the reports.
//!
//! HTTP goes through `ureq`: blocking, small, maintained, and with rustls, since a fleet's
//! InfluxDB is reached over https with credentials; a plain `TcpStream` would do http alone.

mod query;

pub use query::{QueryError, CHUNK_ROWS};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use std::fmt;
use std::time::Duration;

/// Characters of a server's error message kept in an error.
const MESSAGE_CHARS: usize = 200;

/// How to authenticate to InfluxDB. Never printed: `Debug` says only which kind it is.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// InfluxDB 1.x users: HTTP basic authentication.
    Basic { username: String, password: String },
    /// InfluxDB 1.8+ and 2.x tokens: `Authorization: Token ...`.
    Token(String),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Basic { .. } => f.write_str("Credentials::Basic(redacted)"),
            Credentials::Token(_) => f.write_str("Credentials::Token(redacted)"),
        }
    }
}

impl Credentials {
    fn header(&self) -> String {
        match self {
            Credentials::Basic { username, password } => {
                let pair = format!("{username}:{password}");
                format!("Basic {}", STANDARD.encode(pair))
            }
            Credentials::Token(token) => format!("Token {token}"),
        }
    }
}

/// Where to write: a base URL (`https://influx.example.com:8086`) and a database; and the
/// HTTP agent every write to it goes through, so that writes reuse its connections (a
/// clone shares them).
#[derive(Clone, Debug)]
pub struct InfluxTarget {
    url: String,
    database: String,
    credentials: Option<Credentials>,
    agent: ureq::Agent,
}

impl InfluxTarget {
    /// Refuses a URL that is not http(s), or that carries credentials: a command line is
    /// readable by every process of the machine, the task's included.
    pub fn new(
        url: &str,
        database: &str,
        credentials: Option<Credentials>,
    ) -> Result<InfluxTarget, WriteError> {
        let bad = |why: &'static str| WriteError::BadUrl {
            url: without_userinfo(url),
            why,
        };
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| bad("it does not start with http:// or https://"))?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') || url.contains("?") {
            return Err(bad(
                "it carries credentials or a query; give credentials with \
                 --influx-credentials FILE or TC_PROFILE_INFLUX_* variables",
            ));
        }
        if authority.is_empty() {
            return Err(bad("it names no host"));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Ok(InfluxTarget {
            url: url.trim_end_matches('/').to_owned(),
            database: database.to_owned(),
            credentials,
            agent,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn has_credentials(&self) -> bool {
        self.credentials.is_some()
    }
}

/// The URL with what stands between `//` and `@` replaced, so that an error never quotes a
/// password.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("//") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}//***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

/// How often to try, the first wait between tries (doubled after each), and the longest
/// wait for one attempt, connection included.
#[derive(Clone, Copy, Debug)]
pub struct Retry {
    pub attempts: u32,
    pub first_backoff: Duration,
    pub attempt_timeout: Duration,
}

impl Default for Retry {
    /// Five attempts over about four seconds, 30 s at most each.
    fn default() -> Retry {
        Retry {
            attempts: 5,
            first_backoff: Duration::from_millis(250),
            attempt_timeout: Duration::from_secs(30),
        }
    }
}

/// The unit of the timestamps of a write (InfluxDB's `precision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    Milliseconds,
    Nanoseconds,
}

impl Precision {
    fn query(self) -> &'static str {
        match self {
            Precision::Milliseconds => "ms",
            Precision::Nanoseconds => "ns",
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    #[error("InfluxDB URL {url}: {why}")]
    BadUrl { url: String, why: &'static str },
    #[error("InfluxDB at {url} did not take the data after {attempts} attempts: {reason}")]
    Unreachable {
        url: String,
        attempts: u32,
        reason: String,
    },
    #[error("InfluxDB at {url} has no database {database:?}: create it (CREATE DATABASE \"{database}\") or name another with --database")]
    NoDatabase { url: String, database: String },
    #[error("InfluxDB at {url} refused the credentials (HTTP {status}): check --influx-credentials or the TC_PROFILE_INFLUX_* variables")]
    Unauthorized { url: String, status: u16 },
    #[error("InfluxDB at {url} refused the data: HTTP {status}: {message}")]
    Refused {
        url: String,
        status: u16,
        message: String,
        /// Of a partial write, the points InfluxDB 1.x says it dropped (`dropped=N`): it
        /// wrote the others.
        dropped: Option<u64>,
    },
}

impl WriteError {
    /// Whether a later try may succeed: the server was unreachable or busy, not refusing.
    pub fn is_transient(&self) -> bool {
        matches!(self, WriteError::Unreachable { .. })
    }
}

/// POSTs line protocol to `/write?db=DATABASE&precision=P`. Connection failures, 429 and
/// 5xx are retried with backoff; other refusals are final. Returns the attempts made.
pub fn write_influx(
    target: &InfluxTarget,
    body: &[u8],
    precision: Precision,
    retry: Retry,
) -> Result<u32, WriteError> {
    let endpoint = format!("{}/write", target.url);
    let mut backoff = retry.first_backoff;
    let mut reason = String::new();
    for attempt in 1..=retry.attempts.max(1) {
        let mut request = target
            .agent
            .post(&endpoint)
            .config()
            .timeout_global(Some(retry.attempt_timeout))
            .build()
            .query("db", &target.database)
            .query("precision", precision.query())
            .content_type("text/plain; charset=utf-8");
        if let Some(credentials) = &target.credentials {
            request = request.header("Authorization", credentials.header());
        }
        match request.send(body) {
            Ok(mut response) => {
                let status = response.status().as_u16();
                if (200..300).contains(&status) {
                    return Ok(attempt);
                }
                let message = response.body_mut().read_to_string().unwrap_or_default();
                let dropped = partial_write_dropped(&message);
                let message: String = message.trim().chars().take(MESSAGE_CHARS).collect();
                let url = target.url.clone();
                match status {
                    401 | 403 => return Err(WriteError::Unauthorized { url, status }),
                    404 if message.contains("database not found") => {
                        let database = target.database.clone();
                        return Err(WriteError::NoDatabase { url, database });
                    }
                    429 | 500.. => reason = format!("HTTP {status}: {message}"),
                    _ => {
                        return Err(WriteError::Refused {
                            url,
                            status,
                            message,
                            dropped,
                        })
                    }
                }
            }
            Err(error) => reason = error.to_string(),
        }
        if attempt < retry.attempts {
            std::thread::sleep(backoff);
            backoff *= 2;
        }
    }
    Err(WriteError::Unreachable {
        url: target.url.clone(),
        attempts: retry.attempts.max(1),
        reason,
    })
}

/// Runs one InfluxQL statement and calls `each_row` with the columns' names and a row's
/// values, row by row as the answer arrives, a chunk of [`CHUNK_ROWS`] at a time
/// (timestamps in epoch milliseconds). Returns the rows read.
pub fn query_influx(
    target: &InfluxTarget,
    statement: &str,
    timeout: Duration,
    each_row: impl FnMut(&[String], &[serde_json::Value]),
) -> Result<u64, QueryError> {
    let endpoint = query::Endpoint {
        agent: &target.agent,
        url: &target.url,
        database: &target.database,
        authorization: target.credentials.as_ref().map(Credentials::header),
    };
    query::run(endpoint, statement, timeout, each_row)
}

/// The `dropped=N` that ends InfluxDB 1.x's error of a partial write (`{"error":"partial
/// write: field type conflict: ... dropped=1"}`).
fn partial_write_dropped(message: &str) -> Option<u64> {
    if !message.contains("partial write") {
        return None;
    }
    let (_, count) = message.rsplit_once("dropped=")?;
    let digits = count
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(count.len());
    count[..digits].parse().ok()
}

#[cfg(test)]
#[path = "../benches/loopback.rs"]
mod loopback;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_credentials_are_refused() {
        for url in [
            "http://user:pw@127.0.0.1:8086",
            "http://127.0.0.1:8086/?u=a&p=b",
            "ftp://x",
            "http://",
        ] {
            assert!(InfluxTarget::new(url, "db", None).is_err(), "{url}");
        }
        let error = InfluxTarget::new("http://u:hunter2@h/", "db", None).unwrap_err();
        assert_eq!(
            error.to_string().split(':').take(3).collect::<Vec<_>>(),
            ["InfluxDB URL http", "//***@h/", " it carries credentials or a query; give credentials with --influx-credentials FILE or TC_PROFILE_INFLUX_* variables"]
        );
        let target = InfluxTarget::new("https://influx.example:8086/", "db", None).unwrap();
        assert_eq!(target.url(), "https://influx.example:8086");
    }

    #[test]
    fn a_partial_write_says_how_many_points_were_dropped() {
        let conflict = r#"{"error":"partial write: field type conflict: input field \"y\" on measurement \"m\" is type integer, already exists as type float dropped=2"}"#;
        assert_eq!(partial_write_dropped(conflict), Some(2));
        assert_eq!(partial_write_dropped(r#"{"error":"dropped=2"}"#), None);
        assert_eq!(
            partial_write_dropped(r#"{"error":"partial write: points beyond retention policy"}"#),
            None
        );
    }

    #[test]
    fn credentials_never_show_in_debug_output() {
        let credentials = Credentials::Basic {
            username: "u".into(),
            password: "hunter2".into(),
        };
        let target = InfluxTarget::new("http://h", "db", Some(credentials)).unwrap();
        assert!(!format!("{target:?}").contains("hunter2"));
    }

    #[test]
    fn writes_to_one_target_reuse_its_connection() {
        let (url, server) = loopback::serve(3);
        let target = InfluxTarget::new(&url, "ci", None).unwrap();
        for _ in 0..3 {
            write_influx(
                &target,
                b"m v=1\n",
                Precision::Nanoseconds,
                Retry::default(),
            )
            .unwrap();
        }
        drop(target);
        assert_eq!(
            server.join().unwrap(),
            [3],
            "one connection for three writes"
        );
    }
}
