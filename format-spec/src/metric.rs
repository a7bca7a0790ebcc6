//! Metric tracks (SPEC.md, "Metric tracks"): every series a task sends becomes one graph
//! track, one interval marker per sampling interval in which the series changed. The marker
//! is named after the series; its `data.type` is one of the fixed schemas here, so that the
//! meta line, written once at the start, declares every schema a recording may use.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

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

    /// What a track of this kind counts, in its name: a counter's sum in the interval, a
    /// timer's milliseconds, a set's distinct members; a gauge's or a histogram's unit is
    /// the task's to say, in the series name.
    pub fn unit(self) -> Option<&'static str> {
        match self {
            MetricKind::Counter => Some("sum"),
            MetricKind::Timer => Some("ms"),
            MetricKind::Set => Some("distinct"),
            MetricKind::Gauge | MetricKind::Histogram => None,
        }
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
/// is empty) joined by commas, in the order given; a comma of a value is written `\,` (a
/// sanitized value has no backslash of its own, a key no comma nor colon).
pub fn join_tags(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(key, value)| {
            if value.is_empty() {
                key.clone()
            } else {
                format!("{key}:{}", value.replace(',', "\\,"))
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The `(key, value)` pairs of tags joined by [`join_tags`], a value's `\,` a comma again.
pub fn split_tags(joined: &str) -> impl Iterator<Item = (&str, Cow<'_, str>)> {
    let mut rest = joined;
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        let end = unescaped_comma(rest).unwrap_or(rest.len());
        let tag = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        if tag.is_empty() {
            continue;
        }
        let (key, value) = tag.split_once(':').unwrap_or((tag, ""));
        let value = match value.contains("\\,") {
            true => Cow::Owned(value.replace("\\,", ",")),
            false => Cow::Borrowed(value),
        };
        return Some((key, value));
    })
}

/// Where the first comma not escaped by a backslash is.
fn unescaped_comma(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find(|&at| bytes[at] == b',' && (at == 0 || bytes[at - 1] != b'\\'))
}

/// Name of the marker that counts, per interval, the metric input that was dropped.
pub const DROPPED_MARKER: &str = "Metrics dropped";
/// `data.type` of [`DROPPED_MARKER`].
pub const DROPPED_DATA_TYPE: &str = "MetricDrops";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comma_in_a_tag_value_is_escaped_and_split_back() {
        let tags = [("host", "a,b"), ("region", "café, north")]
            .map(|(key, value)| (key.to_owned(), value.to_owned()));
        let joined = join_tags(&tags);
        assert_eq!(joined, "host:a\\,b,region:café\\, north");
        let split: Vec<(String, String)> = split_tags(&joined)
            .map(|(key, value)| (key.to_owned(), value.into_owned()))
            .collect();
        assert_eq!(split, tags);
    }

    #[test]
    fn tags_split_into_the_pairs_they_were_joined_from() {
        let tags = [("fast", ""), ("route", "/a:b"), ("suite", "unit")]
            .map(|(key, value)| (key.to_owned(), value.to_owned()));
        let joined = join_tags(&tags);
        assert_eq!(joined, "fast,route:/a:b,suite:unit");
        assert_eq!(
            split_tags(&joined).collect::<Vec<_>>(),
            [
                ("fast", "".into()),
                ("route", "/a:b".into()),
                ("suite", "unit".into())
            ]
        );
    }
}
