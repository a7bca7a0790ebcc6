use crate::util::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const PROCESSES: usize = 200;
const MARKERS_EACH: usize = 1000;
const WRITER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/e2e/scripts/write_markers.py"
);
/// Log times are rounded to the microsecond; epoch times in files are finer.
const TIME_TOLERANCE_MS: f64 = 0.0015;

/// Starts the writer processes, each writing MARKERS_EACH markers to its own file.
fn spawn_writers(dir: &Path) -> Vec<Child> {
    (0..PROCESSES)
        .map(|_| {
            Command::new(python())
                .args(["-S", WRITER, &MARKERS_EACH.to_string()])
                .env("TASKCLUSTER_PROFILE_DIR", dir)
                .spawn()
                .expect("spawn a marker writer")
        })
        .collect()
}

fn wait_writers(writers: Vec<Child>) {
    for mut writer in writers {
        assert!(writer.wait().unwrap().success(), "a marker writer failed");
    }
}

/// Every marker the writers wrote, by name: (start, end) in epoch ms, from the files (not
/// the statsd socket).
fn written_markers(dir: &Path) -> HashMap<String, (f64, Option<f64>)> {
    let mut markers = HashMap::new();
    let entries = std::fs::read_dir(dir).unwrap().map(Result::unwrap);
    for entry in entries.filter(|e| e.file_type().unwrap().is_file()) {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for line in text.lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            let name = line["name"].as_str().unwrap().to_owned();
            match line["type"].as_str().unwrap() {
                "marker" => {
                    let times = (
                        line["startTime"].as_f64().unwrap(),
                        line["endTime"].as_f64(),
                    );
                    markers.insert(name, times);
                }
                "begin" => {
                    markers.insert(name, (line["time"].as_f64().unwrap(), None));
                }
                "end" => markers.get_mut(&name).unwrap().1 = line["time"].as_f64(),
                other => panic!("unexpected line type {other}"),
            }
        }
    }
    markers
}

/// Exactly the written markers are in the profile, each once, each at its time.
fn assert_every_marker_once_at_its_time(
    profile: &Value,
    written: &HashMap<String, (f64, Option<f64>)>,
) {
    assert_eq!(written.len(), PROCESSES * MARKERS_EACH);
    let start = profile["meta"]["startTime"].as_f64().unwrap();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for row in profile_markers(profile) {
        let Some((name, &(written_start, written_end))) = written.get_key_value(&row.name) else {
            continue;
        };
        *seen.entry(name).or_default() += 1;
        assert!(
            (row.start - (written_start - start)).abs() < TIME_TOLERANCE_MS,
            "{name} starts at {} ms, written at {} ms",
            row.start,
            written_start - start
        );
        match (row.end, written_end) {
            (Some(end), Some(written_end)) => assert!(
                (end - (written_end - start)).abs() < TIME_TOLERANCE_MS,
                "{name} ends at {end} ms, written at {} ms",
                written_end - start
            ),
            (None, None) => {}
            other => panic!("{name}: end {other:?}"),
        }
    }
    assert_eq!(
        seen.len(),
        written.len(),
        "every written marker is in the profile"
    );
    let twice: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).take(5).collect();
    assert!(
        twice.is_empty(),
        "markers present more than once: {twice:?}"
    );
}

#[test]
fn two_hundred_processes_writing_a_thousand_markers_each_give_exactly_200000() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &["--keep-log"]);
    let dir = recording.profile_dir.clone();
    wait_writers(spawn_writers(&dir));
    let stderr = recording.stop();

    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    assert_every_marker_once_at_its_time(&profile, &written_markers(&dir));
    assert_eq!(marker_files_note(&profile), "", "{stderr}");
    assert_streamed_profile(&std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap());
}

