use crate::util::*;
use std::process::Command;

/// Prints timestamped and plain lines on both streams, interleaved: a warning and an
/// error, invalid UTF-8, a 3 MB line, a stat line, a burst over the rate cap, and a last
/// line without a newline. Its times start at its argument (epoch ms), so that two runs
/// print the same bytes; each timestamped line says its time (`at=`) and is printed after
/// it, as a worker prints the time a step began.
const SCRIPT: &str = r#"
import datetime, sys, time
out, err = sys.stdout.buffer, sys.stderr.buffer
def put(stream, data):
    stream.write(data)
    stream.flush()
def stamped(stream, label, text, ms):
    when = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    iso = when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    put(stream, f"[{label} {iso}] {text} at={ms}\n".encode())
start = int(sys.argv[1])
time.sleep(max(0, (start + 300) / 1000 - time.time()))
stamped(out, "taskcluster", "worker started", start)
stamped(err, "taskcluster:warn", "low disk", start + 50)
put(out, b"plain stdout line\n")
put(err, b"plain stderr line\n")
stamped(out, "vcs", "cloned", start + 100)
put(err, b"bad \xff\xfe bytes\n")
put(out, b"x" * 3_000_000 + b"\n")
stamped(err, "task:error", "step failed", start + 150)
put(out, b"[taskcluster-task:stat] build.objects:5|c\n")
put(out, b"".join(b"burst %d\n" % i for i in range(25_000)))
time.sleep(0.5)
put(err, b"last stderr line, no newline")
sys.exit(3)
"#;

const BURST_LINES: usize = 25_000;

/// Time enough for the recording to start before the script's first time.
const START_MARGIN_MS: f64 = 2000.0;

#[test]
fn run_passes_output_through_byte_for_byte_and_records_a_marker_per_line() {
    let sandbox = Sandbox::new();
    let start = format!("{}", (epoch_ms() + START_MARGIN_MS) as u64);
    let python = python().to_str().unwrap();
    let args = [
        "run",
        "--quiet",
        "--log-lines",
        "-o",
        "p.json",
        "--",
        python,
        "-c",
        SCRIPT,
        &start,
    ];
    let recorded = sandbox.run(&args);
    // Run after the recording, its times already past: the same bytes, printed at once.
    let direct = Command::new(python)
        .args(["-c", SCRIPT, &start])
        .output()
        .unwrap();
    assert_eq!(
        recorded.status.code(),
        Some(3),
        "{}",
        describe(&args, &recorded)
    );
    assert_eq!(direct.status.code(), Some(3));
    assert!(recorded.stdout == direct.stdout, "stdout differs");
    assert!(recorded.stderr == direct.stderr, "stderr differs");
    assert!(direct.stdout.len() > 3_000_000);

    let profile = read_json(&sandbox.path("p.json"));
    assert_processed_profile(&profile);
    let start_epoch = profile["meta"]["startTime"].as_f64().unwrap();
    let markers = profile_markers(&profile);
    let logs: Vec<&MarkerRow> = markers.iter().filter(|m| m.data["type"] == "Log").collect();
    let message = |m: &MarkerRow| m.data["message"].as_str().unwrap().to_owned();
    let find = |text: &str| {
        logs.iter()
            .find(|m| message(m).starts_with(text))
            .unwrap_or_else(|| panic!("no Log marker for {text:?}"))
    };

    for (text, name, stream, category) in [
        ("worker started", "taskcluster", "stdout", 5),
        ("low disk", "taskcluster", "stderr", 6),
        ("cloned", "vcs", "stdout", 5),
        ("step failed", "task", "stderr", 7),
    ] {
        let marker = find(text);
        let at: f64 = message(marker)
            .rsplit("at=")
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            (marker.name.as_str(), marker.category),
            (name, category),
            "{text}"
        );
        assert_eq!(marker.data["stream"], stream, "{text}");
        assert!(
            (marker.start - (at - start_epoch)).abs() < 0.01,
            "{text}: at {} ms, its own time is {} ms",
            marker.start,
            at - start_epoch
        );
    }
    let command = markers.iter().find(|m| m.name == "Command").unwrap();
    let during_command =
        |m: &MarkerRow| m.start >= command.start && m.start <= command.end.unwrap();
    for (text, stream) in [
        ("plain stdout line", "stdout"),
        ("plain stderr line", "stderr"),
        ("last stderr line, no newline", "stderr"),
    ] {
        let marker = find(text);
        assert_eq!(
            (marker.name.as_str(), marker.category),
            (stream, 5),
            "{text}"
        );
        assert!(
            during_command(marker),
            "{text} at its arrival: {}",
            marker.start
        );
    }
    let invalid = find("bad ");
    assert_eq!(message(invalid), "bad \u{fffd}\u{fffd} bytes");
    assert_eq!(invalid.data["invalidUtf8"], "replaced by U+FFFD");
    let long = find("xxxx");
    assert_eq!(
        long.data["length"], 3_000_000,
        "the cut line keeps its length"
    );
    assert_eq!(message(long).len(), 1024);

    let kept = logs
        .iter()
        .filter(|m| message(m).starts_with("burst "))
        .count();
    let note = markers
        .iter()
        .find(|m| m.name == "Log lines dropped")
        .expect("a drop note");
    let text = note.data["text"].as_str().unwrap();
    let counts: Vec<usize> = text
        .split(&[' ', ','][..])
        .filter_map(|word| word.parse().ok())
        .collect();
    let dropped = counts[0] + counts.last().unwrap();
    assert!(dropped > 0 && kept >= 20_000, "{kept} kept; {text}");
    assert_eq!(
        kept + dropped,
        BURST_LINES,
        "every line kept or counted: {text}"
    );
    assert_eq!(logs.len(), 9 + kept, "a marker a line, the stat line aside");

    let stat = markers
        .iter()
        .find(|m| m.series() == "task.build.objects")
        .expect("the stat line's metric track");
    assert_eq!(stat.data["value"], 5.0);
    assert!(!logs
        .iter()
        .any(|m| message(m).contains("taskcluster-task:stat")));
}

