//! Command-line definitions. Parsed arguments become plain option structs for the crates.

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;
use tc_profile_finalizer::InputCaps;
use tc_profile_format::marker_file::{Category, Limits};
use tc_profile_format::MetricLimits;

#[derive(Parser, Debug)]
#[command(
    name = "tc-profile",
    version,
    about = "Records a CI task's resources and markers into a crash-safe log, and turns it into a Firefox Profiler profile.",
    after_help = "Examples:\n  tc-profile run -- make -j8\n  tc-profile record --ready-file ready.txt\n  \
        tc-profile begin build; make; tc-profile end build\n  \
        tc-profile finalize profile_resource-usage.jsonl\n  tc-profile recover --state-dir /var/lib/tc-profile\n  \
        tc-profile summary profile_resource-usage.json\n  tc-profile open profile_resource-usage.json"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command while recording, then write its profile.
    #[command(
        after_help = "Example:\n  tc-profile run --interval 0.5 -o build-profile.json -- make -j8\n\n\
        The exit status is the command's (128+N when signal N killed it). SIGINT and SIGTERM\n\
        sent to tc-profile are forwarded to the command."
    )]
    Run(RunArgs),
    /// Record until SIGTERM or SIGINT (a worker's sidecar), then write the profile.
    #[command(
        after_help = "Example:\n  tc-profile record --profile-dir /builds/profile --ready-file /builds/ready\n\n\
        Once recording, it prints the profile directory (or writes it to --ready-file): start\n\
        the task then, with TASKCLUSTER_PROFILE_DIR set to it. On SIGTERM or SIGINT it takes\n\
        the last marker lines, writes the profile and exits 0."
    )]
    Record(RecordArgs),
    /// Turn a log (complete, or left by a killed recorder) into a profile.
    #[command(
        after_help = "Example:\n  tc-profile finalize profile_resource-usage.jsonl -o profile.json\n\n\
        A torn last line is dropped; intervals still open are closed at the last time seen and\n\
        flagged as cut off. The log is removed once the profile is durable, unless --keep-log.\n\
        A recorder just killed holds the log's lock for a moment: that is waited for (--wait);\n\
        a running one is refused at once, by pid."
    )]
    Finalize(FinalizeArgs),
    /// Finalize every log in a state directory whose recorder is gone (after a crash or a
    /// reboot).
    #[command(
        after_help = "Example:\n  tc-profile recover --state-dir /var/lib/tc-profile\n\n\
        Each log whose recorder died becomes a profile beside it (NAME.jsonl to NAME.json),\n\
        once: a running recorder and a recoverer at work hold a lock on their log, which\n\
        others leave alone. One line per log says what was done. Exits 2 if a log could not\n\
        be finalized."
    )]
    Recover(RecoverArgs),
    /// Add an instant marker to $TASKCLUSTER_PROFILE_DIR.
    #[command(
        after_help = "Example:\n  tc-profile mark 'cache restored' --text \"3.2 GB\"\n\n\
        Appends to $TASKCLUSTER_PROFILE_DIR/<PPID>.jsonl, PPID being the calling shell's pid."
    )]
    Mark(MarkArgs),
    /// Begin an interval marker; `end` with the same NAME (or --id) ends it.
    #[command(
        after_help = "Example:\n  tc-profile begin build --category task\n  make\n  \
        tc-profile end build\n\n\
        Without --id, begin and end match by NAME among the calls of one shell (one file);\n\
        with --id, across all processes."
    )]
    Begin(BeginArgs),
    /// End the latest interval begun with NAME (or --id).
    #[command(after_help = "Example:\n  tc-profile end build --text 'exit 0'")]
    End(EndArgs),
    /// Summarize a profile or a log: steps, CPU, memory, disk, network, a right-sizing hint.
    #[command(
        after_help = "Examples:\n  tc-profile summary profile_resource-usage.json\n  \
        tc-profile summary --format json profile_resource-usage.jsonl.gz > summary.json\n\n\
        A log is finalized in memory (and left as it is). The JSON form is stable; its keys\n\
        are described in the README."
    )]
    Summary(SummaryArgs),
    /// Open a profile or a log in the Firefox Profiler, served from this machine.
    #[command(
        after_help = "Example:\n  tc-profile open profile_resource-usage.json\n\n\
        Serves the file on 127.0.0.1 until the profiler has fetched it (or Ctrl-C), prints\n\
        the profiler's link and opens it in a browser when one is available. A log is\n\
        finalized in memory first, so that a torn one opens too."
    )]
    Open(OpenArgs),
    /// Print a shell's completion script.
    #[command(
        after_help = "Examples:\n  tc-profile completions bash > /etc/bash_completion.d/tc-profile\n  \
        tc-profile completions zsh > ~/.zfunc/_tc-profile"
    )]
    Completions(CompletionsArgs),
    /// Export a task's metrics and summary to InfluxDB or statsd, or print them.
    #[command(
        after_help = "Examples:\n  tc-profile export profile_resource-usage.json --influx https://influx.example.com:8086 --database ci\n  \
        tc-profile export profile_resource-usage.jsonl --format json\n\n\
        InfluxDB credentials come from --influx-credentials FILE (lines token=..., or username=...\n\
        and password=...; the file must be readable by its owner only), else from\n\
        TC_PROFILE_INFLUX_TOKEN, or TC_PROFILE_INFLUX_USERNAME and TC_PROFILE_INFLUX_PASSWORD.\n\
        A write is tried 5 times, about 4 s of waits in between, 30 s at most each."
    )]
    Export(ExportArgs),
    /// Merge profiles (the tasks of a group, the runs of a task) into one, a process each.
    #[command(
        after_help = "Example:\n  tc-profile merge build.json test.json.gz lint.jsonl -o group.json\n\n\
        The profiles are placed by their wall-clock start; each is a process named by its task\n\
        (its name and id, else its file's name), with its own tracks. Logs are finalized in\n\
        memory and left as they are; Mozilla's resource profiles are read too."
    )]
    Merge(MergeArgs),
    /// Add a task's log (Taskcluster's live_backing.log, say) to a profile or a log.
    #[command(
        after_help = "Example:\n  tc-profile add-log profile_resource-usage.json live_backing.log -o with-log.json\n\n\
        Each line becomes a Log marker: a line [component(:level)? ISO-8601] at its time\n\
        (clamped into the profile), named by its component; any other at the time of the\n\
        line with a time before it. PROFILE may be a log, compressed, or Mozilla's."
    )]
    AddLog(AddLogArgs),
    /// Record the whole worker (a service): per-task profiles are cut from it on request.
    #[command(
        after_help = crate::with_exit_statuses("Example:\n  tc-profile daemon --state-dir /var/lib/tc-profile --ready-file /run/tc-profile/ready\n\n\
        Samples the machine into segment logs in DIR and listens on a Unix socket (mode 0600)\n\
        for `task start`, `task end` and `worker-profile`. On SIGTERM or SIGINT it ends every\n\
        log cleanly and exits 0; the tasks still open are resumed by the next daemon.")
    )]
    Daemon(crate::daemon::DaemonArgs),
    /// Begin or end a task recorded by the daemon.
    #[command(after_help = crate::with_exit_statuses("Example:\n  tc-profile task start abc123 --run-id 0 --user 1000\n  \
        tc-profile task start abc123 --run-id 0 --pid 4242\n  \
        tc-profile task end abc123 --run-id 0 --exit-status 0 -o profile.json\n\n\
        The first start prints the profile directory: start the task with\n\
        TASKCLUSTER_PROFILE_DIR set to it, then give the daemon its pid (or --cgroup)."))]
    Task(crate::daemon::TaskArgs),
    /// Write the worker's profile over a span: machine tracks, tasks, idle time.
    #[command(after_help = crate::with_exit_statuses(
        "Example:\n  tc-profile worker-profile --since 1d -o worker.json"
    ))]
    WorkerProfile(crate::daemon::WorkerProfileArgs),
}

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
    /// STATSD_PORT and TASKCLUSTER_STATSD_ADDR): any local user can send to it.
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
    /// Do not serve the InfluxDB endpoint (nor export TASKCLUSTER_INFLUX_URL).
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

