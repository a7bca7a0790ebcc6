use crate::util::*;
use serde_json::{json, Value};

type Task = (&'static str, &'static str, &'static str);
const BUILD: Task = ("build", "Aaaaaaaaaaaaaaaaaaaaaa", "0");

/// A task's shell script: writes a marker named `at NAME` at the wall time it reads, and
/// that time (epoch ms) into `NAME.time` beside the profile.
fn task_script(name: &str) -> String {
    format!(
        "sleep 0.2; t=$(date +%s%3N); echo $t > {name}.time; \
         echo '{{\"type\":\"marker\",\"name\":\"at {name}\",\"startTime\":'$t'}}' \
         >> \"$TASKCLUSTER_PROFILE_DIR/$$.jsonl\"; sleep 0.3"
    )
}

/// Runs the task `(name, TASK_ID, RUN_ID)` with `flags`.
fn run_task(sandbox: &Sandbox, (name, task_id, run_id): Task, flags: &[&str]) {
    let script = task_script(name);
    let args = run_script(flags, &script);
    let output = sandbox
        .command(&args)
        .env("TASK_ID", task_id)
        .env("RUN_ID", run_id)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&args, &output));
}

fn read_time(sandbox: &Sandbox, name: &str) -> f64 {
    let text = std::fs::read_to_string(sandbox.path(&format!("{name}.time"))).unwrap();
    text.trim().parse().unwrap()
}

