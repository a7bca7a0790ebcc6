//! Part 3: the log's file system fails under a running `tc-profile run`: a small tmpfs
//! filled up and freed again (ENOSPC, then writing resumes), and an ext4 image that turns
//! read-only on an error (EROFS, for good). The command's exit status is unchanged, the
//! recorder warns once, the log holds only whole lines, and the profile shows the span of
//! missing data; the marker lines the command writes meanwhile (to its profile directory,
//! on another disk) are each in the profile once. And the tmpfs full from the start: the command runs all the same, with
//! its exit status, after one warning that no profile will be written, and nothing is
//! left on the full disk. And a hung disk (the ext4 image frozen mid-run, thawed later):
//! `run` gives up on the log after its bound and says so while the disk still hangs, exits
//! with the command's status once the kernel lets it, and the log it left finalizes.
//! Needs root to mount; skipped with the reason otherwise.

use crate::profile_check::{check_profile, Row};
use crate::random::Random;
use crate::report::write_failures;
use anyhow::Result;
use serde_json::Value;
use std::fmt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The command's exit status, which tc-profile must keep.
const STATUS: i32 = 7;
/// Marker lines the command of a tmpfs run writes, `m0` to `m399`, one every 5 ms or so:
/// before, while and after the disk is full.
const MARKER_LINES: usize = 400;

#[derive(Default)]
pub struct FullDiskReport {
    skipped: Option<String>,
    read_only_skipped: Option<String>,
    runs: usize,
    status_kept: usize,
    warned_once: usize,
    resumed: usize,
    data_missing_marked: usize,
    garbled_lines: usize,
    /// Runs whose marker lines were each in the profile once.
    marker_lines_once: usize,
    full_at_start: usize,
    full_at_start_ran: usize,
    hung: usize,
    /// Seconds from the command's end to `run` giving up on the hung disk, each run.
    hung_gave_up_after: Vec<f64>,
    hung_passed: usize,
    failures: Vec<String>,
}

impl FullDiskReport {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// Whether a run had no problems; its problems are one failure otherwise.
    fn judge(&mut self, run: &str, problems: &[String], stderr: &str) -> bool {
        if !problems.is_empty() {
            let problems = problems.join("; ");
            self.failures
                .push(format!("{run}: {problems}; stderr: {stderr}"));
        }
        problems.is_empty()
    }
}

impl fmt::Display for FullDiskReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(reason) = &self.skipped {
            return write!(f, "3. full file system: SKIPPED: {reason}");
        }
        write!(
            f,
            "3. full or read-only file system: {} runs; exit status kept: {}; warned once: {}; \
             writing resumed after ENOSPC: {}; \"Data missing\" shown: {}; garbled log lines: {}; \
             marker lines written meanwhile each in the profile once: {}",
            self.runs,
            self.status_kept,
            self.warned_once,
            self.resumed,
            self.data_missing_marked,
            self.garbled_lines,
            self.marker_lines_once
        )?;
        if let Some(reason) = &self.read_only_skipped {
            write!(f, "\n   the read-only runs were SKIPPED: {reason}")?;
        }
        write!(
            f,
            "\n   full from the start: {} runs; the command ran with its exit status, after \
             one warning and leaving nothing on the disk: {}",
            self.full_at_start, self.full_at_start_ran
        )?;
        let gave_up: Vec<String> = self
            .hung_gave_up_after
            .iter()
            .map(|s| format!("{s:.1} s"))
            .collect();
        write!(
            f,
            "\n   hung disk (file system frozen mid-run): {} runs; `run` gave up on the log \
             while the disk hung, after [{}] from the command's end; exit status kept and the \
             log left finalized once thawed: {}",
            self.hung,
            gave_up.join(", "),
            self.hung_passed
        )?;
        write_failures(f, &self.failures)
    }
}

