//! The line encoder and decoder on the lines a recording is made of: a CPU sample (the
//! longest line, written every interval) and a task's instant marker with a text payload;
//! decoded into a [`tc_profile_format::Line`], and with the payload left as text (what the
//! finalizer does).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tc_profile_format::{decode_line, decode_marker_raw, encode_line};

/// As the recorder writes them (a real log's lines, newline left off).
const LINES: [(&str, &[u8]); 2] = [
    (
        "cpu sample",
        br#"{"type":"marker","name":"CPU Use","startTime":102.845,"endTime":202.806,"category":0,"data":{"cpuPercent":0.053,"idle_pct":0.947,"iowait":0.0526,"iowait_pct":0.0,"irq_pct":0.0,"nice":0.0,"nice_pct":0.0,"softirq":0.0526,"steal":0.0526,"steal_pct":0.0,"system":0.0526,"system_pct":0.0,"type":"CPU","user":0.0526,"user_pct":0.053}}"#,
    ),
    (
        "text instant",
        br#"{"type":"marker","name":"checkout done","startTime":1234.567,"endTime":null,"category":3,"data":{"type":"Text","text":"git checkout 4f2a9c1"}}"#,
    ),
];

fn lines(c: &mut Criterion) {
    let mut group = c.benchmark_group("line");
    for (name, bytes) in LINES {
        let line = decode_line(bytes).expect("a valid line");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("encode {name}"), |b| {
            b.iter(|| encode_line(black_box(&line)))
        });
        group.bench_function(format!("decode {name}"), |b| {
            b.iter(|| decode_line(black_box(bytes)))
        });
        group.bench_function(format!("decode {name}, payload as text"), |b| {
            b.iter(|| decode_marker_raw(black_box(bytes)))
        });
    }
    group.finish();
}

criterion_group!(benches, lines);
criterion_main!(benches);