/// Export once the profile is written; a failure is reported and changes no exit status.
#[derive(Args, Debug)]
pub struct ExportAtEndArgs {
    /// Once the profile is written, write the task's metrics and summary to this InfluxDB
    /// (http or https base URL; see `tc-profile export --help` for credentials); the points
    /// the task writes to TASKCLUSTER_INFLUX_URL are forwarded there while it runs.
    #[arg(long, value_name = "URL", requires = "export_database")]
    pub export_influx: Option<String>,
    /// The database of --export-influx.
    #[arg(long, value_name = "NAME", requires = "export_influx")]
    pub export_database: Option<String>,
    /// Once the profile is written, forward the task's metrics and summary to this statsd.
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_host_port)]
    pub export_statsd: Option<String>,
    #[command(flatten)]
    pub credentials: CredentialsArgs,
}

#[derive(Args, Debug)]
pub struct CredentialsArgs {
    /// InfluxDB credentials: a file of token=..., or username=... and password=... lines,
    /// readable by its owner only [default: TC_PROFILE_INFLUX_TOKEN, or
    /// TC_PROFILE_INFLUX_USERNAME and TC_PROFILE_INFLUX_PASSWORD].
    #[arg(long, value_name = "FILE")]
    pub influx_credentials: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(
    ArgGroup::new("destination").required(true).multiple(true).args(["influx", "statsd", "format"])
))]
pub struct ExportArgs {
    /// The profile, or the log (complete, or left by a killed recorder).
    #[arg(value_name = "PROFILE|LOG")]
    pub input: PathBuf,
    /// The InfluxDB 1.x (or 2.x with its 1.x API) base URL, http or https.
    #[arg(long, value_name = "URL", requires = "database")]
    pub influx: Option<String>,
    /// The InfluxDB database to write to.
    #[arg(long, value_name = "NAME", requires = "influx")]
    pub database: Option<String>,
    /// Forward to a statsd (totals per series; statsd takes no timestamps).
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_host_port)]
    pub statsd: Option<String>,
    /// Print to stdout: influx (line protocol, ms timestamps) or json.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<ExportFormatArg>,
    #[command(flatten)]
    pub credentials: CredentialsArgs,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormatArg {
    Influx,
    Json,
}

