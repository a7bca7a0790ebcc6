use crate::synthetic::{LogBuilder, GIB};
use crate::util::*;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::Path;
use std::process::Child;
use std::time::Duration;
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::Marker;

const FIXTURE: &str = MOZILLA_STREAM;

fn sigkill(child: &mut Child) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
}

/// The wrapped command outlives a SIGKILLed recorder; the test ends it through its pid in
/// the log's open line.
fn kill_orphaned_command(log: &str) {
    for line in log.lines().filter(|l| l.starts_with(r#"{"type":"open""#)) {
        let open: Value = serde_json::from_str(line).unwrap();
        if let Some(pid) = open["data"]["pid"].as_i64() {
            // SAFETY: kill(2); the pid is the test's own grandchild.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

fn complete_lines_named(log: &str, name: &str) -> usize {
    let needle = format!(r#"{{"type":"marker","name":"{name}""#);
    log.split_inclusive('\n')
        .filter(|l| l.ends_with('\n') && l.starts_with(&needle))
        .count()
}

#[test]
fn sigkill_of_the_recorder_mid_run_loses_nothing_that_reached_the_log() {
    for seconds in [0.0, 0.4, 1.5] {
        let sandbox = Sandbox::new();
        let mut recorder = sandbox
            .command(&["run", "--interval", "0.1", "--", "sleep", "60"])
            .spawn()
            .unwrap();
        let log_path = sandbox.path("profile_resource-usage.jsonl");
        wait_for(|| {
            std::fs::read_to_string(&log_path).is_ok_and(|t| t.contains(r#""type":"open""#))
        });
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let killed_at = epoch_ms();
        sigkill(&mut recorder);
        let log = std::fs::read_to_string(&log_path).unwrap();
        kill_orphaned_command(&log);
        let start: f64 = serde_json::from_str::<Value>(log.lines().next().unwrap()).unwrap()
            ["startTime"]
            .as_f64()
            .unwrap();

        let output = sandbox.run_ok(&["finalize", "profile_resource-usage.jsonl"]);
        assert!(
            !log_path.exists(),
            "the log is removed once the profile is durable"
        );
        let profile = read_json(&sandbox.path("profile_resource-usage.json"));
        assert_processed_profile(&profile);
        let markers = profile_markers(&profile);

        assert_eq!(
            count_named(&markers, "CPU Use"),
            complete_lines_named(&log, "CPU Use"),
            "every sample in the log is in the profile"
        );
        let command = markers
            .iter()
            .find(|m| m.name == "Command")
            .expect("the command's interval");
        assert!(
            command.data["cutOff"].is_string(),
            "the command's interval is flagged cut off: {}",
            command.data
        );
        assert_eq!(count_named(&markers, "Recording ended early"), 1);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("recording ended early"), "{stderr}");

        let kill_ms = killed_at - start;
        if seconds > 0.0 {
            let last_sample = markers
                .iter()
                .filter(|m| m.name == "CPU Use")
                .map(|m| m.end.unwrap())
                .fold(0.0, f64::max);
            // One interval, plus slack for a loaded machine delaying the sampler thread.
            assert!(
                last_sample >= kill_ms - 100.0 - 400.0,
                "last sample at {last_sample} ms, kill at {kill_ms} ms"
            );
        }
    }
}

#[test]
fn sigkill_during_finalize_never_leaves_a_partial_profile() {
    let sandbox = Sandbox::new();
    let log = sandbox.path("big.jsonl");
    write_synthetic_log(&log, 300_000);
    let original = std::fs::read(&log).unwrap();
    let profile = sandbox.path("big.json");
    for delay_ms in [0, 20, 60, 120, 200, 300] {
        let mut finalizer = sandbox
            .command(&["finalize", "--keep-log", "big.jsonl"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        sigkill(&mut finalizer);
        assert_eq!(std::fs::read(&log).unwrap(), original, "the log is intact");
        if profile.exists() {
            assert_processed_profile(&read_json(&profile));
            std::fs::remove_file(&profile).unwrap();
        }
    }
    sandbox.run_ok(&["finalize", "big.jsonl"]);
    let markers = profile_markers(&read_json(&profile));
    assert_eq!(
        markers.len(),
        300_000 + 1,
        "every marker, and the note that the footer is missing"
    );
}

/// A log of `markers` text markers 0.5 ms apart, without a footer.
fn write_synthetic_log(path: &Path, markers: usize) {
    let mut log = LogBuilder::new(4, GIB);
    for i in 0..markers {
        let t = i as f64 * 0.5;
        let text = json!({"type": data_type::TEXT, "text": format!("synthetic marker {i}")});
        log.marker(
            Marker::interval(format!("step {}", i % 50), t, t + 0.25)
                .with_category(category::USER)
                .with_data(text),
        );
    }
    std::fs::write(path, log.bytes()).unwrap();
}

#[test]
fn a_log_cut_at_every_byte_finalizes_and_invents_nothing() {
    let sandbox = Sandbox::new();
    sandbox.run_ok(&[
        "run",
        "--interval",
        "0.05",
        "--keep-log",
        "--",
        "sleep",
        "0.2",
    ]);
    let log = std::fs::read(sandbox.path("profile_resource-usage.jsonl")).unwrap();
    let full = profile_markers(&read_json(&sandbox.path("profile_resource-usage.json")));
    let whole: HashSet<String> = full.iter().map(marker_key).collect();
    let headers_end = log
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(1)
        .unwrap()
        .0;

    let offsets: Vec<usize> = (0..=log.len()).collect();
    std::thread::scope(|scope| {
        for chunk in offsets.chunks(offsets.len().div_ceil(4)) {
            let (sandbox, log, whole) = (&sandbox, &log, &whole);
            scope.spawn(move || {
                for &cut in chunk {
                    check_cut(sandbox, &log[..cut], cut, headers_end, whole);
                }
            });
        }
    });
}

fn check_cut(
    sandbox: &Sandbox,
    bytes: &[u8],
    cut: usize,
    headers_end: usize,
    whole: &HashSet<String>,
) {
    let log = sandbox.path(&format!("cut-{cut}.jsonl"));
    std::fs::write(&log, bytes).unwrap();
    let args = ["finalize", log.to_str().unwrap()];
    let output = sandbox.run(&args);
    let profile_path = sandbox.path(&format!("cut-{cut}.json"));
    if cut < headers_end {
        assert_eq!(
            output.status.code(),
            Some(2),
            "cut at {cut}, before the thread line is whole: {}",
            describe(&args, &output)
        );
        assert_one_line_error(&output.stderr);
        assert!(!profile_path.exists());
        return;
    }
    assert!(
        output.status.success(),
        "cut at {cut}: {}",
        describe(&args, &output)
    );
    let profile = read_json(&profile_path);
    assert_processed_profile(&profile);
    for marker in profile_markers(&profile) {
        let note = marker.category == 4;
        let cut_off = marker.data["cutOff"].is_string();
        // Totals are added up from the Commands markers the cut kept, each of which must
        // be one of the whole run's: a cut's totals differ from the whole's, made of them.
        let totals = marker.data["type"] == "CommandTotals";
        assert!(
            note || cut_off || totals || whole.contains(&marker_key(&marker)),
            "cut at {cut} invented {} at {}",
            marker.name,
            marker.start
        );
    }
    std::fs::remove_file(profile_path).unwrap();
}

fn marker_key(marker: &MarkerRow) -> String {
    format!(
        "{}|{}|{:?}|{}",
        marker.name, marker.start, marker.end, marker.data
    )
}

fn assert_one_line_error(stderr: &[u8]) {
    let text = String::from_utf8_lossy(stderr);
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    assert!(text.starts_with("tc-profile: error: "), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn mozillas_resource_monitor_stream_finalizes_with_all_its_markers() {
    let sandbox = Sandbox::new();
    let log = sandbox.path("moz.jsonl");
    std::fs::copy(FIXTURE, &log).unwrap();
    let input: Vec<Value> = std::fs::read_to_string(FIXTURE)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    sandbox.run_ok(&["finalize", "moz.jsonl"]);
    let profile = read_json(&sandbox.path("moz.json"));
    assert_processed_profile(&profile);
    let markers = profile_markers(&profile);
    let expected: Vec<&Value> = input.iter().filter(|l| l["type"] == "marker").collect();
    assert_eq!(
        markers.len(),
        expected.len() + 1,
        "every marker, and the note that the footer is missing"
    );
    for line in expected {
        let found = markers.iter().any(|m| {
            m.name == line["name"]
                && m.start == line["startTime"].as_f64().unwrap()
                && m.data == line["data"]
        });
        assert!(found, "missing {line}");
    }
    assert_eq!(profile["meta"]["product"], "mach");
}

#[test]
fn bad_input_gets_a_one_line_error_and_no_output() {
    let sandbox = Sandbox::new();
    let cases: [(&str, &[u8], &str); 6] = [
        ("empty.jsonl", b"", "empty"),
        ("text.jsonl", b"hello world\n", "does not start with"),
        ("doc.jsonl", b"{\"a\": [1, 2]}\n", "does not start with"),
        (
            "garbage.jsonl",
            &[0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 0xff, 0xfe, b'\n', 0],
            "does not start with",
        ),
        (
            "thread-first.jsonl",
            b"{\"type\":\"thread\",\"name\":\"x\"}\n",
            "does not start with",
        ),
        (
            "meta-only.jsonl",
            b"{\"type\":\"meta\",\"startTime\":1}\n",
            "no complete thread line",
        ),
    ];
    for (name, bytes, reason) in cases {
        std::fs::write(sandbox.path(name), bytes).unwrap();
        let output = sandbox.run(&["finalize", name]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        assert_one_line_error(&output.stderr);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(name) && stderr.contains(reason),
            "{name}: {stderr}"
        );
        assert!(sandbox.path(name).exists(), "{name}: the input is kept");
    }
    let output = sandbox.run(&["finalize", "missing.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert_one_line_error(&output.stderr);
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing.jsonl"));

    std::fs::copy(FIXTURE, sandbox.path("good.jsonl")).unwrap();
    std::fs::write(sandbox.path("a-file"), b"").unwrap();
    for output_path in ["no-such-dir/p.json", "a-file/p.json"] {
        let output = sandbox.run(&["finalize", "good.jsonl", "-o", output_path]);
        assert_eq!(output.status.code(), Some(2), "{output_path}");
        assert_one_line_error(&output.stderr);
        assert!(String::from_utf8_lossy(&output.stderr).contains(output_path));
        assert!(
            sandbox.path("good.jsonl").exists(),
            "the log is kept when the profile cannot be written"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(sandbox.dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temporary files left: {leftovers:?}"
    );
}
