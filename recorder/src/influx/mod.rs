//! The InfluxDB endpoint: an HTTP listener on the loopback interface that takes InfluxDB
//! 1.x and 2.x writes from the task (`POST /write`, `POST /api/v2/write`, line protocol,
//! gzipped or not), answers `GET /ping` and `/health`, and `/query` for the statements
//! clients send at start-up (`query`), so that `curl` and the InfluxDB client libraries
//! write metrics as they already do (SPEC.md, "InfluxDB endpoint"). A body is read as it
//! comes (`body`), a chunk of lines at a time; a chunk is one batch: its points are
//! aggregated per interval like marker-file metrics, and its lines go to the writer in one
//! message before the next chunk is read. Handler threads accept in turn, none until the
//! first connection (another source's thread watches the listening socket till then:
//! [`Unserved`]) and more as connections overlap, up to a few: concurrency is bounded by
//! their number, and a task that never writes costs no thread.
//! With an InfluxDB to forward to, the points of each chunk taken are queued for
//! `forward`. A write must carry the recording's token (`token`).

mod body;
mod forward;
// Its request reading is the daemon's too (`tc_profile_recorder::http`).
pub(crate) mod http;
mod query;
mod token;

pub use forward::{ForwardStats, MAX_UNSENT_BYTES};
pub(crate) use forward::{Forwarder, Forwarding};

use crate::channel::MarkerSink;
use crate::error::{spawn, RecorderError};
use body::{BodyError, BodyLines, Line};
use http::{Answer, Body, ReadError, Request};
use query::Databases;
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tc_profile_format::line_protocol::{parse_line, LineError, Point, Precision};
use tc_profile_format::scope::MetricScopes;
use tc_profile_format::{
    encode_line_into, sanitize_name, BatchAggregator, InfluxInfo, Line as LogLine, MetricLimits,
    Sample,
};
use token::{Access, Token};

/// Longer request bodies, and gzip bodies that decompress to more, are refused (413), as
/// InfluxDB's default `max-body-size` refuses them: the 1.x Python client sends 50,000
/// points, some 3.3 MB, at once. Read a chunk at a time, never held whole.
pub const MAX_BODY_BYTES: usize = 25_000_000;
/// Bytes of lines parsed before their samples are aggregated and sent to the writer:
/// what bounds a request's memory (its samples, refused lines and forwarded points).
const CHUNK_BYTES: usize = 1 << 20;
/// The longest form body of a `/query`.
const MAX_FORM_BYTES: u64 = 64 << 10;
/// Handler threads: requests served at once.
const HANDLERS: usize = 4;
/// Refused lines quoted in a 400's error, at most.
const QUOTED_LINES: usize = 10;
/// Characters of a refused line quoted.
const QUOTED_CHARS: usize = 200;

/// Binds the endpoint on 127.0.0.1, on a port the kernel picks.
pub(crate) fn bind() -> io::Result<TcpListener> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
}

/// What the meta line says about the endpoint on `listener`.
pub(crate) fn info(listener: &TcpListener, limits: &MetricLimits) -> io::Result<InfluxInfo> {
    Ok(InfluxInfo {
        url: format!("http://{}", listener.local_addr()?),
        prefix: limits.prefix.clone(),
        max_body_bytes: MAX_BODY_BYTES,
        max_series: limits.max_series,
    })
}

/// The handler threads, and how to stop them.
pub(crate) struct InfluxThreads {
    address: SocketAddr,
    /// The URL's token, which every write must carry.
    token: Arc<Token>,
    pool: Arc<Pool>,
}

