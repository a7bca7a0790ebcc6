//! The cost of each `--sync` policy on the disk under a directory, as ratios to `never`
//! measured in the same run: a burst (lines written per second while the channel is full:
//! group commit at work) and a steady trickle like a real task's (fdatasync calls per second
//! and the recorder's CPU time).

use crate::child::sync_policy;
use anyhow::Result;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tc_profile_format::{EndReason, Marker};
use tc_profile_recorder::{Recorder, RecorderConfig, WriterStats};

#[derive(clap::Args)]
pub struct SyncCostArgs {
    /// A directory on the disk to measure (its logs are removed).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Seconds of the steady trickle per policy.
    #[arg(long, default_value = "3")]
    seconds: f64,
}

const BURST_LINES: u64 = 50_000;
/// The trickle: one marker per millisecond, and system samples every 0.1 s.
const TRICKLE_PERIOD: Duration = Duration::from_millis(1);

struct Measure {
    burst_lines_per_second: f64,
    burst_syncs: u64,
    trickle_syncs_per_second: f64,
    trickle_cpu_share: f64,
}

pub fn run(args: SyncCostArgs) -> Result<()> {
    std::fs::create_dir_all(&args.dir)?;
    let policies = ["never", "interval", "always"];
    let measures: Vec<Measure> = policies
        .iter()
        .map(|policy| measure(&args, policy))
        .collect::<Result<_>>()?;
    let base = &measures[0];
    println!(
        "--sync cost on {} (ratios to never, same run)",
        args.dir.display()
    );
    println!("policy    | burst lines/s      | burst syncs | trickle fdatasync/s | trickle CPU");
    for (policy, m) in policies.iter().zip(&measures) {
        println!(
            "{policy:<9} | {:>9.0} ({:>4.2}x) | {:>11} | {:>19.1} | {:>5.2}% ({:.2}x)",
            m.burst_lines_per_second,
            m.burst_lines_per_second / base.burst_lines_per_second,
            m.burst_syncs,
            m.trickle_syncs_per_second,
            m.trickle_cpu_share * 100.0,
            m.trickle_cpu_share / base.trickle_cpu_share
        );
    }
    Ok(())
}

fn measure(args: &SyncCostArgs, policy: &str) -> Result<Measure> {
    let log = args.dir.join(format!("sync-cost-{policy}.jsonl"));
    let _ = std::fs::remove_file(&log);
    let start = |sample_system| {
        let mut config = RecorderConfig::new(log.clone());
        config.sync = sync_policy(policy, config.interval);
        config.sample_system = sample_system;
        config.statsd = None;
        Recorder::start(config)
    };

    let recorder = start(false)?;
    let markers = recorder.markers();
    let marker = Marker::instant("burst", 0.0);
    let began = Instant::now();
    for _ in 0..BURST_LINES {
        markers.marker(&marker);
    }
    let burst = finish(recorder, &log)?;
    let burst_seconds = began.elapsed().as_secs_f64();

    let recorder = start(true)?;
    let markers = recorder.markers();
    let cpu_before = cpu_seconds();
    let began = Instant::now();
    let mut next = began;
    while began.elapsed().as_secs_f64() < args.seconds {
        markers.marker(&Marker::instant("trickle", markers.now()));
        next += TRICKLE_PERIOD;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let trickle = finish(recorder, &log)?;
    let trickle_seconds = began.elapsed().as_secs_f64();
    Ok(Measure {
        burst_lines_per_second: burst.lines as f64 / burst_seconds,
        burst_syncs: burst.syncs,
        trickle_syncs_per_second: trickle.syncs as f64 / trickle_seconds,
        trickle_cpu_share: (cpu_seconds() - cpu_before) / trickle_seconds,
    })
}

fn finish(recorder: Recorder, log: &std::path::Path) -> Result<WriterStats> {
    let finished = recorder.finish(EndReason::Stopped)?;
    std::fs::remove_file(log)?;
    Ok(finished.stats)
}

/// User and system CPU time of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage(2) fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
