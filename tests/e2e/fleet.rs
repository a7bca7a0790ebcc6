//! `fleet`: a generated fleet of three task kinds with known CPU and memory shapes gives
//! the p95s computed here, the expected type per kind, no smaller type for the kind with an
//! OOM kill; the same from InfluxDB after `export`; and its HTML page in Chromium.

use crate::influx::InfluxServer;
use crate::synthetic::{test_meta, LogBuilder, GIB};
use crate::util::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use tc_profile_format::schema::{category, data_type, source, track};
use tc_profile_format::{Marker, TaskInfo};

/// A kind of task: its pool and the shape of its tasks.
struct Kind {
    worker_type: &'static str,
    instance_type: &'static str,
    cores: u32,
    memory_gib: u64,
    tasks: usize,
    /// The task's own CPU at its busiest, in cores, from `low` to `high` over the tasks.
    cores_used: (f64, f64),
    /// The memory peak, GiB, likewise.
    peak_gib: (f64, f64),
    /// The task whose cgroup had an OOM kill.
    oom_task: Option<usize>,
    name: fn(usize) -> String,
}

const KINDS: [Kind; 3] = [
    Kind {
        worker_type: "build-large",
        instance_type: "m5.4xlarge",
        cores: 16,
        memory_gib: 64,
        tasks: 120,
        cores_used: (2.0, 5.0),
        peak_gib: (6.0, 10.0),
        oom_task: None,
        name: |_| "build-linux64/opt".to_owned(),
    },
    Kind {
        worker_type: "test-medium",
        instance_type: "c5.2xlarge",
        cores: 8,
        memory_gib: 16,
        tasks: 100,
        cores_used: (5.5, 7.5),
        peak_gib: (3.0, 5.0),
        oom_task: None,
        name: |i| format!("test-linux64/opt-xpcshell-{}", i % 8 + 1),
    },
    Kind {
        worker_type: "lint-small",
        instance_type: "m5.xlarge",
        cores: 4,
        memory_gib: 16,
        tasks: 60,
        cores_used: (0.5, 1.0),
        peak_gib: (2.0, 3.0),
        oom_task: Some(7),
        name: |i| format!("lint-{}", i % 3),
    },
];

/// What the default catalog (reports/src/fleet/instances.csv) answers, worked out by hand:
/// build needs 4.85 / 0.75 = 6.5 cores and 10 / 0.75 = 13.3 GiB: c5.2xlarge ($0.34 an
/// hour; m5.2xlarge is $0.384) instead of m5.4xlarge ($0.768). test needs 7.45 / 0.75 =
/// 9.9 cores and 6.7 GiB: 16 cores, the cheapest n2-highcpu-16 ($0.573584), more than its
/// c5.2xlarge. lint had an OOM kill: no type.
const EXPECTED: [(&str, &str, Option<&str>); 3] = [
    ("build-large", "smaller", Some("c5.2xlarge")),
    ("lint-small", "oom-killed", None),
    ("test-medium", "larger", Some("n2-highcpu-16")),
];

/// The task's figures, spread evenly from low to high over the kind's tasks (in an
/// order that mixes them).
fn spread((low, high): (f64, f64), task: usize, tasks: usize) -> f64 {
    let step = (task * 37) % tasks;
    low + (high - low) * step as f64 / (tasks - 1) as f64
}

fn duration_s(task: usize) -> u32 {
    30 + (task % 7) as u32 * 5
}

/// One task's log: its own CPU at `busy` cores but for its first fifth (a tenth of that),
/// so that its p95 is `busy`; the machine's memory at half the peak but one second.
fn task_log(kind: &Kind, task: usize, start_time: f64) -> Vec<u8> {
    let mut meta = test_meta(kind.cores, kind.memory_gib * GIB);
    meta.start_time = start_time;
    meta.sources
        .extend([source::PROCESSES.into(), source::OOM_KILLS.into()]);
    meta.task = TaskInfo {
        task_id: Some(format!("{}-{task}", kind.worker_type)),
        run_id: Some("0".into()),
        worker_type: Some(kind.worker_type.into()),
        instance_type: Some(kind.instance_type.into()),
        name: Some((kind.name)(task)),
        ..TaskInfo::default()
    };
    let mut log = LogBuilder::with_meta(&meta);
    let busy = spread(kind.cores_used, task, kind.tasks);
    let peak = spread(kind.peak_gib, task, kind.tasks) * GIB as f64;
    let duration = duration_s(task);
    for second in 0..duration {
        let (start, end) = (f64::from(second) * 1000.0, f64::from(second + 1) * 1000.0);
        let cores = if second < duration / 5 {
            busy / 10.0
        } else {
            busy
        };
        let share = cores / f64::from(kind.cores);
        let used = if second == 10 { peak } else { peak / 2.0 };
        let interval = |name: &str, data: Value| {
            Marker::interval(name, start, end)
                .with_category(category::OTHER)
                .with_data(data)
        };
        log.marker(interval(
            track::CPU,
            json!({"type": data_type::CPU, "user": share}),
        ))
        .marker(interval(
            track::MEMORY,
            json!({"type": data_type::MEMORY, "used": used.round() as u64, "swap": 0}),
        ))
        .marker(interval(
            track::TASK_CPU,
            json!({"type": data_type::TASK_CPU, "cpu": share}),
        ));
    }
    if kind.oom_task == Some(task) {
        log.marker(
            Marker::instant(track::OOM_KILL, 20_000.0)
                .with_category(category::OTHER)
                .with_data(
                    json!({"type": data_type::OOM_KILL, "kills": 1, "process": "eslint",
                                  "pid": 42, "cgroup": "/task"}),
                ),
        );
    }
    log.footer(f64::from(duration)).bytes()
}

