use crate::util::*;
use serde_json::Value;
use std::path::Path;

const MIB: f64 = (1u64 << 20) as f64;

/// A task of three steps: `setup` sleeps `$SETUP` s, `alloc` holds `$MIB` MiB for a second,
/// `tail` sleeps 0.3 s; it writes its shell's pid to `task.pid` first.
fn task_script() -> String {
    format!(
        "echo $$ > task.pid; \
         tc-profile begin setup; sleep $SETUP; tc-profile end setup; \
         tc-profile begin alloc; {} -c \"import time; b = bytearray($MIB << 20); \
         b[::4096] = b'x' * len(b[::4096]); time.sleep(1)\"; tc-profile end alloc; \
         tc-profile begin tail; sleep 0.3; tc-profile end tail",
        python().display()
    )
}

/// `tc-profile run` of the task with `flags`, `tc-profile` on its PATH.
fn task_run(sandbox: &Sandbox, flags: &[&str], setup_s: &str, mib: &str) -> std::process::Command {
    let script = task_script();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let mut command = sandbox.command(&run_script(flags, &script));
    command
        .env("PATH", path)
        .env("SETUP", setup_s)
        .env("MIB", mib);
    command
}

fn record_task(sandbox: &Sandbox, output: &str, setup_s: &str, mib: &str) {
    let flags = ["-q", "--interval", "0.1", "-o", output];
    let result = task_run(sandbox, &flags, setup_s, mib).output().unwrap();
    assert!(result.status.success(), "{output}: {result:?}");
}

fn compare_json(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut all = vec!["compare", "--json"];
    all.extend_from_slice(args);
    let output = sandbox.run_ok(&all);
    let comparison: Value = serde_json::from_slice(&output.stdout).expect("compare --json is JSON");
    assert_eq!(comparison["compareVersion"], 1);
    comparison
}

fn step<'a>(comparison: &'a Value, name: &str) -> &'a Value {
    let steps = comparison["steps"].as_array().unwrap();
    steps
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {steps:?}"))
}

fn figure(step: &Value, run: &str, key: &str) -> f64 {
    step[run][key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} of {step}"))
}

/// The start of the first marker named `name` in the merged profile's `thread`.
fn start_of(profile: &Value, thread: usize, name: &str) -> f64 {
    let markers = thread_markers(&profile["threads"][thread]);
    markers
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name} in thread {thread}"))
        .start
}

#[test]
fn a_slower_step_and_a_hungrier_one_come_first_within_a_tenth_of_the_truth() {
    let sandbox = Sandbox::new();
    record_task(&sandbox, "base.json", "0.5", "100");
    record_task(&sandbox, "new.json", "2.5", "400");

    let comparison = compare_json(&sandbox, &["base.json", "new.json", "--align", "alloc"]);

    let steps = comparison["steps"].as_array().unwrap();
    let mut first_two: Vec<&str> = steps[..2]
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    first_two.sort();
    assert_eq!(first_two, ["alloc", "setup"], "{steps:#?}");
    let slower = step(&comparison, "setup")["deltaMs"].as_f64().unwrap();
    assert!(
        (slower - 2000.0).abs() <= 200.0,
        "setup {slower} ms slower, not 2000"
    );
    let alloc = step(&comparison, "alloc");
    let hungrier =
        figure(alloc, "new", "peakMemoryBytes") - figure(alloc, "base", "peakMemoryBytes");
    assert!(
        (hungrier / MIB - 300.0).abs() <= 30.0,
        "alloc peaks {} MiB higher, not 300",
        hungrier / MIB
    );
    for run in ["base", "new"] {
        assert_eq!(comparison[run]["complete"], true);
        assert_eq!(comparison[run]["exitStatus"], "exit code 0");
    }
    assert_eq!(comparison["alignedOn"], "alloc");
    assert_eq!(comparison["onlyInBase"], serde_json::json!([]));

    let merged = read_json(&sandbox.path("compare.json"));
    assert_processed_group(&merged, 2);
    let interval = merged["meta"]["interval"].as_f64().unwrap();
    let (base_alloc, new_alloc) = (start_of(&merged, 0, "alloc"), start_of(&merged, 1, "alloc"));
    assert!(
        (base_alloc - new_alloc).abs() <= interval,
        "alloc starts at {base_alloc} ms and {new_alloc} ms, over {interval} ms apart"
    );
    let compared = thread_markers(&merged["threads"][1]);
    let setup = compared
        .iter()
        .find(|m| m.name == "Compare" && m.data["step"] == "setup")
        .expect("a Compare marker of setup");
    let (base_ms, new_ms) = (
        figure(step(&comparison, "setup"), "base", "durationMs"),
        slower,
    );
    assert_eq!(setup.data["base"].as_f64(), Some(base_ms));
    assert!((setup.data["delta"].as_f64().unwrap() - new_ms).abs() < 0.01);
}

#[test]
fn a_killed_run_says_which_steps_never_ran() {
    let sandbox = Sandbox::new();
    record_task(&sandbox, "base.json", "0.2", "10");
    let flags = [
        "-q",
        "--interval",
        "0.1",
        "--log",
        "killed.jsonl",
        "-o",
        "killed.json",
    ];
    let mut run = task_run(&sandbox, &flags, "30", "10").spawn().unwrap();
    let log = sandbox.path("killed.jsonl");
    wait_for(|| std::fs::read_to_string(&log).is_ok_and(|text| text.contains("\"setup\"")));
    signal(&run, libc::SIGKILL);
    run.wait().unwrap();
    let task: i32 = std::fs::read_to_string(sandbox.path("task.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) of the task's shell, which the killed recorder left behind.
    unsafe { libc::kill(task, libc::SIGKILL) };

    let comparison = compare_json(&sandbox, &["base.json", "killed.jsonl"]);

    let never_ran: Vec<&str> = comparison["onlyInBase"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(never_ran, ["alloc", "tail"], "{comparison:#}");
    assert_eq!(comparison["new"]["complete"], false);
    assert_eq!(step(&comparison, "setup")["new"]["cutOff"], true);
    let text = sandbox.run_ok(&["compare", "--force", "base.json", "killed.jsonl"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("Only in the base run (never ran in the new one)"),
        "{text}"
    );
}

#[test]
fn bad_input_is_one_line_naming_the_problem() {
    let sandbox = Sandbox::new();
    record_task(&sandbox, "base.json", "0.1", "1");
    std::fs::copy(MOZILLA_STREAM, sandbox.path("mozilla.jsonl")).unwrap();
    std::fs::copy(sandbox.path("base.json"), sandbox.path("again.json")).unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["base.json", "absent.json"], "absent.json"),
        (
            &["base.json", "again.json", "--align", "lunch"],
            "--align \"lunch\" names no step",
        ),
        (&["base.json", "mozilla.jsonl"], "have no step in common"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["compare"];
        all.extend_from_slice(args);
        let output = sandbox.run(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}", describe(&all, &output));
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{expected:?} not in {stderr}");
        assert_eq!(
            stderr.matches("No such file").count(),
            usize::from(args[1] == "absent.json")
        );
    }
}
