//! Metric tracks (SPEC.md, "Metric tracks"): every series a task sends becomes one graph
//! track, one interval marker per sampling interval in which the series changed. The marker
//! is named after the series; its `data.type` is one of the fixed schemas here, so that the
//! meta line, written once at the start, declares every schema a recording may use.

use serde::{Deserialize, Serialize};

/// What kind of statsd metric a series is; each kind has its own schema. Serialized as
/// its statsd code (the `kind` of a marker file's `metric` line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MetricKind {
    /// Statsd `c`: the sum of the increments in the interval.
    #[serde(rename = "c")]
    Counter,
    /// Statsd `g`: the value at the end of the interval.
    #[serde(rename = "g")]
    Gauge,
    /// Statsd `ms`: count, min, mean and max of the timings in the interval.
    #[serde(rename = "ms")]
    Timer,
    /// Statsd `h` (and DogStatsD `d`): as a timer, without a unit.
    #[serde(rename = "h")]
    Histogram,
    /// Statsd `s`: the number of distinct members in the interval.
    #[serde(rename = "s")]
    Set,
}

impl MetricKind {
    pub const ALL: [MetricKind; 5] = [
        MetricKind::Counter,
        MetricKind::Gauge,
        MetricKind::Timer,
        MetricKind::Histogram,
        MetricKind::Set,
    ];

    /// The marker's `data.type`, which names its schema.
    pub fn data_type(self) -> &'static str {
        match self {
            MetricKind::Counter => "Counter",
            MetricKind::Gauge => "Gauge",
            MetricKind::Timer => "Timer",
            MetricKind::Histogram => "Histogram",
            MetricKind::Set => "Set",
        }
    }

    pub fn from_data_type(data_type: &str) -> Option<MetricKind> {
        MetricKind::ALL
            .into_iter()
            .find(|kind| kind.data_type() == data_type)
    }

    /// The numeric keys of `data`: the schema's graph keys, every one always present.
    pub fn value_keys(self) -> &'static [&'static str] {
        match self {
            MetricKind::Counter | MetricKind::Gauge => &["value"],
            MetricKind::Timer | MetricKind::Histogram => &["count", "min", "mean", "max"],
            MetricKind::Set => &["distinct"],
        }
    }
}

/// Keys of a metric marker's `data` besides the values.
pub mod key {
    /// The series name without its tags (`task.tests.passed`).
    pub const METRIC: &str = "metric";
    /// DogStatsD tags as `key:value` pairs joined by commas, sorted; absent when none.
    pub const TAGS: &str = "tags";
}

/// Name of the marker that counts, per interval, the metric input that was dropped.
pub const DROPPED_MARKER: &str = "Metrics dropped";
/// `data.type` of [`DROPPED_MARKER`].
pub const DROPPED_DATA_TYPE: &str = "MetricDrops";
