//! `tc-profile daemon`, `task start|end` and `worker-profile`: thin over the daemon crate.
//! The daemon runs until SIGTERM or SIGINT; the other verbs send one request over its
//! socket and print what it did.

use crate::cli::{parse_address, parse_interval};
use crate::malloc::share_malloc_arenas;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tc_profile_daemon::{
    ask, Daemon, DaemonConfig, Reply, Request, Retain, DEFAULT_SOCKET, SOCKET_VARIABLE,
};
use tc_profile_finalizer::write_atomically;
use tc_profile_fs::PRIVATE_FILE;

#[derive(Args, Debug)]
pub struct SocketArg {
    /// The daemon's socket [default: $TC_PROFILE_SOCKET, else /run/tc-profile/daemon.sock].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

impl SocketArg {
    fn path(&self) -> PathBuf {
        self.socket
            .clone()
            .or_else(|| std::env::var_os(SOCKET_VARIABLE).map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET))
    }
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub command: Option<DaemonCommand>,
    /// Where the machine's segments, the tasks' logs and the daemon's state are kept
    /// (created if missing; one daemon per directory).
    #[arg(long, value_name = "DIR", required = true)]
    pub state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub socket: SocketArg,
    /// Seconds between samples of the machine and of the tasks' processes (0.01 to 3600).
    #[arg(long, value_name = "SECONDS", default_value = "1", value_parser = parse_interval)]
    pub interval: Duration,
    /// How much of the machine's past to keep: an age (30d, 12h, 90m) or a size of all
    /// segments (2G, 500M); what an open task needs is always kept.
    #[arg(long, value_name = "AGE|SIZE", default_value = "7d")]
    pub retain: Retain,
    /// A task open this long is finalized (into STATE/timed-out/) by the next `task start`.
    #[arg(long, value_name = "SECONDS", default_value = "86400", value_parser = parse_timeout)]
    pub task_timeout: Duration,
    /// Serve live profiles over HTTP at ADDR (a port or :PORT, on 127.0.0.1, or HOST:PORT;
    /// port 0: any): GET /tasks/ID/TOKEN/profile.json and /tasks/ID/TOKEN/log.jsonl (the
    /// URL `task start` prints), /worker/TOKEN/profile.json (the token in STATE/http-token).
    #[arg(long, value_name = "ADDR", value_parser = parse_address)]
    pub http: Option<SocketAddr>,
    /// Seconds a machine segment grows before the next one starts (tests: rotation and
    /// retention within seconds).
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = parse_timeout, hide = true)]
    pub segment_age: Duration,
    /// The longest span of a worker profile over HTTP, in seconds; without since=, it ends
    /// at this much before its end.
    #[arg(long, value_name = "SECONDS", default_value = "86400", value_parser = parse_timeout)]
    pub http_max_span: Duration,
    /// Once listening, write the socket's path to this file (whole or not at all), and on
    /// a second line the live profiles' base URL with --http.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum DaemonCommand {
    /// Print what the running daemon is doing, as JSON: version, uptime, open tasks and
    /// their age, segments and their bytes, the last housekeeping run and its error.
    Status(SocketArg),
}

#[derive(Subcommand, Debug)]
pub enum TaskCommand {
    /// Begin a task (or attach its processes, once, to a task begun without them); prints
    /// its profile directory, and on stderr its live profile's URL when the daemon serves
    /// HTTP.
    Start(TaskStartArgs),
    /// End a task: write its profile atomically and print its path.
    End(TaskEndArgs),
}

#[derive(Args, Debug)]
pub struct TaskArgs {
    #[command(subcommand)]
    pub command: TaskCommand,
}