#[test]
fn no_log_lines_leaves_the_output_unrecorded() {
    let sandbox = Sandbox::new();
    let args = run_script(&["--no-log-lines", "--quiet"], "echo hello; echo oops >&2");
    let output = sandbox.run_ok(&args);
    assert_eq!(output.stdout, b"hello\n");
    assert_eq!(output.stderr, b"oops\n");
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    let markers = profile_markers(&profile);
    assert!(!markers.iter().any(|m| m.data["type"] == "Log"));
    let sources = profile["meta"]["tcProfile"]["sources"].as_array().unwrap();
    assert!(!sources.iter().any(|s| s == "log-lines"), "{sources:?}");
}

/// `line-0001`..: names that no other line contains.
fn numbered(lines: std::ops::RangeInclusive<u32>) -> String {
    lines.map(|n| format!("line-{n:04}\n")).collect()
}

#[test]
fn record_task_log_takes_every_line_once_through_truncation_replacement_and_a_sigkill() {
    let sandbox = Sandbox::new();
    let file = sandbox.path("live_backing.log");
    let recording = Recording::start(&sandbox, &["--task-log", "live_backing.log"]);
    append(&file, numbered(1..=50).as_bytes());
    recording.wait_logged("line-0050");
    // Truncated and written again, shorter than what was read (as `: > file` then writes).
    std::fs::write(&file, numbered(51..=60)).unwrap();
    recording.wait_logged("line-0060");
    // Replaced: a new file renamed over it.
    let next = sandbox.path("next.log");
    std::fs::write(&next, numbered(61..=80)).unwrap();
    std::fs::rename(&next, &file).unwrap();
    recording.wait_logged("line-0080");
    append(&file, numbered(81..=100).as_bytes());
    recording.kill();
    append(&file, numbered(101..=110).as_bytes());

    sandbox.run_ok(&["finalize", "profile_resource-usage.jsonl"]);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let mut taken: Vec<String> = profile_markers(&profile)
        .iter()
        .filter(|m| m.data["type"] == "Log")
        .map(|m| m.data["message"].as_str().unwrap().to_owned())
        .collect();
    taken.sort();
    let every: Vec<String> = numbered(1..=110).lines().map(str::to_owned).collect();
    assert_eq!(taken, every, "every line exactly once");
}

