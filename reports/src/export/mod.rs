//! Export of a task to a time-series database: its metric series and a summary of the
//! task, tagged with the task's identity. [`TaskReport`] (`report.rs`) is what every format
//! renders; each format is one file whose `serialize` does no I/O; `send.rs` (statsd) and
//! the `tc-profile-influx` crate (InfluxDB) alone talk to servers.

mod influx;
mod json;
pub(crate) mod report;
mod send;
mod statsd;

pub use influx::TASK_MEASUREMENT;
pub use report::{Figure, MetricPoint, SeriesReport, StepReport, TaskReport};
pub use send::{send_statsd, ExportError};
pub use tc_profile_format::TASK_TAGS;
pub use tc_profile_influx::{
    write_influx, Credentials, InfluxTarget, Precision, QueryError, Retry, WriteError,
};

/// The formats `tc-profile export --format` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// InfluxDB line protocol, millisecond timestamps: what `--influx` sends.
    Influx,
    /// One JSON document (README, "Exporting").
    Json,
}

impl ExportFormat {
    pub fn serialize(self, report: &TaskReport) -> Vec<u8> {
        match self {
            ExportFormat::Influx => influx::serialize(report),
            ExportFormat::Json => json::serialize(report),
        }
    }
}

/// The statsd packets that forward a report (`--statsd`), each at most 1432 bytes.
pub fn statsd_packets(report: &TaskReport) -> Vec<Vec<u8>> {
    statsd::serialize(report)
}
