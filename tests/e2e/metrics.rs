use crate::util::*;
use serde_json::{json, Value};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Child;

/// A task script that sends statsd from bash (over UDP: `--statsd-udp`), writes its
/// statsd socket's path to `socket`, then waits for the test to create `done` (so that the
/// test's own client sends while it runs).
fn task_script(bash_sends: &str) -> String {
    format!(
        r#"send() {{ printf '%s' "$1" > "/dev/udp/$STATSD_HOST/$STATSD_PORT"; }}
{bash_sends}
echo "$STATSD_SOCKET" > socket.tmp && mv socket.tmp socket
while [ ! -e done ]; do sleep 0.02; done"#
    )
}

/// Starts `tc-profile run ARGS -- bash -c SCRIPT` and returns it with its statsd socket.
fn start_task(sandbox: &Sandbox, args: &[&str], script: &str) -> (Child, PathBuf) {
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--keep-log", "--", "bash", "-c", script]);
    let child = sandbox.command(&full).spawn().expect("spawn tc-profile");
    let socket_file = sandbox.path("socket");
    wait_for(|| socket_file.exists());
    let socket = std::fs::read_to_string(&socket_file).unwrap();
    (child, PathBuf::from(socket.trim()))
}

fn end_task(sandbox: &Sandbox, mut child: Child) -> Value {
    std::fs::write(sandbox.path("done"), "").unwrap();
    assert!(child.wait().unwrap().success());
    let log = std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert_streamed_profile(&log);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    profile
}

/// Sends each packet to the task's statsd socket.
fn client(socket: PathBuf) -> impl Fn(&[u8]) {
    let client = UnixDatagram::unbound().unwrap();
    move |packet| {
        client.send_to(packet, &socket).unwrap();
    }
}

/// The one marker of a series (the whole task fits in one interval).
fn series<'a>(markers: &'a [MarkerRow], name: &str) -> &'a Value {
    let found: Vec<&MarkerRow> = markers.iter().filter(|m| m.series() == name).collect();
    assert_eq!(found.len(), 1, "one interval of {name}");
    &found[0].data
}

fn sum_of(markers: &[MarkerRow], name: &str, key: &str) -> f64 {
    markers
        .iter()
        .filter(|m| m.series() == name)
        .map(|m| m.data[key].as_f64().unwrap())
        .sum()
}

/// Bash sends over UDP (`--statsd-udp`), the test's client over the socket: one listener.
#[test]
fn a_mixed_statsd_stream_from_bash_and_a_rust_client_becomes_aggregated_tracks() {
    let sandbox = Sandbox::new();
    let bash = r#"echo "tests.passed:1|c" > "/dev/udp/$STATSD_HOST/$STATSD_PORT"
send 'tests.passed:2|c'
send 'cache.hits:1|c|@0.1'
send $'queue.depth:10|g\nqueue.depth:-3|g\nqueue.depth:+5|g'
send $'compile:100|ms\ncompile:300|ms'
send 'payload:5|h|#kind:small'
send $'users:alice|s\nusers:bob|s\nusers:alice|s'
send 'not a metric'
send 'x:1|zz'
send 'y:abc|c'
[ "$TASKCLUSTER_STATSD_ADDR" = "$STATSD_HOST:$STATSD_PORT" ] || send 'env.mismatch:1|c'
[ "$DD_DOGSTATSD_URL" = "unix://$STATSD_SOCKET" ] || send 'env.mismatch:1|c'
echo "$STATSD_PORT" > port"#;
    // One interval for the whole task: each series is exactly one marker.
    let args = ["run", "--interval", "600", "--statsd-udp"];
    let (child, socket) = start_task(&sandbox, &args, &task_script(bash));
    let send = client(socket.clone());
    send(b"tests.passed:3|c");
    send(b"compile:200|ms\ndownload.bytes:1024|c|#host:a\r\n");
    send(b"\xff\xfe:1|c");
    send(&[b'z'; 9000]);
    let profile = end_task(&sandbox, child);

    let markers = profile_markers(&profile);
    let value = |name: &str| series(&markers, name)["value"].clone();
    assert_eq!(value("task.tests.passed"), json!(6.0));
    assert_eq!(
        value("task.cache.hits"),
        json!(10.0),
        "scaled by the sample rate"
    );
    assert_eq!(
        value("task.queue.depth"),
        json!(12.0),
        "10, then -3, then +5"
    );
    assert_eq!(value("task.download.bytes #host:a"), json!(1024.0));
    let compile = series(&markers, "task.compile");
    assert_eq!(compile["type"], "Timer");
    assert_eq!(
        [
            &compile["count"],
            &compile["min"],
            &compile["mean"],
            &compile["max"]
        ],
        [&json!(3.0), &json!(100.0), &json!(200.0), &json!(300.0)]
    );
    let payload = series(&markers, "task.payload #kind:small");
    assert_eq!(
        (&payload["type"], &payload["count"]),
        (&json!("Histogram"), &json!(1.0))
    );
    assert_eq!(payload["tags"], "kind:small");
    assert_eq!(series(&markers, "task.users")["distinct"], json!(2.0));
    assert!(!markers.iter().any(|m| m.series().starts_with("task.env")));

    let dropped = series(&markers, "Metrics dropped");
    assert_eq!(dropped["malformed"], 4, "three from bash, one not UTF-8");
    assert_eq!(dropped["oversized"], 1);
    assert_eq!(dropped["example"], "not a metric (not name:value|type)");
    let statsd = &profile["meta"]["tcProfile"]["statsd"];
    let port = std::fs::read_to_string(sandbox.path("port")).unwrap();
    assert_eq!(statsd["address"], format!("127.0.0.1:{}", port.trim()));
    assert_eq!(statsd["socket"], socket.to_str().unwrap());
    assert_eq!(statsd["prefix"], "task.");
}

