//! Live profiles over HTTP (`--http ADDR`), each at a capability URL (SPEC.md, "Live
//! profiles over HTTP"): `GET /tasks/ID/TOKEN/profile.json` (a running task's profile so
//! far, finalized in memory), `/tasks/ID/TOKEN/log.jsonl` (the complete lines of its
//! current log), with the task's own token, and `/worker/TOKEN/profile.json?since=&until=`
//! (epoch ms) with the daemon's (`STATE/http-token`). A URL without the right token is
//! answered as an unknown task's. Served for the daemon's open tasks, or for a sidecar's
//! one recording ([`LiveServer::for_recording`]: its task only, `/TOKEN/profile.json` and
//! `/TOKEN/log.jsonl` short for it, no worker). Every answer allows any origin, so that
//! the Firefox Profiler opens them by `from-url`. Requests are read by the recorder's
//! bounded reader; profiles are built under [`crate::builds`]' bound and streamed.

use crate::bounded::{serve_each, HTTP_LIMITS};
use crate::builds::{BuildKey, Builds, Refused, MAX_BUILDS};
use crate::error::DaemonError;
use crate::logs::{open_complete, read_complete};
use crate::service::Shared;
use crate::token::Token;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tc_profile_finalizer::{compact, write_profile_json, Profile};
use tc_profile_recorder::http::{
    error_body, read_request, write_chunked, write_response, ReadError, Request, Response, JSON,
};

/// How long an answer may take to send, in all: a profile held for a slow client holds
/// its place under [`MAX_BUILDS`] no longer.
const SEND_DEADLINE: Duration = Duration::from_secs(60);
/// The content type of a log.
const NDJSON: &str = "application/x-ndjson";
/// Every answer's own headers: any page's origin (the profiler's) may read it.
const ANY_ORIGIN: (&str, &str) = ("Access-Control-Allow-Origin", "*");

/// A live profiles server, stopped by [`LiveServer::stop`] or when dropped.
pub struct LiveServer {
    address: SocketAddr,
    /// The URL the paths served are under (with the token, for a sidecar).
    url: String,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// What a server answers from.
pub(crate) enum Source {
    /// The daemon's tasks, and the worker's profile for its own token.
    Daemon {
        shared: Arc<Shared>,
        token: Token,
    },
    Sidecar(Sidecar),
}

/// A sidecar's recording: the task it records, its token, and its log.
pub(crate) struct Sidecar {
    /// Empty when the recording has no task id: then only the short paths name it.
    task: String,
    run: Option<u32>,
    token: Token,
    log: PathBuf,
}

/// What a path names.
enum Route<'a> {
    Task {
        task: &'a str,
        token: &'a str,
        file: TaskFile,
    },
    Worker,
}

enum TaskFile {
    Profile,
    Log,
}

impl LiveServer {
    /// Serves one recording's log, as the daemon serves a task's: `task` and `run` are the
    /// recording's (others are answered 404), the log is only ever read.
    pub fn for_recording(
        address: SocketAddr,
        task: Option<String>,
        run: Option<u32>,
        log: PathBuf,
    ) -> Result<LiveServer, DaemonError> {
        let task = task.unwrap_or_default();
        let token = Token::new()?;
        let listener = bind(address)?;
        let url = format!("http://{}/{}", local_address(&listener)?, token.as_str());
        let sidecar = Sidecar {
            task,
            run,
            token,
            log,
        };
        LiveServer::serve(listener, url, Source::Sidecar(sidecar))
    }