#[test]
fn sigkill_of_record_under_marker_load_then_finalize_takes_every_marker_once() {
    let seed = (epoch_ms() as u64).wrapping_mul(6364136223846793005);
    // Kill moments after the writers start: early, middle, late, each drawn from the seed.
    let moments = [
        seed % 300,
        300 + (seed >> 16) % 1500,
        1500 + (seed >> 32) % 3000,
    ];
    for kill_after_ms in moments {
        let context = format!("seed {seed}, killed {kill_after_ms} ms after the writers started");
        let sandbox = Sandbox::new();
        let recording = Recording::start(&sandbox, &["--keep-log"]);
        let dir = recording.profile_dir.clone();
        let writers = spawn_writers(&dir);
        std::thread::sleep(Duration::from_millis(kill_after_ms));
        recording.kill();
        wait_writers(writers);
        let log = std::fs::read_to_string(sandbox.path("profile_resource-usage.jsonl")).unwrap();
        assert!(
            !log.contains(r#""type":"footer""#),
            "{context}: killed before its footer"
        );

        let output = sandbox.run(&["finalize", "profile_resource-usage.jsonl"]);
        assert!(
            output.status.success(),
            "{context}\n{}",
            describe(&["finalize"], &output)
        );
        let profile = read_json(&sandbox.path("profile_resource-usage.json"));
        assert_processed_profile(&profile);
        assert_every_marker_once_at_its_time(&profile, &written_markers(&dir));
        assert_eq!(marker_files_note(&profile), "", "{context}");
        let logged = log
            .lines()
            .filter_map(|line| line.strip_prefix(r#"{"type":"marker","name":""#))
            .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            .count();
        eprintln!(
            "{context}: {logged} of {} markers were in the log",
            PROCESSES * MARKERS_EACH
        );
    }
}

/// The worker's side: lifecycle steps around the task, written with the helpers by a
/// process of its own.
const WORKER: &str = r#"
tc-profile begin 'pull image' --category worker; sleep 0.1; tc-profile end 'pull image'
tc-profile begin 'mount caches' --category worker; sleep 0.1; tc-profile end 'mount caches'
tc-profile begin task --category worker
sh "$TASK"
tc-profile end task
tc-profile begin 'upload artifacts' --category worker; sleep 0.1
tc-profile end 'upload artifacts'
"#;

/// The task: nested phases.
const TASK: &str = r#"
tc-profile begin build --category task
tc-profile begin compile --category task; sleep 0.1; tc-profile end compile
tc-profile begin link --category task; sleep 0.1; tc-profile end link
tc-profile end build
tc-profile begin test --category task
tc-profile mark 'suite started' --text 'unit'
sleep 0.1
tc-profile end test --text 'all passed'
"#;

#[test]
fn a_worker_recording_holds_its_lifecycle_and_the_tasks_nested_phases_in_order() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &["--keep-log"]);
    std::fs::write(sandbox.path("task.sh"), TASK).unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let worker = Command::new("sh")
        .args(["-c", WORKER])
        .env("PATH", path)
        .env("TASKCLUSTER_PROFILE_DIR", &recording.profile_dir)
        .env("TASK", sandbox.path("task.sh"))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        worker.status.success(),
        "{}",
        String::from_utf8_lossy(&worker.stderr)
    );
    recording.stop();

    assert_streamed_profile(&std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap());
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let markers = profile_markers(&profile);
    let find = |name: &str| {
        let found: Vec<&MarkerRow> = markers.iter().filter(|m| m.name == name).collect();
        assert_eq!(found.len(), 1, "one {name}");
        found[0]
    };
    let steps = ["pull image", "mount caches", "task", "upload artifacts"];
    for pair in steps.windows(2) {
        let (before, after) = (find(pair[0]), find(pair[1]));
        assert_eq!((before.category, after.category), (1, 1), "Worker category");
        assert!(
            before.end.unwrap() <= after.start,
            "{} before {}",
            pair[0],
            pair[1]
        );
    }
    let within = |inner: &str, outer: &str| {
        let (inner_row, outer_row) = (find(inner), find(outer));
        assert!(
            outer_row.start <= inner_row.start
                && inner_row.end.unwrap_or(inner_row.start) <= outer_row.end.unwrap(),
            "{inner} within {outer}"
        );
    };
    for (inner, outer) in [
        ("build", "task"),
        ("compile", "build"),
        ("link", "build"),
        ("test", "task"),
        ("suite started", "test"),
    ] {
        within(inner, outer);
    }
    assert!(find("compile").end.unwrap() <= find("link").start);
    assert_eq!(find("build").category, 2, "Task category");
    assert_eq!(
        find("test").data["text"],
        "all passed",
        "end's text replaces begin's"
    );
    assert_eq!(find("suite started").data["text"], "unit");
    assert_eq!(marker_files_note(&profile), "");
}

