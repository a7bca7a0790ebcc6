//! The body of an InfluxDB write (any process of the task posts them), split into lines as
//! the endpoint splits it (SPEC.md, "InfluxDB endpoint"): the parser never panics; a point
//! it takes has a measurement, fields, and no float that is not finite; its timestamp is a
//! finite time in every precision; and the metric markers its samples make hold finite
//! figures only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tc_profile_format::line_protocol::{parse_line, FieldValue, Precision};
use tc_profile_format::{Aggregator, MetricLimits};
use tc_profile_fuzz::check_metric_markers;

const PRECISIONS: [&str; 6] = ["ns", "us", "ms", "s", "m", "h"];

fuzz_target!(|body: &[u8]| {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    for line in body.split(|&b| b == b'\n') {
        let Ok(text) = std::str::from_utf8(line) else {
            continue;
        };
        let Ok(Some(point)) = parse_line(text) else {
            continue;
        };
        assert!(
            !point.measurement.is_empty() && !point.fields.is_empty(),
            "{text}"
        );
        for (_, value) in &point.fields {
            if let FieldValue::Float(float) = value {
                assert!(float.is_finite(), "{text}");
            }
        }
        if let Some(timestamp) = point.timestamp {
            for precision in PRECISIONS.into_iter().filter_map(Precision::parse) {
                assert!(precision.epoch_ms(timestamp).is_finite(), "{text}");
            }
        }
        for sample in point.samples().into_iter().flatten() {
            aggregator.record(sample);
        }
    }
    check_metric_markers(&aggregator.flush(0.0, 100.0), true);
});
