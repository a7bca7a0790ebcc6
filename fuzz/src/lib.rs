//! What the fuzz targets assert, shared by the targets that reach the same parser by
//! different inputs (plain bytes, or lines built from `arbitrary` data). Each check is a
//! promise of SPEC.md, not only "no panic".

use tc_profile_format::marker_file::{decode_file_line, FileLine, Limits};
use tc_profile_format::metric::{key, DROPPED_MARKER};
use tc_profile_format::schema::marker_schemas;
use tc_profile_format::{decode_line, encode_line, Line, Marker, Merger, MetricLimits};

/// The recording's start, as Unix epoch ms, for the merger of every target.
pub const START_EPOCH_MS: f64 = 1_800_000_000_000.0;
/// "Now" for the merger: a minute into the recording.
pub const NOW_EPOCH_MS: f64 = START_EPOCH_MS + 60_000.0;

/// A merger as the recorder makes one: ids from 1, the schemas of a recording with the
/// CPU, memory and statsd sources known, metric lines aggregated per 100 ms.
pub fn merger(limits: Limits) -> Merger {
    let sources = ["cpu", "memory", "statsd"].map(str::to_owned);
    let schemas = marker_schemas(&sources);
    let mut id = 0;
    Merger::new(
        START_EPOCH_MS,
        limits,
        schemas.as_array().map(Vec::as_slice).unwrap_or_default(),
        Box::new(move || {
            id += 1;
            id
        }),
    )
    .with_metrics(MetricLimits::default(), 100.0)
}

/// One marker-file line: if it is accepted, it re-encodes to a line that decodes to the
/// same thing (but a metric's unknown keys), and the log line the merger makes of it decodes back to itself.
pub fn check_marker_line(bytes: &[u8]) {
    let limits = Limits::default();
    let Ok(line) = decode_file_line(bytes, &limits) else {
        return;
    };
    let again = serde_json::to_vec(&line).expect("a decoded line encodes");
    // A metric's unknown keys are counted, never kept (SPEC.md, "Metric tracks").
    let mut kept = line.clone();
    if let FileLine::Metric(metric) = &mut kept {
        metric.unknown.clear();
    }
    assert_eq!(
        decode_file_line(&again, &limits).as_ref(),
        Ok(&kept),
        "re-encoded as {}",
        String::from_utf8_lossy(&again)
    );
    let time = line.time();
    if let Ok(Some(log_line)) = merger(limits).take("1.jsonl", line, NOW_EPOCH_MS) {
        if let Line::Marker(marker) = &log_line {
            assert!(marker.start_time.is_finite(), "from time {time}");
        }
        check_log_line(&log_line);
    }
}

/// A log line decodes, without its newline, to itself.
pub fn check_log_line(line: &Line) {
    let bytes = encode_line(line);
    assert_eq!(bytes.last(), Some(&b'\n'));
    let body = &bytes[..bytes.len() - 1];
    assert!(!body.contains(&b'\n'), "one line: {line:?}");
    let decoded = decode_line(body).expect("an encoded line decodes");
    assert_eq!(
        &decoded,
        line,
        "encoded as {}",
        String::from_utf8_lossy(body)
    );
}

/// The markers of an aggregator's flush (SPEC.md, "Metric tracks"): every figure is a
/// finite number, and a counter is never negative unless `counters_may_fall` (a statsd
/// packet may send a decrement, `name:-N|c`).
pub fn check_metric_markers(markers: &[Marker], counters_may_fall: bool) {
    for marker in markers.iter().filter(|m| m.name != DROPPED_MARKER) {
        let data = marker
            .data
            .as_ref()
            .and_then(|d| d.as_object())
            .expect("data");
        let kind = data["type"].as_str().expect("data.type");
        for (name, value) in data {
            if [key::METRIC, key::TAGS, "type"].contains(&name.as_str()) {
                continue;
            }
            let figure = value.as_f64();
            assert!(
                figure.is_some_and(f64::is_finite),
                "{}: {name} is {value}",
                marker.name
            );
            if kind == "Counter" && !counters_may_fall {
                assert!(figure >= Some(0.0), "{}: {name} is {value}", marker.name);
            }
        }
    }
}
