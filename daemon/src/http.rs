//! Live profiles over HTTP (`--http ADDR`): `GET /tasks/ID/profile.json` (a running task's
//! profile so far, finalized in memory), `/tasks/ID/log.jsonl` (the complete lines of its
//! current log), `/worker/profile.json?since=&until=` (epoch ms); `?run=N` picks a run
//! (default 0). Served for the daemon's open tasks, or for a sidecar's one recording
//! ([`LiveServer::for_recording`]: its task only, `/profile.json` and `/log.jsonl` short for
//! it, no worker). Every answer allows any origin, so that the Firefox Profiler opens them by
//! `from-url`. Requests are read by the recorder's bounded reader.

use crate::bounded::{serve_each, MAX_CONNECTIONS};
use crate::error::DaemonError;
use crate::logs::{complete_lines, read_complete};
use crate::service::Shared;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use tc_profile_finalizer::{compact, Profile};
use tc_profile_recorder::http::{
    error_body, read_request, write_response, ReadError, Request, Response, JSON,
};

/// A live profiles server, stopped by [`LiveServer::stop`] or when dropped.
pub struct LiveServer {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// What a server answers from.
pub(crate) enum Source {
    Daemon(Arc<Shared>),
    Sidecar(Sidecar),
}

/// A sidecar's recording: the task it records, and its log.
pub(crate) struct Sidecar {
    /// Empty when the recording has no task id: then only the short paths name it.
    task: String,
    run: Option<u32>,
    log: PathBuf,
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
        LiveServer::start(address, Source::Sidecar(Sidecar { task, run, log }))
    }

    pub(crate) fn start(address: SocketAddr, source: Source) -> Result<LiveServer, DaemonError> {
        let listener = TcpListener::bind(address).map_err(|source| DaemonError::Http {
            address: address.to_string(),
            source,
        })?;
        let address = listener.local_addr().map_err(DaemonError::Thread)?;
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
            stop,
            handle: Some(handle),
        })
    }

    /// The address bound (its port chosen by the system when 0 was given).
    pub fn address(&self) -> SocketAddr {
        self.address
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

fn serve(listener: &TcpListener, source: Source, stop: &AtomicBool) {
    let answer = Arc::new(move |stream| answer(stream, &source));
    serve_each(
        listener.incoming(),
        stop,
        "tc-profile-http-request",
        answer,
        |mut stream| {
            let busy = format!("serving {MAX_CONNECTIONS} requests; try again");
            let _ = respond(&mut stream, 503, JSON, error_body(&busy));
        },
    );
}

fn answer(mut stream: TcpStream, source: &Source) {
    // The body of a GET is not read: none is expected.
    let (status, content_type, body) = match read_request(&mut stream, 0) {
        Ok(request) => route(&request, source),
        Err(ReadError::Refused(status, why)) => (status, JSON, error_body(&why)),
        Err(ReadError::Gone) => return,
    };
    let _ = respond(&mut stream, status, content_type, body);
}

fn route(request: &Request, source: &Source) -> (u16, &'static str, Vec<u8>) {
    if request.method != "GET" {
        return (405, JSON, error_body("only GET is served"));
    }
    let run = match request.query("run").map(str::parse).transpose() {
        Ok(run) => run,
        Err(_) => return (400, JSON, error_body("run is a number")),
    };
    let path = source.unalias(&request.path);
    let task = |suffix| {
        path.strip_prefix("/tasks/")
            .and_then(|rest| rest.strip_suffix(suffix))
    };
    let answered = if let Some(task) = task("/profile.json") {
        source.task_profile(task, run).map(|p| (JSON, json(&p)))
    } else if let Some(task) = task("/log.jsonl") {
        source
            .task_log(task, run)
            .map(|log| ("application/x-ndjson", log))
    } else if let (Source::Daemon(shared), "/worker/profile.json") = (source, path.as_str()) {
        epoch_ms_query(request, "since")
            .and_then(|since| Ok((since, epoch_ms_query(request, "until")?)))
            .and_then(|(since, until)| shared.worker_profile_now(since, until))
            .map(|p| (JSON, json(&p)))
    } else {
        let help = format!("no such path: see `tc-profile {} --help`", source.verb());
        return (404, JSON, error_body(&help));
    };
    match answered {
        Ok((content_type, body)) => (200, content_type, body),
        Err(error @ (DaemonError::NotOpen { .. } | DaemonError::NotRecorded { .. })) => {
            (404, JSON, error_body(&error.to_string()))
        }
        Err(error @ DaemonError::Request(_)) => (400, JSON, error_body(&error.to_string())),
        Err(error) => (500, JSON, error_body(&error.to_string())),
    }
}

impl Source {
    /// The request's path, with a sidecar's short paths spelt out.
    fn unalias(&self, path: &str) -> String {
        match self {
            Source::Sidecar(Sidecar { task, .. })
                if path == "/profile.json" || path == "/log.jsonl" =>
            {
                format!("/tasks/{task}{path}")
            }
            _ => path.to_owned(),
        }
    }

    /// The command whose `--help` lists the paths served.
    fn verb(&self) -> &'static str {
        match self {
            Source::Daemon(_) => "daemon",
            Source::Sidecar(_) => "record",
        }
    }

    fn task_profile(&self, task: &str, run: Option<u32>) -> Result<Profile, DaemonError> {
        match self {
            Source::Daemon(shared) => shared.live_task_profile(task, run.unwrap_or(0)),
            // Finalized in memory as `summary` finalizes a log.
            Source::Sidecar(sidecar) => {
                sidecar.check(task, run)?;
                Ok(compact(read_complete(&sidecar.log)?).0)
            }
        }
    }

    fn task_log(&self, task: &str, run: Option<u32>) -> Result<Vec<u8>, DaemonError> {
        match self {
            Source::Daemon(shared) => shared.live_task_log(task, run.unwrap_or(0)),
            Source::Sidecar(sidecar) => {
                sidecar.check(task, run)?;
                complete_lines(&sidecar.log)
            }
        }
    }
}

impl Sidecar {
    /// Whether `task` (and `run`, when asked for) is the one recorded.
    fn check(&self, task: &str, run: Option<u32>) -> Result<(), DaemonError> {
        let same_run = run.is_none() || run == self.run;
        if self.task == task && same_run {
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

fn json(profile: &Profile) -> Vec<u8> {
    serde_json::to_vec(profile).unwrap_or_else(|e| unreachable!("serialize a profile: {e}"))
}

/// Writes the answer, readable from any page's origin (the profiler's).
fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: Vec<u8>,
) -> std::io::Result<()> {
    let response = Response {
        status,
        headers: &[("Access-Control-Allow-Origin", "*")],
        body: Some((content_type, &body)),
    };
    write_response(stream, &response)
}
