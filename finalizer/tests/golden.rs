//! The profiles of fixed logs, byte for byte: what any change to the reader or the compactor
//! must keep. Each log mixes what finalizing must handle (every line kind, damage, batches
//! with and without checkpoints, open intervals, marker-file ends, graph values a schema
//! refuses, `unique-string` fields, unsorted starts, long tracks to merge, a processed
//! profile read back, a compressed log); `tests/fixtures/golden/` holds each one's profile
//! (the long track's as a hash: it is megabytes). `GOLDEN_UPDATE=1` writes them anew.

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use tc_profile_finalizer::{
    compact, finalize, read_input, read_log, FinalizeOptions, Input, InputCaps, LockWait,
};
use tc_profile_format::marker_file::Problem;
use tc_profile_format::{
    encode_line, meta_line, thread_line, Checkpoint, Close, Dropped, EndReason, FileProgress,
    Footer, Gap, Line, Marker, MetaInfo, OpenInterval,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(name)
}

/// Compares `profile` with the stored one (or stores it, under `GOLDEN_UPDATE`).
fn assert_golden(name: &str, profile: &[u8]) {
    let path = fixture(name);
    if std::env::var_os("GOLDEN_UPDATE").is_some() {
        std::fs::write(&path, profile).unwrap();
    }
    let expected = std::fs::read(&path).unwrap();
    assert!(
        expected == profile,
        "{name}: the profile differs from the golden one"
    );
}

/// FNV-1a: a stable hash, for a profile too large to keep.
fn fnv1a(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x} {}\n", bytes.len())
}

fn profile_of(log: &[u8]) -> Vec<u8> {
    let (profile, _) = compact(read_log(log).unwrap());
    serde_json::to_vec(&profile).unwrap()
}

fn headers(schemas: Value) -> Vec<u8> {
    let Line::Meta(mut meta) = meta_line(&MetaInfo {
        start_time: 1.8e12,
        interval_ms: 100.0,
        sources: vec!["cpu".into()],
        sync_policy: "interval:100ms".into(),
        recorder: "tc-profile golden".into(),
        ..MetaInfo::default()
    }) else {
        unreachable!("meta_line makes a meta line")
    };
    let known = meta["markerSchema"].as_array_mut().unwrap();
    known.extend(schemas.as_array().unwrap().iter().cloned());
    let mut bytes = encode_line(&Line::Meta(meta));
    bytes.extend(encode_line(&thread_line("golden")));
    bytes
}

fn marker(line: Marker) -> Vec<u8> {
    encode_line(&Line::Marker(line))
}