#[test]
fn the_readme_examples_for_bash_and_python_record_their_markers() {
    let sandbox = Sandbox::new();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let bash = readme_example("## Markers from a task", "sh");
    let python_example = readme_example("## Markers from a task", "python");
    let script = format!(
        "bash -c '{}' && {} -c '{}'",
        bash.replace('\'', "'\\''"),
        python().display(),
        python_example.replace('\'', "'\\''")
    );
    let args = ["run", "--", "sh", "-c", &script];
    let output = sandbox.command(&args).env("PATH", &path).output().unwrap();
    assert!(output.status.success(), "{}", describe(&args, &output));

    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let markers = profile_markers(&profile);
    let build = markers.iter().find(|m| m.name == "build").expect("build");
    assert_eq!(
        (build.category, build.data["text"].as_str()),
        (2, Some("exit 0"))
    );
    assert_eq!(count_named(&markers, "tests passed"), 1);
    let test = markers
        .iter()
        .find(|m| m.name == "test_login")
        .expect("test_login");
    assert_eq!(test.data["status"], "PASS");
    let schemas = profile["meta"]["markerSchema"].as_array().unwrap();
    assert!(
        schemas.iter().any(|s| s["name"] == "Test"),
        "the Test schema is declared"
    );
    assert!(
        !sandbox.path("profile_resource-usage.markers").exists(),
        "run removes the profile directory it created"
    );
}

#[test]
fn helpers_without_the_variable_fail_with_a_clear_error() {
    let sandbox = Sandbox::new();
    for args in [
        &["mark", "x"][..],
        &["begin", "x"],
        &["end", "x", "--id", "7"],
    ] {
        let output = sandbox
            .command(args)
            .env_remove("TASKCLUSTER_PROFILE_DIR")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", describe(args, &output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("tc-profile: error: TASKCLUSTER_PROFILE_DIR is not set"),
            "{stderr}"
        );
    }
}

