//! The arguments of turning logs into profiles: `finalize` and `recover`.

use super::input::InputCapArgs;
use super::markers::LimitArgs;
use super::values::parse_wait;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

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
pub struct RecoverArgs {
    /// The directory whose logs to recover; the profiles are written there.
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
    #[command(flatten)]
    pub lock_wait: LockWaitArgs,
}

#[derive(Args, Debug)]
pub struct LockWaitArgs {
    /// How long to wait for a log's lock while the process holding it is exiting (a recorder
    /// just killed holds it until the kernel has closed its files), 0 to 3600; a running
    /// holder is not waited for.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_wait)]
    pub wait: Duration,
}