#[derive(Args, Debug)]
pub struct LimitArgs {
    /// A cap on reading marker files, repeatable: line-bytes, file-bytes, files, depth,
    /// open-intervals, schemas, time-slack (seconds); defaults in SPEC.md.
    #[arg(long = "limit", value_name = "NAME=VALUE", value_parser = parse_limit)]
    pub limits: Vec<String>,
}

impl LimitArgs {
    pub fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        for assignment in &self.limits {
            // Each one passed parse_limit already.
            let _ = limits.set(assignment);
        }
        limits
    }
}

/// How far a compressed input (gzip, zstd) may decompress: a bomb stops with an error.
#[derive(Args, Debug)]
pub struct InputCapArgs {
    /// Stop reading a compressed input past this many bytes decompressed (K, M, G: binary
    /// units).
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size)]
    pub max_input_size: u64,
    /// Stop reading a compressed input that decompresses to over this many times the bytes
    /// it was read from (checked past its first 32 MiB).
    #[arg(long, value_name = "RATIO", default_value = "500",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_input_ratio: u64,
}

impl InputCapArgs {
    pub fn caps(&self) -> InputCaps {
        InputCaps {
            max_size: self.max_input_size,
            max_ratio: self.max_input_ratio,
        }
    }
}

#[derive(Args, Debug)]
pub struct LockWaitArgs {
    /// How long to wait for a log's lock while the process holding it is exiting (a recorder
    /// just killed holds it until the kernel has closed its files), 0 to 3600; a running
    /// holder is not waited for.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_wait)]
    pub wait: Duration,
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

#[derive(Args, Debug)]
pub struct FinalizeArgs {
    /// The log to finalize (.jsonl, or compressed: .jsonl.gz, .jsonl.zst).
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// Where to write the profile; .gz or .zst compresses it [default: LOG with .jsonl
    /// replaced by .json].
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Keep the log after the profile is written.
    #[arg(long)]
    pub keep_log: bool,
    /// Merge the marker files of this directory that the recorder had not taken
    /// [default: the directory named in the log, if it still exists].
    #[arg(long, value_name = "DIR")]
    pub profile_dir: Option<PathBuf>,
    /// Add this finished task log (Taskcluster's live_backing.log, say), a Log marker a
    /// line aligned by its timestamps [default: the rest of the file that `record
    /// --task-log` followed, from its last checkpoint].
    #[arg(long, value_name = "FILE")]
    pub task_log: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub lock_wait: LockWaitArgs,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}

#[derive(Args, Debug)]
pub struct MarkArgs {
    /// The marker's name.
    pub name: String,
    #[command(flatten)]
    pub details: MarkerDetails,
}

#[derive(Args, Debug)]
pub struct BeginArgs {
    /// The interval's name.
    pub name: String,
    /// Match the end by this id, from any process, instead of by name in this shell.
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub details: MarkerDetails,
}

/// What `mark` and `begin` show with their marker.
#[derive(Args, Debug)]
pub struct MarkerDetails {
    /// A description shown with the marker.
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
    #[arg(long, value_name = "CATEGORY", default_value = "user")]
    pub category: CategoryArg,
}

#[derive(Args, Debug)]
pub struct EndArgs {
    /// The name given to begin.
    pub name: String,
    /// The id given to begin, if any.
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// A description that replaces begin's.
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
}

/// worker: the worker's lifecycle steps; task: the task's phases; user: anything else.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CategoryArg {
    Worker,
    Task,
    User,
}

