//! One statsd packet (any process of the task sends them), taken twice, each time in an
//! interval of its own, as the listener takes it: every figure of every metric marker is a
//! finite number, and a counter is never negative unless the packet sent a negative
//! increment (`name:-N|c`, a decrement, which statsd allows) (SPEC.md, "Metric tracks").
#![no_main]

use libfuzzer_sys::fuzz_target;
use tc_profile_format::{Aggregator, MetricLimits};
use tc_profile_fuzz::check_metric_markers;
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
        check_metric_markers(&aggregator.flush(start, start + 100.0), may_decrement);
    }
});
