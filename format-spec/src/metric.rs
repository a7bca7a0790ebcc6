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

/// Tags as the [`key::TAGS`] key holds them: `key:value` pairs (a bare `key` when its value
/// is empty) joined by commas, in the order given.
pub fn join_tags(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(key, value)| {
            if value.is_empty() {
                key.clone()
            } else {
                format!("{key}:{value}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The `(key, value)` pairs of tags joined by [`join_tags`].
pub fn split_tags(joined: &str) -> impl Iterator<Item = (&str, &str)> {
    joined
        .split(',')
        .filter(|tag| !tag.is_empty())
        .map(|tag| tag.split_once(':').unwrap_or((tag, "")))
}

/// Name of the marker that counts, per interval, the metric input that was dropped.
pub const DROPPED_MARKER: &str = "Metrics dropped";
/// `data.type` of [`DROPPED_MARKER`].
pub const DROPPED_DATA_TYPE: &str = "MetricDrops";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_split_into_the_pairs_they_were_joined_from() {
        let tags = [("fast", ""), ("route", "/a:b"), ("suite", "unit")]
            .map(|(key, value)| (key.to_owned(), value.to_owned()));
        let joined = join_tags(&tags);
        assert_eq!(joined, "fast,route:/a:b,suite:unit");
        assert_eq!(
            split_tags(&joined).collect::<Vec<_>>(),
            [("fast", ""), ("route", "/a:b"), ("suite", "unit")]
        );
    }
}
