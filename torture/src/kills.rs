//! Part 1: SIGKILL of a recorder at a random moment, many times, under sampling and marker
//! load: the recorder API's markers, and task processes appending to marker files; then
//! `tc-profile recover`. An API marker reached the disk when its line was whole in the log
//! at the kill (SIGKILL loses nothing the kernel holds); a task process's marker when its
//! line was whole in its marker file. Each must be in the profile exactly once, and none
//! may appear that the log and the files did not hold. Half the kills take the recorder
//! alone first, and the task's processes a moment later, as when only the recorder dies.

use crate::child::{INSTANT, INTERVAL};
use crate::expected::{Expected, Source, Tally};
use crate::profile_check::check_profile;
use crate::random::Random;
use crate::report::write_failures;
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const SYNC_POLICIES: [&str; 3] = ["always", "interval", "never"];
/// Logs kept for part 2: the largest seen within a size that cutting at every byte allows.
const SAMPLE_LOGS: usize = 8;
const SAMPLE_LOG_MAX_BYTES: usize = 48 << 10;

#[derive(Default)]
pub struct KillsReport {
    kills: usize,
    of_run: usize,
    /// Kills of the recorder alone, its task's processes going on writing a moment.
    recorder_first: usize,
    before_the_log_was_whole: usize,
    profiles: usize,
    invalid: usize,
    by_source: BTreeMap<Source, Tally>,
    /// API numbers missing from the log itself below its highest one (dropped before it).
    holes: usize,
    failures: Vec<String>,
    pub sample_logs: Vec<Vec<u8>>,
}

impl KillsReport {
    /// No failure, and some profiles to judge: kills that all came before the log was
    /// whole prove nothing.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.profiles > 0
    }

    fn fail(&mut self, iteration: usize, what: String) {
        self.failures.push(format!("kill {iteration}: {what}"));
    }

    fn keep_sample(&mut self, log: Vec<u8>) {
        if log.len() > SAMPLE_LOG_MAX_BYTES {
            return;
        }
        self.sample_logs.push(log);
        self.sample_logs.sort_by_key(|l| std::cmp::Reverse(l.len()));
        self.sample_logs.truncate(SAMPLE_LOGS);
    }
}

impl fmt::Display for KillsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "1. recorder kills: {} ({} of `tc-profile run`, the rest of the recorder library \
             under API load; all with task processes writing marker files; {} of the recorder \
             alone first); {} before the log's first two lines were whole (nothing to recover)",
            self.kills, self.of_run, self.recorder_first, self.before_the_log_was_whole
        )?;
        writeln!(
            f,
            "   profiles recovered: {}, valid: {}, invalid: {}",
            self.profiles,
            self.profiles - self.invalid,
            self.invalid
        )?;
        let mut total = Tally::default();
        for (source, tally) in &self.by_source {
            total.add(tally);
            writeln!(f, "   {}: {tally}", source.label())?;
        }
        write!(
            f,
            "   markers on disk at the kill: {}; lost: {}; duplicated: {}; invented: {}; API \
             markers dropped before the log: {}",
            total.on_disk, total.lost, total.duplicated, total.invented, self.holes
        )?;
        write_failures(f, &self.failures)
    }
}

pub fn run(bin: &Path, work: &Path, kills: usize, random: &mut Random) -> Result<KillsReport> {
    let mut report = KillsReport::default();
    // The task's processes outlive a recorder killed alone: they become ours to reap, so
    // that their group is gone once they are killed.
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes an integer flag.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1)
    };
    let this = std::env::current_exe()?;
    for iteration in 0..kills {
        let dir = work.join(format!("{iteration}"));
        std::fs::create_dir_all(&dir)?;
        let sync = SYNC_POLICIES[iteration % SYNC_POLICIES.len()];
        let of_run = iteration % 4 == 3;
        let mut command = if of_run {
            let mut command = Command::new(bin);
            command.args(["run", "--interval", "0.01", "--sync", sync, "--state-dir"]);
            command
                .arg(&dir)
                .arg("--")
                .arg(&this)
                .arg("task")
                .arg("--helper")
                .arg(bin)
                .current_dir(&dir);
            command
        } else {
            let mut command = Command::new(&this);
            command.args(["child", "--sync", sync, "--log"]);
            command.arg(dir.join("profile_resource-usage-torture.jsonl"));
            command.arg("--helper").arg(bin);
            command
        };
        // Its own process group: the kill takes the recorder and its command at once.
        command
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = command.spawn().context("spawning the recorder")?;
        // One kill in eight lands in the first 5 ms: the recorder starting.
        let delay = if random.below(8) == 0 {
            random.below(5_000)
        } else {
            random.below(300_000)
        };
        std::thread::sleep(Duration::from_micros(delay));
        let group = child.id() as i32;
        if random.below(2) == 0 {
            kill(group);
            child.wait()?;
            std::thread::sleep(Duration::from_micros(random.below(30_000)));
            report.recorder_first += 1;
        }
        kill(-group);
        child.wait()?;
        wait_until_group_gone(group);
        report.kills += 1;
        report.of_run += usize::from(of_run);
        check_kill(bin, &dir, iteration, &mut report)?;
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(report)
}