/// Every kind of line, damage between them, starts out of order, no footer.
fn every_line_log() -> Vec<u8> {
    let unique = json!([{"name": "Lookup", "display": ["marker-table"],
        "data": [{"key": "url", "format": "unique-string"}, {"key": "n", "format": "integer"}]}]);
    let mut log = headers(unique);
    let text = |t: &str| json!({"type": "Text", "text": t});
    let open = |id, name: &str, start, key: Option<&str>| OpenInterval {
        id,
        name: name.into(),
        start_time: start,
        category: Some(2),
        data: Some(text(name)),
        key: key.map(Into::into),
    };
    log.extend(marker(
        Marker::interval("build", 5.0, 90.5)
            .with_category(2)
            .with_data(text("b")),
    ));
    log.extend(marker(Marker::instant("quote \" and \\ caf\u{e9}", 1.25)));
    log.extend(marker(
        Marker::instant("lookup", 3.0)
            .with_data(json!({"type": "Lookup", "url": "https://a", "n": 1})),
    ));
    log.extend(marker(
        Marker::instant("lookup", 4.0)
            .with_data(json!({"type": "Lookup", "url": "https://b", "n": 2})),
    ));
    log.extend(marker(
        Marker::instant("lookup", 4.5)
            .with_data(json!({"type": "Lookup", "url": "https://a", "n": 3})),
    ));
    log.extend(encode_line(&Line::Open(open(1, "test", 10.0, None))));
    log.extend(encode_line(&Line::Open(open(2, "never ends", 11.0, None))));
    log.extend(encode_line(&Line::Open(open(
        3,
        "file step",
        12.0,
        Some("file:1.jsonl:step"),
    ))));
    log.extend(b"not json at all\n");
    log.extend(br#"{"type":"marker","startTime":1}"#);
    log.extend(b"\n");
    log.extend(marker(open(1, "test", 10.0, None).close(20.0, None)));
    log.extend([0u8; 64]);
    log.extend(encode_line(&Line::Gap(Gap {
        start_time: 30.0,
        end_time: 35.0,
        lines: 7,
        reason: "No space left on device (os error 28)".into(),
    })));
    log.extend(encode_line(&Line::Ingest(Default::default())));
    log.extend(marker(
        Marker::instant("from a file", 40.0).with_category(1),
    ));
    log.extend(encode_line(&Line::Schema(
        json!({"name": "Bar", "display": [], "data": [],
               "graphs": [{"key": "v", "type": "bar", "color": "red"}]})
        .as_object()
        .unwrap()
        .clone(),
    )));
    log.extend(encode_line(&Line::Close(Close {
        key: "file:1.jsonl:step".into(),
        name: "file step".into(),
        time: 41.0,
        data: None,
    })));
    log.extend(encode_line(&Line::Close(Close {
        key: "file:1.jsonl:none".into(),
        name: "no begin".into(),
        time: 42.0,
        data: None,
    })));
    log.extend(encode_line(&Line::Dropped(Dropped {
        file: "1.jsonl".into(),
        problem: Problem::NotJson,
        count: 2,
        bytes: 9,
    })));
    log.extend(encode_line(&Line::Checkpoint(Checkpoint {
        files: vec![FileProgress {
            name: "1.jsonl".into(),
            dev: 1,
            ino: 2,
            handle: None,
            offset: 99,
            done: false,
        }],
    })));
    log.extend(marker(
        Marker::interval("bar", 45.0, 46.0).with_data(json!({"type": "Bar", "v": "1GB"})),
    ));
    log.extend(marker(
        Marker::interval("bar", 46.0, 47.0).with_data(json!({"type": "Bar", "v": 2})),
    ));
    log.extend(headers(json!([])));
    log.extend(marker(Marker::instant("late but early", 0.5)));
    log.extend(encode_line(&Line::Ingest(Default::default())));
    log.extend(marker(Marker::instant("batch never checkpointed", 50.0)));
    log.extend(br#"{"type":"marker","name":"torn","#);
    log
}

/// A whole log: footer, payloads with keys in any order and spacing, floats of every size.
fn clean_log() -> Vec<u8> {
    let mut log = headers(json!([]));
    for i in 0..50u32 {
        let t = f64::from(i) * 100.123_456_789;
        log.extend(marker(
            Marker::interval("CPU Use", t, t + 100.0)
                .with_category(1)
                .with_data(
                    json!({"type": "CPU", "user": f64::from(i) / 7.0, "system": 0.05,
                                  "cpuPercent": f64::from(i) / 100.0}),
                ),
        ));
        log.extend(marker(Marker::instant("tick", t + 1e-9)));
    }
    log.extend(
        br#"{"type":"marker","name":"spaced","startTime": 7,"endTime":8.5 ,"data":{ "z" : [1, 2.50, "\u00e9"], "type":"Text"},"category":2}"#,
    );
    log.extend(b"\n");
    log.extend(encode_line(&Line::Footer(Footer {
        end_time: 6000.0,
        reason: EndReason::CommandExited,
    })));
    log
}

/// More samples of one track than a profile keeps: they are merged.
fn long_track_log() -> Vec<u8> {
    let mut log = headers(json!([]));
    for i in 0..25_000u32 {
        let t = f64::from(i) * 100.0;
        log.extend(marker(
            Marker::interval("CPU Use", t, t + 100.0)
                .with_category(1)
                .with_data(
                    json!({"type": "CPU", "user": f64::from(i % 17) / 20.0, "system": 0.05,
                       "cpuPercent": 0.05}),
                ),
        ));
        if i % 1000 == 0 {
            log.extend(marker(Marker::instant("step", t + 3.0).with_category(2)));
        }
    }
    log
}

fn mozilla_stream() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/mozsystemmonitor-stream.jsonl");
    std::fs::read(path).unwrap()
}

#[test]
fn a_log_of_every_line_kind_and_its_damage_finalizes_as_before() {
    assert_golden("every-line.json", &profile_of(&every_line_log()));
}

#[test]
fn a_clean_log_finalizes_as_before() {
    assert_golden("clean.json", &profile_of(&clean_log()));
}

#[test]
fn a_long_track_is_merged_as_before() {
    assert_golden(
        "long-track.hash",
        fnv1a(&profile_of(&long_track_log())).as_bytes(),
    );
}

#[test]
fn mozillas_stream_finalizes_as_before() {
    assert_golden("mozilla-stream.json", &profile_of(&mozilla_stream()));
}

#[test]
fn a_processed_profile_and_a_compressed_log_read_back_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("every-line.json");
    std::fs::write(&profile, profile_of(&every_line_log())).unwrap();
    let read = |path: &Path| match read_input(path, InputCaps::default(), None).unwrap() {
        input @ Input::Profile(_) => serde_json::to_vec(&input.into_profile(path).unwrap()),
        Input::Log(_) => panic!("{} read as a log", path.display()),
    };
    assert_golden("every-line-read-back.json", &read(&profile).unwrap());

    let gzipped = dir.path().join("clean.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gzipped).unwrap(),
        flate2::Compression::fast(),
    );
    encoder.write_all(&clean_log()).unwrap();
    encoder.finish().unwrap();
    let input = read_input(&gzipped, InputCaps::default(), None).unwrap();
    assert_golden("clean.json", &input.into_profile_json(&gzipped).unwrap());
}

#[test]
fn a_log_finalized_from_its_file_uses_its_unfinished_batch_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("every-line.jsonl");
    std::fs::write(&log, every_line_log()).unwrap();
    let options = FinalizeOptions {
        output: Some(dir.path().join("every-line.json")),
        keep_log: true,
        ..FinalizeOptions::default()
    };
    let report = finalize(&log, &LockWait::default(), &options).unwrap();
    assert_golden(
        "every-line-finalized.json",
        &std::fs::read(report.output).unwrap(),
    );
}