/// What the handlers share besides the endpoint: the listener, and the threads started so
/// far, behind a lock that also orders a start against the stop.
struct Pool {
    listener: TcpListener,
    endpoint: Endpoint,
    stop: AtomicBool,
    /// Handlers blocked in accept.
    idle: AtomicUsize,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl InfluxThreads {
    /// Serves `listener`; points go under `limits`, per `interval`, and a timestamp more
    /// than `time_slack_ms` outside the recording is refused; those taken are forwarded
    /// when `forwarding` says where.
    pub(crate) fn start(
        listener: TcpListener,
        limits: MetricLimits,
        markers: &MarkerSink,
        interval: Duration,
        time_slack_ms: f64,
        forwarding: Option<Forwarding>,
    ) -> Result<InfluxThreads, RecorderError> {
        let address = listener.local_addr().map_err(RecorderError::Influx)?;
        let token = Arc::new(Token::generate().map_err(RecorderError::Influx)?);
        let endpoint = Endpoint {
            token: Arc::clone(&token),
            scopes: limits.scopes.clone(),
            max_series: limits.max_series,
            batches: Mutex::new(BatchAggregator::new(
                limits,
                interval.as_secs_f64() * 1000.0,
            )),
            markers: markers.clone(),
            time_slack_ms,
            forwarding,
            databases: Databases::new(),
        };
        let pool = Arc::new(Pool {
            listener,
            endpoint,
            stop: AtomicBool::new(false),
            idle: AtomicUsize::new(0),
            handles: Mutex::new(Vec::with_capacity(HANDLERS)),
        });
        Ok(InfluxThreads {
            address,
            token,
            pool,
        })
    }

    /// The endpoint until its first handler starts.
    pub(crate) fn unserved(&self) -> Unserved {
        Unserved {
            pool: Arc::clone(&self.pool),
        }
    }

    /// The base URL with the token: what the task is given.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/{}", self.address, self.token.as_str())
    }

    /// Stops the handlers once each has answered the request it is serving.
    pub(crate) fn stop(self) {
        let handles = {
            let mut handles = self.pool.lock_handles();
            // Under the lock: no handler starts another after this.
            self.pool.stop.store(true, Ordering::Release);
            std::mem::take(&mut *handles)
        };
        // Shut down, the listening socket fails every accept blocked on it at once: no
        // connection per handler to wake it, each a handshake, an accept and two closes.
        if !shut_down(&self.pool.listener) {
            for _ in &handles {
                // Each connection wakes one handler blocked in accept.
                let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
            }
        }
        for handle in handles {
            let _ = handle.join();
        }
    }
}

/// Shuts down both directions of `listener`; whether it worked.
#[cfg(unix)]
fn shut_down(listener: &TcpListener) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: shutdown(2) takes no memory; the caller owns the descriptor past the call.
    unsafe { libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR) == 0 }
}

/// Windows' shutdown fails on a listening socket (WSAENOTCONN), and leaves a blocked
/// accept blocked: connections wake the handlers instead.
#[cfg(not(unix))]
fn shut_down(_listener: &TcpListener) -> bool {
    false
}

/// The endpoint before its first connection, when no handler is waiting in accept yet: the
/// thread that holds it watches the listening socket and starts the first handler once a
/// connection is there, so that a task that never writes costs no thread of its own.
pub(crate) struct Unserved {
    pool: Arc<Pool>,
}

impl Unserved {
    /// The socket to watch for a connection.
    #[cfg(target_os = "linux")]
    pub(crate) fn listener(&self) -> &TcpListener {
        &self.pool.listener
    }

    /// Starts the first handler, which takes the waiting connection and serves on.
    pub(crate) fn serve(self) -> Result<(), RecorderError> {
        Pool::add_handler(&self.pool)
    }
}

