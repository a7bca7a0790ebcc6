//! The finalizing side of tc-profile: reads a log, whole or cut at any byte, and writes the
//! processed Firefox Profiler profile atomically; the log is removed only once the profile
//! is durable.
//!
//! Main items: [`finalize`] (log file to profile file), [`finalize_locked`] (the same, with
//! the [`Profile`] kept in memory in [`Finalized`]), [`read_log`] (any reader to a
//! [`Recording`]), [`compact`] (a recording to a [`Profile`]), [`read_input`] (a log or a
//! profile a user names), [`merge`] (several of those in one profile, a process each;
//! [`merge_inputs`] of inputs read first, which `compare` moves and annotates). What reads a
//! finished profile (summaries, exports, comparisons) is the `tc-profile-reports` crate above
//! this one.
//!
//! Inside, the flow is one way: `reader.rs` (log lines to a recording, with `problems.rs`
//! and `profile_marker.rs`), `markers.rs` (the profile directory's marker files) and
//! `task_log.rs` (a task's log file) feed
//! `profile.rs` (compaction, bounding long tracks through `coarsen.rs`); `finalize.rs` runs
//! them under the log's lock (asking `lock_holder.rs` who holds a lock it waits for) and
//! writes through `output.rs` and `compression.rs` (threads laid out by `marker_table.rs`,
//! numbers by `number_text.rs`);
//! `recover.rs` finalizes what dead recorders left; `merge/` reads inputs through
//! `input.rs` and writes one profile of them; `span.rs` puts several logs of one machine
//! on one timeline (the daemon's profiles); `escape.rs` makes a task's names safe to print.
//!
//! ```no_run
//! use tc_profile_finalizer::{finalize, FinalizeOptions, LockWait};
//!
//! let report = finalize(
//!     "task.jsonl".as_ref(),
//!     &LockWait::default(),
//!     &FinalizeOptions::default(),
//! )?;
//! println!("{} markers in {}", report.markers, report.output.display());
//! # Ok::<(), tc_profile_finalizer::FinalizeError>(())
//! ```

mod coarsen;
mod command_totals;
mod compression;
mod escape;
mod finalize;
mod input;
mod lock_holder;
mod marker_columns;
mod marker_table;
mod markers;
mod merge;
mod metric_drops;
mod number_text;
mod output;
mod problems;
mod profile;
mod profile_marker;
mod reader;
mod recover;
mod span;
mod span_read;
mod steps;
mod task_log;

pub use coarsen::MAX_SAMPLES_PER_TRACK;
pub use command_totals::{CommandRuns, CommandUse};
pub use compression::{decompressed, decompressed_within, Compression, InputCaps, OverCap};
pub use escape::escape_controls;
pub use finalize::{
    default_output, finalize, finalize_locked, FinalizeError, FinalizeOptions, FinalizeReport,
    Finalized, LockWait, LockWaitFn, LockedLog, DEFAULT_LOCK_WAIT,
};
pub use input::{read_input, Input, InputError, ProgressFn};
pub use lock_holder::LockHolder;
pub use marker_columns::Markers;
pub use markers::{merge_profile_dir, profile_dir_of};
pub use merge::{
    merge, merge_inputs, read_inputs, MergeError, MergeInput, MergeOptions, MergeReport,
    StepCompared,
};
pub use metric_drops::METRICS;
pub use output::{remove_durably, write_atomically, write_profile, write_profile_json};
pub use problems::{ProblemCount, Problems};
pub use profile::{
    compact, Compaction, Profile, ProfileError, DATA_MISSING, ENDED_EARLY, LOG_DAMAGE, MARKER_FILES,
};
pub use profile_marker::{busy_share, Figures, MarkerRef, Number, ProfileMarker};
pub use reader::{read_log, Damage, DropReason, Read, ReadError, Recording};
pub use recover::{recover, Recovery};
pub use span::{compact_span, uncovered, Span, SpanLogs};
pub use span_read::{read_log_within, SpanRead};
pub use steps::{category_names, step_markers, StepMarker, STEP_CATEGORIES};
pub use task_log::{add_log, merge_task_log, task_log_of, AddLogError};