pub fn run(
    bin: &Path,
    work: &Path,
    runs: usize,
    hung_runs: usize,
    random: &mut Random,
) -> Result<FullDiskReport> {
    let mut report = FullDiskReport::default();
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        report.skipped = Some("not root: mounting a small file system needs root".into());
        return Ok(report);
    }
    std::fs::create_dir_all(work)?;
    let mount_point = work.join("mnt");
    std::fs::create_dir_all(&mount_point)?;
    if let Err(error) = sh(&format!(
        "mount -t tmpfs -o size=4m tmpfs {}",
        mount_point.display()
    )) {
        report.skipped = Some(format!("cannot mount a tmpfs: {error}"));
        return Ok(report);
    }
    let result = (0..runs)
        .try_for_each(|run| {
            let fill_ms = 200 + random.below(600);
            let full_ms = 200 + random.below(800);
            let script = format!(
                "{} sleep {}; cat /dev/zero > mnt/fill 2>/dev/null; sleep {}; rm mnt/fill; wait; \
             sleep 0.5; exit {STATUS}",
                write_marker_lines(),
                fill_ms as f64 / 1000.0,
                full_ms as f64 / 1000.0
            );
            record_failing_disk(bin, work, run, &script, true, &mut report)
        })
        .and_then(|()| {
            (0..runs.div_ceil(2))
                .try_for_each(|run| full_from_the_start(bin, work, run, &mut report))
        });
    let _ = sh(&format!("umount {}", mount_point.display()));
    result?;
    read_only_ext4(bin, work, runs, &mut report)?;
    (0..hung_runs).try_for_each(|run| hung_ext4(bin, work, run, &mut report))?;
    Ok(report)
}

/// An ext4 image mounted with errors=remount-ro, turned read-only mid-run through its
/// trigger_fs_error switch.
fn read_only_ext4(bin: &Path, work: &Path, runs: usize, report: &mut FullDiskReport) -> Result<()> {
    let image = work.join("ext4.img");
    let mount_point = work.join("mnt");
    for run in 0..runs.div_ceil(2) {
        if let Err(error) = mount_new_ext4(&image, &mount_point, "loop,errors=remount-ro") {
            report.read_only_skipped = Some(format!("cannot mount an ext4 image: {error}"));
            break;
        }
        let device = sh(&format!(
            "basename $(findmnt -no SOURCE {})",
            mount_point.display()
        ))?;
        let script = format!(
            "sleep 0.5; echo torture > /sys/fs/ext4/{}/trigger_fs_error; sleep 1; exit {STATUS}",
            device.trim()
        );
        let result = record_failing_disk(bin, work, runs + run, &script, false, report);
        let _ = sh(&format!("umount {}", mount_point.display()));
        result?;
    }
    let _ = std::fs::remove_file(&image);
    Ok(())
}

