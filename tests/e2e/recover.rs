use crate::util::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};

fn sigkill(child: &mut Child) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
}

fn logs_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    logs.sort();
    logs
}

/// Starts `run --state-dir state -- sleep 60` and waits until its command is in the log.
fn start_recording(sandbox: &Sandbox) -> (Child, std::path::PathBuf) {
    let before = logs_in(&sandbox.path("state")).len();
    let child = sandbox
        .command(&["run", "--state-dir", "state", "--", "sleep", "60"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut log = None;
    wait_for(|| {
        let logs = logs_in(&sandbox.path("state"));
        log = logs
            .iter()
            .filter(|l| std::fs::read_to_string(l).is_ok_and(|t| t.contains(r#""type":"open""#)))
            .nth(before)
            .cloned();
        log.is_some()
    });
    (child, log.unwrap())
}

fn kill_recorder_and_command(recorder: &mut Child, log: &Path) {
    sigkill(recorder);
    let text = std::fs::read_to_string(log).unwrap();
    for line in text.lines().filter(|l| l.starts_with(r#"{"type":"open""#)) {
        let open: Value = serde_json::from_str(line).unwrap();
        if let Some(pid) = open["data"]["pid"].as_i64() {
            // SAFETY: kill(2); the pid is the test's own grandchild.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

#[test]
fn recover_finalizes_a_dead_recorders_log_once_and_leaves_a_live_one_alone() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path("state")).unwrap();
    let (mut dead, dead_log) = start_recording(&sandbox);
    let (mut live, live_log) = start_recording(&sandbox);
    kill_recorder_and_command(&mut dead, &dead_log);

    let output = sandbox.run_ok(&["recover", "--state-dir", "state"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let dead_name = dead_log.file_name().unwrap().to_string_lossy();
    let live_name = live_log.file_name().unwrap().to_string_lossy();
    assert_eq!(stderr.lines().count(), 2, "one line per log: {stderr}");
    assert!(
        stderr.contains(&format!("recovered state/{dead_name}"))
            && stderr.contains("recording ended early"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("state/{live_name} is being recorded")),
        "{stderr}"
    );
    assert!(!dead_log.exists(), "the recovered log is removed");
    assert!(live_log.exists(), "the live log is untouched");
    let profile = read_json(&dead_log.with_extension("json"));
    assert_processed_profile(&profile);
    assert_eq!(
        count_named(&profile_markers(&profile), "Recording ended early"),
        1
    );

    let again = sandbox.run_ok(&["recover", "--state-dir", "state"]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        !stderr.contains("recovered"),
        "recovery is idempotent: {stderr}"
    );

    // SAFETY: kill(2) on our own child; SIGTERM ends the command and then the recording.
    unsafe { libc::kill(live.id() as i32, libc::SIGTERM) };
    live.wait().unwrap();
    assert_processed_profile(&read_json(&sandbox.path("profile_resource-usage.json")));
    assert!(!live_log.exists());
}

#[test]
fn two_recoverers_at_once_finalize_every_log_exactly_once() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path("state")).unwrap();
    let (mut dead, dead_log) = start_recording(&sandbox);
    kill_recorder_and_command(&mut dead, &dead_log);
    let bytes = std::fs::read(&dead_log).unwrap();
    std::fs::remove_file(&dead_log).unwrap();
    for i in 0..40 {
        std::fs::write(sandbox.path(&format!("state/dead-{i:02}.jsonl")), &bytes).unwrap();
    }
    let recoverers: Vec<Child> = (0..2)
        .map(|_| {
            sandbox
                .command(&["recover", "--state-dir", "state"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut recovered: HashMap<String, usize> = HashMap::new();
    for recoverer in recoverers {
        let output = recoverer.wait_with_output().unwrap();
        assert!(output.status.success());
        for line in String::from_utf8_lossy(&output.stderr).lines() {
            if let Some(rest) = line.strip_prefix("tc-profile: recovered ") {
                *recovered
                    .entry(rest.split(':').next().unwrap().to_owned())
                    .or_default() += 1;
            }
        }
    }
    assert_eq!(recovered.len(), 40, "{recovered:?}");
    assert!(recovered.values().all(|&n| n == 1), "{recovered:?}");
    for i in 0..40 {
        assert_processed_profile(&read_json(
            &sandbox.path(&format!("state/dead-{i:02}.json")),
        ));
    }
    assert!(logs_in(&sandbox.path("state")).is_empty());
    let leftovers = std::fs::read_dir(sandbox.path("state"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(leftovers, 0, "no temporary files left");
}

#[test]
fn finalize_refuses_a_log_that_a_running_recorder_holds() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path("state")).unwrap();
    let (mut live, live_log) = start_recording(&sandbox);
    // A running holder is refused at once; the short wait keeps this quick where the holder
    // could not be identified and would be waited for.
    let output = sandbox.run(&["finalize", live_log.to_str().unwrap(), "--wait", "1"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("locked by a running tc-profile"),
        "{stderr}"
    );
    assert!(live_log.exists());
    kill_recorder_and_command(&mut live, &live_log);
    sandbox.run_ok(&["finalize", live_log.to_str().unwrap()]);
}

#[test]
fn run_with_a_state_dir_first_recovers_what_a_dead_recorder_left() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path("state")).unwrap();
    let (mut dead, dead_log) = start_recording(&sandbox);
    kill_recorder_and_command(&mut dead, &dead_log);
    let output = sandbox.run_ok(&["run", "--state-dir", "state", "--", "true"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tc-profile: recovered state/"), "{stderr}");
    assert_processed_profile(&read_json(&dead_log.with_extension("json")));
    assert_processed_profile(&read_json(&sandbox.path("profile_resource-usage.json")));
    assert!(
        logs_in(&sandbox.path("state")).is_empty(),
        "both logs finalized"
    );
}
