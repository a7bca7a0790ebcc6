//! The little of HTTP/1.1 the InfluxDB endpoint needs, on a std TCP stream: one request a
//! connection (answered with `Connection: close`), its head parsed by httparse and bounded,
//! its body framed by one `Content-Length` or in chunks, bounded too and read as it comes
//! ([`Body`]), and deadlines for the whole head and the whole request (each read waits
//! only for what is left of them), so that a slow or hostile client holds a handler for
//! seconds, not for ever. The daemon's live profiles read their requests and write their answers here too,
//! long answers streamed in chunks ([`write_chunked`]).

mod body;
mod response;

use body::read_before;
pub use body::Body;
pub use response::{error_body, write_chunked, write_response, Response, JSON};
pub(crate) use response::{respond, Answer};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The longest request head (request line and headers).
pub const MAX_HEAD_BYTES: usize = 16 << 10;
/// Headers of a request at most.
const MAX_HEADERS: usize = 64;
/// How long a client has to send its request head, in all.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// How long a client has to send its whole request, body included, and each write of a
/// short answer may wait.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// A request's head, as far as the endpoint reads it; its body is read apart ([`Body`]).
pub struct Request {
    pub method: String,
    /// The path without its query.
    pub path: String,
    /// The query's `name=value` pairs, percent-decoded (a `+` is a space, as forms write it).
    pub query: Vec<(String, String)>,
    /// The `Authorization` header's value (its first, when given more than once).
    pub authorization: Option<String>,
    /// The `Content-Encoding` header's value (`gzip`), when given.
    pub content_encoding: Option<String>,
}

/// A request that cannot be read whole: answered with this status, or only closed.
#[derive(Debug, PartialEq)]
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

