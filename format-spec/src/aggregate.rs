//! Aggregation of the task's metrics per sampling interval: whatever the number of
//! samples, each series changed in an interval becomes one marker line at its end
//! (SPEC.md, "Metric tracks"). Shared by the statsd listener and the marker-file merger,
//! so that a metric ends in the same line whichever way it came.

use crate::metric::{self, MetricKind};
use crate::schema::category;
use crate::scope::{MetricScopes, PUT_POINTS};
use crate::Marker;
use serde_json::{json, Map, Value};
use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

mod names;
use names::sanitize_tags;
pub use names::{
    sanitize_name, sanitize_tag, sorted_tags, track_name, MAX_NAME_BYTES, MAX_TAGS, MAX_TAG_BYTES,
};

/// Distinct set members kept per interval, over all sets: bounds the memory of sets.
pub const MAX_SET_MEMBERS: usize = 100_000;
/// Characters of a malformed line quoted in the "Metrics dropped" marker.
const EXAMPLE_CHARS: usize = 100;
/// Refused series named in a "Metrics dropped" marker (out of scope or over the cap).
pub const REFUSED_NAMED: usize = 5;

/// Limits of what the task may send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricLimits {
    /// Every series name starts with it; the task cannot write outside it.
    pub prefix: String,
    /// Distinct series over the whole recording; metrics of further series are dropped.
    pub max_series: usize,
    /// The series the task may write; metrics of others are dropped.
    pub scopes: MetricScopes,
}

impl Default for MetricLimits {
    fn default() -> MetricLimits {
        MetricLimits {
            prefix: "task.".to_owned(),
            max_series: 1000,
            scopes: MetricScopes::default(),
        }
    }
}

impl MetricLimits {
    /// Whether a prefix keeps every series apart from the recorder's tracks: segments of
    /// ASCII letters, digits, `_` and `-`, each followed by a dot. A series name then holds
    /// a dot and no space, which no track of the recorder does (SPEC.md, "Metric tracks").
    pub fn is_valid_prefix(prefix: &str) -> bool {
        prefix
            .strip_suffix('.')
            .is_some_and(|segments| sanitize_name(segments).as_deref() == Some(segments))
    }
}

/// What one sample says.
#[derive(Clone, Debug, PartialEq)]
pub enum SampleValue {
    /// A counter increment, a timing, a histogram value, or a gauge's new value.
    Number(f64),
    /// A gauge change (`+3`, `-2`).
    GaugeDelta(f64),
    /// A set member.
    Member(String),
}

/// One metric as a source parsed it, name and tags not yet sanitized.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub kind: MetricKind,
    pub name: String,
    pub value: SampleValue,
    /// The sample rate (0, 1]: a counter increment or a timing stands for 1/rate of them.
    pub rate: f64,
    pub tags: Vec<(String, String)>,
}

/// Why a metric was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Malformed {
    #[error("not name:value|type")]
    Syntax,
    #[error("not UTF-8")]
    NotUtf8,
    #[error("unknown type {0:?}")]
    UnknownType(String),
    #[error("value is not a finite number")]
    Value,
    #[error("sample rate is not in (0, 1]")]
    Rate,
    #[error("name is empty once sanitized, or longer than {MAX_NAME_BYTES} bytes")]
    Name,
    #[error("more than {MAX_TAGS} tags, or a tag longer than {MAX_TAG_BYTES} bytes")]
    Tags,
    #[error("its series' figures would not be finite numbers")]
    NotFinite,
}

/// Input dropped in one interval, by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    pub malformed: u64,
    pub oversized: u64,
    pub over_series_cap: u64,
    pub over_set_cap: u64,
    pub kernel_dropped: u64,
    /// Metrics of series outside the task's scopes.
    pub out_of_scope: u64,
    /// Samples dated before the recording's start: taken, at the start (not dropped, but
    /// drawn where they were not).
    pub before_start: u64,
    /// Metric lines of marker files with keys this version does not know (taken without them).
    pub unknown_fields: u64,
    /// The first malformed line of the interval, cut to a hundred characters.
    pub example: Option<String>,
    /// The first [`REFUSED_NAMED`] series refused in the interval (out of scope or over the
    /// series cap), by name.
    pub refused: Vec<String>,
}

