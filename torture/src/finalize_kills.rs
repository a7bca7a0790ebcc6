//! Part 4: SIGKILL of `tc-profile finalize` at random moments of a large log's
//! finalization. Every time the log is intact and the final name holds nothing or a whole
//! profile; the next finalize succeeds.

use crate::profile_check::check_profile;
use crate::random::Random;
use crate::report::write_failures;
use anyhow::{bail, Context, Result};
use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MARKERS: usize = 100_000;

#[derive(Default)]
pub struct FinalizeKillsReport {
    kills: usize,
    log_intact: usize,
    whole_profiles_left: usize,
    partial_profiles: usize,
    next_finalize_ok: bool,
    failures: Vec<String>,
}

impl FinalizeKillsReport {
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.next_finalize_ok
    }
}

impl fmt::Display for FinalizeKillsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "4. finalize kills: {} (log of {MARKERS} markers); log intact: {}; under the final \
             name: nothing or a whole profile {} times, a partial one {} times; the next \
             finalize succeeded: {}",
            self.kills,
            self.log_intact,
            self.kills - self.partial_profiles,
            self.partial_profiles,
            if self.next_finalize_ok { "yes" } else { "NO" }
        )?;
        write_failures(f, &self.failures)
    }
}

pub fn run(
    bin: &Path,
    work: &Path,
    kills: usize,
    random: &mut Random,
) -> Result<FinalizeKillsReport> {
    std::fs::create_dir_all(work)?;
    let log = work.join("big.jsonl");
    let profile = work.join("big.json");
    write_big_log(bin, work, &log)?;
    let original = std::fs::read(&log)?;
    let started = Instant::now();
    finalize(bin, work, true)?;
    let duration = started.elapsed();
    std::fs::remove_file(&profile)?;

    let mut report = FinalizeKillsReport::default();
    for kill in 0..kills {
        let mut child = Command::new(bin)
            .current_dir(work)
            .args(["finalize", "--keep-log", "big.jsonl"])
            .stderr(Stdio::null())
            .spawn()?;
        let delay = random.below(duration.as_micros() as u64 * 5 / 4);
        std::thread::sleep(Duration::from_micros(delay));
        child.kill()?;
        child.wait()?;
        report.kills += 1;
        if std::fs::read(&log)? == original {
            report.log_intact += 1;
        } else {
            report
                .failures
                .push(format!("kill {kill}: the log changed"));
        }
        if let Ok(bytes) = std::fs::read(&profile) {
            let whole = serde_json::from_slice(&bytes)
                .ok()
                .and_then(|p| check_profile(&p).ok())
                .is_some_and(|rows| rows.len() == MARKERS + 1);
            if whole {
                report.whole_profiles_left += 1;
            } else {
                report.partial_profiles += 1;
                report.failures.push(format!(
                    "kill {kill}: a partial profile under the final name"
                ));
            }
            // Half the time the next finalize replaces a whole profile, half the time it
            // writes a new one.
            if random.below(2) == 0 {
                std::fs::remove_file(&profile)?;
            }
        }
    }
    report.next_finalize_ok = finalize(bin, work, false).is_ok()
        && !log.exists()
        && std::fs::read(&profile)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .and_then(|p| check_profile(&p).ok())
            .is_some_and(|rows| rows.len() == MARKERS + 1);
    let leftovers = std::fs::read_dir(work)?
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        })
        .count();
    if leftovers > 0 {
        report.failures.push(format!(
            "{leftovers} temporary files left after the last finalize"
        ));
    }
    Ok(report)
}

fn finalize(bin: &Path, work: &Path, keep_log: bool) -> Result<()> {
    let mut command = Command::new(bin);
    command.current_dir(work).arg("finalize");
    if keep_log {
        command.arg("--keep-log");
    }
    let output = command.arg("big.jsonl").output()?;
    if !output.status.success() {
        bail!("finalize: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

/// A real log's meta and thread lines, then many markers.
fn write_big_log(bin: &Path, work: &Path, log: &Path) -> Result<()> {
    let output = Command::new(bin)
        .current_dir(work)
        .args([
            "run",
            "--keep-log",
            "--log",
            "seed.jsonl",
            "-o",
            "seed.json",
            "--",
            "true",
        ])
        .output()?;
    if !output.status.success() {
        bail!(
            "tc-profile run: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let seed = std::fs::read_to_string(work.join("seed.jsonl")).context("the seed log")?;
    let mut text: String = seed.lines().take(2).map(|l| format!("{l}\n")).collect();
    for i in 0..MARKERS {
        let t = i as f64 * 0.5;
        text.push_str(&format!(
            "{{\"type\":\"marker\",\"name\":\"step {}\",\"startTime\":{t},\"endTime\":{},\"category\":3,\"data\":{{\"type\":\"Text\",\"text\":\"synthetic marker {i}\"}}}}\n",
            i % 50,
            t + 0.25
        ));
    }
    std::fs::write(log, text)?;
    Ok(())
}