impl Pool {
    fn lock_handles(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.handles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts one more handler, unless stopping or at [`HANDLERS`].
    fn add_handler(pool: &Arc<Pool>) -> Result<(), RecorderError> {
        let mut handles = pool.lock_handles();
        if pool.stop.load(Ordering::Acquire) || handles.len() >= HANDLERS {
            return Ok(());
        }
        let serving = Arc::clone(pool);
        handles.push(spawn("tc-profile-influx", move || serving.serve())?);
        Ok(())
    }

    fn serve(self: Arc<Pool>) {
        while !self.stop.load(Ordering::Acquire) {
            self.idle.fetch_add(1, Ordering::AcqRel);
            let accepted = self.listener.accept();
            let others_idle = self.idle.fetch_sub(1, Ordering::AcqRel) > 1;
            match accepted {
                Ok((stream, _)) if !self.stop.load(Ordering::Acquire) => {
                    if !others_idle {
                        // A thread that cannot start leaves the others serving.
                        let _ = Pool::add_handler(&self);
                    }
                    self.endpoint.handle(stream);
                }
                Ok(_) => return,
                // The listener shut down by the stop.
                Err(_) if self.stop.load(Ordering::Acquire) => return,
                // Out of file descriptors, or a connection reset before it was taken.
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
}

/// What every handler shares: the aggregation, behind a lock that also keeps the lines of
/// the requests in the order their points were aggregated.
struct Endpoint {
    token: Arc<Token>,
    scopes: MetricScopes,
    max_series: usize,
    batches: Mutex<BatchAggregator>,
    markers: MarkerSink,
    time_slack_ms: f64,
    forwarding: Option<Forwarding>,
    databases: Databases,
}

/// A sample and its log time.
type TimedSample = (f64, Sample);

/// A line refused, and why.
struct Refused {
    line: String,
    why: Why,
}

enum Why {
    Malformed(LineError),
    /// The scope needed.
    OutOfScope(String),
}

/// What a chunk of a write's lines gave.
#[derive(Default)]
struct Chunk {
    samples: Vec<TimedSample>,
    refused: Vec<Refused>,
    forwarded: Vec<String>,
    /// Lines whose points were taken.
    taken: u64,
}

/// What a write did, in all, for its answer.
#[derive(Default)]
struct Tally {
    taken: u64,
    malformed: u64,
    out_of_scope: u64,
    /// Samples refused at the series cap.
    over_series_cap: u64,
    /// The first refused lines, quoted.
    quoted: Vec<Refused>,
}

/// The API a write came by, which words its errors.
#[derive(Clone, Copy)]
enum Api {
    /// `/write`: `{"error":"..."}`.
    V1,
    /// `/api/v2/write`: `{"code":"...","message":"..."}`.
    V2,
}

impl Api {
    fn error(self, status: u16, message: &str) -> Answer {
        match self {
            Api::V1 => Answer::v1_error(status, message),
            Api::V2 => Answer::v2_error(status, message),
        }
    }
}

impl Endpoint {
    fn handle(&self, stream: TcpStream) {
        match http::read_request(&stream, MAX_BODY_BYTES) {
            Ok((request, mut body)) => {
                // None: the client went away.
                let Some(answer) = self.answer(&request, &mut body) else {
                    return;
                };
                let unread = !body.is_read();
                let _ = http::respond(&stream, &answer);
                if unread {
                    http::close(stream);
                }
            }
            Err(ReadError::Refused(status, why)) => {
                let _ = http::respond(&stream, &Answer::v1_error(status, &why));
                http::close(stream);
            }
            Err(ReadError::Gone) => {}
        }
    }

    fn answer(&self, request: &Request, body: &mut Body) -> Option<Answer> {
        let route = token::route(&request.path);
        let api = match route.path {
            "/api/v2/write" => Api::V2,
            _ => Api::V1,
        };
        let answer = match (request.method.as_str(), route.path) {
            // As InfluxDB's, open to all: they say only that the endpoint is up.
            ("GET" | "HEAD", "/ping") => Answer::no_content(),
            ("GET", "/health") => Answer::json(200, &health()),
            ("POST", "/write" | "/api/v2/write") | ("GET" | "POST", "/query") => {
                match self.token.admits(
                    route.token,
                    request.query("p"),
                    request.authorization.as_deref(),
                ) {
                    Access::Granted if route.path == "/query" => self.query(request, body)?,
                    Access::Granted => self.write(request, body, api)?,
                    // InfluxDB's answers with authentication on.
                    Access::NoCredentials => api.error(
                        401,
                        match api {
                            Api::V1 => "unable to parse authentication credentials",
                            Api::V2 => "unauthorized access",
                        },
                    ),
                    Access::Refused => api.error(401, "authorization failed"),
                }
            }
            (_, "/ping" | "/health" | "/write" | "/api/v2/write" | "/query") => {
                api.error(405, "method not allowed")
            }
            _ => api.error(404, "not found"),
        };
        Some(answer)
    }

    /// `/query`: `q` from the query string, or from a form body.
    fn query(&self, request: &Request, body: &mut Body) -> Option<Answer> {
        if let Some(q) = request.query("q") {
            return Some(self.databases.answer(q));
        }
        let mut form = String::new();
        match body.take(MAX_FORM_BYTES).read_to_string(&mut form) {
            Ok(_) => {}
            Err(error) if Body::gone(&error) => return None,
            Err(_) => return Some(Answer::v1_error(400, "the form body is not UTF-8")),
        }
        let q = http::decode_form(&form)
            .into_iter()
            .find(|(name, _)| name == "q")
            .map(|(_, q)| q)
            .unwrap_or_default();
        Some(self.databases.answer(&q))
    }

    /// Takes the valid points of a write and answers for all of them (SPEC.md, "InfluxDB
    /// endpoint"): 204 when every line was taken; 400 `partial write: ... dropped=N` when
    /// some were and others refused, malformed, out of scope or over the series cap; 400
    /// naming the lines when every line was malformed, 403 naming the scopes when every
    /// one was out of scope; 413 at a cap of a gzip body, 503 when the writer is too far
    /// behind. The body is read a chunk of lines at a time, each aggregated and sent to
    /// the writer before the next is read. None: the client went away.
    fn write(&self, request: &Request, body: &mut Body, api: Api) -> Option<Answer> {
        let Some(precision) = Precision::parse(request.query("precision").unwrap_or_default())
        else {
            return Some(api.error(400, "invalid precision: use n, u, ms, s, m or h"));
        };
        let database = request.query("db").or(request.query("bucket"));
        self.databases.note(database.unwrap_or_default());
        let encoding = request.content_encoding.as_deref();
        let Some(mut lines) = body::lines(body, encoding, MAX_BODY_BYTES as u64) else {
            let why = "unsupported Content-Encoding: send the body as it is, or gzip";
            return Some(api.error(415, why));
        };
        let now = self.markers.now();
        let arrival_ns = epoch_ns_now();
        let mut tally = Tally::default();
        loop {
            let (chunk, read) = self.read_chunk(&mut lines, precision, now, arrival_ns);
            if matches!(read, Err(BodyError::Gone)) {
                return None;
            }
            if !self.send(chunk, &mut tally, now) {
                let why = format!(
                    "the recorder's log is behind: {} lines of this request were recorded, \
                     retry later",
                    tally.taken
                );
                return Some(api.error(503, &why));
            }
            match read {
                Ok(true) => return Some(tally.answer(api, self.max_series)),
                Ok(false) => {}
                Err(error) => {
                    let why = format!("{error} ({} lines before it recorded)", tally.taken);
                    return Some(api.error(error.status(), &why));
                }
            }
        }
    }

    /// Parses lines until [`CHUNK_BYTES`] of them or the body's end (then `Ok(true)`).
    fn read_chunk(
        &self,
        lines: &mut BodyLines,
        precision: Precision,
        now: f64,
        arrival_ns: i64,
    ) -> (Chunk, Result<bool, BodyError>) {
        let mut chunk = Chunk::default();
        let mut bytes = 0;
        while bytes < CHUNK_BYTES {
            let line = match lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => return (chunk, Ok(true)),
                Err(error) => return (chunk, Err(error)),
            };
            let (text, parsed) = match line {
                Line::Text(text) => (text, self.samples_of(text, precision, now)),
                Line::TooLong(start) => (start, Err(Why::Malformed(LineError::TooLong))),
            };
            bytes += text.len().max(1);
            match parsed {
                Ok(None) => {}
                Ok(Some((point, taken))) => {
                    if let Some(forwarding) = &self.forwarding {
                        chunk
                            .forwarded
                            .extend(forwarding.line(&point, precision, arrival_ns));
                    }
                    chunk.samples.extend(taken);
                    chunk.taken += 1;
                }
                Err(why) => chunk.refused.push(Refused {
                    line: String::from_utf8_lossy(text)
                        .chars()
                        .take(QUOTED_CHARS)
                        .collect(),
                    why,
                }),
            }
        }
        (chunk, Ok(false))
    }

    /// A line's point and its samples with their log time: the point's timestamp, else
    /// now; None for a blank line or a comment.
    fn samples_of(
        &self,
        line: &[u8],
        precision: Precision,
        now: f64,
    ) -> Result<Option<(Point, Vec<TimedSample>)>, Why> {
        let text = std::str::from_utf8(line).map_err(|_| Why::Malformed(LineError::NotUtf8))?;
        let Some(point) = parse_line(text).map_err(Why::Malformed)? else {
            return Ok(None);
        };
        let samples = point.samples().map_err(Why::Malformed)?;
        let time = match point.timestamp {
            None => now,
            Some(timestamp) => self
                .log_time(precision.epoch_ms(timestamp), now)
                .map_err(Why::Malformed)?,
        };
        // samples() has checked that every name sanitizes.
        let needed = samples
            .iter()
            .find_map(|sample| self.scopes.missing(&sanitize_name(&sample.name)?));
        if let Some(scope) = needed {
            return Err(Why::OutOfScope(scope));
        }
        let samples = samples.into_iter().map(|sample| (time, sample)).collect();
        Ok(Some((point, samples)))
    }

    fn log_time(&self, epoch_ms: f64, now: f64) -> Result<f64, LineError> {
        let clock = self.markers.clock();
        let time = clock.ms_from_epoch(epoch_ms);
        if !time.is_finite() || time < -self.time_slack_ms || time > now + self.time_slack_ms {
            return Err(LineError::TimeOutsideRecording);
        }
        Ok(time)
    }

    /// Aggregates a chunk's samples, counts its refused lines, and sends the lines to the
    /// writer in one message, then queues its points for forwarding; whether they were
    /// sent.
    fn send(&self, mut chunk: Chunk, tally: &mut Tally, now: f64) -> bool {
        chunk.samples.sort_by(|(a, _), (b, _)| a.total_cmp(b));
        let mut batches = self
            .batches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for line in &chunk.refused {
            match &line.why {
                Why::Malformed(why) => batches.aggregator.malformed(&line.line, why),
                Why::OutOfScope(scope) => batches.aggregator.out_of_scope(scope),
            }
        }
        let over_cap_before = batches.over_series_cap;
        let mut markers = batches.aggregate(std::mem::take(&mut chunk.samples));
        let over_series_cap = batches.over_series_cap - over_cap_before;
        if markers.is_empty() && !chunk.refused.is_empty() {
            // Only drops: their marker now rather than with a later request.
            markers = batches.aggregator.flush(now, now);
        }
        let count = markers.len() as u64;
        let mut bytes = Vec::new();
        for marker in markers {
            encode_line_into(&mut bytes, &LogLine::Marker(marker));
        }
        if count > 0 && !self.markers.send_lines(bytes, count, false) {
            return false;
        }
        drop(batches);
        if let Some(forwarding) = &self.forwarding {
            forwarding.queue.push(std::mem::take(&mut chunk.forwarded));
        }
        tally.add(chunk, over_series_cap);
        true
    }
}

impl Tally {
    fn add(&mut self, chunk: Chunk, over_series_cap: u64) {
        self.taken += chunk.taken;
        self.over_series_cap += over_series_cap;
        for refused in chunk.refused {
            match refused.why {
                Why::Malformed(_) => self.malformed += 1,
                Why::OutOfScope(_) => self.out_of_scope += 1,
            }
            if self.quoted.len() < QUOTED_LINES {
                self.quoted.push(refused);
            }
        }
    }

    /// The answer, as InfluxDB words it.
    fn answer(&self, api: Api, max_series: usize) -> Answer {
        let refused = self.malformed + self.out_of_scope;
        let dropped = refused + self.over_series_cap;
        if dropped == 0 {
            return Answer::no_content();
        }
        let mut reasons: Vec<String> = self.quoted.iter().map(Refused::describe).collect();
        if refused > self.quoted.len() as u64 {
            let more = refused - self.quoted.len() as u64;
            reasons.push(format!("and {more} more lines refused"));
        }
        if self.over_series_cap > 0 {
            reasons.push(format!(
                "{} values over the cap of {max_series} series",
                self.over_series_cap
            ));
        }
        let reasons = reasons.join("\n");
        match (self.taken, self.malformed) {
            // Nothing taken: as InfluxDB answers a body none of whose lines parse.
            (0, 0) if self.over_series_cap == 0 => api.error(403, &reasons),
            (0, _) if self.over_series_cap == 0 => api.error(400, &reasons),
            _ => api.error(400, &format!("partial write: {reasons} dropped={dropped}")),
        }
    }
}

impl Refused {
    /// As InfluxDB quotes a refused line.
    fn describe(&self) -> String {
        let line = &self.line;
        match &self.why {
            Why::Malformed(why) => format!("unable to parse '{line}': {why}"),
            Why::OutOfScope(scope) => format!("'{line}' needs the scope {scope}"),
        }
    }
}

/// `/health`, as InfluxDB 2.x answers it.
fn health() -> serde_json::Value {
    serde_json::json!({
        "name": "influxdb",
        "message": "ready for queries and writes",
        "status": "pass",
        "checks": [],
        "version": "1.8.10",
    })
}

/// Unix epoch nanoseconds now: the time InfluxDB gives a point written without one.
fn epoch_ns_now() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
