//! The InfluxDB endpoint: a task writing with curl and with Python's standard library, the
//! points becoming tracks; 401 without the token; partial writes, 403, 413 answers; gzip, a
//! bomb, 2.x writes, a 24.5 MB request in bounded memory, a real InfluxDB's answers; 100,000
//! points from 4 concurrent writers, all in the profile, none doubled.

use crate::util::*;
use serde_json::Value;
use std::process::Command;

/// Python helpers for the task scripts: `write(body, query)` POSTs to the endpoint and
/// returns (status, body); `ping()`.
pub(crate) const CLIENT: &str = r#"
import json, os, sys, urllib.request, urllib.error
URL = os.environ["TASKCLUSTER_INFLUX_URL"]
def write(body, query="db=ci"):
    request = urllib.request.Request(URL + "/write?" + query, data=body.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
def ping():
    with urllib.request.urlopen(URL + "/ping", timeout=30) as answer:
        return answer.status
"#;

/// Python: `load()` writes 100,000 points from 4 threads, each 250 requests of 100 points
/// of its own series (`load,writer=wN`, `n` = 0 to 24,999 once each, each point its own
/// timestamp); the first failed answers.
pub(crate) const LOAD: &str = r#"
import threading, time
def load():
    base = time.time_ns()
    failures = []
    def writer(number):
        for request in range(250):
            body = "".join("load,writer=w%d n=%di %d\n" % (number, request * 100 + i, base + request * 100 + i)
                           for i in range(100))
            status, text = write(body)
            if status != 204:
                failures.append((status, text))
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
    return failures[:5]
"#;

/// Python: `recorder_cpu()`, the recorder's CPU seconds (utime + stime, from /proc) in all,
/// in the endpoint's threads and in the forwarding thread; `spent(before)`, since then.
pub(crate) const RECORDER_CPU: &str = r#"
def cpu_of(stat):
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
def recorder_cpu():
    parent = os.getppid()
    seconds = {"total": cpu_of(open("/proc/%d/stat" % parent).read()), "endpoint": 0, "forward": 0}
    for thread in os.listdir("/proc/%d/task" % parent):
        stat = open("/proc/%d/task/%s/stat" % (parent, thread)).read()
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        for part, prefix in [("endpoint", "tc-profile-infl"), ("forward", "tc-profile-forw")]:
            if name.startswith(prefix):
                seconds[part] += cpu_of(stat)
    return seconds
def spent(before):
    after = recorder_cpu()
    return {part: after[part] - before[part] for part in after}
"#;

/// Runs `tc-profile run FLAGS -- python3 -c SCRIPT` (CLIENT first) and returns the profile.
fn run_python(sandbox: &Sandbox, flags: &[&str], script: &str) -> Value {
    let program = format!("{CLIENT}\n{script}");
    let python = python().to_string_lossy().into_owned();
    let mut args = vec!["run", "-q"];
    args.extend_from_slice(flags);
    args.extend(["--", &python, "-c", &program]);
    sandbox.run_ok(&args);
    read_json(&sandbox.path("profile_resource-usage.json"))
}

fn series<'a>(markers: &'a [MarkerRow], name: &str) -> Vec<&'a Value> {
    markers
        .iter()
        .filter(|m| m.series() == name)
        .map(|m| &m.data)
        .collect()
}

fn sum_of(markers: &[MarkerRow], name: &str, key: &str) -> f64 {
    series(markers, name)
        .iter()
        .map(|data| data[key].as_f64().unwrap())
        .sum()
}