/// A Taskcluster-style log of 3,050 lines (`tests/fixtures/make-task-log.py`), from
/// 2026-11-29T01:00:00Z over 14 minutes.
const TASK_LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/live_backing.log"
);
/// Epoch ms of the fixture's first line.
const TASK_LOG_START: f64 = 1_795_914_000_000.0;

/// A finished 20-minute recording that began a minute before the fixture's first line.
fn recording_around_the_task_log(path: &std::path::Path) {
    use tc_profile_format::{encode_line, meta_line, thread_line, EndReason, Footer, Line};
    use tc_profile_format::{Marker, MetaInfo};
    let meta = meta_line(&MetaInfo {
        start_time: TASK_LOG_START - 60_000.0,
        interval_ms: 1000.0,
        recorder: "tc-profile test".to_owned(),
        ..MetaInfo::default()
    });
    let end = 20.0 * 60_000.0;
    let lines = [
        meta,
        thread_line("tc-profile"),
        Line::Marker(Marker::interval("Command", 1000.0, end - 1000.0).with_category(2)),
        Line::Footer(Footer {
            end_time: end,
            reason: EndReason::CommandExited,
        }),
    ];
    std::fs::write(
        path,
        lines.iter().flat_map(encode_line).collect::<Vec<u8>>(),
    )
    .unwrap();
}

/// The Log markers of a profile, as (name, time, category, message).
fn log_markers(profile: &serde_json::Value) -> Vec<(String, f64, u64, String)> {
    profile_markers(profile)
        .into_iter()
        .filter(|m| m.data["type"] == "Log")
        .map(|m| {
            let message = m.data["message"].as_str().unwrap().to_owned();
            (m.name, m.start, m.category, message)
        })
        .collect()
}

#[test]
fn a_taskcluster_log_is_added_aligned_by_its_timestamps_to_a_log_or_a_profile() {
    let sandbox = Sandbox::new();
    recording_around_the_task_log(&sandbox.path("task.jsonl"));
    let args = [
        "finalize",
        "--keep-log",
        "--task-log",
        TASK_LOG,
        "-o",
        "finalized.json",
        "task.jsonl",
    ];
    sandbox.run_ok(&args);
    let finalized = read_json(&sandbox.path("finalized.json"));
    assert_processed_profile(&finalized);
    let logs = log_markers(&finalized);
    let text = std::fs::read_to_string(TASK_LOG).unwrap();
    assert_eq!(logs.len(), text.lines().count(), "a marker a line");

    let first = logs
        .iter()
        .find(|m| m.3.starts_with("Worker Type"))
        .unwrap();
    assert_eq!(
        (first.0.as_str(), first.1, first.2),
        ("taskcluster", 60_000.0, 5)
    );
    let components: std::collections::BTreeSet<&str> = logs.iter().map(|m| m.0.as_str()).collect();
    for name in ["taskcluster", "task", "fetches", "vcs", "setup", "log"] {
        assert!(components.contains(name), "{name} in {components:?}");
    }
    let warning = logs
        .iter()
        .find(|m| m.3.starts_with("no such cached image"))
        .unwrap();
    assert_eq!(warning.2, 6, "warn lines in Log warning");
    let error = logs
        .iter()
        .find(|m| m.3.starts_with("Error running mach"))
        .unwrap();
    assert_eq!(error.2, 7, "error lines in Log error");
    // A plain line takes the time of the prefixed line before it. The fixture's times only
    // grow, and markers of one time keep their order: the profile's order is the file's.
    let mut last_prefixed = 0.0;
    for (line, marker) in text.lines().zip(&logs) {
        if line.starts_with('[') {
            last_prefixed = marker.1;
        } else {
            assert_eq!(
                (marker.0.as_str(), marker.1),
                ("log", last_prefixed),
                "{line}"
            );
        }
    }
    let long: Vec<_> = profile_markers(&finalized)
        .into_iter()
        .filter(|m| m.data["type"] == "Log" && m.data["length"].is_u64())
        .collect();
    assert_eq!(long.len(), 3, "the three long lines are cut and counted");
    assert!(long
        .iter()
        .all(|m| m.data["message"].as_str().unwrap().len() <= 1024));

    // The same lines at the same times added afterwards: to the finished, compressed
    // profile, and to the log itself.
    sandbox.run_ok(&[
        "finalize",
        "--keep-log",
        "-o",
        "plain.json.gz",
        "task.jsonl",
    ]);
    for input in ["plain.json.gz", "task.jsonl"] {
        sandbox.run_ok(&["add-log", input, TASK_LOG, "-o", "added.json"]);
        let added = read_json(&sandbox.path("added.json"));
        assert_processed_profile(&added);
        let mut got = log_markers(&added);
        let mut want = logs.clone();
        for list in [&mut got, &mut want] {
            list.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.3.cmp(&b.3)));
        }
        assert_eq!(got, want, "add-log {input}");
    }
    // Mozilla's stream: the Log categories and schema are declared in its meta.
    sandbox.run_ok(&["add-log", MOZILLA_STREAM, TASK_LOG, "-o", "mozilla.json"]);
    let mozilla = read_json(&sandbox.path("mozilla.json"));
    assert_processed_profile(&mozilla);
    assert_eq!(log_markers(&mozilla).len(), logs.len());
}