impl Drops {
    fn is_empty(&self) -> bool {
        self.malformed
            + self.oversized
            + self.over_series_cap
            + self.over_set_cap
            + self.kernel_dropped
            + self.out_of_scope
            + self.before_start
            + self.unknown_fields
            == 0
    }

    fn data(&self) -> Value {
        let mut data = json!({
            "type": metric::DROPPED_DATA_TYPE,
            "malformed": self.malformed,
            "oversized": self.oversized,
            "overSeriesCap": self.over_series_cap,
            "overSetCap": self.over_set_cap,
            "kernelDropped": self.kernel_dropped,
            "outOfScope": self.out_of_scope,
            "beforeStart": self.before_start,
            "unknownFields": self.unknown_fields,
        });
        if let Some(example) = &self.example {
            data["example"] = json!(example);
        }
        if !self.refused.is_empty() {
            data["refused"] = json!(self.refused.join(", "));
        }
        data
    }

    /// Names a refused series, if it is among the first few of the interval.
    fn refuse(&mut self, series: &str) {
        if self.refused.len() < REFUSED_NAMED && !self.refused.iter().any(|s| s == series) {
            self.refused.push(series.to_owned());
        }
    }
}

/// The state of a series within the current interval.
enum State {
    Counter(f64),
    /// A gauge's value lasts across intervals.
    Gauge(f64),
    Distribution {
        count: f64,
        sum: f64,
        min: f64,
        max: f64,
    },
    Set(HashSet<u64>),
}

struct Series {
    kind: MetricKind,
    metric: String,
    tags: String,
    state: State,
    changed: bool,
}

/// Series by (kind, marker name), and what was dropped since the last flush.
pub struct Aggregator {
    limits: MetricLimits,
    series: HashMap<(MetricKind, String), Series>,
    set_members: usize,
    pub drops: Drops,
}

impl Aggregator {
    pub fn new(limits: MetricLimits) -> Aggregator {
        Aggregator {
            limits,
            series: HashMap::new(),
            set_members: 0,
            drops: Drops::default(),
        }
    }

