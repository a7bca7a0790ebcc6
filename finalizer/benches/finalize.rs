//! The finalizer's inner loop: reading a log line by line into a recording (decode, then
//! keep), and compacting the recording into the serialized profile. The log mixes what
//! recordings hold: resource samples, text intervals and instant markers.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::json;
use std::hint::black_box;
use tc_profile_finalizer::{compact, read_log};
use tc_profile_format::{
    encode_line, meta_line, thread_line, EndReason, Footer, Line, Marker, MetaInfo,
};

const MARKERS: usize = 10_000;

fn synthetic_log(markers: usize) -> Vec<u8> {
    let meta = meta_line(&MetaInfo {
        start_time: 1.7e12,
        interval_ms: 100.0,
        sources: vec!["cpu".into(), "memory".into()],
        sync_policy: "interval:100ms".into(),
        recorder: "tc-profile bench".into(),
        ..MetaInfo::default()
    });
    let mut log = encode_line(&meta);
    log.extend(encode_line(&thread_line("bench")));
    for i in 0..markers {
        let t = i as f64 * 10.0;
        let marker = match i % 4 {
            0 => Marker::instant("event", t).with_data(json!({"type": "Text", "text": format!("event {i}")})),
            1 => Marker::interval("step", t, t + 5.0).with_data(json!({"type": "Text", "text": format!("step {i}")})),
            2 => Marker::interval("CPU Use", t, t + 10.0).with_data(json!({"type": "CPU", "user": 0.4, "system": 0.05, "cpuPercent": 0.45})),
            _ => Marker::interval("Memory", t, t + 10.0).with_data(json!({"type": "Mem", "used": 1_000_000_000 + i, "available": 3_000_000_000u64 - i as u64})),
        };
        log.extend(encode_line(&Line::Marker(marker.with_category(0))));
    }
    let footer = Footer {
        end_time: markers as f64 * 10.0,
        reason: EndReason::CommandExited,
    };
    log.extend(encode_line(&Line::Footer(footer)));
    log
}

fn finalize(c: &mut Criterion) {
    let log = synthetic_log(MARKERS);
    let mut group = c.benchmark_group("finalize 10k markers");
    group.throughput(Throughput::Bytes(log.len() as u64));
    group.bench_function("read_log", |b| {
        b.iter(|| read_log(black_box(log.as_slice())).expect("a valid log"))
    });
    group.bench_function("compact and serialize", |b| {
        b.iter_batched(
            || read_log(log.as_slice()).expect("a valid log"),
            |recording| {
                let (profile, _) = compact(recording);
                serde_json::to_writer(std::io::sink(), &profile).expect("serializable")
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, finalize);
criterion_main!(benches);
