//! The tc-profile log format and its readers: line kinds, version constants, the one
//! encoder and decoder that the recorder and the finalizer share, and the hardened readers
//! of what a task writes (a profile directory, a followed log file), whose rules SPEC.md
//! states. It reads files; it writes none.
//!
//! A log is JSON Lines that the Firefox Profiler opens as a streamed profile: a `meta` line,
//! one `thread` line, then `marker` lines, with extension lines of our own (`open`,
//! `footer`, `gap`) that the front-end skips. [`SPEC.md`](../SPEC.md) is the normative
//! description; this crate follows it and is pointed at by it.
//!
//! Main types: [`Line`] (every line kind), [`Marker`], [`OpenInterval`], [`Footer`], the
//! builders [`meta_line`] and [`thread_line`], the schemas in [`schema`], and the metric
//! kinds in [`metric`]. Marker files (what task processes write to
//! `$TASKCLUSTER_PROFILE_DIR`): their lines and caps in [`marker_file`], the hardened
//! directory reader in [`profile_dir`], and [`Merger`], which turns their lines into log
//! lines. A task's log lines (its output, or its worker's log file) become `Log` markers
//! through [`task_log`].
//!
//! ```
//! use tc_profile_format::{decode_line, encode_line, Line, Marker};
//!
//! let marker = Marker::instant("checkout done", 1234.5);
//! let bytes = encode_line(&Line::Marker(marker.clone()));
//! assert!(bytes.starts_with(br#"{"type":"marker","name":"checkout done""#));
//! assert_eq!(decode_line(&bytes[..bytes.len() - 1]).unwrap(), Line::Marker(marker));
//! ```

mod aggregate;
pub mod capped;
mod compact_json;
pub mod line_protocol;
mod lines;
pub mod marker_file;
mod merge;
mod meta;
pub mod metric;
pub mod profile_dir;
pub mod schema;
pub mod scope;
pub mod task_log;

pub use aggregate::{
    sanitize_name, sanitize_tag, sorted_tags, Aggregator, BatchAggregator, Drops, Malformed,
    MetricLimits, Sample, SampleValue, MAX_NAME_BYTES, MAX_SET_MEMBERS, MAX_TAGS, MAX_TAG_BYTES,
    REFUSED_NAMED,
};
pub use lines::{
    decode_line, decode_marker_raw, decode_marker_text, encode_line, encode_line_into,
    encode_marker_line_into, encode_track_line_into, Checkpoint, Close, DataFields, DecodeError,
    Dropped, EndReason, FileProgress, Footer, Gap, Ingest, Line, Marker, OpenInterval, RawMarker,
    TrackData,
};
pub use merge::{log_time, same_name_match, Batch, BatchEnd, Merger, Taken, TakenMarker};
pub use meta::{
    meta_line, thread_fields, thread_line, CgroupInfo, InfluxInfo, Machine, MetaInfo, StatsdInfo,
    TaskInfo, GECKO_PROFILE_VERSION, LOG_FORMAT_VERSION, META_PREFIX, PREPROCESSED_PROFILE_VERSION,
    TASK_TAGS,
};
