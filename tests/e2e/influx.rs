use crate::util::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/influxdb");
pub(crate) const TASK_ID: &str = "fUAKaIdkSF6K1NlOgx7-LA";

/// A loopback-only InfluxDB started by the repo's script, stopped when dropped.
pub(crate) struct InfluxServer {
    dir: PathBuf,
    pub url: String,
    /// The admin's user name and password, when authentication is on.
    auth: Option<(String, String)>,
}

impl InfluxServer {
    pub fn start(dir: PathBuf) -> InfluxServer {
        let url = start_script(&dir, false);
        InfluxServer {
            dir,
            url,
            auth: None,
        }
    }

    /// With authentication on, and an admin `user` with `password` created.
    pub fn start_with_auth(dir: PathBuf, user: &str, password: &str) -> InfluxServer {
        let url = start_script(&dir, true);
        let mut server = InfluxServer {
            dir,
            url,
            auth: None,
        };
        server.query(
            "",
            &format!("CREATE USER \"{user}\" WITH PASSWORD '{password}' WITH ALL PRIVILEGES"),
        );
        server.auth = Some((user.to_owned(), password.to_owned()));
        server
    }

    /// Stops the server; `restart` starts it again on the same port and data.
    pub fn stop(&self) {
        let status = Command::new(SCRIPT).arg("stop").arg(&self.dir).status();
        assert!(status.unwrap().success());
    }

    pub fn restart(&self) {
        assert_eq!(start_script(&self.dir, false), self.url);
    }

    pub fn query(&self, database: &str, query: &str) -> Value {
        let mut request = ureq::post(format!("{}/query", self.url))
            .query("db", database)
            .query("q", query);
        if let Some((user, password)) = &self.auth {
            request = request.query("u", user).query("p", password);
        }
        let mut response = request
            .send_empty()
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
    }

    /// The rows of a one-series query as objects keyed by column.
    pub fn rows(&self, database: &str, query: &str) -> Vec<serde_json::Map<String, Value>> {
        let result = self.query(database, query);
        let Some(series) = result["results"][0]["series"][0].as_object() else {
            return Vec::new();
        };
        let columns = series["columns"].as_array().unwrap();
        series["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                let names = columns.iter().map(|c| c.as_str().unwrap().to_owned());
                names.zip(row.as_array().unwrap().iter().cloned()).collect()
            })
            .collect()
    }
}

/// `scripts/influxdb start DIR`: its URL.
fn start_script(dir: &Path, auth: bool) -> String {
    let output = Command::new(SCRIPT)
        .arg("start")
        .arg(dir)
        .env("INFLUXDB_AUTH", auth.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "scripts/influxdb start: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let url = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    url
}

impl Drop for InfluxServer {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).arg("stop").arg(&self.dir).status();
    }
}

const METRICS: &str = r#"send() { printf '%s' "$1" > "/dev/udp/$STATSD_HOST/$STATSD_PORT"; }
send $'tests.passed:4|c\ntests.passed:2|c'
send 'compile:250|ms|#target:linux'
send 'queue.depth:7|g'
sleep 0.3"#;

/// Runs METRICS under `run --keep-log FLAGS` as task TASK_ID, with `env` besides; fails
/// the test unless it exits 0.
fn run_metrics(sandbox: &Sandbox, flags: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["run", "--keep-log", "--statsd-udp"];
    args.extend_from_slice(flags);
    args.extend(["--", "bash", "-c", METRICS]);
    let output = sandbox
        .command(&args)
        .env("TASK_ID", TASK_ID)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&args, &output));
    output
}