/// The logs of every kind's tasks in `dir` (some gzipped, under a subdirectory), their
/// start a day ago.
fn write_fleet(dir: &Path) -> Vec<PathBuf> {
    let day_ago = now_ms() - 86_400_000.0;
    let mut paths = Vec::new();
    for kind in &KINDS {
        let kind_dir = dir.join(kind.worker_type);
        std::fs::create_dir_all(&kind_dir).unwrap();
        for task in 0..kind.tasks {
            let bytes = task_log(kind, task, day_ago + task as f64 * 60_000.0);
            let path = if task % 4 == 0 {
                let path = kind_dir.join(format!("{task}.jsonl.gz"));
                let mut encoder =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut encoder, &bytes).unwrap();
                std::fs::write(&path, encoder.finish().unwrap()).unwrap();
                path
            } else {
                let path = kind_dir.join(format!("{task}.jsonl"));
                std::fs::write(&path, bytes).unwrap();
                path
            };
            paths.push(path);
        }
    }
    paths
}

fn now_ms() -> f64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.unwrap().as_secs_f64() * 1000.0
}

/// The value at rank ⌈0.95·n⌉: computed here, apart from the binary's.
fn p95(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[(values.len() * 95).div_ceil(100) - 1]
}

/// Checks every group of a `fleet --json` answer against the kinds' shapes.
fn assert_expected_groups(report: &Value) {
    assert_eq!(report["fleetVersion"], 1);
    let groups = report["groups"].as_array().unwrap();
    let keys: Vec<&str> = groups.iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        ["build-large", "lint-small", "test-medium"],
        "{report:#}"
    );
    for (key, advice, instance) in EXPECTED {
        let group = groups.iter().find(|g| g["key"] == key).unwrap();
        let kind = KINDS.iter().find(|k| k.worker_type == key).unwrap();
        let cores: Vec<f64> = (0..kind.tasks)
            .map(|t| spread(kind.cores_used, t, kind.tasks))
            .collect();
        let peaks: Vec<f64> = (0..kind.tasks)
            .map(|t| (spread(kind.peak_gib, t, kind.tasks) * GIB as f64).round())
            .collect();
        let context = format!("{key}: {group:#}");
        assert_eq!(group["tasks"], kind.tasks, "{context}");
        let durations: Vec<f64> = (0..kind.tasks).map(|t| f64::from(duration_s(t))).collect();
        for (figure, values) in [
            ("coresUsed", cores),
            ("memoryPeakBytes", peaks),
            ("durationS", durations),
        ] {
            let max = values.iter().copied().fold(0.0, f64::max);
            for (quantile, want) in [("p95", p95(values)), ("max", max)] {
                let got = group[figure][quantile].as_f64().unwrap();
                let close = (got - want).abs() < 1e-6 * want.max(1.0);
                assert!(close, "{figure} {quantile} should be {want}: {context}");
            }
        }
        assert_eq!(group["offeredCores"], f64::from(kind.cores), "{context}");
        assert_eq!(
            group["oomKills"],
            u64::from(kind.oom_task.is_some()),
            "{context}"
        );
        assert_eq!(group["recommendation"]["advice"], advice, "{context}");
        assert_eq!(
            group["recommendation"]["instanceType"]["name"].as_str(),
            instance,
            "{context}"
        );
    }
    let build = &groups[0];
    let mean_hours = build["meanDurationS"].as_f64().unwrap() / 3600.0;
    let saving = build["recommendation"]["savingPer1000Tasks"]
        .as_f64()
        .unwrap();
    assert!(
        (saving - (0.768 - 0.34) * mean_hours * 1000.0).abs() < 1e-6,
        "{build:#}"
    );
}