    /// Takes a sample into its series, or counts why it was dropped.
    pub fn record(&mut self, sample: Sample) {
        let metric = match sanitize_name(&sample.name) {
            Some(name) if let Some(scope) = self.limits.scopes.missing(&name) => {
                return self.out_of_scope(&scope);
            }
            Some(name) => format!("{}{name}", self.limits.prefix),
            None => return self.malformed(&sample.name, Malformed::Name),
        };
        let Some(tags) = sanitize_tags(&sample.tags) else {
            return self.malformed(&sample.name, Malformed::Tags);
        };
        let marker_name = track_name(sample.kind, &metric, &tags);
        let series_count = self.series.len();
        let series = match self.series.entry((sample.kind, marker_name)) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) if series_count >= self.limits.max_series => {
                self.drops.over_series_cap += 1;
                self.drops
                    .refuse(&format!("{} (over the series cap)", entry.key().1));
                return;
            }
            Entry::Vacant(entry) => entry.insert(Series {
                kind: sample.kind,
                metric,
                tags,
                state: State::new(sample.kind),
                changed: false,
            }),
        };
        let taken = series
            .state
            .take(&sample.value, sample.rate, &mut self.set_members);
        if taken.is_ok() {
            series.changed = true;
        }
        match taken {
            Ok(()) => {}
            Err(Refused::OverSetCap) => self.drops.over_set_cap += 1,
            Err(Refused::NotFinite) => self.malformed(&sample.name, Malformed::NotFinite),
        }
    }

    /// Counts a metric refused for want of `scope`, naming its series among the first few.
    pub fn out_of_scope(&mut self, scope: &str) {
        self.drops.out_of_scope += 1;
        let series = scope.strip_prefix(PUT_POINTS).unwrap_or(scope);
        let name = format!("{}{series} (needs {scope})", self.limits.prefix);
        self.drops.refuse(&name);
    }

    /// Counts a line that could not be parsed, keeping the first one as an example.
    pub fn malformed(&mut self, line: &str, why: impl std::fmt::Display) {
        self.drops.malformed += 1;
        if self.drops.example.is_none() {
            let line: String = line.chars().take(EXAMPLE_CHARS).collect();
            self.drops.example = Some(format!("{line} ({why})"));
        }
    }

    /// One marker per series changed in the interval `start..end`, sorted by name, and a
    /// "Metrics dropped" marker when input was dropped; then starts the next interval.
    pub fn flush(&mut self, start: f64, end: f64) -> Vec<Marker> {
        let mut markers: Vec<Marker> = self
            .series
            .iter_mut()
            .filter(|(_, series)| series.changed)
            .map(|((_, name), series)| {
                Marker::interval(name.as_str(), start, end)
                    .with_category(category::USER)
                    .with_data(series.data())
            })
            .collect();
        markers.sort_by(|a, b| a.name.cmp(&b.name));
        for series in self.series.values_mut() {
            series.state.reset();
            series.changed = false;
        }
        self.set_members = 0;
        let drops = std::mem::take(&mut self.drops);
        if !drops.is_empty() {
            markers.push(
                Marker::interval(metric::DROPPED_MARKER, start, end)
                    .with_category(category::RECORDER)
                    .with_data(drops.data()),
            );
        }
        markers
    }
}

/// Samples with their log times, aggregated per sampling interval of the log,
/// `[k × interval, (k+1) × interval)`, within one batch: the marker-file merger's and the
/// InfluxDB endpoint's, whose input comes in batches and carries its own times.
pub struct BatchAggregator {
    pub aggregator: Aggregator,
    interval_ms: f64,
    /// Samples refused at the series cap, in all (each interval's own count is reset at its
    /// flush): what a source reads before and after a batch to tell how many it lost.
    pub over_series_cap: u64,
}

impl BatchAggregator {
    pub fn new(limits: MetricLimits, interval_ms: f64) -> BatchAggregator {
        BatchAggregator {
            aggregator: Aggregator::new(limits),
            interval_ms: interval_ms.max(1.0),
            over_series_cap: 0,
        }
    }

    /// One flush per interval that the samples (in time order) fall in. A marker ends at
    /// its interval's last sample, never after the recording. A sample dated before the
    /// recording's start (log time 0) is taken at it, and counted as `before_start`: drawn
    /// before the start, it would be drawn nowhere.
    pub fn aggregate(&mut self, samples: Vec<(f64, Sample)>) -> Vec<Marker> {
        let mut markers = Vec::new();
        let mut current: Option<(f64, f64)> = None;
        for (time, sample) in samples {
            if time < 0.0 {
                self.aggregator.drops.before_start += 1;
            }
            let time = time.max(0.0);
            let interval = (time / self.interval_ms).floor();
            if let Some((previous, last)) = current.filter(|(p, _)| *p != interval) {
                markers.extend(self.flush(previous, last));
            }
            current = Some((interval, time));
            self.aggregator.record(sample);
        }
        if let Some((interval, last)) = current {
            markers.extend(self.flush(interval, last));
        }
        markers
    }

    fn flush(&mut self, interval: f64, last: f64) -> Vec<Marker> {
        self.over_series_cap += self.aggregator.drops.over_series_cap;
        let start = interval * self.interval_ms;
        self.aggregator.flush(start, last.max(start))
    }
}

