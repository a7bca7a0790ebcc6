//! One marker per series per interval (SPEC.md, "Metric tracks"). The InfluxDB endpoint and
//! the marker-file merger aggregate each batch on its own, so a series written in several
//! batches of one interval (a point a request, a line a scan) has one marker a batch, each
//! starting at the interval's start and drawn over the others: a counter's bar showed one
//! batch's sum. Here they become one, merged as a long track's stretch is. A marker of one
//! point at its interval's start (or taken at the recording's start, dated before it) would
//! be a bar no wider than a pixel: it is drawn over its interval, to the recording's end at
//! most.

use super::stretch;
use crate::marker_columns::Markers;
use crate::profile_marker::ProfileMarker;
use std::collections::HashMap;
use tc_profile_format::metric::MetricKind;
use tc_profile_format::Marker;

/// Merges the metric markers of one series (name) that start at the same time, each group
/// into one, and widens those that end where they start to `interval_ms`, not past
/// `end_time`; returns how many markers went into merged ones.
pub(crate) fn merge_metric_intervals(
    markers: &mut Markers,
    interval_ms: f64,
    end_time: f64,
) -> usize {
    // A series' name holds a dot (its prefix ends in one): other markers are passed over
    // by their name's id, without reading their payload.
    let dotted: Vec<bool> = markers.names().iter().map(|n| n.contains('.')).collect();
    if !dotted.contains(&true) {
        return 0;
    }
    let is_metric = |position: usize| {
        markers.end_time(position).is_some()
            && dotted[markers.name_id(position) as usize]
            && markers
                .get(position)
                .data_type()
                .is_some_and(|kind| MetricKind::from_data_type(&kind).is_some())
    };
    let is_point =
        |position: usize| markers.end_time(position) == Some(markers.start_time(position));
    let widened = |mut marker: ProfileMarker| {
        if marker.end_time == Some(marker.start_time) {
            let end = (marker.start_time + interval_ms).min(end_time);
            marker.end_time = Some(end.max(marker.start_time));
        }
        marker
    };
    let mut points = 0;
    let mut batches: HashMap<(u32, u64), usize> = HashMap::new();
    for position in (0..markers.len()).filter(|&p| is_metric(p)) {
        points += usize::from(is_point(position));
        let key = (
            markers.name_id(position),
            markers.start_time(position).to_bits(),
        );
        *batches.entry(key).or_default() += 1;
    }
    if points == 0 && batches.values().all(|&count| count == 1) {
        return 0;
    }
    let mut groups: HashMap<(u32, u64), Vec<Marker>> = HashMap::new();
    let mut others = Vec::with_capacity(markers.len());
    for (position, marker) in markers.iter().enumerate() {
        let key = (markers.name_id(position), marker.start_time.to_bits());
        let batch = batches.get(&key).is_some_and(|&count| count > 1);
        match (batch || is_point(position)) && is_metric(position) {
            true if batch => groups.entry(key).or_default().push(marker.to_marker()),
            true => others.push(widened(marker.owned())),
            false => others.push(marker.owned()),
        }
    }
    let mut merged = 0;
    for mut group in groups.into_values() {
        // The latest last, so that a gauge keeps the interval's last value.
        group.sort_by(|a, b| {
            a.end_time
                .unwrap_or_default()
                .total_cmp(&b.end_time.unwrap_or_default())
        });
        merged += group.len();
        others.push(widened(ProfileMarker::from(stretch::merge(&group))));
    }
    *markers = others.into_iter().collect();
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn batch(name: &str, start: f64, end: f64, data: Value) -> ProfileMarker {
        ProfileMarker::from(Marker::interval(name, start, end).with_data(data))
    }

    fn counter(start: f64, end: f64, value: u64) -> ProfileMarker {
        let data = json!({"metric": "task.hits", "type": "Counter", "value": value});
        batch("task.hits (sum)", start, end, data)
    }

    fn gauge(end: f64, value: u64) -> ProfileMarker {
        let data = json!({"metric": "task.depth", "type": "Gauge", "value": value});
        batch("task.depth", 100.0, end, data)
    }

    #[test]
    fn a_series_batches_of_one_interval_are_one_marker_and_a_point_is_widened() {
        let step = || {
            batch(
                "build.sh",
                100.0,
                150.0,
                json!({"type": "Text", "text": "a"}),
            )
        };
        let mut markers: Markers = [
            counter(100.0, 110.0, 1),
            gauge(160.0, 9),
            counter(100.0, 150.0, 2),
            gauge(120.0, 4),
            step(),
            step(),
            counter(200.0, 250.0, 4),
            counter(300.0, 300.0, 7),
        ]
        .into_iter()
        .collect();
        assert_eq!(merge_metric_intervals(&mut markers, 100.0, 350.0), 4);
        let rows: Vec<(String, f64, Option<f64>, Value)> = markers
            .iter()
            .map(|m| {
                (
                    m.name.to_owned(),
                    m.start_time,
                    m.end_time,
                    m.data_value().unwrap(),
                )
            })
            .collect();
        let find = |name: &str, start: f64| {
            let found: Vec<_> = rows
                .iter()
                .filter(|r| r.0 == name && r.1 == start)
                .collect();
            assert_eq!(found.len(), 1, "{name} at {start}: {rows:?}");
            (found[0].2, found[0].3["value"].as_f64())
        };
        assert_eq!(find("task.hits (sum)", 100.0), (Some(150.0), Some(3.0)));
        assert_eq!(
            find("task.depth", 100.0),
            (Some(160.0), Some(9.0)),
            "the last value"
        );
        assert_eq!(find("task.hits (sum)", 200.0), (Some(250.0), Some(4.0)));
        assert_eq!(
            find("task.hits (sum)", 300.0),
            (Some(350.0), Some(7.0)),
            "a point drawn over its interval, to the recording's end"
        );
        assert_eq!(
            rows.iter().filter(|r| r.0 == "build.sh").count(),
            2,
            "no metric"
        );
    }
}
