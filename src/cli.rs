//! Command-line definitions. Parsed arguments become plain option structs for the crates.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "tc-profile",
    version,
    about = "Records a CI task's resources and markers into a crash-safe log, and turns it into a Firefox Profiler profile.",
    after_help = "Examples:\n  tc-profile run -- make -j8\n  tc-profile finalize profile_resource-usage.jsonl\n  tc-profile recover --state-dir /var/lib/tc-profile"
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
    /// Turn a log (complete, or left by a killed recorder) into a profile.
    #[command(
        after_help = "Example:\n  tc-profile finalize profile_resource-usage.jsonl -o profile.json\n\n\
        A torn last line is dropped; intervals still open are closed at the last time seen and\n\
        flagged as cut off. The log is removed once the profile is durable, unless --keep-log."
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
}

#[derive(Args, Debug)]
pub struct RecordingArgs {
    /// Where to write the profile.
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
    /// Seconds between samples of CPU, memory, disk and network (0.01 to 3600).
    #[arg(long, value_name = "SECONDS", default_value = "0.1", value_parser = parse_interval)]
    pub interval: Duration,
    /// When the log is fdatasync'd: always (after every batch), interval (at most once per
    /// sampling interval, at once for lifecycle markers), never (left to the kernel).
    #[arg(long, value_name = "POLICY", default_value = "interval")]
    pub sync: SyncArg,
    /// Keep the log after the profile is written.
    #[arg(long)]
    pub keep_log: bool,
    /// Do not listen for statsd metrics (nor export STATSD_HOST, STATSD_PORT and
    /// TASKCLUSTER_STATSD_ADDR).
    #[arg(long)]
    pub no_statsd: bool,
    /// The prefix of every metric series the task sends: letters, digits, _ and -, in
    /// segments each followed by a dot.
    #[arg(long, value_name = "PREFIX", default_value = "task.", value_parser = parse_prefix)]
    pub metric_prefix: String,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub recording: RecordingArgs,
    /// The command to run, and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct FinalizeArgs {
    /// The log to finalize.
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// Where to write the profile [default: LOG with .jsonl replaced by .json].
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Keep the log after the profile is written.
    #[arg(long)]
    pub keep_log: bool,
}

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// The directory whose logs to recover; the profiles are written there.
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncArg {
    Always,
    Interval,
    Never,
}

fn parse_interval(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds (for example 0.5)"))?;
    if !(0.01..=3600.0).contains(&seconds) {
        return Err(format!("{seconds} s is outside 0.01 to 3600 s"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn parse_prefix(text: &str) -> Result<String, String> {
    let segments = text.strip_suffix('.').unwrap_or_default();
    if tc_profile_recorder::sanitize_name(segments).as_deref() != Some(segments) {
        return Err(format!(
            "'{text}' is not a prefix like 'task.' or 'ci.build.' (letters, digits, _ and -, \
             each segment followed by a dot)"
        ));
    }
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
}
