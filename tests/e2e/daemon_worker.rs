//! The daemon as a worker drives it: from an empty state directory, its housekeeping rotates
//! and applies retention; `task start` refuses what it cannot follow, with an exit status
//! that says why; the task's first phase is whole; `--json` says what the task needs.

use crate::daemon::Daemon;
use crate::util::{wait_for, Sandbox};
use std::collections::BTreeSet;

/// The segment files in the state directory now.
fn segment_names(sandbox: &Sandbox) -> BTreeSet<String> {
    let entries = std::fs::read_dir(sandbox.path("state/segments")).unwrap();
    entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn housekeeping_from_an_empty_state_directory_rotates_and_applies_retention_without_a_panic() {
    let sandbox = Sandbox::new();
    assert!(!sandbox.path("state").exists());
    let daemon = Daemon::start(&sandbox, &["--segment-age", "0.5", "--retain", "2s"]);
    let first = segment_names(&sandbox);
    assert_eq!(first.len(), 1, "{first:?}");
    let mut seen = first.clone();
    // Rotation makes new segments; retention removes the first once it ended 2 s ago.
    wait_for(|| {
        let now = segment_names(&sandbox);
        seen.extend(now.iter().cloned());
        seen.len() >= 5 && now.is_disjoint(&first)
    });
    let stderr = daemon.stderr.clone();
    daemon.stop();
    let stderr = std::fs::read_to_string(stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        segment_names(&sandbox).len() < seen.len(),
        "retention removed some: {seen:?}"
    );
}

/// `tc-profile ARGS --socket daemon.sock`, which must fail with `status` and one line of
/// stderr holding `needle`.
fn refused(sandbox: &Sandbox, args: &[&str], status: i32, needle: &str) {
    let mut all = args.to_vec();
    all.extend(["--socket", "daemon.sock"]);
    let output = sandbox.run(&all);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(status), "{all:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{all:?}: {stderr}");
    assert!(stderr.contains(needle), "{all:?}: {stderr}");
}

#[test]
fn task_start_refuses_what_it_cannot_follow_with_an_exit_status_that_says_why() {
    let sandbox = Sandbox::new();
    let unreachable = ["task", "start", "t"];
    refused(&sandbox, &unreachable, 69, "cannot reach the daemon");
    let daemon = Daemon::start(&sandbox, &[]);
    let daemon_pid = daemon.child.id().to_string();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = gone.id().to_string();
    gone.wait().unwrap();
    let cases: [(&[&str], i32, &str); 7] = [
        (&["--pid", &gone_pid], 65, &format!("no process {gone_pid}")),
        (&["--pid", "0"], 65, "pid 0 is not a process"),
        (&["--pid", "1"], 65, "--allow-host"),
        (&["--pid", &daemon_pid], 65, "is the daemon itself"),
        (
            &["--cgroup", "/sys/fs/cgroup/no-such"],
            65,
            "no such cgroup",
        ),
        (&["--pid", "x"], 64, "invalid value 'x'"),
        (&["--bogus"], 64, "unexpected argument '--bogus'"),
    ];
    for (extra, status, needle) in cases {
        let mut args = vec!["task", "start", "t"];
        args.extend_from_slice(extra);
        refused(&sandbox, &args, status, needle);
    }
    assert!(
        !sandbox.path("state/profiles/t-0").exists(),
        "nothing made for a refused start"
    );
    refused(
        &sandbox,
        &["task", "end", "t", "-o", "t.json"],
        65,
        "not open",
    );
    let relative = serde_json::json!({"v": 1, "op": "task-end", "task": "t", "output": "t.json"});
    let reply = crate::daemon::request(&daemon.socket, relative);
    assert_eq!(reply["error"]["code"], "bad-request", "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("output t.json is relative"),
        "{reply}"
    );
    daemon.stop();
}