/// A log that `record --task-log FILE` wrote: its header, then `body`. The profile
/// directory it names is gone, as after a task that removed it.
fn followed_log(sandbox: &Sandbox, file: &std::path::Path, body: Vec<tc_profile_format::Line>) {
    use tc_profile_format::{encode_line, meta_line, thread_line, MetaInfo};
    let meta = meta_line(&MetaInfo {
        start_time: epoch_ms(),
        interval_ms: 100.0,
        recorder: "tc-profile test".to_owned(),
        profile_dir: Some(sandbox.path("gone").to_string_lossy().into_owned()),
        task_log: Some(file.to_string_lossy().into_owned()),
        ..MetaInfo::default()
    });
    let lines = [meta, thread_line("tc-profile")].into_iter().chain(body);
    let bytes: Vec<u8> = lines.flat_map(|line| encode_line(&line)).collect();
    std::fs::write(sandbox.path("task.jsonl"), bytes).unwrap();
}

/// A batch of the task log's `texts`, as the recorder writes it: its checkpoint says the
/// file is taken up to `offset` (and `done`), or it has none (the recorder was killed).
fn log_batch(
    file: &std::path::Path,
    texts: &[&str],
    checkpoint: Option<(u64, bool)>,
) -> Vec<tc_profile_format::Line> {
    use std::os::unix::fs::MetadataExt;
    use tc_profile_format::task_log::{Captured, Placement};
    use tc_profile_format::{Checkpoint, FileProgress, Ingest, Line};
    let mut placement = Placement {
        start_epoch_ms: 0.0,
        latest: 0.0,
        fallback: 0.0,
    };
    let mut batch = vec![Line::Ingest(Ingest { task_log: true })];
    for text in texts {
        let line = Captured::new(text.as_bytes(), text.len());
        batch.push(Line::Marker(placement.file_marker(&line)));
    }
    if let Some((offset, done)) = checkpoint {
        let metadata = std::fs::metadata(file).unwrap();
        let files = vec![FileProgress {
            name: file.to_string_lossy().into_owned(),
            dev: metadata.dev(),
            ino: metadata.ino(),
            handle: None,
            offset,
            done,
        }];
        batch.push(Line::Checkpoint(Checkpoint { files }));
    }
    batch
}

