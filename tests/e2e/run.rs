use crate::util::*;

const BURST: &str =
    "sleep 1; dd if=/dev/zero of=$TMP/x bs=1M count=100 conv=fsync 2>/dev/null; sleep 1";

#[test]
fn run_records_every_track_a_write_burst_and_the_command() {
    let sandbox = Sandbox::new();
    let args = run_script(&["--interval", "0.1", "--keep-log"], BURST);
    let output = sandbox
        .command(&args)
        .env("TMP", sandbox.dir())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&args, &output));

    let log = std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert_streamed_profile(&log);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);

    let markers = profile_markers(&profile);
    for track in ["CPU Use", "Memory", "IO", "NetIO"] {
        let samples = count_named(&markers, track);
        assert!(
            samples >= 20,
            "{track}: {samples} samples in a 2 s run at 0.1 s"
        );
    }
    let peak_write = markers
        .iter()
        .filter(|m| m.name == "IO")
        .map(|m| m.data["write_bytes"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(
        peak_write >= 50 << 20,
        "the 100 MiB fsync'd write shows as a burst; peak {peak_write}"
    );

    let command: Vec<&MarkerRow> = markers.iter().filter(|m| m.name == "Command").collect();
    assert_eq!(command.len(), 1);
    assert_eq!(command[0].data["status"], "exit code 0");
    assert_eq!(command[0].category, 2, "the Task category");
    let duration = command[0].end.unwrap() - command[0].start;
    assert!(
        duration >= 2000.0,
        "the command ran 2 s or more: {duration} ms"
    );
    assert_eq!(count_named(&markers, "Recording ended early"), 0);
}

#[test]
fn exit_status_is_the_commands_and_128_plus_signal() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["run", "--", "sh", "-c", "exit 7"]);
    assert_eq!(output.status.code(), Some(7));
    let output = sandbox.run(&["run", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(output.status.code(), Some(137));
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    let markers = profile_markers(&profile);
    let command = markers.iter().find(|m| m.name == "Command").unwrap();
    assert_eq!(command.data["status"], "killed by signal 9");
}

#[test]
fn a_command_that_cannot_start_exits_127_with_a_profile() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["run", "--", "no-such-command-anywhere"]);
    assert_eq!(output.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot run no-such-command-anywhere"),
        "{stderr}"
    );
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_eq!(
        count_named(&profile_markers(&profile), "Command failed to start"),
        1
    );
}

#[test]
fn a_recording_that_cannot_start_still_runs_the_command_with_one_warning() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("state"), "a file, not a directory").unwrap();
    let unwritable = [
        ["--log", "no-such-dir/task.jsonl"],
        ["--state-dir", "state/logs"],
    ];
    for place in unwritable {
        let args = run_script(&place, "touch ran; exit 7");
        let output = sandbox.run(&args);
        let stderr = assert_exit_code(&args, &output, 7);
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.starts_with("tc-profile: warning: ") && stderr.contains(place[1]),
            "names the place: {stderr}"
        );
        assert!(stderr.contains("no profile will be written"), "{stderr}");
        std::fs::remove_file(sandbox.path("ran")).expect("the command ran");
        for left in [
            "profile_resource-usage.json",
            "profile_resource-usage.markers",
        ] {
            assert!(!sandbox.path(left).exists(), "{left} was left behind");
        }
    }
}

#[test]
fn sigterm_is_forwarded_to_the_command_and_the_profile_is_written() {
    let sandbox = Sandbox::new();
    let mut recorder = sandbox
        .command(&["run", "--keep-log", "--", "sleep", "60"])
        .spawn()
        .unwrap();
    let log = sandbox.path("profile_resource-usage.jsonl");
    wait_for(|| std::fs::read_to_string(&log).is_ok_and(|t| t.contains(r#""type":"open""#)));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(recorder.id() as i32, libc::SIGTERM) };
    let status = recorder.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "the command died of the forwarded SIGTERM"
    );
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    let markers = profile_markers(&profile);
    let command = markers.iter().find(|m| m.name == "Command").unwrap();
    assert_eq!(command.data["status"], "killed by signal 15");
}

#[test]
fn task_metadata_comes_from_the_environment_and_nothing_else_does() {
    let sandbox = Sandbox::new();
    let args = ["run", "--keep-log", "--", "true"];
    let output = sandbox
        .command(&args)
        .env("TASK_ID", "fUAKaIdkSF6K1NlOgx7-LA")
        .env("RUN_ID", "0")
        .env("TASKCLUSTER_WORKER_TYPE", "b-linux-large")
        .env("SECRET_TOKEN", "hunter2-do-not-record")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&args, &output));
    let log = std::fs::read_to_string(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert!(
        !log.contains("hunter2"),
        "the environment never enters the log"
    );
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    let task = &profile["meta"]["tcProfile"]["task"];
    assert_eq!(task["taskId"], "fUAKaIdkSF6K1NlOgx7-LA");
    assert_eq!(task["workerType"], "b-linux-large");
    assert_eq!(
        profile["meta"]["logicalCPUs"].as_u64(),
        std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u64)
    );
}

/// Task logs and profiles are often public: the command's secrets are masked in the
/// Command marker as in process markers.
#[test]
fn the_command_marker_masks_secrets() {
    let sandbox = Sandbox::new();
    let args = [
        "run",
        "--",
        "sh",
        "-c",
        "exit 0",
        "TOKEN=abc123 deploy",
        "--password",
        "abc123",
    ];
    sandbox.run_ok(&args);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    let markers = profile_markers(&profile);
    let command = markers.iter().find(|m| m.name == "Command").unwrap();
    let text = command.data["command"].as_str().unwrap();
    assert_eq!(
        text, "sh -c exit 0 TOKEN=*** deploy --password ***",
        "{text}"
    );
}
