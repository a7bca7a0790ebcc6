//! One stretch of a long track's samples merged into one sample, by what the track measures
//! (the rules in `coarsen.rs`'s comment).

use crate::profile_marker::busy_share;
use serde_json::Value;
use tc_profile_format::metric::MetricKind;
use tc_profile_format::schema::data_type;
use tc_profile_format::Marker;

/// Memory tracks, by schema, and the field whose highest sample a merged one keeps: the
/// system's, and the task's processes' against the rest (SPEC.md, "Categories and schemas").
const KEEP_HIGHEST: [(&str, &str); 4] = [
    (data_type::MEMORY, "used"),
    (data_type::TASK_MEMORY, "rss"),
    (data_type::OTHER_MEMORY, "used"),
    (data_type::CGROUP_MEMORY, "current"),
];

/// How a stretch's samples become one, by their payloads' `type` (the rules in
/// `coarsen.rs`'s comment).
pub(super) enum Rule {
    /// The sample with the highest of this field.
    KeepHighest(&'static str),
    Metric(MetricKind),
    Sum,
    CpuMean,
    ShareMean,
    Mean,
}

pub(super) fn rule(kind: Option<&str>) -> Rule {
    if let Some((_, key)) = KEEP_HIGHEST.iter().find(|(k, _)| Some(*k) == kind) {
        return Rule::KeepHighest(key);
    }
    if let Some(metric) = kind.and_then(MetricKind::from_data_type) {
        return Rule::Metric(metric);
    }
    match kind {
        Some(data_type::IO | data_type::NET_IO | data_type::SWAP | data_type::PROCESSES_ENDED) => {
            Rule::Sum
        }
        Some(data_type::CPU) => Rule::CpuMean,
        Some(data_type::TASK_CPU | data_type::OTHER_CPU | data_type::CGROUP_CPU) => Rule::ShareMean,
        _ => Rule::Mean,
    }
}

pub(super) fn merge(group: &[Marker]) -> Marker {
    let last = &group[group.len() - 1];
    if group.len() == 1 {
        return last.clone();
    }
    let kind = last
        .data
        .as_ref()
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str);
    let mut merged = match rule(kind) {
        Rule::KeepHighest(key) => {
            let value = |m: &Marker| number(m, key).unwrap_or(0.0);
            group
                .iter()
                .max_by(|a, b| value(a).total_cmp(&value(b)))
                .map_or(Value::Null, data_of)
        }
        Rule::Metric(metric) => merge_metric(group, metric),
        Rule::Sum => sum(group),
        Rule::CpuMean => cpu_mean(group),
        Rule::ShareMean => share_mean(group),
        Rule::Mean => mean(group),
    };
    if let Value::Object(fields) = &mut merged {
        fields.insert("samples".to_owned(), Value::from(group.len()));
    }
    // The first sample's name and start, not a clone of it: its payload's tree was a tenth
    // of merging a track.
    let first = &group[0];
    Marker {
        name: first.name.clone(),
        start_time: first.start_time,
        end_time: last.end_time,
        category: first.category,
        data: Some(merged),
        open_id: first.open_id,
    }
}

pub(super) fn number(marker: &Marker, key: &str) -> Option<f64> {
    marker.data.as_ref()?.get(key)?.as_f64()
}

fn duration(marker: &Marker) -> f64 {
    marker
        .end_time
        .map_or(0.0, |end| (end - marker.start_time).max(0.0))
}

/// The last sample's fields, each number replaced by its time-weighted mean.
fn mean(group: &[Marker]) -> Value {
    let total: f64 = group.iter().map(duration).sum();
    let weight = |m: &Marker| {
        if total > 0.0 {
            duration(m) / total
        } else {
            1.0 / group.len() as f64
        }
    };
    combine(group, |key| {
        Value::from(
            group
                .iter()
                .map(|m| number(m, key).unwrap_or(0.0) * weight(m))
                .sum::<f64>(),
        )
    })
}

/// A metric's intervals as one: what the task sent in the stretch, so that totals taken from
/// the profile stay whole. Counters and timer counts add up, a gauge keeps its last value,
/// a timer its lowest min, highest max and count-weighted mean, a set its most distinct
/// members (members seen in two intervals cannot be told apart).
fn merge_metric(group: &[Marker], metric: MetricKind) -> Value {
    match metric {
        MetricKind::Counter => sum(group),
        MetricKind::Gauge => data_of(&group[group.len() - 1]),
        MetricKind::Set => combine(group, |key| extreme(group, key, f64::max)),
        MetricKind::Timer | MetricKind::Histogram => {
            let values = |key| group.iter().map(move |m| number(m, key).unwrap_or(0.0));
            let count: f64 = values("count").sum();
            let timed: f64 = values("count")
                .zip(values("mean"))
                .map(|(n, t)| n * t)
                .sum();
            let mut merged = sum(group);
            merged["min"] = extreme(group, "min", f64::min);
            merged["max"] = extreme(group, "max", f64::max);
            merged["mean"] = Value::from(if count > 0.0 { timed / count } else { 0.0 });
            merged
        }
    }
}

