//! End-to-end tests that run the real `tc-profile` binary. One module per subject.

mod util;

/// `finalize`: kills, truncation at every byte, Mozilla's stream, bad input.
mod finalize;
/// A profile directory written by hostile task code: every problem warned, the rest kept.
mod hostile_dir;
/// Marker files: 200 writers, SIGKILL and finalize, a worker's lifecycle, the README examples.
mod markers;
/// Metrics: the statsd listener, its aggregation into tracks, scoping under the prefix.
mod metrics;
/// `recover` and `--state-dir`: logs of dead recorders finalized once, live ones left alone.
mod recover;
/// The log deleted or its directory removed while recording.
mod resilience;
/// `run`: what a recording of a real command holds, against the profiler's constraints.
mod run;
