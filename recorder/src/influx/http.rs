//! The little of HTTP/1.1 the InfluxDB endpoint needs, on a std TCP stream: one request a
//! connection (answered with `Connection: close`), its head parsed by httparse and bounded,
//! its body by `Content-Length` only (no chunked encoding: 411), bounded too, and a deadline
//! for the whole request, so that a slow or hostile client holds a handler for seconds, not
//! for ever. The daemon's live profiles read their requests here too.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The longest request head (request line and headers).
const MAX_HEAD_BYTES: usize = 16 << 10;
/// Headers of a request at most.
const MAX_HEADERS: usize = 64;
/// How long a client has to send its whole request, and each read or write may wait.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// A request, as far as the endpoint reads it.
pub struct Request {
    pub method: String,
    /// The path without its query.
    pub path: String,
    /// The query's `name=value` pairs, not percent-decoded (the endpoint reads `precision`
    /// only, whose values are plain letters).
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A request that cannot be read whole: answered with this status, or only closed.
pub enum ReadError {
    /// Answered with the status and a reason.
    Refused(u16, String),
    /// The client went away or was too slow: nothing to answer.
    Gone,
}

impl Request {
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Reads one request; a body over `max_body_bytes` is refused (413) without being read.
pub fn read_request(stream: &mut TcpStream, max_body_bytes: usize) -> Result<Request, ReadError> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    stream
        .set_read_timeout(Some(REQUEST_DEADLINE))
        .and_then(|()| stream.set_write_timeout(Some(REQUEST_DEADLINE)))
        .map_err(|_| ReadError::Gone)?;
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut head = httparse::Request::new(&mut headers);
        match head.parse(&buffer) {
            Ok(httparse::Status::Complete(head_length)) => {
                let head = Head::of(&head)?;
                let body = buffer.split_off(head_length);
                return head.read_body(stream, body, max_body_bytes, deadline);
            }
            Ok(httparse::Status::Partial) if buffer.len() < MAX_HEAD_BYTES => {}
            Ok(httparse::Status::Partial) => {
                return Err(ReadError::Refused(431, "request head too large".to_owned()))
            }
            Err(error) => return Err(ReadError::Refused(400, format!("bad request: {error}"))),
        }
        let read = read_before(stream, &mut chunk, deadline)?;
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// A read that fails once the deadline has passed, or at the end of the stream.
fn read_before(
    stream: &mut TcpStream,
    chunk: &mut [u8],
    deadline: Instant,
) -> Result<usize, ReadError> {
    if Instant::now() >= deadline {
        return Err(ReadError::Gone);
    }
    match stream.read(chunk) {
        Ok(0) | Err(_) => Err(ReadError::Gone),
        Ok(read) => Ok(read),
    }
}

/// What the head says, owned.
struct Head {
    method: String,
    target: String,
    content_length: usize,
    expects_continue: bool,
}

impl Head {
    fn of(head: &httparse::Request) -> Result<Head, ReadError> {
        let mut content_length = 0;
        let mut expects_continue = false;
        for header in head.headers.iter() {
            let value = String::from_utf8_lossy(header.value);
            let value = value.trim();
            if header.name.eq_ignore_ascii_case("content-length") {
                content_length = value.parse().map_err(|_| {
                    ReadError::Refused(400, "bad request: invalid Content-Length".to_owned())
                })?;
            } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(ReadError::Refused(
                    411,
                    "length required: send the body with Content-Length".to_owned(),
                ));
            } else if header.name.eq_ignore_ascii_case("expect") {
                expects_continue = value.eq_ignore_ascii_case("100-continue");
            }
        }
        Ok(Head {
            method: head.method.unwrap_or_default().to_owned(),
            target: head.path.unwrap_or_default().to_owned(),
            content_length,
            expects_continue,
        })
    }

    fn read_body(
        self,
        stream: &mut TcpStream,
        mut body: Vec<u8>,
        max_body_bytes: usize,
        deadline: Instant,
    ) -> Result<Request, ReadError> {
        if self.content_length > max_body_bytes {
            return Err(ReadError::Refused(
                413,
                format!("request body over {max_body_bytes} bytes"),
            ));
        }
        if self.expects_continue && body.len() < self.content_length {
            // curl sends a body over 1 KiB only once told to go on.
            let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let mut chunk = [0u8; 16 << 10];
        while body.len() < self.content_length {
            let read = read_before(stream, &mut chunk, deadline)?;
            body.extend_from_slice(&chunk[..read]);
        }
        body.truncate(self.content_length);
        let (path, query) = self.target.split_once('?').unwrap_or((&self.target, ""));
        let query = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                (name.to_owned(), value.to_owned())
            })
            .collect();
        Ok(Request {
            method: self.method,
            path: path.to_owned(),
            query,
            body,
        })
    }
}

/// Writes the answer and closes the connection. An error body is InfluxDB's
/// `{"error":"..."}`.
pub(crate) fn respond(stream: &mut TcpStream, status: u16, error: Option<&str>) -> io::Result<()> {
    let reason = match status {
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Request Entity Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let body = error
        .map(|message| serde_json::json!({ "error": message }).to_string())
        .unwrap_or_default();
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nConnection: close\r\nX-Influxdb-Version: 1.8.10\r\n"
    );
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    if status != 204 {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// Bytes of an unread body taken (and thrown away) after the answer, at most.
const DRAIN_BYTES: usize = 64 << 20;
/// How long the drain waits for the client to close.
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// Closes a connection whose body may be unread (a 413): the client sees the answer
/// instead of a reset, since the kernel resets a socket closed with unread data.
pub(crate) fn close(mut stream: TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(DRAIN_WAIT));
    let deadline = Instant::now() + DRAIN_WAIT;
    let mut chunk = [0u8; 16 << 10];
    let mut drained = 0;
    while drained < DRAIN_BYTES {
        match read_before(&mut stream, &mut chunk, deadline) {
            Ok(read) => drained += read,
            Err(_) => return,
        }
    }
}