#[test]
fn file_schemas_join_ours_without_replacing_them_and_unmatched_intervals_are_reported() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &[]);
    let now = epoch_ms();
    let lines = [
        r#"{"type":"schema","name":"CPU","display":["marker-table"],"data":[]}"#.to_owned(),
        r#"{"type":"schema","name":"Build","display":["marker-chart"],"data":[{"key":"objects","format":"integer"}],"graphs":[{"key":"objects","type":"bar","color":"teal"}]}"#.to_owned(),
        format!(r#"{{"type":"marker","name":"objects","startTime":{now},"endTime":{},"data":{{"type":"Build","objects":12}}}}"#, now + 5.0),
        format!(r#"{{"type":"begin","name":"never ended","time":{now}}}"#),
        format!(r#"{{"type":"end","name":"never begun","id":"b7","time":{now}}}"#),
    ];
    append(
        &recording.file("1.jsonl"),
        (lines.join("\n") + "\n").as_bytes(),
    );
    recording.wait_logged("never begun");
    let stderr = recording.stop();

    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let schemas = profile["meta"]["markerSchema"].as_array().unwrap();
    let cpu: Vec<&Value> = schemas.iter().filter(|s| s["name"] == "CPU").collect();
    assert_eq!(cpu.len(), 1);
    assert!(cpu[0]["graphs"].is_array(), "ours wins");
    assert!(schemas.iter().any(|s| s["name"] == "Build"));
    let markers = profile_markers(&profile);
    let open = markers.iter().find(|m| m.name == "never ended").unwrap();
    assert!(
        open.data["cutOff"].is_string(),
        "flagged cut off: {}",
        open.data
    );
    let note = marker_files_note(&profile);
    assert!(note.contains("end without its begin: 1 line"), "{note}");
    assert!(stderr.contains("end without its begin"), "{stderr}");
}

#[test]
fn a_unique_string_field_of_a_task_schema_shows_the_tasks_text() {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, &[]);
    let now = epoch_ms();
    let lines = [
        r#"{"type":"schema","name":"Test","display":["marker-table"],"tableLabel":"{marker.data.status}","data":[{"key":"status","label":"Status","format":"unique-string"}]}"#.to_owned(),
        format!(r#"{{"type":"marker","name":"test_login","startTime":{now},"endTime":{},"data":{{"type":"Test","status":"PASS"}}}}"#, now + 5.0),
    ];
    append(
        &recording.file("1.jsonl"),
        (lines.join("\n") + "\n").as_bytes(),
    );
    recording.wait_logged("test_login");
    recording.stop();

    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let schemas = profile["meta"]["markerSchema"].as_array().unwrap();
    let test = schemas.iter().find(|s| s["name"] == "Test").unwrap();
    assert_eq!(test["data"][0]["format"], "string", "{test}");
    let markers = profile_markers(&profile);
    let marker = markers.iter().find(|m| m.name == "test_login").unwrap();
    assert_eq!(marker.data["status"], "PASS");
}

#[test]
fn schemas_given_before_the_recording_are_in_the_raw_logs_meta() {
    let sandbox = Sandbox::new();
    let schema = r#"{"type":"schema","name":"Test","display":["marker-table"],"tableLabel":"{marker.data.status}","data":[{"key":"status","label":"Status","format":"unique-string"}]}"#;
    std::fs::write(sandbox.path("schemas.jsonl"), format!("{schema}\n\n")).unwrap();
    let marker = r#"{"type":"marker","name":"test_login","startTime":$(date +%s%3N),"data":{"type":"Test","status":"PASS"}}"#;
    let script = format!(
        "echo \"{}\" >> \"$TASKCLUSTER_PROFILE_DIR/$$.jsonl\"; sleep 0.3",
        marker.replace('"', "\\\"")
    );
    sandbox.run_ok(&[
        "run",
        "-q",
        "--keep-log",
        "--schema",
        "schemas.jsonl",
        "--",
        "sh",
        "-c",
        &script,
    ]);

    let log = std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    assert_streamed_profile(&log);
    let meta: Value = serde_json::from_slice(log.split(|&b| b == b'\n').next().unwrap()).unwrap();
    let schemas = meta["markerSchema"].as_array().unwrap();
    let test = schemas
        .iter()
        .find(|s| s["name"] == "Test")
        .expect("Test in the meta line");
    assert_eq!(test["data"][0]["format"], "string", "{test}");
    let text = String::from_utf8(log).unwrap();
    assert!(
        text.contains(r#""status":"PASS""#),
        "the marker is in the log"
    );
    assert!(
        !text.contains(r#"{"type":"schema""#),
        "declared once, in meta"
    );
}

#[test]
fn a_schema_file_the_profiler_could_not_use_is_refused_before_the_command_runs() {
    let sandbox = Sandbox::new();
    let cases = [
        (
            "marker.jsonl",
            r#"{"type":"marker","name":"x","startTime":1}"#,
            "line 1: not a schema line",
        ),
        (
            "display.jsonl",
            r#"{"type":"schema","name":"A","display":["nowhere"],"data":[]}"#,
            "line 1: schema the profiler could not use",
        ),
        ("torn.jsonl", r#"{"type":"schema","name":"#, "line 1: "),
    ];
    for (file, text, expected) in cases {
        std::fs::write(sandbox.path(file), text).unwrap();
        let args = ["run", "--schema", file, "--", "touch", "ran"];
        let stderr = assert_exit_code(&args, &sandbox.run(&args), 2);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("--schema {file}: {expected}")),
            "{stderr}"
        );
        assert!(!sandbox.path("ran").exists(), "the command did not run");
        assert!(!sandbox.path("profile_resource-usage.jsonl").exists());
    }
}
