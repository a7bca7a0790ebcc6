//! The daemon as a worker drives it: from an empty state directory, its housekeeping rotates
//! and applies retention; `task start` refuses what it cannot follow, with an exit status
//! that says why; the task's first phase is whole; `--json` says what the task needs.

use crate::daemon::{ask, Daemon};
use crate::util::{
    assert_processed_profile, epoch_ms, profile_markers, read_json, wait_for, MarkerRow, Sandbox,
    BIN,
};
use std::collections::BTreeSet;
use std::process::{Child, Command};

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

/// The README's order: `task start`, the task launched with its profile directory, then
/// `task start --pid`. The task's first instruction begins `phase`, ends it 0.3 s later.
/// Returns the epoch ms between the launch and the attach.
fn start_launch_attach(sandbox: &Sandbox, task: &str) -> (Child, f64) {
    let dir = ask(sandbox, &["task", "start", task]);
    let script = format!("'{BIN}' begin phase; sleep 0.3; '{BIN}' end phase");
    let child = Command::new("sh")
        .args(["-c", &script])
        .env("TASKCLUSTER_PROFILE_DIR", &dir)
        .spawn()
        .unwrap();
    let launched = epoch_ms();
    let pid = child.id().to_string();
    ask(sandbox, &["task", "start", task, "--pid", &pid]);
    (child, launched)
}

/// The "Process" markers whose command starts with `command`.
fn processes<'a>(rows: &'a [MarkerRow], command: &str) -> Vec<&'a MarkerRow> {
    let is_process = |m: &&MarkerRow| m.data["type"] == "Process";
    let named = |m: &&MarkerRow| m.data["command"].as_str().unwrap().starts_with(command);
    rows.iter().filter(is_process).filter(named).collect()
}

