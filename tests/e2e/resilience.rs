use crate::util::*;

/// Samples every 0.05 s over the whole command: none lost to the log's troubles.
fn assert_sampled_throughout(profile: &serde_json::Value, seconds: f64) {
    let markers = profile_markers(profile);
    let samples = count_named(&markers, "CPU Use");
    let expected = (seconds / 0.05) as usize;
    assert!(
        samples >= expected / 2,
        "{samples} samples, about {expected} expected"
    );
    let last = markers
        .iter()
        .filter(|m| m.name == "CPU Use")
        .map(|m| m.end.unwrap())
        .fold(0.0, f64::max);
    assert!(last >= seconds * 1000.0 - 500.0, "last sample at {last} ms");
    assert_eq!(count_named(&markers, "Recording ended early"), 0);
}

/// The profile `name` against the profiler's constraints, sampled over `seconds`.
fn assert_whole_profile(sandbox: &Sandbox, name: &str, seconds: f64) {
    let profile = read_json(&sandbox.path(name));
    assert_processed_profile(&profile);
    assert_sampled_throughout(&profile, seconds);
}

/// Runs `script` recorded into `logs/task.jsonl`, the directory made first, and the profile
/// written to `task.json`; fails the test unless it exits 0, and returns its stderr.
fn run_logging_into_logs(sandbox: &Sandbox, script: &str) -> String {
    std::fs::create_dir(sandbox.path("logs")).unwrap();
    let flags = [
        "--interval",
        "0.05",
        "--log",
        "logs/task.jsonl",
        "-o",
        "task.json",
    ];
    let output = sandbox.run_ok(&run_script(&flags, script));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_log_deleted_while_recording_is_created_again_with_everything() {
    let sandbox = Sandbox::new();
    let args = run_script(
        &["--interval", "0.05", "--keep-log"],
        "sleep 1; rm profile_resource-usage.jsonl; sleep 2; exit 3",
    );
    let output = sandbox.run(&args);
    let stderr = assert_exit_code(&args, &output, 3);
    assert!(
        stderr.contains("was deleted; created again with everything recorded"),
        "{stderr}"
    );
    let log = std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert_streamed_profile(&log);
    assert_whole_profile(&sandbox, "profile_resource-usage.json", 3.0);
}

#[test]
fn a_removed_log_directory_is_waited_for_and_nothing_is_lost() {
    let sandbox = Sandbox::new();
    let stderr = run_logging_into_logs(
        &sandbox,
        "sleep 1; rm -r logs; sleep 2; mkdir logs; sleep 2",
    );
    assert!(
        stderr.contains("logs/task.jsonl was deleted and cannot be created again"),
        "{stderr}"
    );
    assert!(stderr.contains("created again with everything"), "{stderr}");
    assert!(
        !sandbox.path("logs/task.jsonl").exists(),
        "the log created again is removed once the profile is written"
    );
    assert_whole_profile(&sandbox, "task.json", 5.0);
}

#[test]
fn a_log_directory_gone_for_good_still_gives_a_whole_profile() {
    let sandbox = Sandbox::new();
    run_logging_into_logs(&sandbox, "sleep 1; rm -r logs; sleep 2");
    assert_whole_profile(&sandbox, "task.json", 3.0);
}
