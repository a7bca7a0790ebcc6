//! `tc-profile daemon`, `task start|end` and `worker-profile`: thin over the daemon crate.
//! The daemon runs until SIGTERM or SIGINT; the other verbs send one request over its
//! socket and print what it did.

use crate::cli::{DaemonArgs, DaemonCommand, TaskArgs, TaskCommand, WorkerProfileArgs};
use crate::malloc::{give_large_allocations_their_own_pages, share_malloc_arenas};
use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::path::{Path, PathBuf};
use tc_profile_daemon::{ask, Daemon, DaemonConfig, Reply, Request};
use tc_profile_finalizer::write_atomically;
use tc_profile_fs::PRIVATE_FILE;

pub fn daemon(args: DaemonArgs) -> Result<u8> {
    let state_dir = match (args.command, args.state_dir) {
        (Some(DaemonCommand::Status(socket)), _) => return status(&socket.path()),
        (None, Some(state_dir)) => state_dir,
        (None, None) => anyhow::bail!("give --state-dir"),
    };
    share_malloc_arenas();
    give_large_allocations_their_own_pages();
    crate::os::raise_open_file_limit();
    // Installed first, so that a SIGTERM sent as soon as we are ready is never fatal.
    let mut signals =
        Signals::new([SIGINT, SIGTERM]).context("installing the SIGINT and SIGTERM handlers")?;
    let socket = args.socket.path();
    let config = DaemonConfig {
        interval: args.interval,
        retain: args.retain,
        task_timeout: args.task_timeout,
        http: args.http,
        segment_age: args.segment_age,
        http_max_span: args.http_max_span,
        ..DaemonConfig::new(state_dir, socket.clone())
    };
    // A ready file left by a daemon that died says nothing of this one.
    if let Some(path) = &args.ready_file {
        remove_if_present(path)?;
    }
    let daemon = Daemon::start(config)?;
    if let Some(path) = &args.ready_file {
        let mut ready = format!("{}\n", socket.display());
        if let Some(address) = daemon.http_address() {
            ready.push_str(&format!("http://{address}\n"));
        }
        let write = |out: &mut dyn std::io::Write| out.write_all(ready.as_bytes());
        write_atomically(path, PRIVATE_FILE, write).with_context(|| {
            format!(
                "{}: cannot write the ready file; check --ready-file",
                path.display()
            )
        })?;
    }
    notify_ready().context("telling the service manager that the daemon is ready")?;
    signals.forever().next();
    let stopped = daemon.stop();
    if let Some(path) = &args.ready_file {
        remove_if_present(path)?;
    }
    stopped?;
    Ok(0)
}

fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("{}: cannot remove the ready file", path.display()))
        }
        _ => Ok(()),
    }
}

/// systemd's readiness protocol (`Type=notify`, sd_notify(3)): one datagram `READY=1` to
/// the socket `NOTIFY_SOCKET` names, a path or, from `@`, an abstract name.
fn notify_ready() -> std::io::Result<()> {
    use std::os::unix::net::UnixDatagram;
    let Some(name) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(());
    };
    let socket = UnixDatagram::unbound()?;
    let message = b"READY=1";
    match name.as_encoded_bytes().strip_prefix(b"@") {
        #[cfg(target_os = "linux")]
        Some(abstract_name) => {
            use std::os::linux::net::SocketAddrExt;
            let address = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name)?;
            socket.send_to_addr(message, &address)?;
        }
        #[cfg(not(target_os = "linux"))]
        Some(_) => return Err(std::io::Error::other("abstract sockets are Linux's")),
        None => {
            socket.send_to(message, &name)?;
        }
    }
    Ok(())
}

pub fn task(args: TaskArgs) -> Result<u8> {
    let mut json = false;
    let (socket, request) = match args.command {
        TaskCommand::Start(args) => (args.socket.path(), {
            json = args.json;
            Request::TaskStart {
                task: args.task_id,
                run: args.run_id,
                profile_dir: args.profile_dir.map(absolute).transpose()?,
                pid: args.pid,
                cgroup: args.cgroup.map(absolute).transpose()?,
                allow_host: args.allow_host,
                since: args.since,
                uid: args.user.map(|user| user.uid),
                gid: args.user.and_then(|user| user.gid),
                task_log: args.task_log.map(absolute).transpose()?,
            }
        }),
        TaskCommand::End(args) => (
            args.socket.path(),
            Request::TaskEnd {
                task: args.task_id,
                run: args.run_id,
                exit_status: args.exit_status,
                output: absolute(args.output)?,
            },
        ),
    };
    send(&socket, request, json)
}

/// `daemon status`: the daemon's status, as JSON.
fn status(socket: &Path) -> Result<u8> {
    send(socket, Request::Status, true)
}

pub fn worker_profile(args: WorkerProfileArgs) -> Result<u8> {
    let request = Request::WorkerProfile {
        since: args.since,
        until: args.until,
        output: absolute(args.output)?,
    };
    send(&args.socket.path(), request, false)
}

/// The daemon's socket could not be reached, or gave no reply.
#[derive(Debug, thiserror::Error)]
#[error(
    "{socket}: cannot reach the daemon ({why}): start `tc-profile daemon`, or give its --socket"
)]
pub struct Unreachable {
    socket: String,
    why: std::io::Error,
}

/// Asks the daemon, and prints its reply: as one JSON line with `json`, else the path it
/// names.
fn send(socket: &Path, request: Request, json: bool) -> Result<u8> {
    let reply = ask(socket, request).map_err(|why| Unreachable {
        socket: socket.display().to_string(),
        why,
    })?;
    let text = match reply {
        Reply::Error { error } => return Err(error.into()),
        reply if json => serde_json::to_string(&reply)?,
        Reply::Started(started) => {
            if let Some(live) = &started.live_profile_url {
                eprintln!("tc-profile: live profile at {live}");
            }
            started.profile_dir.display().to_string()
        }
        Reply::Output { output } => output.display().to_string(),
        Reply::Status(status) => serde_json::to_string(&status)?,
    };
    crate::output::to_stdout(format!("{text}\n").as_bytes())?;
    Ok(0)
}

fn absolute(path: PathBuf) -> Result<PathBuf> {
    std::path::absolute(&path).with_context(|| format!("{}: cannot resolve it", path.display()))
}
