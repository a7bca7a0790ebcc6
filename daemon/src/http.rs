//! Live profiles over HTTP (`--http ADDR`): `GET /tasks/ID/profile.json` (a running task's
//! profile so far, finalized in memory), `/tasks/ID/log.jsonl` (the complete lines of its
//! current log), `/worker/profile.json?since=&until=` (epoch ms); `?run=N` picks a run
//! (default 0). Every answer allows any origin, so that the Firefox Profiler opens them by
//! `from-url`. Requests are read by the recorder's bounded reader.

use crate::bounded::{serve_each, MAX_CONNECTIONS};
use crate::error::DaemonError;
use crate::service::Shared;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use tc_profile_finalizer::Profile;
use tc_profile_recorder::http::{read_request, ReadError, Request};

pub struct HttpServer {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl HttpServer {
    pub fn start(address: SocketAddr, shared: Arc<Shared>) -> Result<HttpServer, DaemonError> {
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
                move || serve(&listener, &shared, &stop)
            })
            .map_err(DaemonError::Thread)?;
        Ok(HttpServer {
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
        self.stop.store(true, Ordering::Release);
        let woken = TcpStream::connect(self.address).is_ok();
        if let Some(handle) = self.handle.take().filter(|_| woken) {
            let _ = handle.join();
        }
    }
}

fn serve(listener: &TcpListener, shared: &Arc<Shared>, stop: &AtomicBool) {
    let shared = Arc::clone(shared);
    let answer = Arc::new(move |stream| answer(stream, &shared));
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

const JSON: &str = "application/json";

fn answer(mut stream: TcpStream, shared: &Shared) {
    // The body of a GET is not read: none is expected.
    let (status, content_type, body) = match read_request(&mut stream, 0) {
        Ok(request) => route(&request, shared),
        Err(ReadError::Refused(status, why)) => (status, JSON, error_body(&why)),
        Err(ReadError::Gone) => return,
    };
    let _ = respond(&mut stream, status, content_type, body);
}

fn route(request: &Request, shared: &Shared) -> (u16, &'static str, Vec<u8>) {
    if request.method != "GET" {
        return (405, JSON, error_body("only GET is served"));
    }
    let run = match request.query("run").map(str::parse).transpose() {
        Ok(run) => run.unwrap_or(0),
        Err(_) => return (400, JSON, error_body("run is a number")),
    };
    let time = |name| request.query(name).and_then(|t| t.parse::<f64>().ok());
    let path = request.path.as_str();
    let task = |suffix| {
        path.strip_prefix("/tasks/")
            .and_then(|rest| rest.strip_suffix(suffix))
    };
    let answered = if let Some(task) = task("/profile.json") {
        shared
            .live_task_profile(task, run)
            .map(|p| (JSON, json(&p)))
    } else if let Some(task) = task("/log.jsonl") {
        shared
            .live_task_log(task, run)
            .map(|log| ("application/x-ndjson", log))
    } else if path == "/worker/profile.json" {
        shared
            .worker_profile_now(time("since"), time("until"))
            .map(|p| (JSON, json(&p)))
    } else {
        return (
            404,
            JSON,
            error_body("no such path: see `tc-profile daemon --help`"),
        );
    };
    match answered {
        Ok((content_type, body)) => (200, content_type, body),
        Err(error @ DaemonError::NotOpen { .. }) => (404, JSON, error_body(&error.to_string())),
        Err(error @ DaemonError::Request(_)) => (400, JSON, error_body(&error.to_string())),
        Err(error) => (500, JSON, error_body(&error.to_string())),
    }
}

fn json(profile: &Profile) -> Vec<u8> {
    serde_json::to_vec(profile).unwrap_or_else(|e| unreachable!("serialize a profile: {e}"))
}

fn error_body(message: &str) -> Vec<u8> {
    serde_json::json!({ "error": message })
        .to_string()
        .into_bytes()
}

fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: Vec<u8>,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Request Entity Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nConnection: close\r\nAccess-Control-Allow-Origin: *\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&body)?;
    stream.flush()
}
