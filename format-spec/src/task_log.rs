//! A task's log (SPEC.md, "Log lines"): one line's `[component(:level)? TIME]` prefix, as
//! the Taskcluster UI reads it, the cap a line is kept under and the `Log` marker it
//! becomes (`line`); lines cut out of a stream of bytes, keeping only a line's head
//! (`splitter`); and a log file followed as `tail -F` follows it, from a checkpoint
//! (`follow`). Any bytes are a line: nothing here fails or panics on what a task prints.

mod follow;
mod line;
mod splitter;

pub use follow::{FollowRead, LogFollower};
pub use line::{
    parse_prefix, parse_utc, stat_line, Captured, Level, Placement, Prefix, Stream, MAX_LINE_BYTES,
};
pub use splitter::LineSplitter;

#[cfg(test)]
mod tests;
