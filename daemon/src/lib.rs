//! The worker-wide daemon: one machine recording in segments (`segments`), one log per task
//! (`tasks`), the open tasks kept in the state directory (`state`) so that a restarted
//! daemon resumes them, and the worker's requests over a Unix socket (`protocol`, `server`)
//! answered by `service` (task start and end; `profile_dir`, the directories it creates)
//! and `worker` (the worker's profile); `http` serves live profiles (also a sidecar's,
//! [`LiveServer`]), `bounded` bounds the connections of both servers.
//!
//! Main types: [`Daemon`] ([`Daemon::start`], then [`Daemon::stop`]), [`DaemonConfig`],
//! [`Request`] and [`Reply`] (what a client sends and gets, [`ask`]), [`LiveServer`].

// The daemon serves on a Unix socket: elsewhere only its live-profile server is used.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

mod bounded;
mod builds;
mod check;
mod config;
mod error;
mod http;
mod logs;
mod profile_dir;
mod protocol;
mod segments;
#[cfg(unix)]
mod server;
mod service;
mod state;
mod status;
mod tasks;
mod token;
mod worker;

pub use config::{DaemonConfig, Retain, DEFAULT_SOCKET, SOCKET_VARIABLE};
pub use error::DaemonError;
pub use http::LiveServer;
pub use protocol::{
    ErrorCode, ErrorReply, Housekeeping, Reply, Request, Status, TaskStarted, TaskStatus,
};
#[cfg(unix)]
pub use server::ask;

use segments::{Sampling, Segments};
use service::{Running, Shared};
use state::StateFiles;
use std::fs::File;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tc_profile_recorder::Handover;
use token::Token;

/// The file in the state directory that holds the token of `/worker/TOKEN/profile.json`.
pub const HTTP_TOKEN_FILE: &str = "http-token";
/// How often the segment is checked for rotation and the old ones for retention.
const HOUSEKEEPING_PERIOD: Duration = Duration::from_secs(1);

/// A running daemon.
#[cfg(unix)]
pub struct Daemon {
    shared: Arc<Shared>,
    server: server::Server,
    http: Option<LiveServer>,
    housekeeping: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    /// Held for the daemon's life: a second daemon on the same state directory is refused.
    _lock: File,
}

#[cfg(unix)]
impl Daemon {
    /// Locks the state directory, starts the machine's segment, resumes the open tasks a
    /// previous daemon left (each in a new part), and listens on the socket.
    pub fn start(mut config: DaemonConfig) -> Result<Daemon, DaemonError> {
        // Absolute, so that the paths in replies mean the same to every client.
        config.state_dir = std::path::absolute(&config.state_dir)
            .map_err(DaemonError::state(&config.state_dir))?;
        // Bound first, so that the task-start replies name the port chosen.
        let listener = config.http.map(http::bind).transpose()?;
        if let Some(listener) = &listener {
            config.http = Some(http::local_address(listener)?);
        }
        let dir = &config.state_dir;
        state::prepare(dir).map_err(DaemonError::state(dir))?;
        let lock = state::lock(dir)
            .map_err(DaemonError::state(dir))?
            .ok_or_else(|| DaemonError::StateDirLocked { path: dir.clone() })?;
        let files = StateFiles::new(dir);
        let open = files.load().map_err(DaemonError::state(dir))?;
        let sampling = Sampling::new(config.interval);
        let segments =
            Segments::start(&dir.join("segments"), sampling.clone(), config.segment_age)?;
        let mut running = Vec::new();
        for mut open in open {
            if open.token.is_empty() {
                open.token = Token::new()?;
            }
            let recorder = tasks::start_part(&mut open, &config, &sampling, Handover::default())?;
            running.push(Running {
                open,
                recorder: Some(recorder),
            });
        }
        let shared = Arc::new(Shared {
            config: config.clone(),
            board: status::Board::new(),
            sampling,
            files,
            inner: Mutex::new(service::Inner {
                segments: Some(segments),
                tasks: running,
                ending: Vec::new(),
            }),
        });
        shared.save()?;
        let server = server::Server::start(&config.socket, Arc::clone(&shared))?;
        let http = listener
            .map(|listener| serve_live(listener, &shared))
            .transpose()?;
        let housekeeping = start_housekeeping(Arc::clone(&shared))?;
        Ok(Daemon {
            shared,
            server,
            http,
            housekeeping: Some(housekeeping),
            _lock: lock,
        })
    }

    /// The live profiles' address, when served.
    pub fn http_address(&self) -> Option<std::net::SocketAddr> {
        self.http.as_ref().map(LiveServer::address)
    }

    /// Stops listening, ends every open task's part and the machine's segment cleanly; the
    /// tasks stay open in the state directory, for the next daemon to resume.
    pub fn stop(mut self) -> Result<(), DaemonError> {
        self.server.stop();
        if let Some(http) = &mut self.http {
            http.stop();
        }
        if let Some((stop, handle)) = self.housekeeping.take() {
            stop.store(true, Ordering::Release);
            handle.thread().unpark();
            let _ = handle.join();
        }
        self.shared.stop()
    }
}

/// Serves the tasks' live profiles, and the worker's for the token written (anew) in
/// `STATE/http-token`, owner-only.
fn serve_live(listener: TcpListener, shared: &Arc<Shared>) -> Result<LiveServer, DaemonError> {
    let token = Token::new()?;
    let path = shared.config.state_dir.join(HTTP_TOKEN_FILE);
    token
        .write_private(&path)
        .map_err(DaemonError::state(&path))?;
    let url = format!("http://{}", http::local_address(&listener)?);
    let source = http::Source::Daemon {
        shared: Arc::clone(shared),
        token,
    };
    LiveServer::serve(listener, url, source)
}

fn start_housekeeping(
    shared: Arc<Shared>,
) -> Result<(Arc<AtomicBool>, JoinHandle<()>), DaemonError> {
    let stop = Arc::new(AtomicBool::new(false));
    let handle = std::thread::Builder::new()
        .name("tc-profile-housekeeping".into())
        .spawn({
            let stop = Arc::clone(&stop);
            move || {
                while !stop.load(Ordering::Acquire) {
                    std::thread::park_timeout(HOUSEKEEPING_PERIOD);
                    shared.housekeeping();
                }
            }
        })
        .map_err(DaemonError::Thread)?;
    Ok((stop, handle))
}
