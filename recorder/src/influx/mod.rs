//! The InfluxDB endpoint: an HTTP listener on the loopback interface that takes InfluxDB
//! 1.x writes from the task (`POST /write`, line protocol) and answers `GET /ping`, so that
//! `curl` and the InfluxDB client libraries write metrics as they already do (SPEC.md,
//! "InfluxDB endpoint"). A request is one batch: its points are aggregated per interval
//! like marker-file metrics, and its lines go to the writer in one message before the
//! answer. Handler threads accept in turn, none until the first connection (another
//! source's thread watches the listening socket till then: [`Unserved`]) and more as
//! connections overlap, up to a few: concurrency is bounded by their number, and a task
//! that never writes costs no thread.
//! With an InfluxDB to forward to, the points of each request answered 204 are queued
//! for `forward`. A write must carry the recording's token (`token`).

mod forward;
// Its request reading is the daemon's too (`tc_profile_recorder::http`).
pub(crate) mod http;
mod token;

pub use forward::{ForwardStats, MAX_UNSENT_BYTES};
pub(crate) use forward::{Forwarder, Forwarding};

use crate::channel::MarkerSink;
use crate::error::{spawn, RecorderError};
use http::{ReadError, Request};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tc_profile_format::line_protocol::{parse_line, LineError, Point, Precision};
use tc_profile_format::scope::MetricScopes;
use tc_profile_format::{
    encode_line_into, sanitize_name, BatchAggregator, InfluxInfo, Line, MetricLimits, Sample,
};
use token::{Access, Token};

