use super::*;
use crate::schema::category;

const START: f64 = 1_795_980_000_000.0;

fn at(latest: f64, fallback: f64) -> Placement {
    Placement {
        start_epoch_ms: START,
        latest,
        fallback,
    }
}

#[test]
fn taskcluster_prefixes_parse_with_component_level_and_time() {
    let p =
        parse_prefix("[taskcluster 2026-11-29T01:02:03.456Z] Worker Type (a/b) settings:").unwrap();
    assert_eq!(p.component, "taskcluster");
    assert_eq!(p.level, None);
    assert_eq!(p.epoch_ms, 1_795_914_123_456.0);
    assert_eq!(p.message, "Worker Type (a/b) settings:");
    let p = parse_prefix("[taskcluster:warn 2026-11-29T01:02:03Z] no artifacts").unwrap();
    assert_eq!((p.component, p.level), ("taskcluster", Some("warn")));
    assert_eq!(p.epoch_ms, 1_795_914_123_000.0);
    for line in [
        "[task 2026-11-29T01:02:03.456789Z] executing",
        "[fetches 2026-11-29T02:02:03.456+01:00] fetching",
        "[vcs 2026-11-29T00:02:03.456-0100] cloning",
        "[vcs 2026-11-29T01:02:03.456] no offset is UTC",
    ] {
        let p = parse_prefix(line).unwrap_or_else(|| panic!("{line}"));
        assert!(
            (p.epoch_ms - 1_795_914_123_456.0).abs() < 1.0,
            "{line}: {}",
            p.epoch_ms
        );
    }
}

#[test]
fn what_is_not_a_prefix_is_plain_text() {
    for line in [
        "",
        "[",
        "[]",
        "[task]",
        "[task ] x",
        "[task 2026-11-29] x",
        "[task 2026-13-29T01:02:03Z] month 13",
        "[task 2026-02-29T01:02:03Z] not a leap year",
        "[task 2026-11-29T24:00:00Z] hour 24",
        "[task 2026-11-29T01:02:03.Z] empty fraction",
        "[task 2026-11-29T01:02:03Zjunk] x",
        "[task 2026-11-29T01:02:03+25:00] x",
        "[ta sk 2026-11-29T01:02:03Z] x",
        "[task:warn:x 2026-11-29T01:02:03Z] two levels",
        "[tâsk 2026-11-29T01:02:03Z] not ASCII",
        "[task 2026-11-29T01:02:03Zé] x",
        "[task ２026-11-29T01:02:03Z] wide digits",
        "  [task 2026-11-29T01:02:03Z] indented",
    ] {
        assert_eq!(parse_prefix(line), None, "{line:?}");
    }
    let long = format!("[{} 2026-11-29T01:02:03Z] x", "c".repeat(65));
    assert_eq!(parse_prefix(&long), None);
    assert_eq!(
        parse_utc("2024-02-29T00:00:00Z"),
        Some(1_709_164_800_000.0),
        "a leap day"
    );
    assert_eq!(parse_utc("1969-12-31T23:59:59Z"), Some(-1000.0));
}

#[test]
fn hostile_bytes_never_panic() {
    let samples: [&[u8]; 6] = [
        b"[task 2026-11-29T01:02:03.4567890123Z] x",
        b"[\xff\xfe 2026-11-29T01:02:03Z] x",
        b"[task \xe2\x82 2026] x",
        b"[task 9999-12-31T23:59:60.999999999+23:59]",
        b"[task 0000-01-01T00:00:00-23:59]",
        b"\x00\x1b[31m[task 2026-11-29T01:02:03Z]\x1b[0m",
    ];
    for bytes in samples {
        for end in 0..=bytes.len() {
            let captured = Captured::new(&bytes[..end], end);
            let _ = captured.marker(Stream::Stdout, &at(10.0, 5.0));
        }
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        let bytes: Vec<u8> = (0..40)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                b"[]: -+.TZ0123456789\xc3\xa9\xff"[(state % 22) as usize]
            })
            .collect();
        let captured = Captured::new(&bytes, bytes.len());
        let marker = captured.marker(Stream::Stderr, &at(10.0, 5.0));
        assert!((0.0..=10.0).contains(&marker.start_time), "{bytes:?}");
    }
}

