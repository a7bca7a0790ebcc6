//! One statsd packet (any process of the task sends them), taken twice, each time in an
//! interval of its own, as the listener takes it: every figure of every metric marker is a
//! finite number, and a counter is never negative unless the packet sent a negative
//! increment (`name:-N|c`, a decrement, which statsd allows) (SPEC.md, "Metric tracks").
#![no_main]

use libfuzzer_sys::fuzz_target;
use tc_profile_format::metric::{key, DROPPED_MARKER};
use tc_profile_format::{Aggregator, MetricLimits};
use tc_profile_recorder::{record_statsd_packet, MAX_PACKET_BYTES};

fuzz_target!(|packet: &[u8]| {
    if packet.len() > MAX_PACKET_BYTES {
        return;
    }
    let may_decrement = packet.windows(2).any(|pair| pair == b":-");
    let mut aggregator = Aggregator::new(MetricLimits::default());
    for interval in 0..2 {
        record_statsd_packet(&mut aggregator, packet);
        let start = f64::from(interval) * 100.0;
        for marker in aggregator.flush(start, start + 100.0) {
            if marker.name == DROPPED_MARKER {
                continue;
            }
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
                if kind == "Counter" && !may_decrement {
                    assert!(figure >= Some(0.0), "{}: {name} is {value}", marker.name);
                }
            }
        }
    }
});
