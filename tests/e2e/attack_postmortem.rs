//! Files a task could hand to the commands that read logs and profiles after the fact
//! (SPEC.md, "Reading a damaged log"): decompression bombs, a line of a gigabyte, payloads
//! the front-end refuses. Each command ends with a one-line error or a profile that says what
//! it dropped, in bounded memory (the command's peak RSS, from wait4).

use crate::synthetic::complete_task;
use crate::util::*;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Output};

/// The peak resident set every command must stay under, in KiB.
const RSS_MAX_KIB: u64 = 64 << 10;

/// Forks and execs its arguments, waits, and writes the wait status and the child's peak
/// resident set (KiB) to the file named first.
const MEASURE: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(f"{status} {usage.ru_maxrss}")
"#;

/// Runs `tc-profile ARGS` in the sandbox: its output, and its peak resident set in KiB.
///
/// A child's peak resident set starts from its parent's at the fork (Linux keeps the high-water
/// mark of the forked copy across exec): forked from this test process, which other tests make
/// hundreds of megabytes large, it would measure them. So a small python parent forks it.
fn run_measured(sandbox: &Sandbox, args: &[&str]) -> (Output, u64) {
    let report = sandbox.path(".rusage");
    let output = Command::new("python3")
        .args(["-c", MEASURE])
        .arg(&report)
        .arg(BIN)
        .args(args)
        .current_dir(sandbox.dir())
        .output()
        .expect("spawn python3");
    let report = std::fs::read_to_string(&report).expect("the measure's report");
    let (status, peak_kib) = report.split_once(' ').expect("status and peak");
    let output = Output {
        status: ExitStatus::from_raw(status.parse().expect("a wait status")),
        ..output
    };
    (output, peak_kib.parse().expect("a peak in KiB"))
}

/// The first two lines of a real log: what makes a file read as a log.
fn log_header() -> Vec<u8> {
    let log = complete_task();
    let second_newline = log
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(1)
        .map(|(at, _)| at)
        .unwrap();
    log[..=second_newline].to_vec()
}

/// Writes `head` compressed, then `frames` more frames (gzip members) of `frame_zeros` zero
/// bytes each: one frame is compressed once and written again and again, so the file is
/// made in moments and never held whole.
fn write_bomb(path: &Path, zstd: bool, head: &[u8], frames: usize, frame_zeros: usize) {
    let compress = |bytes: &mut dyn Read| -> Vec<u8> {
        match zstd {
            true => zstd::encode_all(bytes, 1).unwrap(),
            false => {
                let mut encoder =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
                std::io::copy(bytes, &mut encoder).unwrap();
                encoder.finish().unwrap()
            }
        }
    };
    let frame = compress(&mut std::io::repeat(0).take(frame_zeros as u64));
    let mut file = BufWriter::new(File::create(path).unwrap());
    file.write_all(&compress(&mut &head[..])).unwrap();
    for _ in 0..frames {
        file.write_all(&frame).unwrap();
    }
    file.flush().unwrap();
}

/// A log header, then 8 GiB of zeros, compressed to about 300 KB (zstd) or 18 GiB of zeros
/// in 18 MB (gzip), as the issue found them.
fn write_log_bombs(sandbox: &Sandbox) -> [&'static str; 2] {
    let header = log_header();
    write_bomb(
        &sandbox.path("bomb.jsonl.zst"),
        true,
        &header,
        512,
        16 << 20,
    );
    write_bomb(
        &sandbox.path("bomb.jsonl.gz"),
        false,
        &header,
        18 << 10,
        1 << 20,
    );
    ["bomb.jsonl.zst", "bomb.jsonl.gz"]
}

fn assert_refused_in_bounded_memory(sandbox: &Sandbox, args: &[&str], flag: &str) {
    let (output, peak_kib) = run_measured(sandbox, args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", describe(args, &output));
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(flag), "names {flag}: {stderr}");
    assert!(peak_kib < RSS_MAX_KIB, "{args:?}: peak RSS {peak_kib} KiB");
}

#[test]
fn a_decompression_bomb_is_refused_by_every_reader_in_bounded_memory() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("good.jsonl"), complete_task()).unwrap();
    for bomb in write_log_bombs(&sandbox) {
        for args in [
            &["finalize", "--keep-log", bomb, "-o", "out.json"][..],
            &["summary", bomb],
            &["merge", "good.jsonl", bomb, "-o", "group.json"],
            &["open", "--no-browser", bomb],
            &["export", "--format", "json", bomb],
        ] {
            assert_refused_in_bounded_memory(&sandbox, args, "--max-input-ratio");
        }
    }
    assert!(!sandbox.path("out.json").exists() && !sandbox.path("group.json").exists());
}