fn has_curl() -> bool {
    Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn points_written_with_curl_and_python_urllib_become_tracks() {
    let sandbox = Sandbox::new();
    // curl when the machine has it (nothing is installed at test time), else urllib again.
    let curl = if has_curl() {
        r#"subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-XPOST",
            URL + "/write?db=ci", "--data-binary", "build,stage=compile seconds=2.5,ok=true"],
            stdout=open("curl-status", "w"), check=True)"#
    } else {
        r#"open("curl-status", "w").write(str(write("build,stage=compile seconds=2.5,ok=true")[0]))"#
    };
    let script = format!(
        r#"import subprocess, time
{curl}
status, _ = write("tests,suite=unit passed=12i,failed=0i,result=\"pass\" %d" % int(time.time()), "db=ci&precision=s")
open("python-status", "w").write("%d %d" % (status, ping()))
"#
    );
    let profile = run_python(&sandbox, &[], &script);
    let status = |name| std::fs::read_to_string(sandbox.path(name)).unwrap();
    assert_eq!(status("curl-status"), "204");
    assert_eq!(status("python-status"), "204 204");
    assert_processed_profile(&profile);
    let markers = profile_markers(&profile);
    let seconds = series(&markers, "task.build.seconds #stage:compile");
    assert_eq!(seconds.len(), 1, "one interval");
    assert_eq!(seconds[0]["type"], "Histogram");
    assert_eq!(seconds[0]["count"], 1.0);
    assert_eq!(seconds[0]["mean"], 2.5);
    assert_eq!(seconds[0]["tags"], "stage:compile");
    assert_eq!(
        series(&markers, "task.build.ok #stage:compile")[0]["max"],
        1.0
    );
    assert_eq!(
        sum_of(&markers, "task.tests.passed #suite:unit", "count"),
        1.0
    );
    assert_eq!(
        series(&markers, "task.tests.passed #suite:unit")[0]["mean"],
        12.0
    );
    assert_eq!(
        series(&markers, "task.tests.failed #suite:unit")[0]["mean"],
        0.0
    );
    assert_eq!(
        series(&markers, "task.tests.result #suite:unit")[0]["distinct"],
        1.0
    );
}

#[test]
fn a_write_without_the_token_is_401_and_not_recorded() {
    let sandbox = Sandbox::new();
    let script = r#"
import base64
base, token = URL.rsplit("/", 1)
def write_to(url, body, query="db=ci"):
    global URL
    URL, saved = url, URL
    try:
        return write(body, query)
    finally:
        URL = saved
def write_with(authorization, body):
    request = urllib.request.Request(base + "/write?db=ci", data=body.encode(), method="POST",
                                     headers={"Authorization": authorization})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return [answer.status, answer.read().decode()]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]
basic = lambda pair: "Basic " + base64.b64encode(pair.encode()).decode()
answers = {
    "none": write_to(base, "stolen v=1"),
    "wrong basic": write_with(basic("tc:" + "f" * len(token)), "stolen v=5"),
    "basic": write_with(basic("tc:" + token), "taken v=1"),
    "token header": write_with("Token " + token, "taken v=1"),
    "wrong": write_to(base + "/" + "0" * len(token), "stolen v=2"),
    "short": write_to(base + "/" + token[:-1], "stolen v=3"),
    "wrong p": write_to(base, "stolen v=4", "db=ci&u=tc&p=" + "f" * len(token)),
    "p": write_to(base, "taken v=1", "db=ci&u=tc&p=" + token),
    "path": write("taken v=2"),
}
URL = base
answers["ping"] = [ping(), ""]
json.dump(answers, open("answers", "w"))
"#;
    let profile = run_python(&sandbox, &[], script);
    let answers = read_json(&sandbox.path("answers"));
    let status = |name: &str| answers[name][0].as_u64().unwrap();
    let error = |name: &str| answers[name][1].as_str().unwrap().to_owned();
    assert_eq!(status("none"), 401);
    assert_eq!(
        error("none"),
        r#"{"error":"unable to parse authentication credentials"}"#
    );
    for refused in ["wrong", "short", "wrong p", "wrong basic"] {
        assert_eq!(status(refused), 401, "{refused}");
        assert_eq!(error(refused), r#"{"error":"authorization failed"}"#);
    }
    let taken = ["p", "path", "basic", "token header", "ping"].map(status);
    assert_eq!(taken, [204; 5], "{answers}");
    let markers = profile_markers(&profile);
    assert!(series(&markers, "task.stolen.v").is_empty());
    assert!(
        series(&markers, "Metrics dropped").is_empty(),
        "not even counted"
    );
    assert_eq!(sum_of(&markers, "task.taken.v", "count"), 4.0);
    let url = profile["meta"]["tcProfile"]["influx"]["url"]
        .as_str()
        .unwrap();
    assert_eq!(
        url.matches('/').count(),
        2,
        "no token in the profile: {url}"
    );
}

