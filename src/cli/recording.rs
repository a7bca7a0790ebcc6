//! The arguments of a recording: `run` and `record`, and what they share.

use super::export::ExportAtEndArgs;
use super::markers::LimitArgs;
use super::values::{parse_address, parse_interval, parse_prefix, parse_process_exits};
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tc_profile_recorder::ProcessExits;

#[derive(Args, Debug)]
pub struct RecordingArgs {
    /// Where to write the profile; .gz or .zst compresses it.
    #[arg(
        short,
        long,
        value_name = "PATH",
        default_value = "profile_resource-usage.json"
    )]
    pub output: PathBuf,
    /// Where to keep the log while recording [default: the output with .json replaced by .jsonl].
    #[arg(long, value_name = "PATH", conflicts_with = "state_dir")]
    pub log: Option<PathBuf>,
    /// Keep the log in DIR (created if missing) under a unique name, after recovering what
    /// dead recorders left there (see `tc-profile recover`).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Seconds between samples of CPU, memory, disk and network (0.01 to 3600); from 10
    /// minutes on, samples are at least 1 s apart.
    #[arg(long, value_name = "SECONDS", default_value = "0.1", value_parser = parse_interval)]
    pub interval: Duration,
    /// With every exit of the task seen (taskstats or the proc connector: root or
    /// CAP_NET_ADMIN), a "Process" marker for each process that lived at least MIN_MS
    /// milliseconds; shorter ones are only counted, in the per-command totals [default: the
    /// sampling interval].
    #[arg(long, value_name = "MIN_MS", value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub process_markers: Option<u64>,
    /// How the task's processes are seen as they end: auto (taskstats, else the proc
    /// connector, else sampling), taskstats, proc-connector (each falling back to
    /// sampling where it cannot be had) or sampling (only what a sample finds alive). The
    /// profile's meta.tcProfile.processExits says which was used. The daemon's tasks
    /// follow the variable.
    #[arg(long, value_name = "WAY", env = "TC_PROFILE_PROCESS_EXITS", value_parser = parse_process_exits)]
    pub process_exits: Option<ProcessExits>,
    /// When the log is fdatasync'd: always (after every batch), interval (at most once a
    /// second, or per sampling interval when longer; at once for lifecycle markers), never
    /// (left to the kernel).
    #[arg(long, value_name = "POLICY", default_value = "interval")]
    pub sync: SyncArg,
    /// Keep the log, and a profile directory it created, after the profile is written.
    #[arg(long)]
    pub keep_log: bool,
    /// The directory the task writes marker files to, exported as TASKCLUSTER_PROFILE_DIR;
    /// created if missing [default: the output with .json replaced by .markers].
    #[arg(long, value_name = "DIR")]
    pub profile_dir: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Declare the marker schemas of FILE (schema lines, as in a marker file) in the log's
    /// first line, so that the log shows their markers while it is written; repeatable.
    #[arg(long = "schema", value_name = "FILE")]
    pub schemas: Vec<PathBuf>,
    /// Do not listen for statsd metrics (nor export STATSD_SOCKET and DD_DOGSTATSD_URL).
    #[arg(long)]
    pub no_statsd: bool,
    /// Take statsd packets on a UDP port of 127.0.0.1 too (exported as STATSD_HOST,
    /// STATSD_PORT, DD_AGENT_HOST, DD_DOGSTATSD_PORT and TASKCLUSTER_STATSD_ADDR): any
    /// local user can send to it.
    #[arg(long, conflicts_with = "no_statsd")]
    pub statsd_udp: bool,
    /// A scope the task's metrics have, in Taskcluster's syntax (exact, or ending in *):
    /// writing the series S needs stats:put-points:S. With any scope given (here or in
    /// --task-definition), metrics of other series are refused and counted; repeatable.
    #[arg(long = "metric-scope", value_name = "PATTERN")]
    pub metric_scopes: Vec<String>,
    /// The task definition (JSON): its `scopes` are added to --metric-scope, its
    /// `metadata.name` names the task in the profile.
    #[arg(long, value_name = "FILE")]
    pub task_definition: Option<PathBuf>,
    /// Do not serve the InfluxDB endpoint (nor export TASKCLUSTER_INFLUX_URL, INFLUX_* and
    /// INFLUXDB_V2_*).
    #[arg(long)]
    pub no_influx: bool,
    /// The prefix of every metric series the task sends: letters, digits, _ and -, in
    /// segments each followed by a dot.
    #[arg(long, value_name = "PREFIX", default_value = "task.", value_parser = parse_prefix)]
    pub metric_prefix: String,
    /// Print nothing at the end (no summary); warnings and errors still.
    #[arg(short, long)]
    pub quiet: bool,
    /// Serve the live profile over HTTP at ADDR while recording (a port or :PORT, on
    /// 127.0.0.1, or HOST:PORT; port 0: any), at a URL with a random token (printed on
    /// stderr, and in --ready-file): GET /TOKEN/profile.json and /TOKEN/log.jsonl, or
    /// /tasks/TASK_ID/TOKEN/profile.json and /tasks/TASK_ID/TOKEN/log.jsonl.
    #[arg(long, value_name = "ADDR", value_parser = parse_address)]
    pub http: Option<SocketAddr>,
    #[command(flatten)]
    pub export: ExportAtEndArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncArg {
    Always,
    Interval,
    Never,
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    #[command(flatten)]
    pub recording: RecordingArgs,
    /// Write the profile directory's path to this file (atomically) once recording,
    /// instead of printing it.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// Write the task's environment to this file (atomically, mode 0600) before the ready
    /// file: NAME=VALUE lines, as `docker run --env-file` reads them, TASKCLUSTER_INFLUX_URL
    /// (with its token) and STATSD_SOCKET among them.
    #[arg(long, value_name = "FILE")]
    pub task_env: Option<PathBuf>,
    /// Follow this log file as `tail -F` does (appended, truncated, replaced), a Log marker
    /// a line: the worker's log of the task, for example.
    #[arg(long, value_name = "FILE")]
    pub task_log: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub recording: RecordingArgs,
    /// Record the counters of this cgroup: the task's, for example one the worker made for it.
    #[arg(long, value_name = "PATH", conflicts_with = "own_cgroup")]
    pub cgroup: Option<PathBuf>,
    /// Run the command in a fresh cgroup (v2, or the v1 memory controller), so that its
    /// memory peak and OOM kills are its alone; removed at the end (after a killed recorder,
    /// by the `recover` or `finalize` of its log). Needs root or a
    /// delegated cgroup; without, tc-profile warns and records without it.
    #[arg(long)]
    pub own_cgroup: bool,
    /// Record each line of the command's stdout and stderr as a Log marker (the output
    /// passes through unchanged) [default: when tc-profile's stdout is not a terminal].
    #[arg(long, overrides_with = "no_log_lines")]
    pub log_lines: bool,
    /// Leave the command's output unrecorded, written straight to tc-profile's.
    #[arg(long, overrides_with = "log_lines")]
    pub no_log_lines: bool,
    /// The command to run, and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}
