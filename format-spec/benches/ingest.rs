//! Marker ingest as the recorder's marker-file thread does it: a profile directory's new
//! lines read, checked and converted ([`tc_profile_format::Merger::read_batch_with`]), then
//! encoded into the batch's one write. 10,000 markers of one file, as
//! scripts/bench/marker_writer.py writes them, and as Python's `json.dumps` does
//! (scripts/bench/task_tree.py: spaces after `:` and `,`, their `data` written with its
//! keys sorted, as the log always had it); the time per marker is the time / 10,000.

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion, Throughput,
};
use std::path::Path;
use tc_profile_format::marker_file::Limits;
use tc_profile_format::profile_dir::DirReader;
use tc_profile_format::Merger;

const MARKERS: u64 = 10_000;
const START_EPOCH_MS: f64 = 1.7e12;

/// The line of marker `i` at `time` (epoch ms).
type MarkerLine = fn(u64, f64) -> String;

fn ingest(c: &mut Criterion) {
    let mut group = c.benchmark_group("ingest");
    group.throughput(Throughput::Elements(MARKERS));
    let compact = |i: u64, time: f64| {
        format!(
            "{{\"type\":\"marker\",\"name\":\"bench\",\"startTime\":{time:.3},\
             \"data\":{{\"type\":\"Text\",\"text\":\"marker {i}\"}}}}\n"
        )
    };
    let spaced = |i: u64, time: f64| {
        format!(
            "{{\"type\": \"marker\", \"name\": \"step\", \"startTime\": {time:.3}, \
             \"endTime\": null, \"data\": {{\"type\": \"Text\", \"text\": \"step {i}\"}}}}\n"
        )
    };
    let cases: [(&str, MarkerLine); 2] = [
        (
            "10k text markers, read, checked, converted and encoded",
            compact,
        ),
        (
            "10k spaced text markers (json.dumps), read, checked, converted and encoded",
            spaced,
        ),
    ];
    for (name, line) in cases {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let text: String = (0..MARKERS)
            .map(|i| line(i, START_EPOCH_MS + i as f64 * 0.1))
            .collect();
        std::fs::write(dir.path().join("1234.jsonl"), text).expect("the marker file");
        bench(&mut group, name, dir.path());
    }
    group.finish();
}

fn bench(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, dir: &Path) {
    let now_epoch_ms = START_EPOCH_MS + 10_000.0;
    group.bench_function(name, |b| {
        b.iter_batched(
            || {
                let reader = DirReader::open(dir, Limits::default()).expect("the directory");
                let mut id = 0;
                let next_id = Box::new(move || {
                    id += 1;
                    id
                });
                (
                    reader,
                    Merger::new(START_EPOCH_MS, Limits::default(), &[], next_id),
                )
            },
            |(mut reader, mut merger)| {
                let mut bytes = Vec::new();
                loop {
                    let mut encode = |line: tc_profile_format::Taken| line.encode_into(&mut bytes);
                    let end = merger
                        .read_batch_with(&mut reader, false, now_epoch_ms, &mut encode)
                        .unwrap();
                    if !end.scan.more {
                        break;
                    }
                }
                assert!(bytes.len() > 100 * MARKERS as usize, "every marker taken");
                bytes
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, ingest);
criterion_main!(benches);