#[test]
fn a_phase_the_task_begins_before_the_attach_is_whole_in_fifty_runs_of_fifty() {
    let sandbox = Sandbox::new();
    let daemon = Daemon::start(&sandbox, &[]);
    let runs: Vec<(String, f64)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..10)
            .map(|worker| {
                let sandbox = &sandbox;
                scope.spawn(move || {
                    let mut done = Vec::new();
                    for round in 0..5 {
                        let task = format!("t{worker}-{round}");
                        let (mut child, launched) = start_launch_attach(sandbox, &task);
                        assert!(child.wait().unwrap().success());
                        let output = format!("{task}.json");
                        ask(sandbox, &["task", "end", &task, "-o", &output]);
                        done.push((output, launched));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let (mut whole, mut shells) = (0, 0);
    for (output, launched) in &runs {
        let profile = read_json(&sandbox.path(output));
        let rows = profile_markers(&profile);
        let phase: Vec<&MarkerRow> = rows.iter().filter(|m| m.name == "phase").collect();
        let start = profile["meta"]["startTime"].as_f64().unwrap();
        let lasted = phase.first().and_then(|m| Some(m.end? - m.start));
        if phase.len() == 1 && lasted >= Some(300.0) && phase[0].data.get("cutOff").is_none() {
            whole += 1;
        } else {
            eprintln!("{output}: {phase:?}");
        }
        // The task's shell, seen from the attach on, starts when it was launched (a
        // sampler starved past the shell's life, on a loaded machine, never saw it end).
        let shell = processes(&rows, "sh");
        assert!(shell.len() <= 1, "{output}: {shell:?}");
        for process in shell {
            let began = start + process.start;
            assert!(began <= *launched, "{output}: {began} after {launched}");
            shells += 1;
        }
    }
    assert!(shells > 0, "no run drew its shell");
    assert_processed_profile(&read_json(&sandbox.path(&runs[0].0)));
    assert_eq!(whole, 50, "runs whose phase is whole");
    daemon.stop();
}

/// The attach hands the statsd socket to the task's next part: a client that connected
/// before it sends after it on the same connection, and nothing is lost or counted twice.
#[test]
fn a_statsd_client_connected_before_the_attach_stays_connected_after_it() {
    let sandbox = Sandbox::new();
    let daemon = Daemon::start(&sandbox, &[]);
    let started = ask(&sandbox, &["task", "start", "s", "--json"]);
    let started: serde_json::Value = serde_json::from_str(&started).unwrap();
    let client = std::os::unix::net::UnixDatagram::unbound().unwrap();
    client
        .connect(started["statsdSocket"].as_str().unwrap())
        .unwrap();
    client.send(b"sent.before:1|c").unwrap();
    let mut process = crate::daemon::task_process("30.5");
    let pid = process.id().to_string();
    ask(&sandbox, &["task", "start", "s", "--pid", &pid]);
    client.send(b"sent.after:2|c").unwrap();
    ask(&sandbox, &["task", "end", "s", "-o", "s.json"]);
    process.kill().unwrap();
    process.wait().unwrap();
    let profile = read_json(&sandbox.path("s.json"));
    assert_processed_profile(&profile);
    let rows = profile_markers(&profile);
    let sum = |series: &str| -> f64 {
        let values = rows.iter().filter(|m| m.series() == series);
        values.map(|m| m.data["value"].as_f64().unwrap()).sum()
    };
    assert_eq!(
        (sum("task.sent.before"), sum("task.sent.after")),
        (1.0, 2.0)
    );
    daemon.stop();
}

#[test]
fn a_process_started_before_a_daemon_kill_keeps_its_start_time_after_the_restart() {
    let sandbox = Sandbox::new();
    let daemon = Daemon::start(&sandbox, &[]);
    ask(&sandbox, &["task", "start", "k"]);
    let mut process = Command::new("sleep").arg("30.4").spawn().unwrap();
    let launched = epoch_ms();
    let pid = process.id().to_string();
    ask(&sandbox, &["task", "start", "k", "--pid", &pid]);
    crate::daemon::wait_in_segment(&sandbox, "CPU Use");
    std::thread::sleep(std::time::Duration::from_millis(300));
    daemon.kill();
    let killed_at = epoch_ms();
    let daemon = Daemon::start(&sandbox, &[]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    process.kill().unwrap();
    process.wait().unwrap();
    ask(&sandbox, &["task", "end", "k", "-o", "k.json"]);
    let profile = read_json(&sandbox.path("k.json"));
    assert_processed_profile(&profile);
    let rows = profile_markers(&profile);
    let sleeps = processes(&rows, "sleep 30.4");
    assert_eq!(sleeps.len(), 1, "{sleeps:?}");
    let began = profile["meta"]["startTime"].as_f64().unwrap() + sleeps[0].start;
    assert!(
        began <= launched && began < killed_at,
        "began {began}, launched {launched}, killed at {killed_at}"
    );
    daemon.stop();
}

#[test]
fn task_start_json_gives_what_the_task_needs_and_since_puts_the_workers_steps_in_its_span() {
    let sandbox = Sandbox::new();
    let daemon = Daemon::start(&sandbox, &["--http", "0"]);
    let since = (epoch_ms() - 3000.0).round();
    let since_text = since.to_string();
    let line = ask(
        &sandbox,
        &["task", "start", "j", "--json", "--since", &since_text],
    );
    let started: serde_json::Value = serde_json::from_str(&line).unwrap();
    let dir = started["profileDir"].as_str().unwrap();
    assert!(std::path::Path::new(dir).is_dir(), "{started}");
    // statsd on the profile directory's socket, none on UDP unless the daemon was asked.
    let socket = started["statsdSocket"].as_str().unwrap();
    assert_eq!(
        std::path::Path::new(socket).parent(),
        Some(std::path::Path::new(dir))
    );
    assert!(started.get("statsdAddress").is_none(), "{started}");
    for key in ["liveProfileUrl", "liveLogUrl"] {
        let (status, _, _) = crate::util::http_get(started[key].as_str().unwrap());
        assert_eq!(status, 200, "{key}: {started}");
    }
    // Without --json, the profile directory alone, as before.
    assert_eq!(
        ask(&sandbox, &["task", "start", "plain"]),
        dir.replace("j-0", "plain-0")
    );
    // The worker's claim, a second before the start, in the task's span at its time.
    let claim = format!(
        "{{\"type\":\"marker\",\"name\":\"claim\",\"startTime\":{},\"endTime\":{}}}\n",
        since + 500.0,
        since + 1500.0
    );
    crate::util::append(
        &std::path::Path::new(dir).join("worker.jsonl"),
        claim.as_bytes(),
    );

    let status: serde_json::Value =
        serde_json::from_str(&ask(&sandbox, &["daemon", "status"])).unwrap();
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    let tasks = status["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{status}");
    assert_eq!(tasks[0]["task"], "j", "oldest first: {status}");
    assert!(tasks[0]["ageMs"].as_f64().unwrap() >= 3000.0, "{status}");
    assert!(status["segments"].as_u64().unwrap() >= 1, "{status}");
    assert!(status["segmentBytes"].as_u64().unwrap() > 0, "{status}");
    wait_for(|| {
        let status = ask(&sandbox, &["daemon", "status"]);
        let status: serde_json::Value = serde_json::from_str(&status).unwrap();
        status["housekeeping"]["at"].is_number() && status["housekeeping"]["error"].is_null()
    });

    ask(&sandbox, &["task", "end", "j", "-o", "j.json"]);
    let profile = read_json(&sandbox.path("j.json"));
    assert_processed_profile(&profile);
    assert_eq!(profile["meta"]["startTime"].as_f64(), Some(since));
    let rows = profile_markers(&profile);
    let claim: Vec<&MarkerRow> = rows.iter().filter(|m| m.name == "claim").collect();
    assert_eq!(claim.len(), 1);
    // To the microsecond: times are epoch ms against a start in epoch ms.
    let (start, end) = (claim[0].start, claim[0].end.unwrap());
    assert!(
        (start - 500.0).abs() < 0.01 && (end - 1500.0).abs() < 0.01,
        "{start} {end}"
    );
    daemon.stop();
}

#[test]
fn the_daemon_tells_systemd_it_is_ready_and_leaves_no_ready_file_or_socket_behind() {
    let sandbox = Sandbox::new();
    // A socket left by a SIGKILLed daemon, which nothing answers: replaced.
    drop(std::os::unix::net::UnixListener::bind(sandbox.path("daemon.sock")).unwrap());
    let notify = std::os::unix::net::UnixDatagram::bind(sandbox.path("notify")).unwrap();
    let notify_path = sandbox.path("notify");
    let env = [("NOTIFY_SOCKET", notify_path.to_str().unwrap())];
    let daemon = Daemon::start_with(&sandbox, &[], &env);
    let mut message = [0; 64];
    let length = notify.recv(&mut message).unwrap();
    assert_eq!(&message[..length], b"READY=1");
    ask(&sandbox, &["daemon", "status"]);
    daemon.stop();
    assert!(!sandbox.path("ready").exists(), "the ready file is removed");
    assert!(
        !sandbox.path("daemon.sock").exists(),
        "the socket is removed"
    );

    // A start that fails once the socket listens (its --http port taken) leaves neither.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    std::fs::write(sandbox.path("ready"), "stale\n").unwrap();
    let args = [
        "daemon",
        "--state-dir",
        "state",
        "--socket",
        "daemon.sock",
        "--ready-file",
        "ready",
        "--http",
        &port,
    ];
    let failed = sandbox.run(&args);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(74), "{stderr}");
    assert!(stderr.contains("cannot serve HTTP there"), "{stderr}");
    assert!(
        !sandbox.path("ready").exists(),
        "the stale ready file is removed"
    );
    assert!(
        !sandbox.path("daemon.sock").exists(),
        "the socket is removed"
    );
}
