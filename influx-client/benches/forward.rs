//! Forwarding's writes to one InfluxDB: through the target's shared agent, against a new
//! target (a new agent, so a new connection) for each write, as before the agent was shared.
//! Over loopback, so the difference is the connection's set-up alone; against a fleet's
//! endpoint over TLS it is a handshake per batch.

use criterion::{criterion_group, criterion_main, Criterion};
use tc_profile_influx::{write_influx, InfluxTarget, Precision, Retry};

mod loopback;

/// Writes per measured iteration.
const WRITES: u32 = 100;
const BATCH: &[u8] =
    b"cpu,host=a usage=0.5 1700000000000\nmemory,host=a used=1024i 1700000000000\n";

fn write(target: &InfluxTarget) {
    write_influx(target, BATCH, Precision::Milliseconds, Retry::default())
        .expect("the loopback server takes every write");
}

fn forwarding(c: &mut Criterion) {
    let (url, _server) = loopback::serve(u32::MAX);
    let mut group = c.benchmark_group("forward 100 writes");
    group.bench_function("one target, its connection reused", |b| {
        let target = InfluxTarget::new(&url, "ci", None).expect("a loopback URL");
        b.iter(|| (0..WRITES).for_each(|_| write(&target)));
    });
    group.bench_function("baseline: a new target per write", |b| {
        b.iter(|| {
            for _ in 0..WRITES {
                write(&InfluxTarget::new(&url, "ci", None).expect("a loopback URL"));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, forwarding);
criterion_main!(benches);