/// SIGKILL of a process, or of a process group when negative.
fn kill(pid: i32) {
    // SAFETY: kill(2) of a process or group we created.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// A process forked by the recorder but not yet exec'd shares the log's lock until it has
/// died too: the worker's next start comes after every process of the old one is gone.
/// Orphans of the group were handed to us (a subreaper): reaped here.
fn wait_until_group_gone(group: i32) {
    for _ in 0..5000 {
        // SAFETY: waitpid(2) of our children in the group, without blocking.
        while unsafe { libc::waitpid(-group, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        // SAFETY: kill(2) with signal 0 only checks that the group has a process.
        if unsafe { libc::kill(-group, 0) } != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn check_kill(bin: &Path, dir: &Path, iteration: usize, report: &mut KillsReport) -> Result<()> {
    let Some(log_path) = only_log(dir)? else {
        report.before_the_log_was_whole += 1;
        return Ok(());
    };
    let log = std::fs::read(&log_path)?;
    let Some(on_disk) = LogContent::read(&log) else {
        report.before_the_log_was_whole += 1;
        return Ok(());
    };
    let output = Command::new(bin)
        .args(["recover", "--state-dir"])
        .arg(dir)
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() || !stderr.contains("recovered") {
        report.invalid += 1;
        report.profiles += 1;
        report.fail(iteration, format!("recover: {stderr}"));
        return Ok(());
    }
    report.profiles += 1;
    let profile_path = log_path.with_extension("json");
    let profile: Value = match std::fs::read(&profile_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    {
        Some(profile) => profile,
        None => {
            report.invalid += 1;
            report.fail(iteration, "the profile is missing or not JSON".into());
            return Ok(());
        }
    };
    let rows = match check_profile(&profile) {
        Ok(rows) => rows,
        Err(error) => {
            report.invalid += 1;
            report.fail(iteration, error);
            return Ok(());
        }
    };
    if log_path.exists() {
        report.fail(iteration, "the recovered log was not removed".into());
    }
    if on_disk.garbled > 0 {
        report.fail(
            iteration,
            format!("{} garbled lines in the log", on_disk.garbled),
        );
    }
    if let Err(error) = compare_markers(&on_disk, &rows, iteration, report) {
        report.fail(iteration, format!("{error:#}"));
    }
    if on_disk.command_began && !rows.iter().any(|r| r.name == "Command" && r.cut_off) {
        report.fail(iteration, "no Command interval flagged cut off".into());
    }
    report.keep_sample(log);
    Ok(())
}

/// What the log and the marker files held at the kill against the profile, by source.
fn compare_markers(
    on_disk: &LogContent,
    rows: &[crate::profile_check::Row],
    iteration: usize,
    report: &mut KillsReport,
) -> Result<()> {
    let mut expected = Expected::default();
    for n in &on_disk.instants {
        expected.add_api(INSTANT, format!("#{n}"));
    }
    for n in &on_disk.intervals {
        expected.add_api(INTERVAL, format!("#{n}"));
    }
    if let Some(dir) = &on_disk.profile_dir {
        expected.add_marker_files(dir)?;
    }
    if expected.garbled > 0 {
        report.fail(
            iteration,
            format!("{} garbled lines in marker files", expected.garbled),
        );
    }
    for (source, tally) in expected.tally(rows) {
        if !tally.is_clean() {
            report.fail(iteration, format!("{}: {tally}", source.label()));
        }
        report.by_source.entry(source).or_default().add(&tally);
    }
    let holes = on_disk
        .instants
        .last()
        .map_or(0, |&max| max as usize + 1 - on_disk.instants.len());
    report.holes += holes;
    if holes > 0 {
        report.fail(
            iteration,
            format!("{holes} API markers missing from the log"),
        );
    }
    Ok(())
}

fn number_of(text: &str) -> Option<u64> {
    text.strip_prefix('#')?.parse().ok()
}

fn only_log(dir: &Path) -> Result<Option<PathBuf>> {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    Ok(logs
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl")))
}

/// The whole lines of a log at the kill.
struct LogContent {
    instants: BTreeSet<u64>,
    intervals: BTreeSet<u64>,
    /// `tc-profile run` had started its command: its interval must be in the profile.
    command_began: bool,
    garbled: usize,
    /// `meta.tcProfile.profileDir`.
    profile_dir: Option<PathBuf>,
}

impl LogContent {
    /// None when the meta and thread lines are not both whole: nothing was recorded.
    fn read(log: &[u8]) -> Option<LogContent> {
        let whole = &log[..log.iter().rposition(|&b| b == b'\n')? + 1];
        let lines: Vec<&[u8]> = whole.split_inclusive(|&b| b == b'\n').collect();
        if lines.len() < 2 {
            return None;
        }
        let meta = serde_json::from_slice::<Value>(lines[0]).ok()?;
        let mut content = LogContent {
            instants: BTreeSet::new(),
            intervals: BTreeSet::new(),
            command_began: false,
            garbled: 0,
            profile_dir: meta["tcProfile"]["profileDir"].as_str().map(PathBuf::from),
        };
        for line in &lines[2..] {
            let Ok(value) = serde_json::from_slice::<Value>(line) else {
                content.garbled += 1;
                continue;
            };
            let number = value["data"]["text"].as_str().and_then(number_of);
            match (value["type"].as_str(), value["name"].as_str(), number) {
                (Some("marker"), Some(INSTANT), Some(n)) => {
                    content.instants.insert(n);
                }
                (Some("open" | "marker"), Some(INTERVAL), Some(n)) => {
                    content.intervals.insert(n);
                }
                (Some("open"), Some("Command"), _) => content.command_began = true,
                _ => {}
            }
        }
        Some(content)
    }
}