/// Finalizes `task.jsonl` with `args`; the messages of its Log markers, sorted.
fn finalized_log_lines(sandbox: &Sandbox, args: &[&str]) -> Vec<String> {
    let mut all = vec!["finalize", "-o", "p.json"];
    all.extend_from_slice(args);
    all.push("task.jsonl");
    sandbox.run_ok(&all);
    let profile = read_json(&sandbox.path("p.json"));
    assert_processed_profile(&profile);
    let mut messages: Vec<String> = log_markers(&profile).into_iter().map(|m| m.3).collect();
    messages.sort();
    messages
}

fn lines_of(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

#[test]
fn a_torn_task_log_batch_is_read_again_from_the_file_not_doubled_when_the_profile_dir_is_gone() {
    let sandbox = Sandbox::new();
    let file = sandbox.path("live.log");
    std::fs::write(&file, numbered(1..=3)).unwrap();
    let mut body = log_batch(&file, &["line-0001"], Some((10, false)));
    body.extend(log_batch(&file, &["line-0002"], None));
    followed_log(&sandbox, &file, body);
    assert_eq!(
        finalized_log_lines(&sandbox, &["--keep-log"]),
        lines_of(&numbered(1..=3)),
        "every line once"
    );
    // The file gone, the torn batch is all there is of its line: it is used.
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        finalized_log_lines(&sandbox, &[]),
        lines_of(&numbered(1..=2))
    );
}

#[test]
fn finalize_takes_nothing_more_from_a_task_log_read_to_its_end_by_a_recording_that_ended() {
    use tc_profile_format::{EndReason, Footer, Line};
    let sandbox = Sandbox::new();
    let file = sandbox.path("live.log");
    std::fs::write(&file, numbered(1..=2)).unwrap();
    let mut body = log_batch(&file, &["line-0001", "line-0002"], Some((20, true)));
    body.push(Line::Footer(Footer {
        end_time: 1000.0,
        reason: EndReason::CommandExited,
    }));
    followed_log(&sandbox, &file, body);
    append(&file, numbered(3..=3).as_bytes()); // after the recording
    assert_eq!(
        finalized_log_lines(&sandbox, &[]),
        lines_of(&numbered(1..=2))
    );
}

#[test]
fn after_a_clean_end_finalize_takes_nothing_from_a_task_log_that_appeared_or_was_replaced_later() {
    use tc_profile_format::{EndReason, Footer, Line};
    let footer = || {
        Line::Footer(Footer {
            end_time: 1000.0,
            reason: EndReason::CommandExited,
        })
    };
    let sandbox = Sandbox::new();
    let file = sandbox.path("live.log");
    // The file appears only after the recording ended: the recorder never read it.
    followed_log(&sandbox, &file, vec![footer()]);
    std::fs::write(&file, numbered(1..=2)).unwrap();
    assert_eq!(
        finalized_log_lines(&sandbox, &["--keep-log"]),
        Vec::<String>::new()
    );
    // The recorder read it to its end; then the worker rotated it, a new file at the path.
    let mut body = log_batch(&file, &["line-0001", "line-0002"], Some((20, true)));
    body.push(footer());
    followed_log(&sandbox, &file, body);
    std::fs::rename(&file, sandbox.path("rotated.log")).unwrap();
    std::fs::write(&file, numbered(3..=4)).unwrap();
    assert_eq!(
        finalized_log_lines(&sandbox, &[]),
        lines_of(&numbered(1..=2))
    );
}

#[test]
fn finalize_task_log_knows_the_followed_file_by_its_identity_not_its_spelling() {
    let sandbox = Sandbox::new();
    let file = sandbox.path("live.log");
    std::fs::write(&file, numbered(1..=3)).unwrap();
    std::fs::create_dir(sandbox.path("sub")).unwrap();
    std::os::unix::fs::symlink(&file, sandbox.path("link.log")).unwrap();
    followed_log(
        &sandbox,
        &file,
        log_batch(&file, &["line-0001", "line-0002"], Some((20, false))),
    );
    for spelling in ["sub/../live.log", "link.log"] {
        assert_eq!(
            finalized_log_lines(&sandbox, &["--keep-log", "--task-log", spelling]),
            lines_of(&numbered(1..=3)),
            "{spelling}: every line once"
        );
    }
}