#[test]
fn a_generated_fleet_gives_the_p95s_and_types_computed_here_and_no_smaller_type_after_an_oom_kill()
{
    let sandbox = Sandbox::new();
    write_fleet(&sandbox.path("tasks"));
    std::fs::write(sandbox.path("tasks/garbage.json"), "not a profile").unwrap();
    let output = sandbox.run_ok(&["fleet", "tasks", "--json", "-o", "fleet.html"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_expected_groups(&report);
    assert_eq!(report["unreadable"], 1, "{report:#}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("garbage.json"),
        "the unreadable file is named: {stderr}"
    );

    let text = sandbox.run_ok(&["fleet", "tasks", "--by", "task-name"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("fleet by task-name: 280 tasks in 3 groups, 1 inputs unreadable\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  test-linux64/opt-xpcshell-N: n2-highcpu-16 "),
        "{text}"
    );
    let output = sandbox.run_ok(&["fleet", "tasks", "--by", "pool"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no task has a pool tag: they are one group, (none)"),
        "{stderr}"
    );
    assert!(
        text.contains("\n  lint-N: 1 OOM kill in 1 task: not smaller"),
        "{text}"
    );
}

#[test]
fn influx_after_export_gives_the_same_answers_as_the_profiles() {
    let sandbox = Sandbox::new();
    let server = InfluxServer::start(sandbox.path("influxdb"));
    server.query("", "CREATE DATABASE ci");
    for log in write_fleet(&sandbox.path("tasks")) {
        let log = log.to_str().unwrap();
        sandbox.run_ok(&["export", log, "--influx", &server.url, "--database", "ci"]);
    }
    let flags = [
        "fleet",
        "--influx",
        &server.url,
        "--database",
        "ci",
        "--since",
        "30d",
    ];
    let output = sandbox.run_ok(&[&flags[..], &["--json"]].concat());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_expected_groups(&report);

    let output = sandbox.run(&[&flags[..4], &["nope"]].concat());
    let stderr = assert_exit_code(&flags, &output, 2);
    assert!(stderr.contains("has no database \"nope\""), "{stderr}");
    let by_name = sandbox.run_ok(&[&flags[..], &["--by", "task-name", "--json"]].concat());
    let by_name: Value = serde_json::from_slice(&by_name.stdout).unwrap();
    let keys: Vec<&str> = by_name["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        ["build-linux64/opt", "lint-N", "test-linux64/opt-xpcshell-N"]
    );

    let output = sandbox.run(&[&flags[..5], &["--since", "1x"]].concat());
    let stderr = assert_exit_code(&flags, &output, 2);
    assert!(stderr.contains("'1x' is not an age like 30d"), "{stderr}");
}

/// The Chromium that `scripts/chromium` found or installed; None (the test skips, saying
/// so) when the script was not run.
fn chromium() -> Option<PathBuf> {
    let stamp = concat!(env!("CARGO_TARGET_TMPDIR"), "/chromium/chromium-path");
    match std::fs::read_to_string(stamp) {
        Ok(path) => Some(PathBuf::from(path.trim())),
        Err(_) => {
            eprintln!(
                "skipped: scripts/chromium was not run ({stamp} is absent); CI runs it: \
                 scripts/chromium \"${{CARGO_TARGET_DIR:-target}}/tmp/chromium\""
            );
            None
        }
    }
}

/// Runs headless Chromium on `page` with `flags`, no network of its own, a new profile:
/// its output.
fn run_chromium(
    chromium: &Path,
    sandbox: &Sandbox,
    page: &Path,
    flags: &[&str],
) -> std::process::Output {
    let user_data = tempfile::tempdir_in(sandbox.dir()).unwrap();
    let mut command = std::process::Command::new(chromium);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", user_data.path().display()))
        .args(flags)
        .arg(format!("file://{}", page.display()));
    let output = command.output().expect("run chromium");
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn the_html_report_opens_in_chromium_with_every_group_s_charts_and_no_console_error() {
    let Some(chromium) = chromium() else { return };
    let sandbox = Sandbox::new();
    write_fleet(&sandbox.path("tasks"));
    sandbox.run_ok(&["fleet", "tasks", "-o", "fleet.html"]);
    let page = sandbox.path("fleet.html");

    let dom = run_chromium(&chromium, &sandbox, &page, &["--dump-dom"]);
    let text = String::from_utf8(dom.stdout).unwrap();
    for (index, (key, _, _)) in EXPECTED.iter().enumerate() {
        for chart in [
            format!("<svg id=\"cores-{index}\""),
            format!("<svg id=\"memory-{index}\""),
        ] {
            assert!(text.contains(&chart), "{chart} of {key} in\n{text}");
        }
        assert!(
            text.contains(&format!("<h2>{key}</h2>")),
            "{key} in\n{text}"
        );
    }
    let console = String::from_utf8_lossy(&dom.stderr);
    let errors: Vec<&str> = console
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("net::ERR"))
        .collect();
    assert!(errors.is_empty(), "console: {errors:#?}");

    let screenshot = sandbox.path("fleet.png");
    let flag = format!("--screenshot={}", screenshot.display());
    run_chromium(
        &chromium,
        &sandbox,
        &page,
        &[&flag, "--window-size=1280,1400"],
    );
    let png = std::fs::read(&screenshot).expect("the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 1280);
    // A blank page of this size compresses to a few kilobytes; text and charts do not.
    assert!(
        png.len() > 30_000,
        "{} bytes: is the page drawn?",
        png.len()
    );
    if let Ok(keep) = std::env::var("TC_PROFILE_KEEP_SCREENSHOT") {
        std::fs::copy(&screenshot, keep).unwrap();
    }
}
