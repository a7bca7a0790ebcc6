//! The summary of a profile: how long, how busy, how close to the machine's limits, what
//! each step cost, and whether a smaller or bigger machine would fit the task better.
//! [`summarize`] computes it from a [`Profile`](tc_profile_finalizer::Profile): one pass over
//! the markers gathers the tracks (`tracks.rs`), from which come the CPU and memory figures
//! (`usage.rs`), the steps (`steps.rs`), the hint (`hint.rs`) and the sparklines
//! (`sparkline.rs`). Each output format is one file with a `serialize` function that does no
//! I/O.

mod hint;
mod json;
mod model;
mod sparkline;
mod steps;
mod summarize;
mod text;
mod tracks;
mod usage;

pub use model::{
    CpuFigures, CpuUse, DiskUse, Dropped, Hint, MachineSize, MemoryUse, NetworkUse, ProcessUse,
    Sparklines, Step, Summary, Verdict, Window, SUMMARY_VERSION,
};
pub use summarize::{summarize, summarize_window};
pub(crate) use tc_profile_finalizer::{category_names, step_markers, STEP_CATEGORIES};
pub(crate) use text::{bytes, cut, duration, BOLD, NAME_MAX, RESET};

/// The output formats of a summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFormat {
    /// Everything, for a terminal; bold labels as ANSI escapes (strip them where colour is
    /// not wanted).
    Text,
    /// The first lines of `Text`: duration, CPU, memory, dropped input, hint.
    Short,
    /// The stable JSON form.
    Json,
}

impl SummaryFormat {
    pub fn serialize(self, summary: &Summary) -> Vec<u8> {
        match self {
            SummaryFormat::Text => text::serialize(summary, text::Form::Full),
            SummaryFormat::Short => text::serialize(summary, text::Form::Short),
            SummaryFormat::Json => json::serialize(summary),
        }
    }
}