#[test]
fn a_profile_shaped_bomb_read_whole_is_refused_in_bounded_memory() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("good.jsonl"), complete_task()).unwrap();
    let head = br#"{"meta":{"version":27},"threads":[{"name":""#;
    write_bomb(&sandbox.path("bomb.json.zst"), true, head, 512, 16 << 20);
    write_bomb(
        &sandbox.path("bomb.json.gz"),
        false,
        head,
        18 << 10,
        1 << 20,
    );
    for bomb in ["bomb.json.zst", "bomb.json.gz"] {
        for args in [
            &["summary", bomb][..],
            &["merge", "good.jsonl", bomb, "-o", "group.json"],
            &["open", "--no-browser", bomb],
        ] {
            assert_refused_in_bounded_memory(&sandbox, args, "--max-input-ratio");
        }
    }
}

#[test]
fn decompression_past_the_size_cap_is_refused_and_the_cap_can_be_raised() {
    let sandbox = Sandbox::new();
    let log = complete_task();
    let compressed = zstd::encode_all(&log[..], 3).unwrap();
    std::fs::write(sandbox.path("task.jsonl.zst"), compressed).unwrap();
    let capped = ["summary", "--max-input-size", "1K", "task.jsonl.zst"];
    assert_refused_in_bounded_memory(&sandbox, &capped, "--max-input-size");
    sandbox.run_ok(&["summary", "--max-input-size", "1M", "task.jsonl.zst"]);
}

#[test]
fn with_the_ratio_cap_raised_a_bomb_s_endless_line_is_skipped_and_counted() {
    let sandbox = Sandbox::new();
    write_bomb(
        &sandbox.path("zeros.jsonl.gz"),
        false,
        &log_header(),
        64,
        1 << 20,
    );
    let args = [
        "finalize",
        "--max-input-ratio",
        "1000000",
        "zeros.jsonl.gz",
        "-o",
        "zeros.json",
    ];
    let (output, peak_kib) = run_measured(&sandbox, &args);
    assert!(output.status.success(), "{}", describe(&args, &output));
    assert!(peak_kib < RSS_MAX_KIB, "peak RSS {peak_kib} KiB");
    let note = log_damage_note(&read_json(&sandbox.path("zeros.json")));
    assert!(
        note.contains("line over 4 MiB (1 lines, 67108864 bytes)"),
        "{note}"
    );
}

/// The text of the profile's `Log damage` note.
fn log_damage_note(profile: &serde_json::Value) -> String {
    assert_processed_profile(profile);
    let markers = profile_markers(profile);
    let note = markers.iter().find(|m| m.name == "Log damage");
    let note = note.expect("a Log damage note");
    note.data["text"].as_str().unwrap().to_owned()
}

#[test]
fn a_line_of_a_gigabyte_is_skipped_unread_in_bounded_memory() {
    let sandbox = Sandbox::new();
    let log = sandbox.path("long.jsonl");
    std::fs::write(&log, log_header()).unwrap();
    // A gigabyte of NULs without a newline, sparse: written in no time, taking no disk.
    let file = OpenOptions::new().append(true).open(&log).unwrap();
    let length = file.metadata().unwrap().len();
    file.set_len(length + (1 << 30)).unwrap();
    drop(file);
    for args in [
        &["finalize", "--keep-log", "long.jsonl", "-o", "long.json"][..],
        &["summary", "long.jsonl"],
        &["merge", "long.jsonl", "long.json", "-o", "group.json"],
    ] {
        let (output, peak_kib) = run_measured(&sandbox, args);
        assert!(output.status.success(), "{}", describe(args, &output));
        assert!(peak_kib < RSS_MAX_KIB, "{args:?}: peak RSS {peak_kib} KiB");
    }
    let note = log_damage_note(&read_json(&sandbox.path("long.json")));
    assert!(
        note.contains("line over 4 MiB (1 lines, 1073741824 bytes)"),
        "{note}"
    );
    assert_processed_group(&read_json(&sandbox.path("group.json")), 2);
    std::fs::remove_file(&log).unwrap();
}

#[test]
fn a_marker_whose_data_is_not_an_object_is_dropped_and_counted() {
    let sandbox = Sandbox::new();
    let mut log = complete_task();
    for data in [
        "[1]",
        "5",
        r#""s""#,
        r#"{"type":5}"#,
        r#"{"type":"Text","type":null}"#,
    ] {
        let line = format!(
            r#"{{"type":"marker","name":"forged","startTime":1,"endTime":2,"data":{data}}}"#
        );
        log.extend_from_slice(line.as_bytes());
        log.push(b'\n');
    }
    std::fs::write(sandbox.path("forged.jsonl"), log).unwrap();
    sandbox.run_ok(&["finalize", "forged.jsonl", "-o", "forged.json"]);
    let profile = read_json(&sandbox.path("forged.json"));
    let note = log_damage_note(&profile);
    assert!(
        note.contains("wrong fields for its type (5 lines"),
        "{note}"
    );
    let markers = profile_markers(&profile);
    assert_eq!(count_named(&markers, "forged"), 0);
    assert!(markers
        .iter()
        .all(|m| m.data.is_object() || m.data.is_null()));
}