impl State {
    fn new(kind: MetricKind) -> State {
        match kind {
            MetricKind::Counter => State::Counter(0.0),
            MetricKind::Gauge => State::Gauge(0.0),
            MetricKind::Timer | MetricKind::Histogram => State::Distribution {
                count: 0.0,
                sum: 0.0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
            },
            MetricKind::Set => State::Set(HashSet::new()),
        }
    }

    /// Applies a sample, unless a set member is over the set cap or a figure would not be
    /// finite (1e308 twice, or 1 at the rate 1e-320): the marker would say `null`.
    fn take(
        &mut self,
        value: &SampleValue,
        rate: f64,
        set_members: &mut usize,
    ) -> Result<(), Refused> {
        match (self, value) {
            (State::Counter(sum), SampleValue::Number(v)) => *sum = finite(*sum + v / rate)?,
            (State::Gauge(gauge), SampleValue::Number(v)) => *gauge = finite(*v)?,
            (State::Gauge(gauge), SampleValue::GaugeDelta(d)) => *gauge = finite(*gauge + d)?,
            (
                State::Distribution {
                    count,
                    sum,
                    min,
                    max,
                },
                SampleValue::Number(v),
            ) => {
                let (new_count, new_sum) = (finite(*count + 1.0 / rate)?, finite(*sum + v / rate)?);
                *count = new_count;
                *sum = new_sum;
                *min = min.min(*v);
                *max = max.max(*v);
            }
            (State::Set(members), SampleValue::Member(member)) => {
                let mut hasher = DefaultHasher::new();
                member.hash(&mut hasher);
                let hash = hasher.finish();
                if !members.contains(&hash) {
                    if *set_members >= MAX_SET_MEMBERS {
                        return Err(Refused::OverSetCap);
                    }
                    members.insert(hash);
                    *set_members += 1;
                }
            }
            // Parsers give each kind its own value shape; any other pairing is ignored.
            _ => {}
        }
        Ok(())
    }

    fn reset(&mut self) {
        match self {
            State::Counter(sum) => *sum = 0.0,
            State::Gauge(_) => {}
            State::Distribution { .. } => *self = State::new(MetricKind::Timer),
            State::Set(members) => members.clear(),
        }
    }
}

/// Why a series did not take a sample.
enum Refused {
    OverSetCap,
    NotFinite,
}

fn finite(figure: f64) -> Result<f64, Refused> {
    if figure.is_finite() {
        Ok(figure)
    } else {
        Err(Refused::NotFinite)
    }
}

impl Series {
    fn data(&self) -> Value {
        let mut data = Map::new();
        data.insert("type".to_owned(), json!(self.kind.data_type()));
        data.insert(metric::key::METRIC.to_owned(), json!(self.metric));
        if !self.tags.is_empty() {
            data.insert(metric::key::TAGS.to_owned(), json!(self.tags));
        }
        let values: Vec<f64> = match &self.state {
            State::Counter(v) | State::Gauge(v) => vec![*v],
            State::Distribution {
                count,
                sum,
                min,
                max,
            } => vec![*count, sum / count, *min, *max],
            State::Set(members) => vec![members.len() as f64],
        };
        let keys = match self.kind {
            // count, mean, min, max in that order, as computed above.
            MetricKind::Timer | MetricKind::Histogram => &["count", "mean", "min", "max"][..],
            kind => kind.value_keys(),
        };
        for (key, value) in keys.iter().zip(values) {
            data.insert((*key).to_owned(), json!(round(value)));
        }
        Value::Object(data)
    }
}

/// Six decimals are plenty for a graph and keep lines short. A value too large to scale
/// (above about 1e302) has no decimals to drop.
fn round(value: f64) -> f64 {
    let scaled = value * 1e6;
    if scaled.is_finite() {
        scaled.round() / 1e6
    } else {
        value
    }
}

#[cfg(test)]
mod tests;
