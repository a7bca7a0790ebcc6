//! The `Metrics` note: every "Metrics dropped" marker of the recording added up into one
//! line that the end-of-run output and `summary` print (SPEC.md, "Metric tracks"), so that
//! a refused series is named where people look, not only in a marker among thousands.

use crate::marker_columns::Markers;
use serde_json::Value;
use tc_profile_format::metric::{DROPPED_DATA_TYPE, DROPPED_MARKER};
use tc_profile_format::REFUSED_NAMED;

/// Name of the instant marker that adds up what the metric sources did not take.
pub const METRICS: &str = "Metrics";

/// The counts of "Metrics dropped", with what each says, in the order printed.
const COUNTS: [(&str, &str); 8] = [
    ("malformed", "malformed"),
    ("outOfScope", "out of scope"),
    ("overSeriesCap", "over the series cap"),
    ("overSetCap", "over the set cap (set members)"),
    ("oversized", "over the size cap (packets)"),
    ("kernelDropped", "dropped by the kernel (packets)"),
    (
        "unknownFields",
        "with unknown keys (marker-file lines, taken without them)",
    ),
    ("beforeStart", "dated before the start (drawn at it)"),
];

/// The note's text, or None when no metric input was dropped or moved.
pub(crate) fn metric_drops(markers: &Markers) -> Option<String> {
    let mut totals = [0u64; COUNTS.len()];
    let mut example = None;
    let mut refused: Vec<String> = Vec::new();
    // Found by the name's id first: every marker's payload read to pass it over, here and
    // in `merge_metric_intervals`, was a third of compacting 100,000 markers.
    let dropped = markers
        .names()
        .iter()
        .position(|n| &**n == DROPPED_MARKER)?;
    let drops = (0..markers.len())
        .filter(|&position| markers.name_id(position) as usize == dropped)
        .map(|position| markers.get(position))
        .filter(|m| m.data_type().as_deref() == Some(DROPPED_DATA_TYPE));
    for data in drops.filter_map(|m| m.data_value()) {
        for (total, (key, _)) in totals.iter_mut().zip(COUNTS) {
            *total += data.get(key).and_then(Value::as_u64).unwrap_or(0);
        }
        if example.is_none() {
            example = data
                .get("example")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let named = data
            .get("refused")
            .and_then(Value::as_str)
            .unwrap_or_default();
        for series in named.split(", ").filter(|s| !s.is_empty()) {
            if refused.len() < REFUSED_NAMED && !refused.iter().any(|r| r == series) {
                refused.push(series.to_owned());
            }
        }
    }
    let counts: Vec<String> = totals
        .iter()
        .zip(COUNTS)
        .filter(|(&total, _)| total > 0)
        .map(|(total, (key, what))| match (key, &example) {
            ("malformed", Some(example)) => format!("{total} {what} (first: {example})"),
            _ => format!("{total} {what}"),
        })
        .collect();
    if counts.is_empty() {
        return None;
    }
    let mut text = counts.join(", ");
    if !refused.is_empty() {
        text.push_str(&format!("; refused: {}", refused.join(", ")));
    }
    Some(text)
}
