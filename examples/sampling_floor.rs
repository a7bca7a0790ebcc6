//! The least CPU a recorder of tc-profile's design can spend while a task runs: each
//! tick, the system calls that `tc-profile run` makes, and nothing else. A sampler thread
//! wakes every interval and reads the five files the recorder's sampler reads (/proc/stat,
//! /proc/meminfo, each whole disk's stat, /proc/self/net/dev and the command's
//! /proc/PID/stat, kept open, one pread each), then hands a line of a tick's size to a
//! writer thread, which appends it with one write and fdatasyncs at most once a second.
//! No parsing, no encoding, no marker files, statsd, start-up or finalize: the bench
//! measures it beside the recorder, so that a ratio to the monitor can be set against
//! what the machine's wake-ups and /proc files cost alone.
//!
//! `cargo run --release --example sampling_floor -- INTERVAL LOG -- CMD [ARGS...]`

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Bytes of one tick's lines, as the recorder writes them at rest (8 lines).
const TICK_BYTES: usize = 1460;
/// The recorder's interval policy: at most one fdatasync a second, taken at a write.
const SYNC_PERIOD: Duration = Duration::from_secs(1);
const DUE_SOON: Duration = Duration::from_millis(50);

/// Ticks handed from the sampler to the writer.
#[derive(Default)]
struct Handoff {
    ticks: Mutex<Vec<Vec<u8>>>,
    writer: std::sync::OnceLock<Thread>,
    stop: AtomicBool,
    /// Set by the sampler after its last tick.
    sampled_last: AtomicBool,
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [interval, log, dashes, command @ ..] = args.as_slice() else {
        return Err("usage: sampling_floor INTERVAL LOG -- CMD [ARGS...]".to_owned());
    };
    let interval = interval
        .parse::<f64>()
        .map_err(|e| format!("interval: {e}"))?;
    if dashes != "--" || command.is_empty() {
        return Err("usage: sampling_floor INTERVAL LOG -- CMD [ARGS...]".to_owned());
    }
    let log = File::create(log).map_err(|e| format!("{log}: {e}"))?;
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .spawn()
        .map_err(|e| format!("{}: {e}", command[0]))?;
    let mut files = system_files();
    files.extend(File::open(format!("/proc/{}/stat", child.id())));

    let handoff = Arc::new(Handoff::default());
    let writer = thread::spawn({
        let handoff = Arc::clone(&handoff);
        move || write_ticks(&handoff, log)
    });
    let sampler = thread::spawn({
        let handoff = Arc::clone(&handoff);
        move || sample(&handoff, &files, Duration::from_secs_f64(interval))
    });
    child.wait().map_err(|e| format!("wait: {e}"))?;
    handoff.stop.store(true, Ordering::Release);
    sampler.thread().unpark();
    sampler.join().map_err(|_| "sampler panicked")?;
    writer.join().map_err(|_| "writer panicked")?
}

/// What the recorder's sampler keeps open, bar the command's stat.
fn system_files() -> Vec<File> {
    let mut paths = vec![PathBuf::from("/proc/stat"), PathBuf::from("/proc/meminfo")];
    if let Ok(entries) = std::fs::read_dir("/sys/block") {
        let disks = entries.filter_map(Result::ok).map(|e| e.path());
        paths.extend(
            disks
                .filter(|d| d.join("device").exists())
                .map(|d| d.join("stat")),
        );
    }
    paths.push(PathBuf::from("/proc/self/net/dev"));
    paths
        .iter()
        .filter_map(|path| File::open(path).ok())
        .collect()
}

fn sample(handoff: &Handoff, files: &[File], interval: Duration) {
    let mut buffer = vec![0u8; 16 << 10];
    let mut next = Instant::now();
    while !handoff.stop.load(Ordering::Acquire) {
        for file in files {
            let _ = file.read_at(&mut buffer, 0);
        }
        let mut tick = vec![b'x'; TICK_BYTES];
        tick[TICK_BYTES - 1] = b'\n';
        handoff
            .ticks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tick);
        if let Some(writer) = handoff.writer.get() {
            writer.unpark();
        }
        next += interval;
        while let Some(wait) = next.checked_duration_since(Instant::now()) {
            if handoff.stop.load(Ordering::Acquire) {
                break;
            }
            thread::park_timeout(wait);
        }
    }
    handoff.sampled_last.store(true, Ordering::Release);
    if let Some(writer) = handoff.writer.get() {
        writer.unpark();
    }
}

fn write_ticks(handoff: &Handoff, mut log: File) -> Result<(), String> {
    let _ = handoff.writer.set(thread::current());
    let mut last_sync = Instant::now();
    loop {
        // Read before the take: the ticks it takes then include the last one. Two unparks
        // can wake the thread once, so the flag, not the wake-up, says when to end.
        let last = handoff.sampled_last.load(Ordering::Acquire);
        let ticks = std::mem::take(&mut *handoff.ticks.lock().unwrap_or_else(|e| e.into_inner()));
        for tick in &ticks {
            log.write_all(tick).map_err(|e| format!("write: {e}"))?;
        }
        if !ticks.is_empty() && last_sync + SYNC_PERIOD <= Instant::now() + DUE_SOON {
            log.sync_data().map_err(|e| format!("fdatasync: {e}"))?;
            last_sync = Instant::now();
        }
        if last {
            return log.sync_data().map_err(|e| format!("fdatasync: {e}"));
        }
        thread::park();
    }
}