fn data_of(marker: &Marker) -> Value {
    marker.data.clone().unwrap_or(Value::Null)
}

/// The group's lowest or highest `key` (by `pick`), a whole number when every one is.
fn extreme(group: &[Marker], key: &str, pick: fn(f64, f64) -> f64) -> Value {
    let values = group.iter().filter_map(|m| m.data.as_ref()?.get(key));
    let picked = values.clone().filter_map(Value::as_f64).reduce(pick);
    match values.map(Value::as_u64).collect::<Option<Vec<u64>>>() {
        Some(whole) if picked.is_some() => Value::from(
            whole
                .into_iter()
                .map(|v| v as f64)
                .reduce(pick)
                .unwrap_or(0.0) as u64,
        ),
        _ => picked.map_or(Value::Null, Value::from),
    }
}

/// The last sample's fields, each number replaced by the group's total.
fn sum(group: &[Marker]) -> Value {
    combine(group, |key| {
        let values = group.iter().filter_map(|m| m.data.as_ref()?.get(key));
        match values.clone().map(Value::as_u64).sum::<Option<u64>>() {
            Some(whole) => Value::from(whole),
            None => Value::from(values.filter_map(Value::as_f64).sum::<f64>()),
        }
    })
}

/// The mean of the stacked bars, with the busy share's mean as `cpuPercent` and its highest
/// as `peak`; the per-kind percentages are means too, but an older log's text ("45.0%"),
/// which is of a single sample, is left out.
fn cpu_mean(group: &[Marker]) -> Value {
    let mut merged = mean(group);
    let peak = group
        .iter()
        .filter_map(|m| {
            let data = m.data.as_ref()?;
            busy_share(|key| data.get(key)?.as_f64())
        })
        .fold(0.0, f64::max);
    if let Value::Object(fields) = &mut merged {
        fields.retain(|key, value| !(key.ends_with("_pct") && value.is_string()));
        if let Some(busy) = busy_share(|key| fields.get(key)?.as_f64()) {
            let percent = share_as(is_text(fields.get("cpuPercent")), busy);
            fields.insert("cpuPercent".to_owned(), percent);
        }
        fields.insert("peak".to_owned(), Value::from(peak));
    }
    merged
}

/// The mean of a `cpu` share, with `cpuPercent` saying it.
fn share_mean(group: &[Marker]) -> Value {
    let mut merged = mean(group);
    if let Some(cpu) = merged.get("cpu").and_then(Value::as_f64) {
        merged["cpuPercent"] = share_as(is_text(merged.get("cpuPercent")), cpu);
    }
    merged
}

fn is_text(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::String(_)))
}

/// `share` as the samples' `cpuPercent` was written: a fraction (a field of format
/// `percentage`), or in an older log as text (`as_text`), "45.0%".
pub(super) fn share_as(as_text: bool, share: f64) -> Value {
    if as_text {
        Value::from(format!("{:.1}%", share * 100.0))
    } else {
        Value::from((share * 1000.0).round() / 1000.0)
    }
}

/// The last sample's data with every numeric field replaced by `number_of(key)`.
fn combine(group: &[Marker], number_of: impl Fn(&str) -> Value) -> Value {
    let Some(Value::Object(last)) = group[group.len() - 1].data.clone() else {
        return Value::Null;
    };
    let fields = last
        .into_iter()
        .map(|(key, value)| {
            let value = if value.is_number() {
                number_of(&key)
            } else {
                value
            };
            (key, value)
        })
        .collect();
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(name: &str, second: usize, data: Value) -> Marker {
        Marker::interval(name, second as f64 * 1000.0, (second + 1) as f64 * 1000.0).with_data(data)
    }

    #[test]
    fn merged_metrics_keep_what_the_task_sent() {
        let metric = |kind: MetricKind, s: usize, data: Value| {
            let mut data = data;
            data["type"] = json!(kind.data_type());
            sample("task.x", s, data)
        };
        let counter = [1, 2, 3].map(|v| metric(MetricKind::Counter, v, json!({"value": v})));
        assert_eq!(
            merge(&counter).data.unwrap()["value"],
            6,
            "a counter adds up"
        );
        let gauge = [5, 9, 7].map(|v| metric(MetricKind::Gauge, v, json!({"value": v})));
        assert_eq!(
            merge(&gauge).data.unwrap()["value"],
            7,
            "a gauge's last value"
        );
        let timer = [
            metric(
                MetricKind::Timer,
                0,
                json!({"count": 1, "min": 10, "mean": 10.0, "max": 10}),
            ),
            metric(
                MetricKind::Timer,
                1,
                json!({"count": 3, "min": 2, "mean": 30.0, "max": 50}),
            ),
        ];
        let merged = merge(&timer).data.unwrap();
        assert_eq!(
            (
                &merged["count"],
                &merged["min"],
                &merged["mean"],
                &merged["max"]
            ),
            (&json!(4), &json!(2), &json!(25.0), &json!(50)),
            "{merged}"
        );
        let set = [4, 2].map(|v| metric(MetricKind::Set, v, json!({"distinct": v})));
        assert_eq!(merge(&set).data.unwrap()["distinct"], 4);
    }
}
