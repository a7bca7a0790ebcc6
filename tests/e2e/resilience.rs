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

#[test]
fn a_log_deleted_while_recording_is_created_again_with_everything() {
    let sandbox = Sandbox::new();
    let args = [
        "run",
        "--interval",
        "0.05",
        "--keep-log",
        "--",
        "sh",
        "-c",
        "sleep 1; rm profile_resource-usage.jsonl; sleep 2; exit 3",
    ];
    let output = sandbox.run(&args);
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        describe(&args, &output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("was deleted; created again with everything recorded"),
        "{stderr}"
    );
    let log = std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert_streamed_profile(&log);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    assert_sampled_throughout(&profile, 3.0);
}

#[test]
fn a_removed_log_directory_is_waited_for_and_nothing_is_lost() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path("logs")).unwrap();
    let args = [
        "run",
        "--interval",
        "0.05",
        "--log",
        "logs/task.jsonl",
        "-o",
        "task.json",
        "--",
        "sh",
        "-c",
        "sleep 1; rm -r logs; sleep 2; mkdir logs; sleep 2",
    ];
    let output = sandbox.run(&args);
    assert!(output.status.success(), "{}", describe(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("logs/task.jsonl was deleted and cannot be created again"),
        "{stderr}"
    );
    assert!(stderr.contains("created again with everything"), "{stderr}");
    assert!(
        !sandbox.path("logs/task.jsonl").exists(),
        "the log created again is removed once the profile is written"
    );
    let profile = read_json(&sandbox.path("task.json"));
    assert_processed_profile(&profile);
    assert_sampled_throughout(&profile, 5.0);
}

#[test]
fn a_log_directory_gone_for_good_still_gives_a_whole_profile() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path("logs")).unwrap();
    let args = [
        "run",
        "--interval",
        "0.05",
        "--log",
        "logs/task.jsonl",
        "-o",
        "task.json",
        "--",
        "sh",
        "-c",
        "sleep 1; rm -r logs; sleep 2",
    ];
    let output = sandbox.run(&args);
    assert!(output.status.success(), "{}", describe(&args, &output));
    let profile = read_json(&sandbox.path("task.json"));
    assert_processed_profile(&profile);
    assert_sampled_throughout(&profile, 3.0);
}