    pub(crate) fn serve(
        listener: TcpListener,
        url: String,
        source: Source,
    ) -> Result<LiveServer, DaemonError> {
        let address = local_address(&listener)?;
        let stop = Arc::new(AtomicBool::new(false));
        let handle = std::thread::Builder::new()
            .name("tc-profile-http".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || serve(&listener, source, &stop)
            })
            .map_err(DaemonError::Thread)?;
        Ok(LiveServer {
            address,
            url,
            stop,
            handle: Some(handle),
        })
    }

    /// The address bound (its port chosen by the system when 0 was given).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The URL the paths served are under: a sidecar's carries its token.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn stop(&mut self) {
        let Some(handle) = self.handle.take() else {
            return;
        };
        self.stop.store(true, Ordering::Release);
        if TcpStream::connect(self.address).is_ok() {
            let _ = handle.join();
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn bind(address: SocketAddr) -> Result<TcpListener, DaemonError> {
    TcpListener::bind(address).map_err(|source| DaemonError::Http {
        address: address.to_string(),
        source,
    })
}

pub(crate) fn local_address(listener: &TcpListener) -> Result<SocketAddr, DaemonError> {
    listener.local_addr().map_err(DaemonError::Thread)
}

/// What every request's thread shares.
struct Server {
    source: Source,
    builds: Builds,
}

fn serve(listener: &TcpListener, source: Source, stop: &AtomicBool) {
    let server = Server {
        source,
        builds: Builds::default(),
    };
    let answer = Arc::new(move |stream| server.answer(stream));
    serve_each(
        listener.incoming(),
        stop,
        HTTP_LIMITS,
        "tc-profile-http-request",
        answer,
        |mut stream| {
            let busy = "too many connections at once; try again";
            let _ = respond(&mut stream, 503, &error_body(busy));
        },
    );
}

/// An error's answer: its status and body.
type Failure = (u16, Vec<u8>);
/// How to build a profile, once allowed to.
type Build<'a> = Box<dyn FnOnce() -> Result<Profile, DaemonError> + 'a>;

impl Server {
    fn answer(&self, mut stream: TcpStream) {
        // The body of a GET is not read: none is expected.
        let failure = match read_request(&stream, 0) {
            Ok((request, _)) => match self.send(&stream, &request) {
                Ok(()) => return,
                Err(failure) => failure,
            },
            Err(ReadError::Refused(status, why)) => (status, error_body(&why)),
            Err(ReadError::Gone) => return,
        };
        let _ = respond(&mut stream, failure.0, &failure.1);
    }

    /// Sends what the request asks for, or says why not.
    fn send(&self, stream: &TcpStream, request: &Request) -> Result<(), Failure> {
        if request.method != "GET" {
            return Err((405, error_body("only GET is served")));
        }
        let run = match request.query("run").map(str::parse).transpose() {
            Ok(run) => run,
            Err(_) => return Err((400, error_body("run is a number"))),
        };
        let deadline = Instant::now() + SEND_DEADLINE;
        match self.source.route(&request.path) {
            Some(Route::Task {
                task,
                token,
                file: TaskFile::Log,
            }) => {
                let (file, length) = self
                    .source
                    .task_log(task, token, run)
                    .map_err(|e| failed(&e))?;
                let lines = |out: &mut dyn Write| io::copy(&mut file.take(length), out).map(drop);
                // A client gone midway sees the body's end missing: nothing more to tell.
                let _ = write_chunked(stream, deadline, &[ANY_ORIGIN], NDJSON, lines);
                Ok(())
            }
            Some(Route::Task {
                task,
                token,
                file: TaskFile::Profile,
            }) => {
                let (key, build) = self
                    .source
                    .task_profile(task, token, run)
                    .map_err(|e| failed(&e))?;
                self.send_profile(stream, deadline, key, build)
            }
            Some(Route::Worker) => {
                let Source::Daemon { shared, .. } = &self.source else {
                    return Err(self.no_such_path());
                };
                let since = epoch_ms_query(request, "since").map_err(|e| failed(&e))?;
                let until = epoch_ms_query(request, "until").map_err(|e| failed(&e))?;
                let key = BuildKey::Worker(since.map(f64::to_bits), until.map(f64::to_bits));
                let max_span = shared.config.http_max_span;
                let build = || shared.worker_profile_now(since, until, Some(max_span));
                self.send_profile(stream, deadline, key, build)
            }
            None => Err(self.no_such_path()),
        }
    }

    /// Builds the profile (or waits for its build under way) and streams it.
    fn send_profile(
        &self,
        stream: &TcpStream,
        deadline: Instant,
        key: BuildKey,
        build: impl FnOnce() -> Result<Profile, DaemonError>,
    ) -> Result<(), Failure> {
        let built = self
            .builds
            .get(key, build)
            .map_err(|refused| match refused {
                Refused::Busy => {
                    let busy = format!("{MAX_BUILDS} profiles are being built; try again");
                    (503, error_body(&busy))
                }
                Refused::Failed(why) => failed(&why),
            })?;
        let json = |out: &mut dyn Write| write_profile_json(out, &built.profile);
        let _ = write_chunked(stream, deadline, &[ANY_ORIGIN], JSON, json);
        Ok(())
    }

    fn no_such_path(&self) -> Failure {
        let help = format!(
            "no such path: see `tc-profile {} --help`",
            self.source.verb()
        );
        (404, error_body(&help))
    }
}

/// A request's error as its answer: a task not open (or its token not given) 404, a bad
/// request 400, the rest 500.
fn failed(error: &DaemonError) -> Failure {
    let status = match error {
        DaemonError::NotOpen { .. } | DaemonError::NotRecorded { .. } => 404,
        DaemonError::Request(_) => 400,
        _ => 500,
    };
    (status, error_body(&error.to_string()))
}

impl Source {
    /// What `path` names; a worker path whose token is not the daemon's names nothing.
    fn route<'a>(&'a self, path: &'a str) -> Option<Route<'a>> {
        let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
        let file = |name: &str| match name {
            "profile.json" => Some(TaskFile::Profile),
            "log.jsonl" => Some(TaskFile::Log),
            _ => None,
        };
        match (self, segments.as_slice()) {
            (_, ["tasks", task, token, name]) => Some(Route::Task {
                task,
                token,
                file: file(name)?,
            }),
            (Source::Daemon { token: ours, .. }, ["worker", token, "profile.json"]) => {
                ours.matches(token).then_some(Route::Worker)
            }
            (Source::Sidecar(sidecar), [token, name]) => Some(Route::Task {
                task: &sidecar.task,
                token,
                file: file(name)?,
            }),
            _ => None,
        }
    }

    /// The command whose `--help` lists the paths served.
    fn verb(&self) -> &'static str {
        match self {
            Source::Daemon { .. } => "daemon",
            Source::Sidecar(_) => "record",
        }
    }

    /// The key of the task's profile, and how to build it, once its token is checked.
    fn task_profile<'a>(
        &'a self,
        task: &str,
        token: &str,
        run: Option<u32>,
    ) -> Result<(BuildKey, Build<'a>), DaemonError> {
        match self {
            Source::Daemon { shared, .. } => {
                let open = shared.live_task(task, token, run)?;
                let key = BuildKey::Task(open.task.clone(), open.run);
                Ok((key, Box::new(move || shared.live_task_profile(&open))))
            }
            // Finalized in memory as `summary` finalizes a log.
            Source::Sidecar(sidecar) => {
                sidecar.check(task, token, run)?;
                let key = BuildKey::Task(sidecar.task.clone(), 0);
                Ok((
                    key,
                    Box::new(|| Ok(compact(read_complete(&sidecar.log)?).0)),
                ))
            }
        }
    }

    /// The task's current log, opened, and the length of its complete lines.
    fn task_log(
        &self,
        task: &str,
        token: &str,
        run: Option<u32>,
    ) -> Result<(File, u64), DaemonError> {
        match self {
            Source::Daemon { shared, .. } => {
                shared.live_task_log(&shared.live_task(task, token, run)?)
            }
            Source::Sidecar(sidecar) => {
                sidecar.check(task, token, run)?;
                open_complete(&sidecar.log)
            }
        }
    }
}

