//! The little of HTTP/1.1 the InfluxDB endpoint needs, on a std TCP stream: one request a
//! connection (answered with `Connection: close`), its head parsed by httparse and bounded,
//! its body by `Content-Length` only (no chunked encoding: 411), bounded too, and a deadline
//! for the whole request, so that a slow or hostile client holds a handler for seconds, not
//! for ever. The daemon's live profiles read their requests and write their answers here
//! too.

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

/// The content type of JSON bodies.
pub const JSON: &str = "application/json";

/// An answer: its status, header lines of its own, and a body with its content type.
pub struct Response<'a> {
    pub status: u16,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: Option<(&'a str, &'a [u8])>,
}

/// Writes `response` for a connection closed after it (`Connection: close`).
pub fn write_response(stream: &mut impl Write, response: &Response) -> io::Result<()> {
    let status = response.status;
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nConnection: close\r\n",
        reason(status)
    );
    for (name, value) in response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let (content_type, body) = response.body.unwrap_or_default();
    if !content_type.is_empty() {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    // A 204 has no body, nor a length for one.
    if status != 204 {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Request Entity Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// An error body as InfluxDB writes it: `{"error":"..."}`.
pub fn error_body(message: &str) -> Vec<u8> {
    serde_json::json!({ "error": message })
        .to_string()
        .into_bytes()
}

/// Writes the endpoint's answer, as InfluxDB 1.8 answers, for a connection closed after it.
pub(crate) fn respond(stream: &mut TcpStream, status: u16, error: Option<&str>) -> io::Result<()> {
    let body = error.map(error_body);
    let response = Response {
        status,
        headers: &[("X-Influxdb-Version", "1.8.10")],
        body: body.as_deref().map(|body| (JSON, body)),
    };
    write_response(stream, &response)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn written(response: &Response) -> String {
        let mut out = Vec::new();
        write_response(&mut out, response).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_response_has_its_headers_type_and_length_and_a_204_no_length() {
        let error = error_body("no \"db\"");
        let response = Response {
            status: 400,
            headers: &[("X-Influxdb-Version", "1.8.10")],
            body: Some((JSON, &error)),
        };
        assert_eq!(
            written(&response),
            "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nX-Influxdb-Version: 1.8.10\r\n\
             Content-Type: application/json\r\nContent-Length: 21\r\n\r\n{\"error\":\"no \\\"db\\\"\"}"
        );
        let no_content = Response {
            status: 204,
            headers: &[],
            body: None,
        };
        assert_eq!(
            written(&no_content),
            "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
        );
    }
}
