//! Answers, for a connection closed after each (`Connection: close`): short ones whole
//! (`Content-Length`), long ones streamed in chunks, never held whole, within a deadline.

use std::io::{self, BufWriter, Write};
use std::net::TcpStream;
use std::time::Instant;

/// The content type of JSON bodies.
pub const JSON: &str = "application/json";

/// An answer: its status, header lines of its own, and a body with its content type.
pub struct Response<'a> {
    pub status: u16,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: Option<(&'a str, &'a [u8])>,
}

/// How the client knows where the body ends.
enum Framing {
    Length(usize),
    Chunked,
    /// A 204: no body, nor a length for one.
    None,
}

/// The head of an answer on a connection closed after it (`Connection: close`).
fn head(status: u16, headers: &[(&str, &str)], content_type: &str, framing: Framing) -> String {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nConnection: close\r\n",
        reason(status)
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !content_type.is_empty() {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    match framing {
        Framing::Length(length) => head.push_str(&format!("Content-Length: {length}\r\n")),
        Framing::Chunked => head.push_str("Transfer-Encoding: chunked\r\n"),
        Framing::None => {}
    }
    head.push_str("\r\n");
    head
}

/// Writes `response` for a connection closed after it (`Connection: close`).
pub fn write_response(stream: &mut impl Write, response: &Response) -> io::Result<()> {
    let (content_type, body) = response.body.unwrap_or_default();
    let framing = match response.status {
        204 => Framing::None,
        _ => Framing::Length(body.len()),
    };
    let head = head(response.status, response.headers, content_type, framing);
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// Bytes of a streamed answer's chunk (but the last).
const CHUNK_BYTES: usize = 64 << 10;

/// Writes a 200 answer whose body `fill` writes as it goes, sent in chunks
/// (`Transfer-Encoding: chunked`, its end marked: a body cut short is seen as such), so
/// that it is never held whole; every write waits only for what is left until `deadline`.
pub fn write_chunked(
    stream: &TcpStream,
    deadline: Instant,
    headers: &[(&str, &str)],
    content_type: &str,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut out = BeforeDeadline { stream, deadline };
    out.write_all(head(200, headers, content_type, Framing::Chunked).as_bytes())?;
    let mut chunks = BufWriter::with_capacity(CHUNK_BYTES, Chunks(&mut out));
    fill(&mut chunks)?;
    chunks.flush()?;
    drop(chunks);
    out.write_all(b"0\r\n\r\n")?;
    out.flush()
}

/// Each write one chunk: its length in hex, the bytes.
struct Chunks<W: Write>(W);

impl<W: Write> Write for Chunks<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if bytes.is_empty() {
            return Ok(0);
        }
        self.0
            .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
        self.0.write_all(bytes)?;
        self.0.write_all(b"\r\n")?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A stream whose writes fail once the deadline has passed, and wait no longer than it.
struct BeforeDeadline<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
}

impl Write for BeforeDeadline<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_write_timeout(Some(left))?;
        (&mut &*self.stream).write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&mut &*self.stream).flush()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Request Entity Too Large",
        415 => "Unsupported Media Type",
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

/// An answer of the InfluxDB endpoint: its status and its JSON body (none for a 204).
pub(crate) struct Answer {
    pub status: u16,
    pub body: Option<Vec<u8>>,
}

impl Answer {
    pub(crate) fn no_content() -> Answer {
        Answer {
            status: 204,
            body: None,
        }
    }

    pub(crate) fn json(status: u16, body: &serde_json::Value) -> Answer {
        Answer {
            status,
            body: Some(body.to_string().into_bytes()),
        }
    }

    /// An error as InfluxDB 1.x words it: `{"error":"..."}`.
    pub(crate) fn v1_error(status: u16, message: &str) -> Answer {
        Answer {
            status,
            body: Some(error_body(message)),
        }
    }

    /// An error as InfluxDB 2.x words it: `{"code":"...","message":"..."}`.
    pub(crate) fn v2_error(status: u16, message: &str) -> Answer {
        let code = match status {
            400 => "invalid",
            401 => "unauthorized",
            403 => "forbidden",
            404 => "not found",
            405 => "method not allowed",
            413 => "request too large",
            415 => "unsupported media type",
            503 => "unavailable",
            _ => "internal error",
        };
        let body = serde_json::json!({ "code": code, "message": message });
        Answer::json(status, &body)
    }
}

/// Writes the endpoint's answer, as InfluxDB 1.8 answers, for a connection closed after it.
pub(crate) fn respond(mut stream: &TcpStream, answer: &Answer) -> io::Result<()> {
    let response = Response {
        status: answer.status,
        headers: &[
            ("X-Influxdb-Version", "1.8.10"),
            ("X-Influxdb-Build", "OSS"),
        ],
        body: answer.body.as_deref().map(|body| (JSON, body)),
    };
    write_response(&mut stream, &response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Duration;

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

    #[test]
    fn a_streamed_answer_is_sent_in_chunks_with_its_end_marked() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let body = vec![b'x'; CHUNK_BYTES + 5];
        let deadline = Instant::now() + Duration::from_secs(10);
        // Written in small pieces, as a serializer writes.
        let fill =
            |out: &mut dyn Write| body.chunks(100).try_for_each(|piece| out.write_all(piece));
        write_chunked(&server, deadline, &[("A", "b")], JSON, fill).unwrap();
        drop(server);
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).unwrap();
        let text = String::from_utf8(answer).unwrap();
        let (head, chunks) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 200 OK\r\nConnection: close\r\nA: b\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked"
        );
        let mut rest = chunks.as_bytes();
        let mut sizes = Vec::new();
        let mut received = Vec::new();
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size = usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16);
            let size = size.unwrap();
            sizes.push(size);
            rest = &rest[line_end + 2..];
            received.extend_from_slice(&rest[..size]);
            assert_eq!(&rest[size..size + 2], b"\r\n");
            rest = &rest[size + 2..];
            if size == 0 {
                break;
            }
        }
        assert!(rest.is_empty() && received == body);
        assert!(
            sizes.len() > 2 && sizes.iter().all(|&size| size <= CHUNK_BYTES),
            "{sizes:?}"
        );
    }
}
