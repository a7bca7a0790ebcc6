use crate::synthetic::{complete_task, complete_task_with_tree, cut_off_task, GIB, PEAK_MEMORY};
use crate::util::*;
use serde_json::{json, Value};

fn summary_json(sandbox: &Sandbox, input: &str) -> Value {
    let output = sandbox.run_ok(&["summary", "--format", "json", input]);
    serde_json::from_slice(&output.stdout).expect("summary --format json is JSON")
}

fn summary_text(sandbox: &Sandbox, input: &str) -> String {
    let output = sandbox.run_ok(&["summary", input]);
    String::from_utf8(output.stdout).expect("UTF-8")
}

fn assert_has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l.trim_end() == line),
        "no line {line:?} in\n{text}"
    );
}

#[test]
fn summary_of_a_complete_log_states_steps_peaks_and_the_hint() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task()).unwrap();
    let summary = summary_json(&sandbox, "task.jsonl");

    assert_eq!(summary["summaryVersion"], 1);
    assert_eq!(summary["durationMs"], 72_000.0);
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["endedEarlyAtMs"], Value::Null);
    assert_eq!(summary["machine"]["logicalCpus"], 16);
    assert_eq!(summary["machine"]["mainMemoryBytes"], 16 * GIB);

    let steps = summary["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0]["name"], "pull image");
    assert_eq!(steps[0]["category"], "Worker");
    assert_eq!(steps[0]["durationMs"], 12_000.0);
    assert_eq!(steps[0]["cpuAverage"], 0.05);
    assert_eq!(steps[0]["peakMemoryBytes"], GIB);
    assert_eq!(steps[1]["name"], "Command");
    assert_eq!(steps[1]["detail"], "make -j8");
    assert_eq!(steps[1]["category"], "Task");
    assert_eq!(steps[1]["startMs"], 12_000.0);
    assert_eq!(steps[1]["durationMs"], 60_000.0);
    assert_eq!(steps[1]["cutOff"], false);
    assert_eq!(steps[1]["cpuPeak"], 0.5);
    assert_eq!(steps[1]["peakMemoryBytes"], PEAK_MEMORY);

    assert_eq!(summary["cpu"]["p95"], 0.2);
    assert_eq!(summary["cpu"]["peak"], 0.5);
    let average = summary["cpu"]["average"].as_f64().unwrap();
    assert!((average - 12.9 / 72.0).abs() < 1e-12, "{average}");
    assert_eq!(summary["memory"]["peakBytes"], PEAK_MEMORY);
    assert_eq!(summary["memory"]["peakAtMs"], 40_000.0);
    assert_eq!(
        summary["disk"],
        json!({"readBytes": 72u64 << 20, "writtenBytes": 144u64 << 20})
    );
    assert_eq!(
        summary["network"],
        json!({"receivedBytes": 72_000, "sentBytes": 720})
    );
    assert_eq!(summary["dropped"], json!([]));
    assert_eq!(summary["hint"]["verdict"], "smaller");
    assert_eq!(summary["hint"]["cores"], 8);
    assert_eq!(summary["hint"]["memoryBytes"], 8 * GIB);
    assert_eq!(
        summary["hint"]["text"],
        "peak 3.1 of 16 GiB and CPU p95 at 3.2 of 16 cores: a machine with 8 cores and 8 GiB would have done"
    );
    for line in ["cpu", "memory"] {
        assert_eq!(
            summary["sparklines"][line]
                .as_str()
                .unwrap()
                .chars()
                .count(),
            48,
            "{line} sparkline"
        );
    }
}

#[test]
fn a_window_holds_what_happened_between_two_instants() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task()).unwrap();
    let output = sandbox.run_ok(&[
        "summary",
        "--format",
        "json",
        "--from",
        "29500",
        "--to",
        "31500",
        "task.jsonl",
    ]);
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();

    assert_eq!(
        summary["window"],
        json!({"fromMs": 29_500.0, "toMs": 31_500.0})
    );
    assert_eq!(summary["durationMs"], 2000.0);
    // Half of the samples at 0.2 on either side of the whole one at 0.5.
    let average = summary["cpu"]["average"].as_f64().unwrap();
    assert!((average - 0.35).abs() < 1e-12, "{average}");
    assert_eq!(summary["cpu"]["peak"], 0.5);
    assert_eq!(
        summary["disk"],
        json!({"readBytes": 2u64 << 20, "writtenBytes": 4u64 << 20})
    );
    assert_eq!(
        summary["network"],
        json!({"receivedBytes": 2000, "sentBytes": 20})
    );
    let steps = summary["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "pull image ended before: {steps:?}");
    assert_eq!(steps[0]["name"], "Command");
    let backwards = sandbox.run(&["summary", "--from", "5", "--to", "1", "task.jsonl"]);
    let stderr = String::from_utf8_lossy(&backwards.stderr);
    assert!(
        stderr.contains("--to must be a time after --from"),
        "{stderr}"
    );
}

