//! Forwarding during the task to a real InfluxDB (scripts/influxdb): points written with
//! curl and Python's urllib in the forced database with the task's tags, while the task
//! runs; out-of-scope series refused and not forwarded; the credentials never in the
//! task's environment; the server stopped mid-task and back before the end; 100,000
//! points from 4 writers, each in InfluxDB once, and the recorder's CPU per 1,000 points;
//! `record` forwards as `run` does.

use crate::influx::{InfluxServer, TASK_ID};
use crate::influx_endpoint::{CLIENT, LOAD, RECORDER_CPU};
use crate::util::*;
use serde_json::Value;
use std::process::{Child, Output, Stdio};

/// Python helpers besides CLIENT's: `wait_for(name)` waits (60 s at most) for the test to
/// create the file `name` in the task's directory, `done(name)` creates one for the test.
const HANDSHAKE: &str = r#"
import time
def wait_for(name):
    for _ in range(6000):
        if os.path.exists(name):
            return
        time.sleep(0.01)
    raise SystemExit("the test never created " + name)
def done(name):
    open(name, "w").close()
"#;

const USER: &str = "ci-forwarder";
const PASSWORD: &str = "s3cret-never-in-the-task";

/// Starts `tc-profile run FLAGS --export-influx URL --export-database ci -- python3 -c
/// SCRIPT` (the helpers first) as task TASK_ID, with `env` besides.
fn spawn_python(
    sandbox: &Sandbox,
    server: &InfluxServer,
    flags: &[&str],
    env: &[(&str, &str)],
    script: &str,
) -> Child {
    let program = format!("{CLIENT}\n{HANDSHAKE}\n{script}");
    let python = python().to_string_lossy().into_owned();
    let mut args = vec![
        "run",
        "--keep-log",
        "--export-influx",
        &server.url,
        "--export-database",
        "ci",
    ];
    args.extend_from_slice(flags);
    args.extend(["--", &python, "-c", &program]);
    sandbox
        .command(&args)
        .env("TASK_ID", TASK_ID)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tc-profile run")
}

/// Waits for the run; fails the test unless it exited 0. Its stderr.
fn wait_ok(child: Child) -> String {
    let output: Output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{}: {stderr}", output.status);
    stderr
}

/// Polls (20 s at most) until `query`'s first row has `column` equal to `expected`.
fn wait_for_count(server: &InfluxServer, query: &str, expected: f64) {
    wait_for(|| {
        let rows = server.rows("ci", query);
        let count = rows.first().and_then(|row| row["count"].as_f64());
        std::thread::sleep(std::time::Duration::from_millis(50));
        count == Some(expected)
    });
}

