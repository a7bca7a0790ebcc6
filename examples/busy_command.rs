//! A task's command for scripts/cross's run under Wine: writes a marker, takes 200 MB
//! (written, so resident), busy-loops, writes another. Its markers go to
//! `$TASKCLUSTER_PROFILE_DIR/<pid>.jsonl`, as a task's do.
//!
//! `busy_command [SECONDS]` (1.5 by default)

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn main() -> Result<(), String> {
    let seconds: f64 = match std::env::args().nth(1) {
        Some(text) => text.parse().map_err(|_| format!("{text}: not seconds"))?,
        None => 1.5,
    };
    let dir = std::env::var_os("TASKCLUSTER_PROFILE_DIR")
        .ok_or("TASKCLUSTER_PROFILE_DIR is not set: run this under tc-profile")?;
    let markers = PathBuf::from(dir).join(format!("{}.jsonl", std::process::id()));
    mark(&markers, "allocating")?;
    let memory = std::hint::black_box(vec![1u8; 200 << 20]);
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut spins = 0u64;
    while Instant::now() < until {
        spins = std::hint::black_box(spins + 1);
    }
    mark(&markers, "done")?;
    drop(memory);
    Ok(())
}

/// Appends one marker line, in one write.
fn mark(path: &PathBuf, name: &str) -> Result<(), String> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let line = format!(
        "{{\"type\":\"marker\",\"name\":\"{name}\",\"startTime\":{}}}\n",
        now.as_secs_f64() * 1000.0
    );
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .map_err(|error| format!("{}: {error}", path.display()))
}