#[test]
fn summary_text_shows_the_same_figures_for_people() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task()).unwrap();
    let text = summary_text(&sandbox, "task.jsonl");

    assert!(!text.contains('\x1b'), "no colour when stdout is a pipe");
    assert_has_line(&text, "Duration   1m 12s, complete");
    assert_has_line(&text, "Machine    16 cores, 16 GiB, Test CPU");
    assert_has_line(
        &text,
        "CPU        average 2.9, p95 3.2, peak 8.0 of 16 cores",
    );
    assert_has_line(&text, "Memory     peak 3.1 GiB of 16 GiB (19%), at 40.0s");
    assert_has_line(&text, "Disk       read 72 MiB, written 144 MiB");
    assert_has_line(&text, "Network    received 70.3 KiB, sent 720 B");
    assert_has_line(
        &text,
        "Hint       peak 3.1 of 16 GiB and CPU p95 at 3.2 of 16 cores: a machine with 8 cores and 8 GiB would have done",
    );
    let step = |name: &str| {
        text.lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no step {name} in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        step("pull image"),
        "Worker pull image: docker pull 0.00s 12.0s 0.8 0.8 1 GiB"
    );
    assert_eq!(
        step("make -j8"),
        "Task Command: make -j8 12.0s 1m 00s 3.3 8.0 3.1 GiB"
    );
    let sparklines = text
        .lines()
        .filter(|l| {
            l.trim_start()
                .starts_with(['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'])
        })
        .count();
    assert_eq!(
        sparklines, 2,
        "one sparkline for CPU, one for memory:\n{text}"
    );
}

#[test]
fn summary_of_a_cut_off_log_says_where_it_stops_and_what_was_dropped() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), cut_off_task(40)).unwrap();
    let summary = summary_json(&sandbox, "task.jsonl");

    assert_eq!(summary["complete"], false);
    assert_eq!(summary["endedEarlyAtMs"], 40_000.0);
    assert_eq!(summary["durationMs"], 40_000.0);
    let command = &summary["steps"][1];
    assert_eq!(command["name"], "Command");
    assert_eq!(command["cutOff"], true);
    assert_eq!(command["durationMs"], 28_000.0);
    assert_eq!(summary["memory"]["peakBytes"], 2 * GIB);
    let dropped = summary["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0]["what"], "Log damage");
    assert_eq!(dropped[0]["endMs"], Value::Null);
    assert_eq!(
        dropped[0]["text"],
        "dropped 1 lines, 42 bytes: torn last line (1 lines, 42 bytes)"
    );

    let text = summary_text(&sandbox, "task.jsonl");
    assert_has_line(
        &text,
        "Duration   40.0s, cut off at 40.0s: the recorder stopped without finishing \
         (killed, crashed, or still running); steps cut off there: 1",
    );
    assert_has_line(
        &text,
        "Dropped    Log damage: dropped 1 lines, 42 bytes: torn last line (1 lines, 42 bytes)",
    );
    assert!(
        text.lines()
            .any(|l| l.contains("make -j8") && l.ends_with("cut off")),
        "the cut-off step is flagged:\n{text}"
    );
    assert!(
        std::fs::metadata(sandbox.path("task.jsonl")).is_ok(),
        "summary leaves the log as it is"
    );
}

#[test]
fn a_log_and_its_profile_summarize_alike() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), cut_off_task(40)).unwrap();
    let from_log = summary_json(&sandbox, "task.jsonl");
    sandbox.run_ok(&["finalize", "task.jsonl", "-o", "task.json"]);
    assert_eq!(summary_json(&sandbox, "task.json"), from_log);
}

#[test]
fn summary_reads_mozillas_resource_profile() {
    let sandbox = Sandbox::new();
    std::fs::copy(MOZILLA_STREAM, sandbox.path("mach.jsonl")).unwrap();
    let summary = summary_json(&sandbox, "mach.jsonl");
    assert_eq!(summary["machine"]["logicalCpus"], 2);
    assert_eq!(summary["steps"][0]["category"], "Phases");
    assert_eq!(summary["steps"][0]["detail"], "run-command");
    assert!(summary["cpu"]["average"].is_number(), "{summary}");
    assert!(summary["memory"]["peakBytes"].as_u64().unwrap() > 0);
}

#[test]
fn run_prints_the_short_summary_unless_quiet() {
    let sandbox = Sandbox::new();
    let output = sandbox.run_ok(&["run", "--interval", "0.05", "--", "sleep", "0.3"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for label in ["Duration ", "CPU ", "Memory ", "Hint "] {
        assert!(
            stderr.lines().any(|l| l.starts_with(label)),
            "{label}in\n{stderr}"
        );
    }
    assert!(stderr.contains(", complete"), "{stderr}");
    assert!(
        !stderr.contains("Step "),
        "the short form has no step table"
    );
    assert!(output.stdout.is_empty(), "stdout is the command's alone");

    let quiet = Sandbox::new();
    let output = quiet.run_ok(&["run", "--quiet", "--", "true"]);
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn summary_of_a_missing_file_is_one_line_naming_it() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["summary", "nowhere.json"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("tc-profile: error: cannot read nowhere.json"),
        "{stderr}"
    );
}

#[test]
fn the_task_tree_against_the_rest_and_its_busiest_processes_are_summarized() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task_with_tree()).unwrap();
    let summary = summary_json(&sandbox, "task.jsonl");

    assert_eq!(summary["cpu"]["task"]["average"], 0.15);
    assert_eq!(summary["cpu"]["other"]["p95"], 0.05);
    assert_eq!(summary["memory"]["taskPeakBytes"], 2 * GIB);
    let processes = summary["topProcesses"].as_array().unwrap();
    let names: Vec<&str> = processes
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cc1", "ld", "sh"], "the busiest first");
    assert_eq!(processes[0]["cpuMs"], 30_000.0);
    assert_eq!(processes[0]["pid"], 101);
    assert_eq!(
        summary["steps"].as_array().unwrap().len(),
        2,
        "processes are no steps"
    );
    assert_eq!(
        summary["disk"]["readBytes"],
        72u64 << 20,
        "a disk's own track is not counted twice"
    );

    let text = summary_text(&sandbox, "task.jsonl");
    assert_has_line(
        &text,
        "           the task average 2.4, p95 2.4; the rest average 0.8, p95 0.8",
    );
    assert!(text.contains("; the task's processes peak 2 GiB"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("101 ") && l.contains("cc1 -O2")),
        "{text}"
    );
}