#[test]
fn without_statsd_udp_there_is_a_socket_and_no_port() {
    let sandbox = Sandbox::new();
    let (child, socket) = start_task(&sandbox, &["run"], &task_script("env > env.txt"));
    let profile_dir = sandbox.path("profile_resource-usage.markers");
    assert_eq!(socket, profile_dir.join("statsd.sock"));
    let profile = end_task(&sandbox, child);
    let env = std::fs::read_to_string(sandbox.path("env.txt")).unwrap();
    assert!(!env.contains("STATSD_PORT"), "{env}");
    let statsd = &profile["meta"]["tcProfile"]["statsd"];
    assert!(statsd.get("address").is_none(), "{statsd}");
    assert!(!socket.exists(), "removed at the end");
}

#[test]
fn a_burst_of_100000_packets_is_a_few_log_lines() {
    let sandbox = Sandbox::new();
    let (child, socket) = start_task(&sandbox, &["run", "--interval", "0.1"], &task_script(""));
    let send = client(socket);
    for _ in 0..100_000 {
        send(b"burst:1|c");
    }
    let profile = end_task(&sandbox, child);

    let markers = profile_markers(&profile);
    let counted = sum_of(&markers, "task.burst", "value");
    let kernel_dropped = sum_of(&markers, "Metrics dropped", "kernelDropped");
    assert_eq!(
        counted + kernel_dropped,
        100_000.0,
        "every packet is counted or reported as dropped by the kernel"
    );
    let command = markers.iter().find(|m| m.name == "Command").unwrap();
    let intervals = (command.end.unwrap() - command.start) / 100.0;
    let lines = count_named(&markers, "task.burst") as f64;
    assert!(
        lines <= intervals + 2.0,
        "at most one line per interval: {lines} lines in {intervals:.0} intervals"
    );
}

#[test]
fn series_cannot_leave_the_prefix() {
    let sandbox = Sandbox::new();
    let (child, socket) = start_task(
        &sandbox,
        &["run", "--interval", "600", "--metric-prefix", "ci.job."],
        &task_script(""),
    );
    let send = client(socket);
    let names = [
        "../../worker.cpu",
        "/etc/passwd",
        ".hidden",
        "..",
        "a b\tc",
        "caf\u{e9}",
        "ci.job.again",
        "x|c\ny",
    ];
    for name in names {
        send(format!("{name}:1|c").as_bytes());
    }
    send(b"tagged:1|c|#task_id:forged,ci.job:x");
    let profile = end_task(&sandbox, child);

    let metric_names: Vec<String> = profile_markers(&profile)
        .into_iter()
        .filter(|m| m.category == 3)
        .map(|m| m.series())
        .collect();
    assert!(metric_names.len() >= 7, "{metric_names:?}");
    for name in &metric_names {
        assert!(name.starts_with("ci.job."), "{name} escaped the prefix");
        let metric = name.split(" #").next().unwrap();
        assert!(
            metric
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
            "{name} is sanitized"
        );
        assert!(!metric.contains(".."), "{name} has no empty segment");
    }
    assert!(metric_names.contains(&"ci.job._._worker.cpu".to_owned()));
    assert!(metric_names.contains(&"ci.job.ci.job.again".to_owned()));
}

