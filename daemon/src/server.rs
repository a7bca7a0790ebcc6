//! The Unix socket: owner-only, one request line and one reply line per connection, at
//! most [`SOCKET_LIMITS`] at once (more are told to retry); and [`ask`], the client.

use crate::bounded::{serve_each, SOCKET_LIMITS};
use crate::error::DaemonError;
use crate::protocol::{
    read_request, write_line, Envelope, ErrorCode, ErrorReply, Reply, Request, VERSION,
};
use crate::service::Shared;
use std::io::{self, BufRead, BufReader};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a client may take to send its request line.
const REQUEST_WAIT: Duration = Duration::from_secs(10);

pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens at `path`, replacing a socket no daemon answers on.
    pub fn start(path: &Path, shared: Arc<Shared>) -> Result<Server, DaemonError> {
        let error = |source| DaemonError::Socket {
            path: path.to_owned(),
            source,
        };
        // Absolute, so that the stop's wake-up connects whatever the working directory.
        let path = &std::path::absolute(path).map_err(error)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(error)?;
        }
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(DaemonError::SocketInUse {
                    path: path.to_owned(),
                });
            }
            std::fs::remove_file(path).map_err(error)?;
        }
        let listener = UnixListener::bind(path).map_err(error)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(error)?;
        let stop = Arc::new(AtomicBool::new(false));
        let handle = std::thread::Builder::new()
            .name("tc-profile-socket".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || serve(&listener, &shared, &stop)
            })
            .map_err(DaemonError::Thread)?;
        Ok(Server {
            path: path.to_owned(),
            stop,
            handle: Some(handle),
        })
    }

    /// Stops accepting (requests under way finish), and removes the socket.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept; a socket removed from under us cannot be woken, and its
        // thread is left to end with the process.
        let woken = UnixStream::connect(&self.path).is_ok();
        if let Some(handle) = self.handle.take().filter(|_| woken) {
            let _ = handle.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A daemon whose start failed after the socket listened leaves no socket behind.
impl Drop for Server {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.stop();
        }
    }
}

fn serve(listener: &UnixListener, shared: &Arc<Shared>, stop: &AtomicBool) {
    let shared = Arc::clone(shared);
    let answer = Arc::new(move |stream| answer(stream, &shared));
    serve_each(
        listener.incoming(),
        stop,
        SOCKET_LIMITS,
        "tc-profile-request",
        answer,
        |stream| {
            let message = format!(
                "the daemon is serving {} requests; try again",
                SOCKET_LIMITS.total
            );
            let reply = Reply::Error {
                error: ErrorReply::new(ErrorCode::Busy, message),
            };
            let _ = write_line(&stream, &reply);
        },
    );
}

fn answer(stream: UnixStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(REQUEST_WAIT));
    let reply = match read_request(&stream) {
        Ok(request) => shared.handle(request),
        Err(message) => Reply::Error {
            error: ErrorReply::new(ErrorCode::BadRequest, message),
        },
    };
    let _ = write_line(&stream, &reply);
}

/// Sends one request to the daemon at `socket` and returns its reply.
pub fn ask(socket: &Path, request: Request) -> io::Result<Reply> {
    let stream = UnixStream::connect(socket)?;
    write_line(
        &stream,
        &Envelope {
            v: VERSION,
            request,
        },
    )?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a daemon's reply: {e}"),
        )
    })
}
