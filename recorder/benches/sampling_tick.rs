//! One sampling tick with 500 live processes in the task's tree (children of this
//! benchmark, each a `sleep`), against the baseline measured in the same run: the same
//! sampler without a tree (system tracks, pressure, load). Ticks are a second apart, so
//! that every source is due at each, paced ones (a big tree's among them) included.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::process::{Child, Command};
use tc_profile_recorder::{Clock, Follow, RecorderConfig, Sampler};

const PROCESSES: usize = 500;

/// Live processes, killed when dropped.
struct Sleepers(Vec<Child>);

impl Sleepers {
    fn spawn(count: usize) -> Sleepers {
        let spawn = || {
            Command::new("sleep")
                .arg("3600")
                .spawn()
                .expect("spawn sleep")
        };
        Sleepers((0..count).map(|_| spawn()).collect())
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn tick(c: &mut Criterion) {
    let clock = Clock::start();
    let mut config = RecorderConfig::new("unused.jsonl".into());
    let baseline = Sampler::probe(&config, clock);
    config.follow = Some(Follow::Children);
    let _sleepers = Sleepers::spawn(PROCESSES);
    let tree = Sampler::probe(&config, clock);
    let mut group = c.benchmark_group("sampling tick");
    for (name, mut sampler) in [
        ("baseline: no process tree".to_owned(), baseline),
        (format!("{PROCESSES} processes in the tree"), tree),
    ] {
        let mut lines = Vec::with_capacity(64 << 10);
        // The first tick sets the baseline (and finds the processes): not measured.
        let mut now = clock.now_ms();
        sampler.tick(now, &mut lines);
        group.bench_function(name, |b| {
            b.iter(|| {
                lines.clear();
                now += 1000.0;
                black_box(sampler.tick(now, &mut lines))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, tick);
criterion_main!(benches);