/// Longer request bodies are refused whole (413): far above what a client batches (the
/// InfluxDB clients send 5,000 points, some 300 kB, at most), and a bound on memory.
pub const MAX_BODY_BYTES: usize = 1 << 20;
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
            batches: Mutex::new(BatchAggregator::new(
                limits,
                interval.as_secs_f64() * 1000.0,
            )),
            markers: markers.clone(),
            time_slack_ms,
            forwarding,
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
        // SAFETY: shutdown(2) takes no memory; the pool owns the descriptor past the joins.
        let shut = unsafe { libc::shutdown(self.pool.listener.as_raw_fd(), libc::SHUT_RDWR) };
        if shut != 0 {
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

/// The endpoint before its first connection, when no handler is waiting in accept yet: the
/// thread that holds it watches the listening socket and starts the first handler once a
/// connection is there, so that a task that never writes costs no thread of its own.
pub(crate) struct Unserved {
    pool: Arc<Pool>,
}

impl Unserved {
    /// The socket to watch for a connection.
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
    batches: Mutex<BatchAggregator>,
    markers: MarkerSink,
    time_slack_ms: f64,
    forwarding: Option<Forwarding>,
}

/// A sample and its log time.
type TimedSample = (f64, Sample);

/// A line refused, and why.
struct Refused {
    line: String,
    why: Why,
}

enum Why {
    /// Answered 400.
    Malformed(LineError),
    /// Answered 403 (unless a line of the request was malformed): the scope needed.
    OutOfScope(String),
}

impl Endpoint {
    fn handle(&self, mut stream: TcpStream) {
        match http::read_request(&mut stream, MAX_BODY_BYTES) {
            Ok(request) => {
                let (status, error) = self.answer(&request);
                let _ = http::respond(&mut stream, status, error.as_deref());
            }
            Err(ReadError::Refused(status, why)) => {
                let _ = http::respond(&mut stream, status, Some(&why));
                http::close(stream);
            }
            Err(ReadError::Gone) => {}
        }
    }

    fn answer(&self, request: &Request) -> (u16, Option<String>) {
        let route = token::route(&request.path);
        match (request.method.as_str(), route.path) {
            // As InfluxDB's, open to all: it says only that the endpoint is up.
            ("GET" | "HEAD", "/ping") => (204, None),
            ("POST", "/write") => match self.token.admits(
                route.token,
                request.query("p"),
                request.authorization.as_deref(),
            ) {
                Access::Granted => self.write(request),
                // InfluxDB's answers with authentication on.
                Access::NoCredentials => (
                    401,
                    Some("unable to parse authentication credentials".to_owned()),
                ),
                Access::Refused => (401, Some("authorization failed".to_owned())),
            },
            (_, "/ping" | "/write") => (405, Some("method not allowed".to_owned())),
            _ => (404, Some("not found".to_owned())),
        }
    }

    /// Takes the valid points of a write and answers for all of them: 204 when every line
    /// was taken, 400 naming the lines refused (the others are taken, as InfluxDB does),
    /// 403 naming the scopes needed when every refused line was out of scope, 503 when
    /// the writer is too far behind to take the request's lines.
    fn write(&self, request: &Request) -> (u16, Option<String>) {
        let Some(precision) = Precision::parse(request.query("precision").unwrap_or_default())
        else {
            return (
                400,
                Some("invalid precision: use n, u, ms, s, m or h".to_owned()),
            );
        };
        let now = self.markers.now();
        let arrival_ns = epoch_ns_now();
        let mut samples = Vec::new();
        let mut refused = Vec::new();
        let mut forwarded = Vec::new();
        for line in request.body.split(|&byte| byte == b'\n') {
            match self.samples_of(line, precision, now) {
                Ok(None) => {}
                Ok(Some((point, taken))) => {
                    if let Some(forwarding) = &self.forwarding {
                        forwarded.extend(forwarding.line(&point, precision, arrival_ns));
                    }
                    samples.extend(taken);
                }
                Err(why) => refused.push(Refused {
                    line: String::from_utf8_lossy(line)
                        .chars()
                        .take(QUOTED_CHARS)
                        .collect(),
                    why,
                }),
            }
        }
        samples.sort_by(|(a, _), (b, _)| a.total_cmp(b));
        if !self.send(samples, &refused, now) {
            return (
                503,
                Some("the recorder's log is behind: retry later".to_owned()),
            );
        }
        if let Some(forwarding) = &self.forwarding {
            forwarding.queue.push(forwarded);
        }
        if refused.is_empty() {
            return (204, None);
        }
        let malformed = refused
            .iter()
            .any(|line| matches!(line.why, Why::Malformed(_)));
        (if malformed { 400 } else { 403 }, Some(describe(&refused)))
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

    /// Aggregates the request's samples, counts its refused lines, and sends the lines to
    /// the writer in one message; whether they were sent.
    fn send(&self, samples: Vec<(f64, Sample)>, refused: &[Refused], now: f64) -> bool {
        let mut batches = self
            .batches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for line in refused {
            match &line.why {
                Why::Malformed(why) => batches.aggregator.malformed(&line.line, why),
                Why::OutOfScope(_) => batches.aggregator.drops.out_of_scope += 1,
            }
        }
        let mut markers = batches.aggregate(samples);
        if markers.is_empty() && !refused.is_empty() {
            // Only drops: their marker now rather than with a later request.
            markers = batches.aggregator.flush(now, now);
        }
        if markers.is_empty() {
            return true;
        }
        let count = markers.len() as u64;
        let mut bytes = Vec::new();
        for marker in markers {
            encode_line_into(&mut bytes, &Line::Marker(marker));
        }
        self.markers.send_lines(bytes, count, false)
    }
}

/// Unix epoch nanoseconds now: the time InfluxDB gives a point written without one.
fn epoch_ns_now() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_nanos()).unwrap_or(i64::MAX)
}

/// A 400's error: the refused lines as InfluxDB quotes them, one a line.
fn describe(refused: &[Refused]) -> String {
    let mut lines: Vec<String> = refused
        .iter()
        .take(QUOTED_LINES)
        .map(|Refused { line, why }| match why {
            Why::Malformed(why) => format!("unable to parse '{line}': {why}"),
            Why::OutOfScope(scope) => format!("'{line}' needs the scope {scope}"),
        })
        .collect();
    if refused.len() > QUOTED_LINES {
        lines.push(format!(
            "and {} more lines refused",
            refused.len() - QUOTED_LINES
        ));
    }
    lines.join("\n")
}