/// `name=value` pairs joined by `&`, as a query string or a form body writes them,
/// percent-decoded; a `+` is a space.
pub fn decode_form(text: &str) -> Vec<(String, String)> {
    let decode = |part: &str| {
        let spaced = part.replace('+', " ");
        percent_encoding::percent_decode_str(&spaced)
            .decode_utf8_lossy()
            .into_owned()
    };
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

/// Reads one request's head; its body, refused (413) without being read when its
/// `Content-Length` is over `max_body_bytes` (chunks past it fail the read), is read from
/// the [`Body`], within the request's deadline.
pub fn read_request(
    stream: &TcpStream,
    max_body_bytes: usize,
) -> Result<(Request, Body<'_>), ReadError> {
    let started = Instant::now();
    stream
        .set_write_timeout(Some(REQUEST_DEADLINE))
        .map_err(|_| ReadError::Gone)?;
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(head) = parse_head(&buffer)? {
            let early = buffer.split_off(head.length);
            return head.into_request(stream, early, max_body_bytes, started + REQUEST_DEADLINE);
        }
        let read =
            read_before(stream, &mut chunk, started + HEAD_DEADLINE).ok_or(ReadError::Gone)?;
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// The request head at the start of `buffer`, or None while it is not whole. Refused: a
/// head over [`MAX_HEAD_BYTES`] (431), one httparse cannot parse, or a `Content-Length`
/// given twice or not a decimal number, or given with `Transfer-Encoding: chunked` (400), a
/// `Transfer-Encoding` other than `chunked` (411).
pub fn parse_head(buffer: &[u8]) -> Result<Option<Head>, ReadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    let too_large = || ReadError::Refused(431, "request head too large".to_owned());
    match head.parse(buffer) {
        Ok(httparse::Status::Complete(length)) if length <= MAX_HEAD_BYTES => {
            Head::of(&head, length).map(Some)
        }
        Ok(httparse::Status::Partial) if buffer.len() < MAX_HEAD_BYTES => Ok(None),
        Ok(_) => Err(too_large()),
        Err(error) => Err(ReadError::Refused(400, format!("bad request: {error}"))),
    }
}

/// What a request head says, owned.
#[derive(Debug)]
pub struct Head {
    pub method: String,
    /// The path and the query.
    pub target: String,
    pub content_length: usize,
    /// `Transfer-Encoding: chunked`: the body comes in chunks, without a length.
    pub chunked: bool,
    pub expects_continue: bool,
    pub authorization: Option<String>,
    pub content_encoding: Option<String>,
    /// The head's bytes, up to and with its empty line.
    pub length: usize,
}

impl Head {
    fn of(head: &httparse::Request, length: usize) -> Result<Head, ReadError> {
        let mut content_length = None;
        let mut chunked = false;
        let mut expects_continue = false;
        let mut authorization = None;
        let mut content_encoding = None;
        for header in head.headers.iter() {
            let value = header.value.trim_ascii();
            if header.name.eq_ignore_ascii_case("content-length") {
                if content_length.is_some() {
                    return Err(ReadError::Refused(
                        400,
                        "bad request: Content-Length given twice".to_owned(),
                    ));
                }
                content_length = Some(decimal(value).ok_or_else(|| {
                    ReadError::Refused(400, "bad request: invalid Content-Length".to_owned())
                })?);
            } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
                if chunked || !value.eq_ignore_ascii_case(b"chunked") {
                    return Err(ReadError::Refused(
                        411,
                        "length required: send the body with Content-Length, or chunked".to_owned(),
                    ));
                }
                chunked = true;
            } else if header.name.eq_ignore_ascii_case("expect") {
                expects_continue = value.eq_ignore_ascii_case(b"100-continue");
            } else if header.name.eq_ignore_ascii_case("authorization") && authorization.is_none() {
                authorization = Some(String::from_utf8_lossy(value).into_owned());
            } else if header.name.eq_ignore_ascii_case("content-encoding") {
                content_encoding = Some(String::from_utf8_lossy(value).to_ascii_lowercase());
            }
        }
        if chunked && content_length.is_some() {
            // Which one frames the body is where request smuggling starts.
            return Err(ReadError::Refused(
                400,
                "bad request: Content-Length with Transfer-Encoding".to_owned(),
            ));
        }
        Ok(Head {
            method: head.method.unwrap_or_default().to_owned(),
            target: head.path.unwrap_or_default().to_owned(),
            content_length: content_length.unwrap_or(0),
            chunked,
            expects_continue,
            authorization,
            content_encoding,
            length,
        })
    }

    fn into_request(
        self,
        stream: &TcpStream,
        early: Vec<u8>,
        max_body_bytes: usize,
        deadline: Instant,
    ) -> Result<(Request, Body<'_>), ReadError> {
        if self.content_length > max_body_bytes {
            return Err(ReadError::Refused(
                413,
                format!("request body over {max_body_bytes} bytes"),
            ));
        }
        if self.expects_continue && (self.chunked || early.len() < self.content_length) {
            // curl sends a body over 1 KiB only once told to go on.
            let _ = (&mut &*stream).write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let (path, query) = self.target.split_once('?').unwrap_or((&self.target, ""));
        let request = Request {
            method: self.method.clone(),
            path: path.to_owned(),
            query: decode_form(query),
            authorization: self.authorization,
            content_encoding: self.content_encoding,
        };
        let framing = match self.chunked {
            true => body::Framing::ChunkSize,
            false => body::Framing::Length(self.content_length),
        };
        let body = Body::new(stream, early, framing, max_body_bytes, deadline);
        Ok((request, body))
    }
}

/// A `Content-Length`: decimal digits only (no sign, no list), that fit.
fn decimal(text: &[u8]) -> Option<usize> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Bytes of an unread body taken (and thrown away) after the answer, at most.
const DRAIN_BYTES: usize = 64 << 20;
/// How long the drain waits for the client to close.
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// Closes a connection whose body may be unread (a 413): the client sees the answer
/// instead of a reset, since the kernel resets a socket closed with unread data.
pub(crate) fn close(stream: TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(DRAIN_WAIT));
    let deadline = Instant::now() + DRAIN_WAIT;
    let mut chunk = [0u8; 16 << 10];
    let mut drained = 0;
    while drained < DRAIN_BYTES {
        match read_before(&stream, &mut chunk, deadline) {
            Some(read) => drained += read,
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn refusal(head: &[u8]) -> Option<u16> {
        match parse_head(head) {
            Err(ReadError::Refused(status, _)) => Some(status),
            _ => None,
        }
    }

    #[test]
    fn a_content_length_given_twice_or_not_decimal_is_refused() {
        let twice = b"POST /write HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 500\r\n\r\n";
        assert_eq!(refusal(twice), Some(400));
        let same_twice = b"POST /write HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(refusal(same_twice), Some(400));
        for bad in ["+5", "5, 5", "-1", "", "0x10", "99999999999999999999999"] {
            let head = format!("POST /write HTTP/1.1\r\nContent-Length: {bad}\r\n\r\n");
            assert_eq!(refusal(head.as_bytes()), Some(400), "{bad:?}");
        }
        // Chunks, or a length; both at once, or another transfer coding, refused.
        let chunked = b"POST /w HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n";
        assert!(parse_head(chunked).unwrap().unwrap().chunked);
        let both = b"POST /w HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(refusal(both), Some(400));
        let gzip = b"POST /w HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
        assert_eq!(refusal(gzip), Some(411));
        let twice =
            b"POST /w HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(refusal(twice), Some(411));
        let good = parse_head(b"POST /w HTTP/1.1\r\nContent-Length:  12 \r\n\r\nbody")
            .unwrap()
            .unwrap();
        assert_eq!((good.content_length, good.length), (12, 42));
    }

    #[test]
    fn a_query_or_form_is_percent_decoded_with_plus_a_space() {
        assert_eq!(
            decode_form("q=SHOW+DATABASES&db=caf%C3%A9&flag&&p=a%3Db"),
            [
                ("q".to_owned(), "SHOW DATABASES".to_owned()),
                ("db".to_owned(), "café".to_owned()),
                ("flag".to_owned(), String::new()),
                ("p".to_owned(), "a=b".to_owned()),
            ]
        );
    }

    #[test]
    fn a_body_is_read_from_the_head_s_bytes_then_the_stream_up_to_its_length() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client
            .write_all(
                b"POST /write HTTP/1.1\r\nContent-Encoding: GZip\r\nContent-Length: 10\r\n\r\nabc",
            )
            .unwrap();
        let (server, _) = listener.accept().unwrap();
        let later = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            // Past the length: never read as the body.
            client.write_all(b"defghijEXTRA").unwrap();
            client
        });
        let (request, mut body) = read_request(&server, 100).ok().unwrap();
        assert_eq!(request.content_encoding.as_deref(), Some("gzip"));
        assert!(!body.is_read());
        let mut text = Vec::new();
        body.read_to_end(&mut text).unwrap();
        assert_eq!(text, b"abcdefghij");
        assert!(body.is_read());
        drop(later.join().unwrap());
    }

    #[test]
    fn a_head_is_whole_only_at_its_empty_line_and_never_past_the_cap() {
        let head = b"GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n";
        for end in 0..head.len() {
            assert!(parse_head(&head[..end]).unwrap().is_none(), "{end}");
        }
        assert_eq!(parse_head(head).unwrap().unwrap().target, "/a?b=c");
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD_BYTES + 10, b'a');
        assert_eq!(refusal(&long), Some(431));
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(refusal(&long), Some(431));
    }

    #[test]
    fn a_duplicate_content_length_is_answered_at_once_not_waited_for() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client
            .write_all(b"POST /write HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 9\r\n\r\nx")
            .unwrap();
        let (server, _) = listener.accept().unwrap();
        let started = Instant::now();
        let Err(ReadError::Refused(status, why)) = read_request(&server, 100) else {
            panic!("not refused");
        };
        assert_eq!(status, 400, "{why}");
        assert!(started.elapsed() < REQUEST_DEADLINE / 2);
    }

    #[test]
    fn a_slow_head_is_dropped_at_its_deadline_however_often_bytes_come() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let trickle = std::thread::spawn(move || {
            let mut client = TcpStream::connect(address).unwrap();
            let started = Instant::now();
            // A byte a quarter second: each read would be answered long before its timeout.
            while started.elapsed() < HEAD_DEADLINE * 2 && client.write_all(b"G").is_ok() {
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        let (server, _) = listener.accept().unwrap();
        let started = Instant::now();
        assert_eq!(read_request(&server, 0).err(), Some(ReadError::Gone));
        let took = started.elapsed();
        assert!(
            took >= HEAD_DEADLINE && took < HEAD_DEADLINE * 2,
            "{took:?}"
        );
        drop(server);
        trickle.join().unwrap();
    }
}
