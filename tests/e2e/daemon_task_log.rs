//! `task start --task-log FILE`: the daemon follows the worker's live log of the task as
//! `tail -F`, its lines `Log` markers and its stat lines metrics, each once in the task's
//! profile whether the daemon is killed or stopped and started again in between; a second
//! `--task-log` for an open task is refused.

use crate::daemon::{ask, wait_in_task_log, Daemon};
use crate::util::{append, assert_processed_profile, profile_markers, read_json, Sandbox};

#[test]
fn the_workers_live_log_is_in_the_task_profile_once_across_a_daemon_kill_and_a_stop() {
    let sandbox = Sandbox::new();
    let live = sandbox.path("live.log");
    let daemon = Daemon::start(&sandbox, &[]);
    append(
        &live,
        b"[taskcluster 2020-01-01T00:00:00Z] worker started\n",
    );
    ask(&sandbox, &["task", "start", "w", "--task-log", "live.log"]);
    let again = [
        "task",
        "start",
        "w",
        "--task-log",
        "other.log",
        "--socket",
        "daemon.sock",
    ];
    let again = sandbox.run(&again);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(64), "{stderr}");
    assert!(
        stderr.contains("give --task-log at its first start"),
        "{stderr}"
    );
    append(
        &live,
        b"one\n[taskcluster-task:stat] build.objects:5|c\nprogress 1%",
    );
    wait_in_task_log(&sandbox, "build.objects");
    daemon.kill();
    append(&live, b"\rprogress 100%\nwhile it was down\n");
    let daemon = Daemon::start(&sandbox, &[]);
    wait_in_task_log(&sandbox, "while it was down");
    // A clean stop: the next daemon takes the log up from the same place.
    daemon.stop();
    append(&live, b"between two daemons\n");
    let daemon = Daemon::start(&sandbox, &[]);
    append(
        &live,
        b"[taskcluster-task:stat] build.objects:2|c\nlast, no newline",
    );
    wait_in_task_log(&sandbox, "between two daemons");
    ask(&sandbox, &["task", "end", "w", "-o", "w.json"]);
    daemon.stop();

    let profile = read_json(&sandbox.path("w.json"));
    assert_processed_profile(&profile);
    let rows = profile_markers(&profile);
    let mut lines: Vec<&str> = rows
        .iter()
        .filter(|m| m.data["type"] == "Log")
        .map(|m| m.data["message"].as_str().unwrap())
        .collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "between two daemons",
            "last, no newline",
            "one",
            "progress 1%\rprogress 100%",
            "while it was down",
            "worker started",
        ]
    );
    let objects: f64 = rows
        .iter()
        .filter(|m| m.series() == "task.build.objects")
        .map(|m| m.data["value"].as_f64().unwrap())
        .sum();
    assert_eq!(
        objects, 7.0,
        "both stat lines, once each, as a metric track"
    );
}