#[test]
fn points_from_curl_and_urllib_reach_the_forced_database_during_the_task_with_its_tags() {
    let sandbox = Sandbox::new();
    let server = InfluxServer::start_with_auth(sandbox.path("influxdb"), USER, PASSWORD);
    server.query("", "CREATE DATABASE ci");
    let curl = r#"import subprocess
subprocess.run(["curl", "-sS", "-o", "/dev/null", "-XPOST", URL + "/write?db=other",
    "--data-binary", "build,stage=compile,task_id=forged seconds=2.5,ok=true"], check=True)"#;
    let script = format!(
        r#"{curl}
answers = [
    write("tests,suite=unit,path=C:\\dir passed=12i,skipped=7u,result=\"pass\" %d" % int(time.time()),
          "db=elsewhere&precision=s")[0],
    write("secret v=1")[0],
]
json.dump(answers, open("answers", "w"))
open("env.txt", "w").write(repr(dict(os.environ)))
try:
    open("parent-env.txt", "wb").write(open("/proc/%d/environ" % os.getppid(), "rb").read())
except OSError as error:
    open("parent-env.txt", "w").write(str(error))
done("written")
wait_for("forwarded")
"#
    );
    let flags = [
        "--metric-scope",
        "stats:put-points:build.*",
        "--metric-scope",
        "stats:put-points:tests.*",
    ];
    let env = [
        ("RUN_ID", "1"),
        ("TASKCLUSTER_WORKER_TYPE", "b-linux"),
        ("TC_PROFILE_INFLUX_USERNAME", USER),
        ("TC_PROFILE_INFLUX_PASSWORD", PASSWORD),
    ];
    let child = spawn_python(&sandbox, &server, &flags, &env, &script);
    wait_for(|| sandbox.path("written").exists());
    // Forwarded while the task still runs: it waits for this test to see the points.
    wait_for_count(&server, r#"SELECT count(seconds) FROM "task.build""#, 1.0);
    wait_for_count(&server, r#"SELECT count(passed) FROM "task.tests""#, 1.0);
    std::fs::write(sandbox.path("forwarded"), "").unwrap();
    let stderr = wait_ok(child);
    assert!(
        stderr.contains("forwarded 2 points to InfluxDB"),
        "{stderr}"
    );

    let answers = read_json(&sandbox.path("answers"));
    assert_eq!(answers, serde_json::json!([204, 403]));
    let build = server.rows("ci", r#"SELECT * FROM "task.build""#);
    assert_eq!(build.len(), 1, "{build:?}");
    assert_eq!(build[0]["seconds"], 2.5);
    assert_eq!(build[0]["ok"], true);
    assert_eq!(build[0]["stage"], "compile");
    assert_eq!(
        build[0]["task_id"], TASK_ID,
        "the task's own task_id is replaced"
    );
    assert_eq!(build[0]["run_id"], "1");
    assert_eq!(build[0]["worker_type"], "b-linux");
    let tests = server.rows("ci", r#"SELECT * FROM "task.tests""#);
    assert_eq!(tests.len(), 1, "{tests:?}");
    assert_eq!(tests[0]["passed"], 12);
    assert_eq!(
        tests[0]["skipped"], 7,
        "InfluxDB 1.x takes no unsigned: an integer"
    );
    assert_eq!(
        tests[0]["path"], "C:_dir",
        "InfluxDB 1.x takes no backslash at a tag's end"
    );
    assert_eq!(tests[0]["result"], "pass");
    assert_eq!(tests[0]["suite"], "unit");
    assert_eq!(tests[0]["task_id"], TASK_ID);
    assert!(server
        .rows("ci", r#"SELECT * FROM "task.secret""#)
        .is_empty());
    let databases = server.query("", "SHOW DATABASES").to_string();
    assert!(
        !databases.contains("other") && !databases.contains("elsewhere"),
        "the database is forced: {databases}"
    );
    // The end-of-run export wrote its summary too, with the same credentials.
    assert_eq!(server.rows("ci", "SELECT * FROM tc_profile_task").len(), 1);

    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    let out_of_scope: f64 = profile_markers(&profile)
        .iter()
        .filter(|m| m.name == "Metrics dropped")
        .filter_map(|m| m.data["outOfScope"].as_f64())
        .sum();
    assert_eq!(out_of_scope, 1.0);
    for file in [
        "env.txt",
        "parent-env.txt",
        "profile_resource-usage.jsonl",
        "profile_resource-usage.json",
    ] {
        let text = std::fs::read(sandbox.path(file)).unwrap();
        let text = String::from_utf8_lossy(&text);
        assert!(!text.contains(PASSWORD), "the password is in {file}");
        assert!(!text.contains(USER), "the user name is in {file}");
    }
}

#[test]
fn an_influxdb_stopped_mid_task_gets_every_point_once_it_is_back_before_the_end() {
    let sandbox = Sandbox::new();
    let server = InfluxServer::start(sandbox.path("influxdb"));
    server.query("", "CREATE DATABASE ci");
    // Three phases of 100 points, each point its own timestamp: up, down, up again.
    let script = r#"
base = time.time_ns()
def phase(number):
    for request in range(10):
        body = "".join("phases,phase=p%d n=%di %d\n" % (number, i, base + number * 1000 + request * 10 + i)
                       for i in range(10))
        assert write(body)[0] == 204
    done("phase%d" % number)
phase(0)
wait_for("stopped")
phase(1)
wait_for("restarted")
phase(2)
"#;
    let child = spawn_python(&sandbox, &server, &[], &[], script);
    wait_for(|| sandbox.path("phase0").exists());
    wait_for_count(&server, r#"SELECT count(n) FROM "task.phases""#, 100.0);
    server.stop();
    std::fs::write(sandbox.path("stopped"), "").unwrap();
    wait_for(|| sandbox.path("phase1").exists());
    // Long enough for the forwarder to fail on the phase's batch and back off.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    server.restart();
    std::fs::write(sandbox.path("restarted"), "").unwrap();
    let stderr = wait_ok(child);
    assert!(!stderr.contains("not forwarded"), "{stderr}");
    assert!(stderr.contains("forwarded 300 points"), "{stderr}");
    for phase in 0..3 {
        let query =
            format!(r#"SELECT count(n), sum(n) FROM "task.phases" WHERE phase = 'p{phase}'"#);
        let rows = server.rows("ci", &query);
        assert_eq!(rows[0]["count"], 100, "phase {phase}");
        // 0..10 in each of 10 requests.
        assert_eq!(rows[0]["sum"], 450, "phase {phase}");
    }
}

#[test]
fn points_unsent_at_the_end_are_counted_in_a_warning_and_the_status_stays_the_commands() {
    let sandbox = Sandbox::new();
    let server = InfluxServer::start(sandbox.path("influxdb"));
    server.query("", "CREATE DATABASE ci");
    server.stop();
    let script = r#"
assert write("late v=1\nlate v=2")[0] == 204
raise SystemExit(3)
"#;
    let child = spawn_python(&sandbox, &server, &[], &[], script);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: 2 of 2 points were not forwarded to InfluxDB at")
            && stderr.contains("they are in the profile"),
        "{stderr}"
    );
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    let late = profile_markers(&profile)
        .iter()
        .filter(|m| m.series() == "task.late.v")
        .map(|m| m.data["count"].as_f64().unwrap())
        .sum::<f64>();
    assert_eq!(late, 2.0);
}

/// `forwarded(n)`: waits (60 s at most) until the InfluxDB at TEST_INFLUX_URL holds n
/// points of `task.load`.
const FORWARDED: &str = r#"
import urllib.parse
def forwarded(n):
    query = urllib.parse.urlencode({"db": "ci", "q": 'SELECT count(n) FROM "task.load"'})
    for _ in range(600):
        answer = json.load(urllib.request.urlopen(os.environ["TEST_INFLUX_URL"] + "/query?" + query))
        series = answer["results"][0].get("series")
        if series and series[0]["values"][0][1] == n:
            return
        time.sleep(0.1)
    raise SystemExit("InfluxDB never held %d points" % n)
"#;

#[test]
fn a_hundred_thousand_points_from_four_writers_reach_influxdb_each_once() {
    let sandbox = Sandbox::new();
    let server = InfluxServer::start(sandbox.path("influxdb"));
    server.query("", "CREATE DATABASE ci");
    // The recorder's CPU from the first write until InfluxDB holds every point.
    let script = format!(
        r#"{RECORDER_CPU}
{LOAD}
{FORWARDED}
before = recorder_cpu()
started = time.time()
failures = load()
written = time.time() - started
forwarded(100000)
json.dump({{"failures": failures, "written": written, "seconds": time.time() - started,
           "cpu": spent(before)}}, open("load", "w"))
"#
    );
    let env = [("TEST_INFLUX_URL", server.url.as_str())];
    let stderr = wait_ok(spawn_python(&sandbox, &server, &[], &env, &script));
    assert!(stderr.contains("forwarded 100000 points"), "{stderr}");
    let load = read_json(&sandbox.path("load"));
    assert_eq!(load["failures"], serde_json::json!([]));
    let seconds = load["seconds"].as_f64().unwrap();
    for writer in 0..4 {
        let query =
            format!(r#"SELECT count(n), sum(n) FROM "task.load" WHERE writer = 'w{writer}'"#);
        let rows = server.rows("ci", &query);
        assert_eq!(rows[0]["count"], 25_000, "writer {writer}");
        // The values 0..25,000 once each.
        assert_eq!(rows[0]["sum"], 312_487_500, "writer {writer}");
    }

    // The baseline: the recorder's CPU over as long a task that writes nothing.
    let baseline = format!(
        r#"{RECORDER_CPU}
import time
before = recorder_cpu()
time.sleep({seconds})
json.dump(spent(before), open("baseline", "w"))
"#
    );
    let idle = Sandbox::new();
    wait_ok(spawn_python(&idle, &server, &[], &env, &baseline));
    let idle_cpu = read_json(&idle.path("baseline"))["total"].as_f64().unwrap();
    let cpu = &load["cpu"];
    let per_thousand = |seconds: f64| seconds * 1000.0 / 100.0;
    eprintln!(
        "influx forward load: 100,000 points written in {:.1} s, in InfluxDB after {seconds:.1} s; \
         recorder {:.2} s CPU, {idle_cpu:.2} s without writes: {:.1} ms per 1,000 points \
         (endpoint threads {:.1} ms, forwarding thread {:.1} ms)",
        load["written"].as_f64().unwrap(),
        cpu["total"].as_f64().unwrap(),
        per_thousand(cpu["total"].as_f64().unwrap() - idle_cpu),
        per_thousand(cpu["endpoint"].as_f64().unwrap()),
        per_thousand(cpu["forward"].as_f64().unwrap()),
    );
    let profile: Value = read_json(&sandbox.path("profile_resource-usage.json"));
    let in_profile: f64 = profile_markers(&profile)
        .iter()
        .filter(|m| m.series().starts_with("task.load.n #writer:"))
        .map(|m| m.data["count"].as_f64().unwrap())
        .sum();
    assert_eq!(in_profile, 100_000.0);
}

#[test]
fn a_sidecar_recorder_forwards_too() {
    let sandbox = Sandbox::new();
    let server = InfluxServer::start(sandbox.path("influxdb"));
    server.query("", "CREATE DATABASE ci");
    let flags = ["--export-influx", &server.url, "--export-database", "ci"];
    let recording = Recording::start(
        &sandbox,
        &[&flags[..], &["--task-env", "task.env"]].concat(),
    );
    // The worker gives the task the URL of --task-env, its token with it.
    let env = std::fs::read_to_string(sandbox.path("task.env")).unwrap();
    let endpoint = env
        .lines()
        .find_map(|line| line.strip_prefix("TASKCLUSTER_INFLUX_URL="))
        .unwrap();
    ureq::post(format!("{endpoint}/write?db=mine"))
        .send("sidecar v=1")
        .unwrap();
    wait_for_count(&server, r#"SELECT count(v) FROM "task.sidecar""#, 1.0);
    let stderr = recording.stop();
    assert!(stderr.contains("forwarded 1 point to InfluxDB"), "{stderr}");
}
