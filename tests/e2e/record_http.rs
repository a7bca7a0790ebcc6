//! `record --http`: the sidecar's live profile and log, fetched while the task writes
//! markers, leave the log and the profile directory as they were.

use crate::util::{
    append, assert_processed_profile, count_named, epoch_ms, http_get as get, profile_markers,
    read_json, Recording, Sandbox,
};
use std::path::Path;

fn mark(recording: &Recording, name: &str) {
    let line = format!(
        "{{\"type\":\"marker\",\"name\":\"{name}\",\"startTime\":{},\"endTime\":null}}\n",
        epoch_ms()
    );
    append(&recording.file("task.jsonl"), line.as_bytes());
    recording.wait_logged(name);
}

/// Every regular file of the directory and its bytes (not the statsd socket).
fn files(dir: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name(), std::fs::read(e.path()).unwrap()))
        .collect();
    files.sort();
    files
}

#[test]
fn the_sidecar_serves_its_live_profile_and_log_and_leaves_them_alone() {
    let sandbox = Sandbox::new();
    let recording = Recording::start_with_env(
        &sandbox,
        &["--http", "127.0.0.1:0", "--keep-log"],
        &[("TASK_ID", "side-task"), ("RUN_ID", "2")],
    );
    let ready = std::fs::read_to_string(sandbox.path("ready")).unwrap();
    let url = ready.lines().nth(1).expect("the live URL").to_owned();
    // http://127.0.0.1:PORT/TOKEN
    let (base, token) = url.rsplit_once('/').unwrap();
    assert!(base.starts_with("http://127.0.0.1:"), "{url}");
    assert_eq!(token.len(), 32, "{url}");
    mark(&recording, "while recording");

    let log_before = std::fs::read(&recording.log).unwrap();
    let dir_before = files(&recording.profile_dir);
    let (status, origin, body) = get(&format!("{base}/tasks/side-task/{token}/profile.json"));
    assert_eq!((status, origin.as_str()), (200, "*"));
    let profile: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_processed_profile(&profile);
    assert_eq!(
        count_named(&profile_markers(&profile), "while recording"),
        1
    );
    let (status, _, alias) = get(&format!("{url}/profile.json?run=2"));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&alias));
    assert_processed_profile(&serde_json::from_slice(&alias).unwrap());

    let (status, origin, log) = get(&format!("{base}/tasks/side-task/{token}/log.jsonl"));
    assert_eq!((status, origin.as_str()), (200, "*"));
    assert!(log.ends_with(b"\n"));
    for line in log.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<serde_json::Value>(line).expect("a whole JSON line");
    }
    let (status, _, short) = get(&format!("{url}/log.jsonl"));
    assert_eq!(status, 200);
    assert!(short.starts_with(&log) || log.starts_with(&short));

    let wrong_token = "0".repeat(32);
    for wrong in [
        format!("/tasks/other-task/{token}/profile.json"),
        format!("/tasks/other-task/{token}/log.jsonl"),
        format!("/tasks/side-task/{token}/profile.json?run=3"),
        format!("/tasks/side-task/{wrong_token}/profile.json"),
        format!("/tasks/side-task/{wrong_token}/log.jsonl"),
        format!("/{wrong_token}/profile.json"),
        "/tasks/side-task/profile.json".to_owned(),
        "/profile.json".to_owned(),
        "/log.jsonl".to_owned(),
        format!("/worker/{token}/profile.json"),
    ] {
        let (status, origin, body) = get(&format!("{base}{wrong}"));
        assert_eq!((status, origin.as_str()), (404, "*"), "{wrong}");
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(error["error"].is_string(), "{wrong}: {error}");
    }

    // The fetches wrote nothing: what the log held is still its start, byte for byte, and
    // the profile directory is as it was.
    let log_after = std::fs::read(&recording.log).unwrap();
    assert!(log_after.starts_with(&log_before));
    assert!(log_after.starts_with(&log));
    assert_eq!(files(&recording.profile_dir), dir_before);

    let address = base.trim_start_matches("http://").to_owned();
    let stderr = recording.stop();
    assert!(
        stderr.contains(&format!("live profile at {url}/profile.json")),
        "{stderr}"
    );
    assert!(
        std::net::TcpStream::connect(&address).is_err(),
        "still served after the recording"
    );
    let rows = profile_markers(&read_json(&sandbox.path("profile_resource-usage.json")));
    assert_eq!(count_named(&rows, "while recording"), 1);
}

#[test]
fn run_serves_its_live_profile_at_the_short_path_without_a_task_id() {
    let sandbox = Sandbox::new();
    let mut child = sandbox
        .command(&["run", "--http", ":0", "--", "sleep", "3"])
        .env_remove("TASK_ID")
        .env_remove("RUN_ID")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    let url = line
        .strip_prefix("tc-profile: live profile at ")
        .unwrap_or_else(|| panic!("{line}"))
        .trim_end();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let (status, origin, body) = get(url);
    assert_eq!((status, origin.as_str()), (200, "*"));
    assert_processed_profile(&serde_json::from_slice(&body).unwrap());
    let (base, token) = url
        .trim_end_matches("/profile.json")
        .rsplit_once('/')
        .unwrap();
    let (status, _, _) = get(&format!("{base}/tasks/any/{token}/profile.json"));
    assert_eq!(status, 404);
    assert!(child.wait().unwrap().success());
}

/// Where the live profile was served is in the log and the profile (`meta.tcProfile`), as
/// the ready file and stderr give it but without the token, which stays with the worker.
#[test]
fn the_log_and_the_profile_name_the_live_server_without_its_token() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &["--http", "127.0.0.1:0", "--keep-log"]);
    let ready = std::fs::read_to_string(sandbox.path("ready")).unwrap();
    let url = ready.lines().nth(1).expect("the live URL").to_owned();
    let (base, token) = url.rsplit_once('/').unwrap();
    let log = recording.log.clone();
    recording.stop();

    let profile_path = sandbox.path("profile_resource-usage.json");
    let profile = read_json(&profile_path);
    assert_eq!(profile["meta"]["tcProfile"]["liveServer"], base, "{url}");
    let first_line = std::fs::read_to_string(&log).unwrap();
    let meta: serde_json::Value = serde_json::from_str(first_line.lines().next().unwrap()).unwrap();
    assert_eq!(meta["tcProfile"]["liveServer"], base);
    for path in [&log, &profile_path] {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains(token), "{} holds the token", path.display());
    }
}
