use crate::synthetic::{complete_task, cut_off_task};
use crate::util::*;
use std::io::{Read, Write};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut text)
        .unwrap();
    text
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 1).unwrap()
}

fn unzstd(bytes: &[u8]) -> Vec<u8> {
    zstd::decode_all(bytes).unwrap()
}

fn read(sandbox: &Sandbox, name: &str) -> Vec<u8> {
    std::fs::read(sandbox.path(name)).unwrap()
}

#[test]
fn output_is_compressed_by_its_extension_and_decompresses_to_the_plain_profile() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task()).unwrap();
    for output in ["p.json", "p.json.gz", "p.json.zst"] {
        sandbox.run_ok(&["finalize", "--keep-log", "task.jsonl", "-o", output]);
    }
    let plain = read(&sandbox, "p.json");
    assert_processed_profile(&serde_json::from_slice(&plain).unwrap());
    let gz = read(&sandbox, "p.json.gz");
    let zst = read(&sandbox, "p.json.zst");
    assert!(gz.starts_with(&[0x1f, 0x8b]), "gzip magic");
    assert!(zst.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]), "zstd magic");
    assert_eq!(gunzip(&gz), plain);
    assert_eq!(unzstd(&zst), plain);
    assert!(
        gz.len() * 5 < plain.len(),
        "{} of {}",
        gz.len(),
        plain.len()
    );
    assert!(
        zst.len() * 5 < plain.len(),
        "{} of {}",
        zst.len(),
        plain.len()
    );
}

#[test]
fn compressed_logs_finalize_to_the_same_profile_beside_them() {
    let sandbox = Sandbox::new();
    let log = complete_task();
    std::fs::write(sandbox.path("plain.jsonl"), &log).unwrap();
    std::fs::write(sandbox.path("a.jsonl.gz"), gzip(&log)).unwrap();
    std::fs::write(sandbox.path("b.jsonl.zst"), zstd(&log)).unwrap();
    sandbox.run_ok(&["finalize", "plain.jsonl"]);
    sandbox.run_ok(&["finalize", "a.jsonl.gz"]);
    sandbox.run_ok(&["finalize", "b.jsonl.zst"]);
    let plain = read(&sandbox, "plain.json");
    assert_eq!(gunzip(&read(&sandbox, "a.json.gz")), plain);
    assert_eq!(unzstd(&read(&sandbox, "b.json.zst")), plain);
    assert!(!sandbox.path("a.jsonl.gz").exists(), "the log is removed");
}

#[test]
fn a_compressed_log_cut_off_mid_stream_keeps_what_decompresses() {
    let sandbox = Sandbox::new();
    let log = cut_off_task(600);
    let compressed = gzip(&log);
    let cut = &compressed[..compressed.len() * 3 / 4];
    std::fs::write(sandbox.path("torn.jsonl.gz"), cut).unwrap();
    std::fs::write(sandbox.path("torn.jsonl.zst"), zstd(&log)).unwrap();
    for (log, profile) in [
        ("torn.jsonl.gz", "torn.json.gz"),
        ("torn.jsonl.zst", "torn.json.zst"),
    ] {
        let output = sandbox.run_ok(&["finalize", log]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("recording ended early"), "{stderr}");
        let bytes = read(&sandbox, profile);
        let json = if profile.ends_with(".gz") {
            gunzip(&bytes)
        } else {
            unzstd(&bytes)
        };
        let profile = serde_json::from_slice(&json).unwrap();
        assert_processed_profile(&profile);
        let markers = profile_markers(&profile);
        let samples: Vec<f64> = markers
            .iter()
            .filter(|m| m.name == "CPU Use")
            .map(|m| m.start / 1000.0)
            .collect();
        let whole: Vec<f64> = (0..samples.len()).map(|s| s as f64).collect();
        assert_eq!(
            samples, whole,
            "{log}: the samples before the cut, in order"
        );
        // gzip loses the block being decoded where the stream is cut; zstd here only the
        // torn last line.
        let expected = if log.ends_with(".gz") {
            300..600
        } else {
            600..601
        };
        assert!(
            expected.contains(&samples.len()),
            "{log}: {}",
            samples.len()
        );
        assert_eq!(count_named(&markers, "Recording ended early"), 1, "{log}");
    }
}

#[test]
fn summary_reads_every_compressed_form_alike() {
    let sandbox = Sandbox::new();
    let log = complete_task();
    std::fs::write(sandbox.path("task.jsonl"), &log).unwrap();
    std::fs::write(sandbox.path("task.jsonl.gz"), gzip(&log)).unwrap();
    std::fs::write(sandbox.path("task.jsonl.zst"), zstd(&log)).unwrap();
    for output in ["task.json", "task.json.gz", "task.json.zst"] {
        sandbox.run_ok(&["finalize", "--keep-log", "task.jsonl", "-o", output]);
    }
    let summary = |input: &str| {
        sandbox
            .run_ok(&["summary", "--format", "json", input])
            .stdout
    };
    let expected = summary("task.jsonl");
    for input in [
        "task.jsonl.gz",
        "task.jsonl.zst",
        "task.json",
        "task.json.gz",
        "task.json.zst",
    ] {
        assert_eq!(summary(input), expected, "{input}");
    }
}

#[test]
fn run_writes_a_compressed_profile_from_a_plain_log() {
    let sandbox = Sandbox::new();
    sandbox.run_ok(&["run", "--keep-log", "-o", "p.json.zst", "--", "true"]);
    assert_streamed_profile(&read(&sandbox, "p.jsonl"));
    let profile = serde_json::from_slice(&unzstd(&read(&sandbox, "p.json.zst"))).unwrap();
    assert_processed_profile(&profile);
}