#[test]
fn a_task_exported_to_a_real_influxdb_is_queried_back() {
    let sandbox = Sandbox::new();
    let server = InfluxServer::start(sandbox.path("influxdb"));
    for database in ["ci", "again"] {
        server.query("", &format!("CREATE DATABASE {database}"));
    }
    let output = run_metrics(
        &sandbox,
        &["--export-influx", &server.url, "--export-database", "ci"],
        &[("RUN_ID", "2"), ("TASKCLUSTER_WORKER_TYPE", "b-linux")],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("exported"), "{stderr}");

    let task = server.rows("ci", "SELECT * FROM tc_profile_task");
    assert_eq!(task.len(), 1, "{task:?}");
    assert_eq!(task[0]["task_id"], TASK_ID);
    assert_eq!(task[0]["run_id"], "2");
    assert_eq!(task[0]["worker_type"], "b-linux");
    assert_eq!(task[0]["ended_early"], false);
    let duration = task[0]["duration_s"].as_f64().unwrap();
    assert!(duration >= 0.3, "{duration}");
    for figure in ["cpu_time_s", "cpu_average", "cpu_peak", "memory_peak_bytes"] {
        assert!(task[0][figure].is_number(), "{figure}: {task:?}");
    }
    let step = server.rows("ci", "SELECT * FROM tc_profile_step WHERE step = 'Command'");
    assert_eq!(step.len(), 1, "{step:?}");
    assert!(step[0]["duration_s"].as_f64().unwrap() >= 0.3);

    let passed =
        r#"SELECT sum(value) FROM "task.tests.passed" WHERE task_id = 'fUAKaIdkSF6K1NlOgx7-LA'"#;
    assert_eq!(server.rows("ci", passed)[0]["sum"].as_f64(), Some(6.0));
    let compile = server.rows("ci", r#"SELECT * FROM "task.compile""#);
    assert_eq!(compile.len(), 1);
    assert_eq!(compile[0]["target"], "linux");
    assert_eq!(compile[0]["max"].as_f64(), Some(250.0));
    let depth = server.rows("ci", r#"SELECT last(value) FROM "task.queue.depth""#);
    assert_eq!(depth[0]["last"].as_f64(), Some(7.0));

    // The kept log exports the same points.
    let log = "profile_resource-usage.jsonl";
    sandbox.run_ok(&[
        "export",
        log,
        "--influx",
        &server.url,
        "--database",
        "again",
    ]);
    assert_eq!(server.rows("again", passed)[0]["sum"].as_f64(), Some(6.0));
    let count = |db: &str| server.rows(db, "SELECT count(duration_s) FROM tc_profile_step");
    assert_eq!(count("again"), count("ci"));

    let output = sandbox.run(&["export", log, "--influx", &server.url, "--database", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("CREATE DATABASE"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A stand-in InfluxDB on 127.0.0.1 that answers each request with the next status and
/// keeps what it was sent.
fn fake_influx(statuses: Vec<u16>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&requests);
    std::thread::spawn(move || {
        for status in statuses {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            while !head.ends_with("\r\n\r\n") {
                if reader.read_line(&mut head).unwrap() == 0 {
                    break;
                }
            }
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            kept.lock()
                .unwrap()
                .push(head + &String::from_utf8_lossy(&body));
            let reply =
                format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            reader.get_mut().write_all(reply.as_bytes()).unwrap();
        }
    });
    (url, requests)
}

#[test]
fn an_export_is_retried_with_the_recorders_credentials_that_the_task_never_sees() {
    let sandbox = Sandbox::new();
    let (url, requests) = fake_influx(vec![503, 500, 204]);
    let args = run_script(
        &[
            "--keep-log",
            "--export-influx",
            &url,
            "--export-database",
            "ci",
        ],
        "env > env.txt; cat /proc/$PPID/environ > parent-env.txt 2>/dev/null; exit 3",
    );
    let output = sandbox
        .command(&args)
        .env("TC_PROFILE_INFLUX_USERNAME", "ci-writer")
        .env("TC_PROFILE_INFLUX_PASSWORD", "s3cret-never-in-the-task")
        .output()
        .unwrap();
    let stderr = assert_exit_code(&args, &output, 3);
    assert!(stderr.contains("after 3 attempts"), "{stderr}");

    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    // base64("ci-writer:s3cret-never-in-the-task")
    let basic = "Basic Y2ktd3JpdGVyOnMzY3JldC1uZXZlci1pbi10aGUtdGFzaw==";
    assert!(
        requests[2]
            .lines()
            .any(|l| l.eq_ignore_ascii_case(&format!("authorization: {basic}"))),
        "{}",
        requests[2]
    );
    assert!(requests[2].starts_with("POST /write?db=ci&precision=ms "));
    assert!(requests[2].contains("tc_profile_task "));

    for file in [
        "env.txt",
        "parent-env.txt",
        "profile_resource-usage.jsonl",
        "profile_resource-usage.json",
    ] {
        let text = std::fs::read(sandbox.path(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        assert!(!text.contains("s3cret"), "the credential is in {file}");
        assert!(!text.contains("ci-writer"), "the user name is in {file}");
    }
}

#[test]
fn a_failed_export_never_changes_the_exit_status() {
    let sandbox = Sandbox::new();
    // A port that was free a moment ago: nothing listens there.
    let url = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let args = run_script(
        &["--export-influx", &url, "--export-database", "ci"],
        "exit 5",
    );
    let output = sandbox.run(&args);
    let stderr = assert_exit_code(&args, &output, 5);
    assert!(
        stderr.contains("warning: export failed") && stderr.contains("after 5 attempts"),
        "{stderr}"
    );
    assert!(sandbox.path("profile_resource-usage.json").exists());
}

#[test]
fn credentials_others_can_read_or_put_in_the_url_are_refused() {
    let sandbox = Sandbox::new();
    let file = sandbox.path("influx.credentials");
    std::fs::write(&file, "username=ci\npassword=s3cr3t-pw\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let file = file.to_str().unwrap();
    let refused = [
        vec![
            "--export-influx",
            "http://127.0.0.1:9",
            "--export-database",
            "ci",
            "--influx-credentials",
            file,
        ],
        vec![
            "--export-influx",
            "http://ci:s3cr3t-pw@127.0.0.1:9",
            "--export-database",
            "ci",
        ],
    ];
    for flags in refused {
        let mut args = vec!["run"];
        args.extend(&flags);
        args.extend(["--", "touch", "ran"]);
        let output = sandbox.run(&args);
        let stderr = assert_exit_code(&args, &output, 2);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            !stderr.contains("s3cr3t-pw"),
            "the secret is not quoted: {stderr}"
        );
        assert!(
            !sandbox.path("ran").exists(),
            "refused before the command runs"
        );
    }
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let output = sandbox.run(&[
        "export",
        "nothing.jsonl",
        "--format",
        "json",
        "--influx-credentials",
        file,
    ]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "the missing input is the error now"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("nothing.jsonl") && !stderr.contains("credentials"),
        "the credentials are taken: {stderr}"
    );
}

#[test]
fn a_failed_export_at_the_end_is_one_warning_that_names_the_cause_once() {
    let sandbox = Sandbox::new();
    // A broadcast address: sendto(2) refuses it (EACCES) without a lookup or a network.
    let output = run_metrics(&sandbox, &["--export-statsd", "255.255.255.255:9"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warning = stderr
        .lines()
        .find(|line| line.contains("export failed"))
        .unwrap_or_else(|| panic!("no warning in {stderr}"));
    assert_eq!(warning.matches("Permission denied").count(), 1, "{warning}");
    assert!(
        warning.ends_with("retry with tc-profile export profile_resource-usage.json"),
        "{warning}"
    );
}

#[test]
fn a_statsd_address_without_a_port_is_refused_before_the_task_runs() {
    let sandbox = Sandbox::new();
    for flags in [
        &[
            "run",
            "--export-statsd",
            "localhost:noport",
            "--",
            "touch",
            "ran",
        ][..],
        &["export", "nothing.jsonl", "--statsd", "localhost"],
    ] {
        let stderr = assert_exit_code(flags, &sandbox.run(flags), 2);
        assert!(stderr.contains("is not HOST:PORT"), "{stderr}");
    }
    assert!(!sandbox.path("ran").exists(), "the task ran");
}

#[test]
fn export_forwards_totals_to_an_upstream_statsd_and_prints_formats() {
    let sandbox = Sandbox::new();
    let upstream = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    upstream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let address = upstream.local_addr().unwrap().to_string();
    run_metrics(&sandbox, &["--export-statsd", &address], &[]);
    let mut received = String::new();
    let mut buffer = [0u8; 2048];
    while !received.contains("task.queue.depth") {
        let length = upstream.recv(&mut buffer).expect("the forwarded packets");
        received.push_str(&String::from_utf8_lossy(&buffer[..length]));
        received.push('\n');
    }
    let tags = format!("#task_id:{TASK_ID}");
    for expected in [
        format!("task.tests.passed:6|c|{tags}"),
        format!("task.compile.max:250|g|{tags},target:linux"),
        format!("task.queue.depth:7|g|{tags}"),
        format!("tc_profile.task.ended_early:0|g|{tags}"),
    ] {
        assert!(
            received.lines().any(|l| l == expected),
            "{expected} in\n{received}"
        );
    }

    let log = "profile_resource-usage.jsonl";
    let json = sandbox.run_ok(&["export", log, "--format", "json"]).stdout;
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["tags"]["task_id"], TASK_ID);
    assert_eq!(json["task"]["ended_early"], false);
    let influx = sandbox
        .run_ok(&["export", log, "--format", "influx"])
        .stdout;
    let influx = String::from_utf8(influx).unwrap();
    assert!(
        influx
            .lines()
            .any(|l| l.starts_with("task.tests.passed,task_id=")),
        "{influx}"
    );
}