fn record_failing_disk(
    bin: &Path,
    work: &Path,
    run: usize,
    script: &str,
    resumes: bool,
    report: &mut FullDiskReport,
) -> Result<()> {
    let profile_path = work.join(format!("profile-{run}.json"));
    let output = Command::new(bin)
        .current_dir(work)
        .args([
            "run",
            "--interval",
            "0.01",
            "--keep-log",
            "--log",
            "mnt/log.jsonl",
            "-o",
        ])
        .arg(&profile_path)
        .args(["--", "sh", "-c", script])
        .output()?;
    report.runs += 1;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut fail = |what: String| {
        report
            .failures
            .push(format!("run {run}: {what}; stderr: {stderr}"))
    };
    if output.status.code() == Some(STATUS) {
        report.status_kept += 1;
    } else {
        fail(format!(
            "exit status {:?}, not {STATUS}",
            output.status.code()
        ));
    }
    let warnings =
        stderr.matches("warning: ").count() - stderr.matches("lines could not be written").count();
    if warnings == 1 {
        report.warned_once += 1;
    } else {
        fail(format!("{warnings} warnings, not one"));
    }
    if resumes && stderr.contains("writing again") {
        report.resumed += 1;
    } else if resumes {
        fail("writing did not resume".into());
    }
    let log = std::fs::read(work.join("mnt/log.jsonl")).unwrap_or_default();
    let garbled = whole_lines(&log)
        .filter(|line| serde_json::from_slice::<Value>(line).is_err())
        .count();
    report.garbled_lines += garbled;
    if garbled > 0 {
        fail(format!("{garbled} garbled lines in the log"));
    }
    let profile: Option<Value> = std::fs::read(&profile_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let rows = match profile.as_ref().map(check_profile) {
        Some(Ok(rows)) => rows,
        Some(Err(error)) => {
            fail(format!("invalid profile: {error}"));
            return Ok(());
        }
        None => {
            fail("no profile".into());
            return Ok(());
        }
    };
    if rows.iter().any(|r| r.name == "Data missing") {
        report.data_missing_marked += 1;
    } else {
        fail("the profile does not show the missing data".into());
    }
    if resumes {
        match marker_lines_not_once(&rows) {
            problem if problem.is_empty() => report.marker_lines_once += 1,
            problem => fail(problem),
        }
    }
    let _ = std::fs::remove_file(work.join("mnt/log.jsonl"));
    let _ = std::fs::remove_file(&profile_path);
    Ok(())
}

/// A shell command that writes [`MARKER_LINES`] marker lines to the profile directory in the
/// background (the script `wait`s for it).
fn write_marker_lines() -> String {
    format!(
        r#"(i=0; while [ $i -lt {MARKER_LINES} ]; do printf '{{"type":"marker","name":"m%d","startTime":%s}}\n' $i $(date +%s%3N) >> "$TASKCLUSTER_PROFILE_DIR/$$.jsonl"; i=$((i+1)); sleep 0.005; done) &"#
    )
}

/// What is wrong with the marker lines of [`write_marker_lines`] in a profile's `rows`:
/// those missing and those there more than once; empty when each is there once.
fn marker_lines_not_once(rows: &[Row]) -> String {
    let mut seen = vec![0usize; MARKER_LINES];
    for row in rows {
        let number = row
            .name
            .strip_prefix('m')
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(count) = number.and_then(|n| seen.get_mut(n)) {
            *count += 1;
        }
    }
    let missing = seen.iter().filter(|&&n| n == 0).count();
    let repeated = seen.iter().filter(|&&n| n > 1).count();
    if missing + repeated == 0 {
        return String::new();
    }
    format!("marker lines: {missing} of {MARKER_LINES} missing, {repeated} more than once")
}

/// `run --sync always` with its log on an ext4 image that its command freezes (fsfreeze)
/// before exiting; thawed once `run` said it gave up, or after two minutes.
fn hung_ext4(bin: &Path, work: &Path, run: usize, report: &mut FullDiskReport) -> Result<()> {
    let image = work.join("hung.img");
    let mount_point = work.join("mnt");
    if let Err(error) = mount_new_ext4(&image, &mount_point, "loop") {
        report.failures.push(format!("hung disk {run}: {error}"));
        return Ok(());
    }
    report.hung += 1;
    let result = record_hung_disk(bin, work, run, report);
    let _ = sh(&format!(
        "fsfreeze -u {0}; umount {0}",
        mount_point.display()
    ));
    let _ = std::fs::remove_file(&image);
    result
}

fn record_hung_disk(
    bin: &Path,
    work: &Path,
    run: usize,
    report: &mut FullDiskReport,
) -> Result<()> {
    let mount_point = work.join("mnt");
    let stderr_path = work.join("hung-stderr.txt");
    let command_ended = work.join("command-ended");
    let script = format!(
        "sleep 0.5; fsfreeze -f {}; touch {}; exit {STATUS}",
        mount_point.display(),
        command_ended.display()
    );
    let mut child = Command::new(bin)
        .current_dir(work)
        .args([
            "run",
            "--sync",
            "always",
            "--interval",
            "0.01",
            "--log",
            "mnt/log.jsonl",
        ])
        .args(["-o", "hung.json", "--", "sh", "-c", &script])
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()?;
    let gave_up = |text: &str| text.contains("did not take the log's last lines");
    let mut ended_at = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut stderr = String::new();
    while Instant::now() < deadline {
        if ended_at.is_none() && command_ended.exists() {
            ended_at = Some(Instant::now());
        }
        stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        if gave_up(&stderr) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if let (Some(ended_at), true) = (ended_at, gave_up(&stderr)) {
        report
            .hung_gave_up_after
            .push(ended_at.elapsed().as_secs_f64());
    }
    sh(&format!("fsfreeze -u {}", mount_point.display()))?;
    let status = child.wait()?;
    let _ = std::fs::remove_file(&command_ended);
    let mut problems = Vec::new();
    if !gave_up(&stderr) {
        problems.push("run did not give up on the hung disk".to_owned());
    }
    if status.code() != Some(STATUS) {
        problems.push(format!("exit status {:?}", status.code()));
    }
    let finalized = Command::new(bin)
        .current_dir(work)
        .args(["finalize", "mnt/log.jsonl", "-o", "hung.json"])
        .output()?;
    let profile = std::fs::read(work.join("hung.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    match profile.as_ref().map(check_profile) {
        Some(Ok(_)) if finalized.status.success() => {}
        _ => problems.push(format!(
            "the log left does not finalize: {}",
            String::from_utf8_lossy(&finalized.stderr)
        )),
    }
    let _ = std::fs::remove_file(work.join("hung.json"));
    if report.judge(&format!("hung disk {run}"), &problems, &stderr) {
        report.hung_passed += 1;
    }
    Ok(())
}

/// `run` with its log on the tmpfs filled up beforehand.
fn full_from_the_start(
    bin: &Path,
    work: &Path,
    run: usize,
    report: &mut FullDiskReport,
) -> Result<()> {
    let fill = work.join("mnt/fill");
    let _ = sh(&format!(
        "cat /dev/zero > {} 2>/dev/null; true",
        fill.display()
    ));
    let profile_path = work.join(format!("full-{run}.json"));
    let output = Command::new(bin)
        .current_dir(work)
        .args(["run", "--log", "mnt/log.jsonl", "-o"])
        .arg(&profile_path)
        .args(["--", "sh", "-c", &format!("touch ran; exit {STATUS}")])
        .output()?;
    std::fs::remove_file(&fill)?;
    report.full_at_start += 1;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let ran = std::fs::remove_file(work.join("ran")).is_ok();
    let mut problems = Vec::new();
    if !ran || output.status.code() != Some(STATUS) {
        problems.push(format!(
            "ran: {ran}, exit status {:?}",
            output.status.code()
        ));
    }
    if stderr.lines().count() != 1 || !stderr.contains("no profile will be written") {
        problems.push("not one warning".to_owned());
    }
    let left: Vec<String> = std::fs::read_dir(work.join("mnt"))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    if !left.is_empty() || profile_path.exists() {
        problems.push(format!("left behind: {left:?}"));
    }
    if report.judge(&format!("full from the start {run}"), &problems, &stderr) {
        report.full_at_start_ran += 1;
    }
    Ok(())
}

/// A fresh 16 MiB ext4 image at `image`, mounted on `mount_point` with `options`.
fn mount_new_ext4(image: &Path, mount_point: &Path, options: &str) -> Result<()> {
    sh(&format!(
        "rm -f {0} && truncate -s 16M {0} && mkfs.ext4 -q {0} && mount -o {options} {0} {1}",
        image.display(),
        mount_point.display()
    ))
    .map(drop)
}

fn whole_lines(log: &[u8]) -> impl Iterator<Item = &[u8]> {
    let end = log.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    log[..end].split(|&b| b == b'\n').filter(|l| !l.is_empty())
}

fn sh(script: &str) -> Result<String> {
    let output = Command::new("sh").args(["-c", script]).output()?;
    if !output.status.success() {
        anyhow::bail!(
            "{script}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