impl From<CategoryArg> for Category {
    fn from(category: CategoryArg) -> Category {
        match category {
            CategoryArg::Worker => Category::Worker,
            CategoryArg::Task => Category::Task,
            CategoryArg::User => Category::User,
        }
    }
}

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// The directory whose logs to recover; the profiles are written there.
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
    #[command(flatten)]
    pub lock_wait: LockWaitArgs,
}

#[derive(Args, Debug)]
pub struct AddLogArgs {
    /// The profile or log (.json, .jsonl, either compressed as .gz or .zst).
    #[arg(value_name = "PROFILE|LOG")]
    pub input: PathBuf,
    /// The task's log: text, a line a marker.
    #[arg(value_name = "FILE")]
    pub task_log: PathBuf,
    /// Where to write the profile with the log; .gz or .zst compresses it.
    #[arg(short, long, value_name = "PATH")]
    pub output: PathBuf,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}

#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// The profile or log (.json, .jsonl, either compressed as .gz or .zst).
    #[arg(value_name = "PROFILE|LOG")]
    pub input: PathBuf,
    /// text: for people; json: stable keys for scripts.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: SummaryFormatArg,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFormatArg {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct OpenArgs {
    /// The profile or log (.json, .jsonl, either compressed as .gz or .zst).
    #[arg(value_name = "PROFILE|LOG")]
    pub input: PathBuf,
    /// Only print the link; do not start a browser.
    #[arg(long)]
    pub no_browser: bool,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncArg {
    Always,
    Interval,
    Never,
}

