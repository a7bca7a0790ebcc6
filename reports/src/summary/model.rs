//! What a summary says: the types of [`Summary`], serialized as its stable JSON form
//! (README.md, "Summaries"), and rendered as text by `text.rs`.

use serde::Serialize;

/// `summaryVersion` of the JSON form; raised only for changes that old readers would
/// misread (keys are added, never renamed or removed).
pub const SUMMARY_VERSION: u32 = 1;

/// Everything `tc-profile summary` says, in the units of its JSON form: times in
/// milliseconds since the recording's start, CPU as fractions of all cores (0 to 1).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub summary_version: u32,
    pub product: Option<String>,
    /// Unix epoch milliseconds of time 0.
    pub start_time: Option<f64>,
    /// The part of the recording summarized, when not all of it (`summary --from --to`).
    pub window: Option<Window>,
    pub duration_ms: f64,
    /// Whether the recording ended on purpose (it has its clean-end footer).
    pub complete: bool,
    /// Where a recording that did not end on purpose stops.
    pub ended_early_at_ms: Option<f64>,
    pub machine: MachineSize,
    pub steps: Vec<Step>,
    pub cpu: Option<CpuUse>,
    pub memory: Option<MemoryUse>,
    pub disk: Option<DiskUse>,
    pub network: Option<NetworkUse>,
    /// The task's processes that used the most CPU, when the profile has process markers.
    pub top_processes: Vec<ProcessUse>,
    /// The task's commands that used the most CPU, every run counted, when the profile
    /// has their totals (`Commands` markers: every exit seen, from taskstats).
    pub top_commands: Vec<CommandUse>,
    /// What the commands' CPU is counted from (`meta.tcProfile.processCpu`): `run-time`
    /// (the scheduler's figures) or `ticks` (whole clock ticks: short runs mostly missed).
    pub commands_cpu: Option<String>,
    pub dropped: Vec<Dropped>,
    pub hint: Option<Hint>,
    pub sparklines: Sparklines,
}

/// A span of a recording, in milliseconds since its start.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub from_ms: f64,
    pub to_ms: f64,
}

impl Window {
    /// All of any recording.
    pub const ALL: Window = Window {
        from_ms: f64::NEG_INFINITY,
        to_ms: f64::INFINITY,
    };

    /// How much of the interval `[start, end]` lies in the window: `None` when none of it
    /// does, 1 for an instant inside.
    pub fn share(&self, start: f64, end: f64) -> Option<f64> {
        let (from, to) = (start.max(self.from_ms), end.min(self.to_ms));
        if to < from || (to == from && end > start) {
            return None;
        }
        Some(if end > start {
            (to - from) / (end - start)
        } else {
            1.0
        })
    }
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSize {
    pub logical_cpus: Option<u32>,
    pub main_memory_bytes: Option<u64>,
    pub cpu_name: Option<String>,
}

/// An interval of the Worker or Task category: a lifecycle step or a phase of the task.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub name: String,
    /// The command, text or phase the marker carries.
    pub detail: Option<String>,
    pub category: String,
    pub start_ms: f64,
    pub duration_ms: f64,
    /// Still open when the recording ended: closed there.
    pub cut_off: bool,
    pub cpu_average: Option<f64>,
    pub cpu_peak: Option<f64>,
    pub peak_memory_bytes: Option<u64>,
    /// The commands of the task that used the most CPU in the step (three at most), every
    /// run counted, when the profile has `Commands` markers.
    pub top_commands: Vec<CommandUse>,
}

/// CPU of all cores, as fractions of all cores, weighted by each sample's duration; and
/// the task's process tree against the rest, when the profile has their tracks.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuUse {
    /// All cores; its keys stand beside `task` and `other` in the JSON form.
    #[serde(flatten)]
    pub all: CpuFigures,
    pub task: Option<CpuFigures>,
    pub other: Option<CpuFigures>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuFigures {
    pub average: f64,
    pub p95: f64,
    pub peak: f64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProcessUse {
    pub name: String,
    pub command: Option<String>,
    pub pid: Option<u64>,
    pub cpu_ms: f64,
    pub peak_rss_bytes: Option<u64>,
    pub start_ms: f64,
    pub duration_ms: f64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryUse {
    /// The highest `used` (total minus available) of any sample.
    pub peak_bytes: u64,
    pub peak_at_ms: f64,
    pub peak_swap_bytes: u64,
    /// The highest RSS of the task's processes, when the profile has their track.
    pub task_peak_bytes: Option<u64>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DiskUse {
    pub read_bytes: u64,
    pub written_bytes: u64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkUse {
    pub received_bytes: u64,
    pub sent_bytes: u64,
}

/// A note about data lost while recording or input dropped while reading.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Dropped {
    /// The note's marker name: "Data missing" (a span the recorder could not write), "Log
    /// damage" (lines the reader dropped) or "Marker files" (what was dropped from the
    /// profile directory's marker files).
    pub what: String,
    pub text: String,
    pub start_ms: f64,
    /// The end of a span; `null` for a note at one time.
    pub end_ms: Option<f64>,
}

/// Whether the machine fits the task, from the CPU p95 and the memory peak.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Hint {
    pub verdict: Verdict,
    /// The smallest power of two of cores that keeps the CPU p95 under 75 % of them.
    pub cores: u32,
    /// The smallest power of two of GiB that keeps the memory peak under 75 % of it.
    pub memory_bytes: u64,
    pub text: String,
}

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A machine with fewer cores or less memory would have done.
    Smaller,
    /// The machine fits.
    Fits,
    /// The task's CPU p95 (all CPU without its own track) at 90 % of the cores or more.
    CpuBound,
    /// Memory peak at 90 % of the machine's or more.
    MemoryBound,
    /// Both.
    CpuAndMemoryBound,
}

/// One character per stretch of the recording: CPU of all cores, and memory used against
/// the machine's memory.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Sparklines {
    pub cpu: Option<String>,
    pub memory: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_holds_the_share_of_an_interval_inside_it() {
        let window = Window {
            from_ms: 10.0,
            to_ms: 20.0,
        };
        assert_eq!(window.share(0.0, 20.0), Some(0.5));
        assert_eq!(window.share(12.0, 18.0), Some(1.0));
        assert_eq!(window.share(15.0, 15.0), Some(1.0), "an instant inside");
        assert_eq!(window.share(20.0, 30.0), None, "touching is not inside");
        assert_eq!(window.share(0.0, 9.0), None);
    }
}

pub use tc_profile_finalizer::CommandUse;
