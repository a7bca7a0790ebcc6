//! One marker per series per interval (SPEC.md, "Metric tracks"). The InfluxDB endpoint and
//! the marker-file merger aggregate each batch on its own, so a series written in several
//! batches of one interval (a point a request, a line a scan) has one marker a batch, each
//! starting at the interval's start and drawn over the others: a counter's bar showed one
//! batch's sum. Here they become one, merged as a long track's stretch is.

use super::stretch;
use crate::marker_columns::Markers;
use crate::profile_marker::ProfileMarker;
use std::collections::HashMap;
use tc_profile_format::metric::MetricKind;
use tc_profile_format::Marker;

/// Merges the metric markers of one series (name) that start at the same time, each group
/// into one; returns how many markers went into merged ones.
pub(crate) fn merge_metric_intervals(markers: &mut Markers) -> usize {
    let is_metric = |position: usize| {
        let marker = markers.get(position);
        marker.end_time.is_some()
            && marker
                .data_type()
                .is_some_and(|kind| MetricKind::from_data_type(&kind).is_some())
    };
    let mut batches: HashMap<(u32, u64), usize> = HashMap::new();
    for position in (0..markers.len()).filter(|&p| is_metric(p)) {
        let key = (
            markers.name_id(position),
            markers.start_time(position).to_bits(),
        );
        *batches.entry(key).or_default() += 1;
    }
    if batches.values().all(|&count| count == 1) {
        return 0;
    }
    let mut groups: HashMap<(u32, u64), Vec<Marker>> = HashMap::new();
    let mut others = Vec::with_capacity(markers.len());
    for (position, marker) in markers.iter().enumerate() {
        let key = (markers.name_id(position), marker.start_time.to_bits());
        match is_metric(position) && batches.get(&key).is_some_and(|&count| count > 1) {
            true => groups.entry(key).or_default().push(marker.to_marker()),
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
        others.push(ProfileMarker::from(stretch::merge(&group)));
    }
    *markers = others.into_iter().collect();
    merged
}
