//! One line of a task's output or log file, any bytes (SPEC.md, "Log lines"): the cap and
//! the prefix parser never panic; the message holds at most 1024 bytes, valid UTF-8, with
//! `invalidUtf8` exactly when the kept bytes were not UTF-8 and `length` exactly when the
//! line was cut; a prefixed line is placed within [0, latest], any other at the fallback.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tc_profile_format::task_log::{parse_prefix, Captured, Placement, Stream, MAX_LINE_BYTES};

fuzz_target!(|line: &[u8]| {
    let head = &line[..line.len().min(MAX_LINE_BYTES)];
    let captured = Captured::new(head, line.len());
    assert!(captured.text.len() <= MAX_LINE_BYTES);
    let at = Placement {
        start_epoch_ms: 1_795_914_000_000.0,
        latest: 600_000.0,
        fallback: 1234.5,
    };
    let marker = captured.marker(Stream::Stdout, &at);
    let data = marker.data.as_ref().expect("a Log marker has data");
    assert!(data["message"].as_str().is_some_and(|m| m.len() <= MAX_LINE_BYTES));
    assert_eq!(data["length"].is_u64(), captured.cut, "{line:?}");
    let kept_invalid = std::str::from_utf8(head).is_err();
    if !captured.cut {
        assert_eq!(captured.invalid_utf8, kept_invalid, "{line:?}");
    }
    match parse_prefix(&captured.text) {
        Some(prefix) => {
            assert!(prefix.epoch_ms.is_finite());
            assert!((0.0..=600_000.0).contains(&marker.start_time), "{line:?}");
            assert_eq!(marker.name, prefix.component);
        }
        None => assert_eq!((marker.name.as_str(), marker.start_time), ("stdout", 1234.5)),
    }
});
