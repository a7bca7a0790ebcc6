//! The arguments of the commands that read a finished profile (or a log, finalized in
//! memory): `summary`, `open`, `merge`, `compare`, `add-log`.

use super::input::InputCapArgs;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// The profile or log (.json, .jsonl, either compressed as .gz or .zst).
    #[arg(value_name = "PROFILE|LOG")]
    pub input: PathBuf,
    /// text: for people; json: stable keys for scripts.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: SummaryFormatArg,
    /// Summarize from this time on (ms since the recording's start) [default: its start].
    #[arg(long, value_name = "MS")]
    pub from: Option<f64>,
    /// Summarize up to this time (ms since the recording's start) [default: its end].
    #[arg(long, value_name = "MS")]
    pub to: Option<f64>,
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

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The run to compare with (.json, .jsonl, either compressed as .gz or .zst).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The run to explain.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// The step that starts at the same time in both runs in the merged profile (a name
    /// as the table shows it) [default: the first step they share].
    #[arg(long, value_name = "STEP")]
    pub align: Option<String>,
    /// Where to write the merged profile of both runs; .gz or .zst compresses it.
    #[arg(short, long, value_name = "PATH", default_value = "compare.json")]
    pub output: PathBuf,
    /// Replace the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
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
