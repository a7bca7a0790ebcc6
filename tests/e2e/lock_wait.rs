use crate::util::*;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Kill-and-finalize rounds: enough to catch a window of tens of milliseconds nearly every
/// time without the fix, few enough to stay under a minute.
const ROUNDS: usize = 50;

/// A task process appending a marker line to the profile directory every 10 ms, so that
/// the recorder's watcher is live and busy when it is killed.
fn start_task_writing_markers(recording: &Recording) -> Child {
    let script = r#"while :; do
        echo "{\"type\":\"marker\",\"name\":\"tick\",\"startTime\":$(date +%s%3N)}" >> "$1/task.jsonl"
        sleep 0.01
    done"#;
    Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(&recording.profile_dir)
        .spawn()
        .expect("spawn the marker-writing task")
}

/// One round: `record` with a live watcher is SIGKILLed and `finalize` runs at once, without
/// reaping the recorder first (reaping would wait for the kernel to close its files, which
/// a worker that kills its sidecar does not do). Returns whether finalize waited for the
/// lock, or its failure.
fn kill_and_finalize_at_once(finalize_args: &[&str]) -> Result<bool, String> {
    let sandbox = Sandbox::new();
    let mut recording = Recording::start(&sandbox, &[]);
    let mut task = start_task_writing_markers(&recording);
    recording.wait_logged("tick");
    signal(&recording.child, libc::SIGKILL);
    let mut args = vec!["finalize", "profile_resource-usage.jsonl"];
    args.extend_from_slice(finalize_args);
    let output = sandbox.run(&args);
    let _ = task.kill();
    task.wait().unwrap();
    recording.child.wait().unwrap();
    if !output.status.success() {
        return Err(describe(&args, &output));
    }
    assert_processed_profile(&read_json(&sandbox.path("profile_resource-usage.json")));
    let stderr = String::from_utf8_lossy(&output.stderr);
    Ok(stderr.contains("which is exiting; waiting up to 10 s"))
}

#[test]
fn finalize_right_after_a_sigkill_of_record_with_a_live_watcher_always_writes_the_profile() {
    let (waited, refused): (Vec<_>, Vec<_>) = (0..ROUNDS)
        .map(|_| kill_and_finalize_at_once(&[]))
        .partition(Result::is_ok);
    let refused: Vec<String> = refused.into_iter().filter_map(Result::err).collect();
    let waited = waited.into_iter().filter(|w| *w == Ok(true)).count();
    eprintln!("{waited} of {ROUNDS} finalizes waited for the dying recorder's lock");
    assert!(
        refused.is_empty(),
        "{} of {ROUNDS} refused; the first:\n{}",
        refused.len(),
        refused[0]
    );
}

#[test]
fn a_running_recorders_log_is_refused_at_once_naming_its_pid_and_recover_passes_over_it() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &[]);
    let started = Instant::now();
    let output = sandbox.run(&["finalize", "profile_resource-usage.jsonl"]);
    let refused_after = started.elapsed();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let pid = recording.child.id();
    assert!(
        stderr.contains(&format!("locked by a running tc-profile (pid {pid})")),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "no waiting note: {stderr}");

    let started = Instant::now();
    let output = sandbox.run_ok(&["recover", "--state-dir", "."]);
    let passed_over_after = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is being recorded (locked); left alone"),
        "{stderr}"
    );
    // The default wait is 10 s: neither came near it.
    assert!(refused_after < Duration::from_secs(5), "{refused_after:?}");
    assert!(
        passed_over_after < Duration::from_secs(5),
        "{passed_over_after:?}"
    );
    recording.stop();
}

#[test]
fn a_bad_wait_is_refused_in_one_line() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["finalize", "x.jsonl", "--wait", "4000"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("4000 s is outside 0 to 3600 s"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
