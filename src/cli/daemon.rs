//! The arguments of the daemon's verbs: `daemon`, `task start|end`, `worker-profile`.

use super::values::{
    parse_address, parse_interval, parse_time, parse_timeout, parse_user, TaskUser,
};
use clap::{Args, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tc_profile_daemon::{Retain, DEFAULT_SOCKET, SOCKET_VARIABLE};

#[derive(Args, Debug)]
pub struct SocketArg {
    /// The daemon's socket [default: $TC_PROFILE_SOCKET, else /run/tc-profile/daemon.sock].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

// The daemon's verbs are Unix-only for now.
#[cfg_attr(not(unix), allow(dead_code))]
impl SocketArg {
    pub fn path(&self) -> PathBuf {
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

/// The daemon verbs' exit statuses, as their --help lists them (after `text`).
pub fn with_exit_statuses(text: &str) -> String {
    format!(
        "{text}\n\nExit status: 0 done; 64 a wrong argument or request; 65 refused (no such \
         process or cgroup,\npid 0 or 1, the daemon's own, a task not open, open already, or \
         timed out); 69 the\ndaemon cannot be reached; 70 a fault of the daemon's own; 74 a \
         file could not be read\nor written; 75 busy or in use: try again."
    )
}