#[test]
fn partial_writes_get_400_naming_the_dropped_all_out_of_scope_403_and_bodies_over_25_mb_413() {
    let sandbox = Sandbox::new();
    let script = r#"
answers = {
    "partial": write("ok v=1\nok v=\nok,host=a w=2"),
    "scope": write("secret v=1\nok v=3"),
    "all out of scope": write("secret v=1\nsecret v=2"),
    "all malformed": write("ok v=\nok"),
    "big": write("ok v=1\n" * 3600000),
    "precision": write("ok v=1", "precision=fortnight"),
}
json.dump(answers, open("answers", "w"))
"#;
    let flags = ["--metric-scope", "stats:put-points:ok.*"];
    let profile = run_python(&sandbox, &flags, script);
    let answers = read_json(&sandbox.path("answers"));
    let answer = |name: &str| {
        let status = answers[name][0].as_u64().unwrap();
        let error = serde_json::from_str::<Value>(answers[name][1].as_str().unwrap());
        (
            status,
            error.map_or(String::new(), |e| e["error"].to_string()),
        )
    };
    // InfluxDB's words: `partial write: REASON dropped=N`.
    let (status, error) = answer("partial");
    assert_eq!(status, 400, "{error}");
    assert_eq!(
        error,
        r#""partial write: unable to parse 'ok v=': missing field value dropped=1""#
    );
    let (status, error) = answer("scope");
    assert_eq!(status, 400, "{error}");
    assert_eq!(
        error,
        r#""partial write: 'secret v=1' needs the scope stats:put-points:secret.v dropped=1""#
    );
    let (status, error) = answer("all out of scope");
    assert_eq!(status, 403, "{error}");
    assert!(error.contains("stats:put-points:secret.v"), "{error}");
    let (status, error) = answer("all malformed");
    assert_eq!(status, 400, "{error}");
    assert!(error.starts_with(r#""unable to parse 'ok v='"#), "{error}");
    let (status, error) = answer("big");
    assert_eq!(status, 413, "{error}");
    assert!(error.contains("over 25000000 bytes"), "{error}");
    assert_eq!(answer("precision").0, 400);
    let markers = profile_markers(&profile);
    // The valid lines of the partial write and of the refused one are taken, once.
    assert_eq!(sum_of(&markers, "task.ok.v", "count"), 2.0);
    assert_eq!(sum_of(&markers, "task.ok.w #host:a", "count"), 1.0);
    assert!(series(&markers, "task.secret.v").is_empty());
    let dropped = |key| {
        series(&markers, "Metrics dropped")
            .iter()
            .filter_map(|data| data[key].as_f64())
            .sum::<f64>()
    };
    assert_eq!(dropped("malformed"), 3.0);
    assert_eq!(dropped("outOfScope"), 3.0);
}

#[test]
fn a_hundred_thousand_points_from_four_concurrent_writers_are_all_taken_once() {
    let sandbox = Sandbox::new();
    // Each writer sends 250 requests of 100 points of its own series; the recorder's
    // endpoint threads' CPU time (from /proc) is written out for the closing note.
    let script = format!(
        r#"{LOAD}
{RECORDER_CPU}
before = recorder_cpu()
started = time.time()
failures = load()
seconds = time.time() - started
cpu = spent(before)["endpoint"]
json.dump({{"failures": failures, "seconds": seconds, "cpu": cpu}}, open("load", "w"))
"#
    );
    let started = std::time::Instant::now();
    let profile = run_python(&sandbox, &[], &script);
    let load = read_json(&sandbox.path("load"));
    assert_eq!(load["failures"], serde_json::json!([]));
    let markers = profile_markers(&profile);
    for writer in 0..4 {
        let name = format!("task.load.n #writer:w{writer}");
        assert_eq!(sum_of(&markers, &name, "count"), 25_000.0, "{name}");
        // The values 0..25,000 once each: their mean is 12,499.5, weighted by count.
        let weighted: f64 = series(&markers, &name)
            .iter()
            .map(|d| d["mean"].as_f64().unwrap() * d["count"].as_f64().unwrap())
            .sum();
        assert!((weighted / 25_000.0 - 12_499.5).abs() < 0.01, "{name}");
    }
    eprintln!(
        "influx load: 100,000 points in {:.1} s; endpoint threads {:.3} s CPU, {:.1} ms per 1,000 points",
        load["seconds"].as_f64().unwrap(),
        load["cpu"].as_f64().unwrap(),
        load["cpu"].as_f64().unwrap() * 1000.0 / 100.0,
    );
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
}

#[test]
fn a_gzip_bomb_is_413_naming_the_cap_and_the_recorder_stays_small() {
    let sandbox = Sandbox::new();
    // 256 MiB of zeros, one line, some 250 kB gzipped; then an honest gzip write. The
    // recorder's peak memory (its parent's VmHWM) is read after both.
    let script = r#"
import gzip, http.client, urllib.parse
def post(body, headers):
    request = urllib.request.Request(URL + "/write?db=ci", data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return [answer.status, answer.read().decode()]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]
def post_chunked(body, headers):
    # An iterable body: http.client sends it in chunks, as Telegraf streams its gzip.
    url = urllib.parse.urlsplit(URL)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    pieces = [body[at:at + 7] for at in range(0, len(body), 7)]
    connection.request("POST", url.path + "/write?db=ci", body=iter(pieces), headers=headers)
    answer = connection.getresponse()
    return [answer.status, answer.read().decode()]
bomb = gzip.compress(b"0" * (256 << 20), 9)
answers = {
    "chunked gzip": post_chunked(gzip.compress(b"chunked v=1\nchunked v=2\n"), {"Content-Encoding": "gzip"}),
    "chunked": post_chunked(b"chunked v=3\n", {}),
    "bomb": post(bomb, {"Content-Encoding": "gzip"}),
    "gzip": post(gzip.compress(b"zipped v=1\nzipped v=2\n"), {"Content-Encoding": "gzip"}),
    "brotli": post(b"x", {"Content-Encoding": "br"}),
    "corrupt": post(b"\x1f\x8b not really", {"Content-Encoding": "gzip"}),
}
status = open("/proc/%d/status" % os.getppid()).read()
answers["peak_kib"] = int(status.split("VmHWM:")[1].split()[0])
answers["bomb_bytes"] = len(bomb)
json.dump(answers, open("answers", "w"))
"#;
    let profile = run_python(&sandbox, &[], script);
    let answers = read_json(&sandbox.path("answers"));
    assert_eq!(answers["bomb"][0], 413, "{answers}");
    let error = answers["bomb"][1].as_str().unwrap();
    assert!(error.contains("times its size, the cap"), "{error}");
    assert_eq!(answers["gzip"][0], 204, "{answers}");
    assert_eq!(answers["chunked gzip"][0], 204, "{answers}");
    assert_eq!(answers["chunked"][0], 204, "{answers}");
    assert_eq!(answers["brotli"][0], 415, "{answers}");
    assert_eq!(answers["corrupt"][0], 400, "{answers}");
    let peak_kib = answers["peak_kib"].as_u64().unwrap();
    eprintln!(
        "gzip bomb of {} bytes (256 MiB decompressed): recorder peak RSS {peak_kib} KiB",
        answers["bomb_bytes"]
    );
    assert!(peak_kib < 100 << 10, "recorder peak {peak_kib} KiB");
    let markers = profile_markers(&profile);
    assert_eq!(sum_of(&markers, "task.zipped.v", "count"), 2.0);
    assert_eq!(sum_of(&markers, "task.chunked.v", "count"), 3.0);
}

#[test]
fn the_2x_write_api_takes_a_token_header_and_answers_in_2x_words() {
    let sandbox = Sandbox::new();
    let script = r#"
host, token = os.environ["INFLUX_HOST"], os.environ["INFLUX_TOKEN"]
def call(path, body=None, authorization=None):
    headers = {"Authorization": authorization} if authorization else {}
    method = "GET" if body is None else "POST"
    request = urllib.request.Request(host + path, data=body and body.encode(), method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return [answer.status, answer.read().decode()]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]
write = "/api/v2/write?org=tc-profile&bucket=ci&precision=s"
answers = {
    "write": call(write, "v2 v=1\nv2 v=2", "Token " + token),
    "no token": call(write, "v2 v=5"),
    "wrong token": call(write, "v2 v=5", "Token " + "0" * len(token)),
    "health": call("/health"),
    "buckets": call("/query?q=SHOW%20DATABASES", None, "Token " + token),
    "over cap": call(write, "".join("wide,n=%d v=1\n" % n for n in range(1001)), "Token " + token),
}
json.dump(answers, open("answers", "w"))
"#;
    let profile = run_python(&sandbox, &[], script);
    let answers = read_json(&sandbox.path("answers"));
    let body =
        |name: &str| -> Value { serde_json::from_str(answers[name][1].as_str().unwrap()).unwrap() };
    assert_eq!(answers["write"][0], 204, "{answers}");
    assert_eq!(answers["no token"][0], 401, "{answers}");
    assert_eq!(body("no token")["code"], "unauthorized");
    assert_eq!(answers["wrong token"][0], 401, "{answers}");
    assert_eq!(answers["health"][0], 200, "{answers}");
    assert_eq!(body("health")["status"], "pass");
    assert_eq!(
        body("buckets")["results"][0]["series"][0]["values"],
        serde_json::json!([["tc-profile"], ["ci"]])
    );
    // The series cap, 1,000: `v2.v` and 999 of these series taken, the two past it counted.
    assert_eq!(answers["over cap"][0], 400, "{answers}");
    assert_eq!(
        body("over cap"),
        serde_json::json!({"code": "invalid",
            "message": "partial write: 2 values over the cap of 1000 series dropped=2"})
    );
    let markers = profile_markers(&profile);
    assert_eq!(sum_of(&markers, "task.v2.v", "count"), 2.0);
    assert!(series(&markers, "task.v2.v")[0]["tags"].is_null());
}

#[test]
fn a_partial_write_is_answered_as_a_real_influxdb_answers_it() {
    let sandbox = Sandbox::new();
    let server = crate::influx::InfluxServer::start(sandbox.path("influxdb"));
    let real = &server.url;
    // The same bodies to the real InfluxDB (scripts/influxdb) and to the endpoint.
    let script = format!(
        r#"
REAL = "{real}"
def post(url, body):
    request = urllib.request.Request(url, data=body.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return [answer.status, answer.read().decode()]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]
post(REAL + "/query?q=CREATE%20DATABASE%20ci", "")
bodies = {{"partial": "ok v=1\nok v=\nok,host=a w=2", "none parse": "ok v=\nok", "all good": "ok v=1"}}
answers = {{name: {{"real": post(REAL + "/write?db=ci", body), "ours": write(body)}}
           for name, body in bodies.items()}}
json.dump(answers, open("answers", "w"))
"#
    );
    run_python(&sandbox, &[], &script);
    let answers = read_json(&sandbox.path("answers"));
    for name in ["partial", "none parse", "all good"] {
        let (real, ours) = (&answers[name]["real"], &answers[name]["ours"]);
        assert_eq!(real[0], ours[0], "{name}: {answers}");
        let error = |answer: &Value| -> String {
            let body = answer[1].as_str().unwrap();
            serde_json::from_str::<Value>(body).map_or(String::new(), |e| e["error"].to_string())
        };
        // InfluxDB counts dropped=0 for lines that do not parse; the endpoint counts them.
        let reason = |answer: &Value| error(answer).split(" dropped=").next().unwrap().to_owned();
        assert_eq!(reason(real), reason(ours), "{name}: {answers}");
    }
    assert!(answers["partial"]["ours"][1]
        .as_str()
        .unwrap()
        .ends_with("dropped=1\"}"));
}

#[test]
fn a_body_of_almost_25_mb_is_taken_whole_in_bounded_memory() {
    let sandbox = Sandbox::new();
    // A million points, 24 MB, in one request; the recorder's peak memory after it.
    let script = r#"
body = "".join("many,host=h%d,job=build-linux64 v=%di\n" % (i % 10, i) for i in range(600000))
status = write(body)
peak = open("/proc/%d/status" % os.getppid()).read()
json.dump({"bytes": len(body), "status": status,
           "peak_kib": int(peak.split("VmHWM:")[1].split()[0])}, open("answers", "w"))
"#;
    let profile = run_python(&sandbox, &[], script);
    let answers = read_json(&sandbox.path("answers"));
    assert_eq!(answers["status"][0], 204, "{answers}");
    let bytes = answers["bytes"].as_u64().unwrap();
    assert!(bytes > 24_000_000 && bytes < 25_000_000, "{bytes}");
    let peak_kib = answers["peak_kib"].as_u64().unwrap();
    eprintln!("a {bytes}-byte request of 600,000 points: recorder peak RSS {peak_kib} KiB");
    let markers = profile_markers(&profile);
    let count: f64 = (0..10)
        .map(|host| {
            let name = format!("task.many.v #host:h{host},job:build-linux64");
            sum_of(&markers, &name, "count")
        })
        .sum();
    assert_eq!(count, 600_000.0);
    assert!(peak_kib < 64 << 10, "recorder peak {peak_kib} KiB");
}