#[test]
fn a_bad_prefix_is_refused_and_no_statsd_exports_nothing() {
    let sandbox = Sandbox::new();
    for prefix in ["task", "../x.", "a..b.", ""] {
        let output = sandbox.run(&["run", "--metric-prefix", prefix, "--", "true"]);
        assert_eq!(output.status.code(), Some(2), "{prefix:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--metric-prefix"), "{stderr}");
    }
    let args = run_script(&["--no-statsd", "--keep-log"], "env > env.txt");
    sandbox.run_ok(&args);
    let env = std::fs::read_to_string(sandbox.path("env.txt")).unwrap();
    assert!(!env.contains("STATSD"), "{env}");
    let log = std::fs::read_to_string(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert!(!log.contains(r#""statsd""#));
    assert!(!Path::new(&sandbox.path("socket")).exists());
}

/// Bash that appends `count` metric lines to the task's marker file.
fn file_metrics(name: &str, kind: &str, value: &str, count: u32) -> String {
    format!(
        r#"t=$(date +%s%3N); for i in $(seq {count}); do echo "{{\"type\":\"metric\",\"name\":\"{name}\",\"kind\":\"{kind}\",\"value\":{value},\"time\":$t}}"; done >> "$TASKCLUSTER_PROFILE_DIR/$$.jsonl""#
    )
}

#[test]
fn metric_lines_in_marker_files_end_in_the_same_tracks_as_statsd() {
    let sandbox = Sandbox::new();
    let bash = [
        file_metrics("same.counter", "c", "3", 1),
        "send 'same.counter:2|c'".to_owned(),
        file_metrics("depth", "g", "9", 1),
        file_metrics("compile", "ms", "40", 2),
        "send 'compile:10|ms'".to_owned(),
        file_metrics("users", "s", r#"\"ann\""#, 3),
        file_metrics("../escape", "c", "1", 1),
    ]
    .join("\n");
    let args = ["run", "--interval", "600", "--statsd-udp"];
    let (child, _) = start_task(&sandbox, &args, &task_script(&bash));
    let profile = end_task(&sandbox, child);

    let markers = profile_markers(&profile);
    assert_eq!(sum_of(&markers, "task.same.counter", "value"), 5.0);
    assert_eq!(series(&markers, "task.depth")["value"], json!(9.0));
    assert_eq!(sum_of(&markers, "task.compile", "count"), 3.0);
    let max_of = |name: &str, key: &str| {
        markers
            .iter()
            .filter(|m| m.series() == name)
            .map(|m| m.data[key].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    assert_eq!(max_of("task.compile", "max"), 40.0);
    // A set counts members per interval and per batch of the marker files.
    assert_eq!(max_of("task.users", "distinct"), 1.0);
    assert_eq!(series(&markers, "task._escape")["type"], "Counter");
    let end = profile["meta"]["profilingEndTime"].as_f64().unwrap();
    assert!(
        end < 60_000.0,
        "metric markers never outlast the recording: {end} ms"
    );
}

#[test]
fn metric_lines_of_a_killed_recorder_are_taken_exactly_once_by_finalize() {
    let sandbox = Sandbox::new();
    let script = format!(
        r#"echo $$ > task.pid
{first}
touch half
while [ ! -e go ]; do sleep 0.02; done
{second}
touch written
sleep 60"#,
        first = file_metrics("file.count", "c", "1", 500),
        second = file_metrics("file.count", "c", "1", 500),
    );
    let mut recorder = sandbox
        .command(&["run", "--keep-log", "--", "bash", "-c", &script])
        .spawn()
        .unwrap();
    wait_for(|| sandbox.path("half").exists());
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(recorder.id() as i32, libc::SIGKILL) };
    recorder.wait().unwrap();
    std::fs::write(sandbox.path("go"), "").unwrap();
    wait_for(|| sandbox.path("written").exists());
    let pid: i32 = std::fs::read_to_string(sandbox.path("task.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) of the task, which outlived its recorder.
    unsafe { libc::kill(pid, libc::SIGKILL) };

    sandbox.run_ok(&["finalize", "profile_resource-usage.jsonl"]);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let markers = profile_markers(&profile);
    assert_eq!(
        sum_of(&markers, "task.file.count", "value"),
        1000.0,
        "each metric line counted once"
    );
}
