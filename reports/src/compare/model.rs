//! What a comparison says: the types of [`Comparison`], serialized as its JSON form
//! (`compare --json`, README.md "Comparing runs") and rendered as text by `text.rs`.

use serde::Serialize;

/// `compareVersion` of the JSON form; raised only for changes that old readers would
/// misread (keys are added, never renamed or removed).
pub const COMPARE_VERSION: u32 = 1;

/// Two runs of a task side by side: times in milliseconds, each run's since its own
/// start; CPU in seconds of CPU time and in cores.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub compare_version: u32,
    pub base: RunEnding,
    pub new: RunEnding,
    /// The step that starts at the same time in both runs once the new run is shifted.
    pub aligned_on: String,
    /// How far the new run moves on the merged profile's axis so that it does (ms).
    pub shift_ms: f64,
    /// The steps of both runs, those that account for most of the difference first.
    pub steps: Vec<StepDelta>,
    /// Steps of the base run that the new one never ran (or not as often), and the reverse.
    pub only_in_base: Vec<StepSpan>,
    pub only_in_new: Vec<StepSpan>,
    /// The commands (else processes) whose CPU time or peak memory changed most.
    pub processes: Vec<ProcessDelta>,
}

/// How a run ended.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RunEnding {
    /// The file it was read from.
    pub source: String,
    pub duration_ms: f64,
    /// Whether the recording ended on purpose (it has its clean-end footer).
    pub complete: bool,
    /// Where a recording that did not end on purpose stops.
    pub ended_early_at_ms: Option<f64>,
    /// The wrapped command's status: "exit code N", "killed by signal N".
    pub exit_status: Option<String>,
    /// Processes the kernel's OOM killer ended.
    pub oom_kills: usize,
    /// The daemon's `--task-timeout` ended the task.
    pub timed_out: bool,
}

/// A step found in both runs (by category, name and order).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StepDelta {
    pub step: String,
    pub category: String,
    pub base: StepFigures,
    pub new: StepFigures,
    /// New duration minus base duration.
    pub delta_ms: f64,
    /// How much of the runs' difference the step accounts for by itself (the steps inside
    /// it taken out): its own change of duration against the longer run, or of peak memory
    /// against the highest peak, whichever is larger.
    pub weight: f64,
}

/// A step in one run: where it lies and what it used there (`summary --from --to`).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StepFigures {
    pub start_ms: f64,
    pub duration_ms: f64,
    /// Still open when the recording ended: closed there.
    pub cut_off: bool,
    /// CPU time of the task's processes in the step (all processes', where the profile does
    /// not tell the task's apart), when the machine's cores are known.
    pub cpu_seconds: Option<f64>,
    /// That CPU time over the step's duration.
    pub cores: Option<f64>,
    /// The highest RSS of the task's processes (else memory used on the machine).
    pub peak_memory_bytes: Option<u64>,
    /// Read and written.
    pub disk_bytes: Option<u64>,
    /// Received and sent.
    pub network_bytes: Option<u64>,
}

/// A step of one run only.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StepSpan {
    pub step: String,
    pub category: String,
    pub start_ms: f64,
    pub duration_ms: f64,
    pub cut_off: bool,
}

/// A command (or process) of either run: its CPU time and peak RSS in each.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProcessDelta {
    pub command: String,
    pub base_cpu_ms: f64,
    pub new_cpu_ms: f64,
    pub base_peak_rss_bytes: Option<u64>,
    pub new_peak_rss_bytes: Option<u64>,
}