impl Sidecar {
    /// Whether `task` (and `run`, when asked for) is the one recorded, and `token` its.
    fn check(&self, task: &str, token: &str, run: Option<u32>) -> Result<(), DaemonError> {
        let same_run = run.is_none() || run == self.run;
        if self.task == task && same_run && self.token.matches(token) {
            return Ok(());
        }
        Err(DaemonError::NotRecorded {
            task: task.to_owned(),
        })
    }
}

/// The query's `name`, a time in epoch ms, if given.
fn epoch_ms_query(request: &Request, name: &str) -> Result<Option<f64>, DaemonError> {
    let Some(text) = request.query(name) else {
        return Ok(None);
    };
    match text.parse::<f64>() {
        Ok(time) if time.is_finite() => Ok(Some(time)),
        _ => Err(DaemonError::Request(format!(
            "{name}={text} is not a time: give epoch milliseconds, as {name}=1764590000000"
        ))),
    }
}

/// Writes a short answer (an error's), readable from any page's origin; a 503 says when
/// to try again.
fn respond(stream: &mut TcpStream, status: u16, body: &[u8]) -> io::Result<()> {
    let retry = ("Retry-After", "1");
    let headers = [ANY_ORIGIN, retry];
    let response = Response {
        status,
        headers: if status == 503 {
            &headers
        } else {
            &headers[..1]
        },
        body: Some((JSON, body)),
    };
    write_response(stream, &response)
}