#[derive(Args, Debug)]
pub struct TaskStartArgs {
    /// The task's id (letters, digits, - and _).
    pub task_id: String,
    /// The run's number.
    #[arg(long, value_name = "N", default_value = "0")]
    pub run_id: u32,
    /// The directory the task writes marker files to (created if missing) [default:
    /// STATE/profiles/TASK_ID-RUN].
    #[arg(long, value_name = "DIR")]
    pub profile_dir: Option<PathBuf>,
    /// The task's process: it and its descendants are the task's tracks.
    #[arg(long, value_name = "PID", conflicts_with = "cgroup")]
    pub pid: Option<u32>,
    /// The task's cgroup: its processes are the task's tracks, its counters recorded.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Let --pid 1 or a cgroup hierarchy's root be the task: every process of the host
    /// (other users' command lines included) in its profile.
    #[arg(long)]
    pub allow_host: bool,
    /// Begin the task's profile at MS (epoch milliseconds, within the day before now): the
    /// worker's own steps for it before this start (claim, downloads) are in its span.
    #[arg(long, value_name = "MS")]
    pub since: Option<f64>,
    /// Follow FILE, the worker's live log of the task, as tail -F: a Log marker a line,
    /// [taskcluster-task:stat] lines as metrics (only at the task's first start).
    #[arg(long, value_name = "FILE")]
    pub task_log: Option<PathBuf>,
    /// Print one JSON object: profileDir, and statsdAddress, statsdSocket, influxUrl,
    /// liveProfileUrl, liveLogUrl when the task has them.
    #[arg(long)]
    pub json: bool,
    /// The user the task runs as, by number: a profile directory the daemon creates is
    /// theirs (mode 0700), for `tc-profile mark` as them and no one else [default: the
    /// daemon's user, 0700: for a task that runs as it].
    #[arg(long, value_name = "UID[:GID]", value_parser = parse_user)]
    pub user: Option<TaskUser>,
    #[command(flatten)]
    pub socket: SocketArg,
}

/// `--user UID[:GID]`.
#[derive(Clone, Copy, Debug)]
pub struct TaskUser {
    uid: u32,
    gid: Option<u32>,
}

#[derive(Args, Debug)]
pub struct TaskEndArgs {
    pub task_id: String,
    #[arg(long, value_name = "N", default_value = "0")]
    pub run_id: u32,
    /// The task's exit status, for the profile and the worker's profile.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_status: Option<i32>,
    /// Where to write the profile; .gz or .zst compresses it.
    #[arg(short, long, value_name = "PATH")]
    pub output: PathBuf,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Args, Debug)]
pub struct WorkerProfileArgs {
    /// The span's start: epoch milliseconds, or a time ago (90m, 2h, 1d) [default: the
    /// oldest segment kept].
    #[arg(long, value_name = "T", value_parser = parse_time)]
    pub since: Option<f64>,
    /// The span's end, as --since [default: now].
    #[arg(long, value_name = "T", value_parser = parse_time)]
    pub until: Option<f64>,
    /// Where to write the profile; .gz or .zst compresses it.
    #[arg(short, long, value_name = "PATH")]
    pub output: PathBuf,
    #[command(flatten)]
    pub socket: SocketArg,
}

pub fn daemon(args: DaemonArgs) -> Result<u8> {
    let state_dir = match (args.command, args.state_dir) {
        (Some(DaemonCommand::Status(socket)), _) => return status(&socket.path()),
        (None, Some(state_dir)) => state_dir,
        (None, None) => anyhow::bail!("give --state-dir"),
    };
    share_malloc_arenas();
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

fn parse_user(text: &str) -> Result<TaskUser, String> {
    let number = |part: &str| {
        part.parse::<u32>()
            .ok()
            .filter(|&id| id != u32::MAX)
            .ok_or_else(|| {
                format!("'{text}': give the user as numbers, UID or UID:GID (1000:1000)")
            })
    };
    let (uid, gid) = match text.split_once(':') {
        Some((uid, gid)) => (number(uid)?, Some(number(gid)?)),
        None => (number(text)?, None),
    };
    Ok(TaskUser { uid, gid })
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds (for example 3600)"))?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("{seconds} s: give a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Epoch milliseconds, or an age (`90m`, `2h`, `1d`, `30s`) before now.
fn parse_time(text: &str) -> Result<f64, String> {
    if let Ok(epoch_ms) = text.parse::<f64>() {
        return Ok(epoch_ms);
    }
    match text.parse::<Retain>() {
        Ok(Retain::Age(age)) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            Ok(now.saturating_sub(age).as_secs_f64() * 1000.0)
        }
        _ => Err(format!(
            "'{text}' is neither epoch milliseconds nor a time ago (90m, 2h, 1d)"
        )),
    }
}