/// A port or `:PORT` (on 127.0.0.1), or `HOST:PORT`: loopback unless a host is given.
pub(crate) fn parse_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.strip_prefix(':').unwrap_or(text).parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!("'{text}' is neither a port nor HOST:PORT (for example 127.0.0.1:8080)")
    })
}

/// A statsd's address, checked at start: a mistyped one would fail only once the task is
/// over. The host is looked up then, not now.
fn parse_host_port(text: &str) -> Result<String, String> {
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(text.to_owned())
        }
        _ => Err(format!(
            "'{text}' is not HOST:PORT (for example localhost:8125)"
        )),
    }
}

pub(crate) fn parse_interval(text: &str) -> Result<Duration, String> {
    parse_seconds(text, 0.01..=3600.0)
}

fn parse_wait(text: &str) -> Result<Duration, String> {
    parse_seconds(text, 0.0..=3600.0)
}

fn parse_seconds(text: &str, range: RangeInclusive<f64>) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds (for example 0.5)"))?;
    if !range.contains(&seconds) {
        return Err(format!(
            "{seconds} s is outside {} to {} s",
            range.start(),
            range.end()
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn parse_prefix(text: &str) -> Result<String, String> {
    if !MetricLimits::is_valid_prefix(text) {
        return Err(format!(
            "'{text}' is not a prefix like 'task.' or 'ci.build.' (letters, digits, _ and -, \
             each segment followed by a dot)"
        ));
    }
    Ok(text.to_owned())
}

/// Bytes, or a number and K, M or G (binary units).
fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) = match text.char_indices().last() {
        Some((at, unit @ ('K' | 'M' | 'G'))) => (&text[..at], unit),
        _ => (text, 'B'),
    };
    let factor = match unit {
        'K' => 1 << 10,
        'M' => 1 << 20,
        'G' => 1 << 30,
        _ => 1,
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .filter(|&size| size > 0)
        .ok_or_else(|| format!("'{text}' is not a size (for example 4G, 500M, 1048576)"))
}

fn parse_limit(text: &str) -> Result<String, String> {
    Limits::default().set(text)?;
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn input_caps_default_to_the_finalizer_s() {
        let cli = Cli::try_parse_from(["tc-profile", "summary", "p.json"]).unwrap();
        let Command::Summary(args) = cli.command else {
            panic!("not summary");
        };
        assert_eq!(args.input_caps.caps(), InputCaps::default());
        assert_eq!(parse_size("3M"), Ok(3 << 20));
        assert!(parse_size("0").is_err() && parse_size("G").is_err());
    }

    #[test]
    fn the_default_wait_is_the_one_run_uses_for_its_recovery() {
        let cli = Cli::parse_from(["tc-profile", "recover", "--state-dir", "d"]);
        let Command::Recover(args) = cli.command else {
            panic!("{:?}", cli.command);
        };
        assert_eq!(args.lock_wait.wait, tc_profile_finalizer::DEFAULT_LOCK_WAIT);
    }

    #[test]
    fn an_address_without_a_host_is_loopback_and_another_host_only_when_given() {
        let loopback = |port| SocketAddr::from(([127, 0, 0, 1], port));
        assert_eq!(parse_address("8080"), Ok(loopback(8080)));
        assert_eq!(parse_address(":0"), Ok(loopback(0)));
        assert_eq!(
            parse_address("0.0.0.0:8080"),
            Ok(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        assert!(parse_address("localhost").is_err());
    }
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The profiles or logs, in the order of their processes (.json, .jsonl, either
    /// compressed as .gz or .zst).
    #[arg(value_name = "PROFILE|LOG", required = true, num_args = 2..)]
    pub inputs: Vec<PathBuf>,
    /// Where to write the merged profile; .gz or .zst compresses it.
    #[arg(short, long, value_name = "PATH", required = true)]
    pub output: PathBuf,
    /// Replace the output if it exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}