#[test]
fn a_long_line_is_cut_on_a_character_boundary_and_keeps_its_length() {
    let line = format!(
        "{}é{}",
        "a".repeat(MAX_LINE_BYTES - 1),
        "b".repeat(3_000_000)
    );
    let captured = Captured::new(&line.as_bytes()[..MAX_LINE_BYTES + 10], line.len());
    assert_eq!(captured.text, "a".repeat(MAX_LINE_BYTES - 1));
    assert!(captured.cut && !captured.invalid_utf8);
    assert_eq!(captured.length, line.len());
    let data = captured.marker(Stream::Stdout, &at(1.0, 1.0)).data.unwrap();
    assert_eq!(data["length"], line.len());
    let short = Captured::new(b"done\r", 5);
    assert_eq!((short.text.as_str(), short.cut), ("done", false));
    let exact = "x".repeat(MAX_LINE_BYTES);
    assert!(!Captured::new(exact.as_bytes(), exact.len()).cut);
}

#[test]
fn invalid_utf8_is_replaced_flagged_and_still_capped() {
    let captured = Captured::new(b"ok \xff\xfe end", 9);
    assert_eq!(captured.text, "ok \u{fffd}\u{fffd} end");
    assert!(captured.invalid_utf8 && !captured.cut);
    let data = captured.marker(Stream::Stderr, &at(1.0, 1.0)).data.unwrap();
    assert_eq!(data["invalidUtf8"], "replaced by U+FFFD");
    let garbage = vec![0xffu8; MAX_LINE_BYTES];
    let captured = Captured::new(&garbage, garbage.len());
    assert!(captured.text.len() <= MAX_LINE_BYTES && captured.cut);
}

#[test]
fn a_prefixed_line_is_at_its_own_time_clamped_a_plain_one_at_the_fallback() {
    let line = |text: &str| Captured::new(text.as_bytes(), text.len());
    let at_ten_seconds = at(20_000.0, 15_000.0);
    let marker = line("[vcs 2026-11-29T00:26:50Z] cloned").marker(Stream::Stdout, &at_ten_seconds);
    assert_eq!(marker.name, "vcs");
    assert_eq!(marker.start_time, 0.0, "before the recording: at its start");
    let in_span = "[task:error 2026-11-29T19:20:10.000Z] failed"; // START + 10 s
    let marker = line(in_span).marker(Stream::Stderr, &at_ten_seconds);
    assert_eq!(marker.start_time, 10_000.0);
    assert_eq!(marker.category, Some(category::LOG_ERROR));
    let data = marker.data.unwrap();
    assert_eq!(
        (data["message"].as_str(), data["level"].as_str()),
        (Some("failed"), Some("error"))
    );
    assert_eq!(data["stream"], "stderr");
    assert_eq!(data["color"], "red", "the marker chart draws it red");
    let late = "[task 2030-01-01T00:00:00Z] from the future";
    assert_eq!(
        line(late)
            .marker(Stream::Stdout, &at_ten_seconds)
            .start_time,
        20_000.0
    );
    let plain = line("compiling foo v1.0").marker(Stream::Stderr, &at_ten_seconds);
    assert_eq!(
        (plain.name.as_str(), plain.start_time),
        ("stderr", 15_000.0)
    );
    assert_eq!(plain.category, Some(category::LOG));
    let data = plain.data.unwrap();
    assert_eq!(data["message"], "compiling foo v1.0");
    assert!(data.get("color").is_none(), "blue, the chart's own colour");
}

#[test]
fn levels_pick_the_category() {
    assert_eq!(Level::of(Some("WARN")), Level::Warning);
    assert_eq!(Level::of(Some("warning")), Level::Warning);
    assert_eq!(Level::of(Some("fatal")), Level::Error);
    assert_eq!(Level::of(Some("debug")), Level::Info);
    assert_eq!(Level::of(None).category(), category::LOG);
}

#[test]
fn stat_lines_are_told_apart() {
    assert_eq!(
        stat_line("[taskcluster-task:stat] build.time:12|ms"),
        Some("build.time:12|ms")
    );
    assert_eq!(stat_line("[taskcluster-task:warn] x"), None);
}