/// The first line of a log, its meta.
fn log_meta(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

fn zstd_json(path: &std::path::Path) -> Value {
    serde_json::from_slice(&zstd::decode_all(&std::fs::read(path).unwrap()[..]).unwrap()).unwrap()
}

fn merge(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut all = vec!["merge"];
    all.extend_from_slice(args);
    sandbox.run_ok(&all);
    read_json(&sandbox.path("group.json"))
}

#[test]
fn three_task_runs_become_three_processes_on_one_wall_clock() {
    let sandbox = Sandbox::new();
    let tasks: [Task; 3] = [
        BUILD,
        ("test", "Bbbbbbbbbbbbbbbbbbbbbb", "1"),
        ("lint", "Cccccccccccccccccccccc", "0"),
    ];
    let definition = r#"{"metadata":{"name":"build-linux64/opt"},"scopes":[]}"#;
    std::fs::write(sandbox.path("task.json"), definition).unwrap();
    let named = ["-q", "--task-definition", "task.json", "-o", "build.json"];
    run_task(&sandbox, tasks[0], &named);
    run_task(&sandbox, tasks[1], &["-q", "--keep-log", "-o", "test.json"]);
    run_task(&sandbox, tasks[2], &["-q", "-o", "lint.json.zst"]);
    let starts = [
        read_json(&sandbox.path("build.json"))["meta"]["startTime"]
            .as_f64()
            .unwrap(),
        log_meta(&sandbox.path("test.jsonl"))["startTime"]
            .as_f64()
            .unwrap(),
        zstd_json(&sandbox.path("lint.json.zst"))["meta"]["startTime"]
            .as_f64()
            .unwrap(),
    ];
    assert!(starts[0] < starts[1] && starts[1] < starts[2], "{starts:?}");
    let raw_log = std::fs::read(sandbox.path("test.jsonl")).unwrap();

    let group = merge(
        &sandbox,
        &[
            "build.json",
            "test.jsonl",
            "lint.json.zst",
            "-o",
            "group.json",
        ],
    );

    assert_processed_group(&group, 3);
    assert_eq!(
        std::fs::read(sandbox.path("test.jsonl")).unwrap(),
        raw_log,
        "a log is read, never changed"
    );
    let group_start = group["meta"]["startTime"].as_f64().unwrap();
    assert_eq!(
        group_start, starts[0],
        "the group starts with its earliest profile"
    );
    let threads = group["threads"].as_array().unwrap();
    for (thread, (name, task_id, run_id)) in threads.iter().zip(tasks) {
        let mut process = format!("{task_id} run {run_id}");
        if name == "build" {
            process = format!("build-linux64/opt ({process})");
        }
        assert_eq!(thread["processName"], process.as_str());
        assert_eq!(thread["name"], process.as_str());
        let markers = thread_markers(thread);
        let at = markers
            .iter()
            .find(|m| m.name == format!("at {name}"))
            .unwrap();
        let expected = read_time(&sandbox, name) - group_start;
        assert!(
            (at.start - expected).abs() < 0.01,
            "{name}: at {} ms, written at {expected} ms of the group",
            at.start
        );
        // Its own resource tracks, under its process.
        assert!(
            markers.iter().any(|m| m.name == "CPU Use"),
            "{name} has CPU"
        );
        assert_eq!(count_named(&markers, "Command"), 1, "{name}");
        for other in tasks.iter().filter(|t| t.0 != name) {
            assert_eq!(count_named(&markers, &format!("at {}", other.0)), 0);
        }
    }
    let entries = group["meta"]["tcProfile"]["group"].as_array().unwrap();
    assert_eq!(entries[1]["source"], "test.jsonl");
    assert_eq!(
        entries[1]["meta"]["tcProfile"]["task"]["taskId"],
        tasks[1].1
    );
    assert_eq!(
        entries[2]["offset"].as_f64().unwrap(),
        starts[2] - starts[0]
    );
}

#[test]
fn mozilla_s_stream_merges_beside_a_task_with_its_own_schemas_kept() {
    let sandbox = Sandbox::new();
    run_task(&sandbox, BUILD, &["-q", "-o", "build.json"]);
    std::fs::copy(MOZILLA_STREAM, sandbox.path("mozilla.jsonl")).unwrap();
    sandbox.run_ok(&[
        "finalize",
        "--keep-log",
        "mozilla.jsonl",
        "-o",
        "mozilla.json",
    ]);
    let alone = read_json(&sandbox.path("mozilla.json"));

    let group = merge(
        &sandbox,
        &["build.json", "mozilla.jsonl", "-o", "group.json"],
    );

    assert_processed_group(&group, 2);
    let mozilla = &group["threads"][1];
    assert_eq!(
        mozilla["processName"], "mozilla.jsonl",
        "no task: named by its file"
    );
    let merged = thread_markers(mozilla);
    let original = profile_markers(&alone);
    assert_eq!(
        merged.len(),
        original.len(),
        "every marker of Mozilla's profile"
    );
    // Its CPU schema is not ours: its markers keep theirs, under a name of its own.
    let schemas = group["meta"]["markerSchema"].as_array().unwrap();
    let schema = |name: &str| schemas.iter().find(|s| s["name"] == name).cloned();
    let mozilla_cpu = alone["meta"]["markerSchema"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "CPU")
        .unwrap()
        .clone();
    assert_eq!(schema("CPU (2)").unwrap()["graphs"], mozilla_cpu["graphs"]);
    assert_ne!(schema("CPU").unwrap()["graphs"], mozilla_cpu["graphs"]);
    let cpu = merged.iter().find(|m| m.name == "CPU Use").unwrap();
    assert_eq!(cpu.data["type"], "CPU (2)");
    let ours = thread_markers(&group["threads"][0]);
    assert_eq!(
        ours.iter().find(|m| m.name == "CPU Use").unwrap().data["type"],
        "CPU"
    );
    // Categories by name: Mozilla's "Phases" is added, "Other" shared.
    let categories = group["meta"]["categories"].as_array().unwrap();
    let index_of = |name: &str| categories.iter().position(|c| c["name"] == name).unwrap();
    let phase = merged.iter().find(|m| m.data["type"] == "Phase").unwrap();
    assert_eq!(phase.category as usize, index_of("Phases"));
    let offset =
        alone["meta"]["startTime"].as_f64().unwrap() - group["meta"]["startTime"].as_f64().unwrap();
    let phase_alone = original.iter().find(|m| m.data["type"] == "Phase").unwrap();
    assert!((phase.start - (phase_alone.start + offset)).abs() < 0.01);
}

/// A processed profile from elsewhere, starting at `start` (epoch ms): a `unique-string`
/// field (an index into its own string table) and a counter.
fn profile_from_elsewhere(start: f64) -> Value {
    let mut thread = json!({"name": "other", "pid": "7", "tid": 7, "processType": "default",
        "showMarkersInTimeline": true, "samples": {"length": 0}});
    thread["stringArray"] = json!(["first", "second", "Build log"]);
    thread["markers"] = json!({
        "data": [{"type": "Artifact", "file": 2}, null],
        "name": [0, 1], "startTime": [5.0, 6.0], "endTime": [null, 7.0],
        "phase": [0, 1], "category": [1, 0], "length": 2
    });
    let counter = json!({"name": "Allocated", "category": "Memory", "description": "bytes", "pid": "7",
        "mainThreadIndex": 0, "sampleGroups": [{"id": 0,
            "samples": {"time": [5.0, 6.0], "count": [0, 4096], "length": 2}}]});
    json!({
        "meta": {"version": 27, "preprocessedProfileVersion": 47, "startTime": start,
            "interval": 100.0,
            "categories": [{"name": "Other", "color": "grey", "subcategories": ["Other"]},
                {"name": "Memory", "color": "purple", "subcategories": ["Other"]}],
            "markerSchema": [{"name": "Artifact", "display": ["marker-table"],
                "data": [{"key": "file", "label": "File", "format": "unique-string"}]}]},
        "libs": [],
        "threads": [thread],
        "counters": [counter]
    })
}

#[test]
fn another_tool_s_profile_keeps_its_unique_strings_and_its_counter_under_its_process() {
    let sandbox = Sandbox::new();
    run_task(&sandbox, BUILD, &["-q", "-o", "build.json"]);
    let start = epoch_ms() + 60_000.0;
    let other = profile_from_elsewhere(start);
    std::fs::write(sandbox.path("other.json"), other.to_string()).unwrap();

    let group = merge(&sandbox, &["build.json", "other.json", "-o", "group.json"]);

    assert_processed_group(&group, 2);
    let thread = &group["threads"][1];
    let artifact = thread_markers(thread)
        .into_iter()
        .find(|m| m.name == "first")
        .unwrap();
    let index = artifact.data["file"].as_u64().unwrap() as usize;
    assert_eq!(thread["stringArray"][index], "Build log");
    let offset = start - group["meta"]["startTime"].as_f64().unwrap();
    let counter = &group["counters"][0];
    assert_eq!(counter["pid"], thread["pid"]);
    assert_eq!(counter["mainThreadIndex"], 1);
    let first = counter["sampleGroups"][0]["samples"]["time"][0]
        .as_f64()
        .unwrap();
    assert!((first - (5.0 + offset)).abs() < 0.01, "{first} vs {offset}");
    let categories = group["meta"]["categories"].as_array().unwrap();
    let memory = categories
        .iter()
        .position(|c| c["name"] == "Memory")
        .unwrap();
    assert_eq!(artifact.category as usize, memory);
}

#[test]
fn bad_inputs_and_outputs_are_refused_in_one_line_before_anything_is_written() {
    let sandbox = Sandbox::new();
    run_task(&sandbox, BUILD, &["-q", "-o", "build.json"]);
    std::fs::write(sandbox.path("garbage.json"), "not a profile").unwrap();
    std::fs::write(sandbox.path("taken.json"), "keep me").unwrap();
    std::fs::hard_link(sandbox.path("build.json"), sandbox.path("link.json")).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["merge", "build.json", "./build.json", "-o", "g.json"],
            "./build.json is build.json again; name each profile once",
        ),
        (
            &["merge", "build.json", "garbage.json", "-o", "g.json"],
            "garbage.json is neither a tc-profile log nor a profile",
        ),
        (
            &["merge", "build.json", "missing.json", "-o", "g.json"],
            "cannot read missing.json",
        ),
        (
            &[
                "merge",
                "build.json",
                "taken.json",
                "-o",
                "taken.json",
                "--force",
            ],
            "the output taken.json is one of the inputs; choose another -o",
        ),
        (
            &[
                "merge",
                "build.json",
                "build.json.other",
                "-o",
                "taken.json",
            ],
            "cannot read build.json.other",
        ),
    ];
    for (args, message) in cases {
        let stderr = assert_exit_code(args, &sandbox.run(args), 2);
        assert!(stderr.starts_with("tc-profile: error: "), "{stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!sandbox.path("g.json").exists());
    }
    std::fs::copy(sandbox.path("build.json"), sandbox.path("copy.json")).unwrap();
    let args = ["merge", "build.json", "copy.json", "-o", "taken.json"];
    let stderr = assert_exit_code(&args, &sandbox.run(&args), 2);
    assert!(
        stderr.contains("taken.json exists; choose another -o, or pass --force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.path("taken.json")).unwrap(),
        "keep me"
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    sandbox.run_ok(&forced);
    assert_processed_group(&read_json(&sandbox.path("taken.json")), 2);
    let args = ["merge", "build.json", "-o", "g.json"];
    let stderr = assert_exit_code(&args, &sandbox.run(&args), 2);
    assert!(stderr.contains("merge --help"), "{stderr}");
}
