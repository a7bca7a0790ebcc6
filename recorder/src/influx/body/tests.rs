//! Tests of a body's lines: split as written, a long line skipped unheld, gzip decoded,
//! and a bomb stopped at a cap.

use super::*;
use flate2::write::GzEncoder;
use std::io::Write;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Every line of `body`, as text (`<too long: N>` for one over the cap, N the bytes kept),
/// or the error.
fn all_lines(
    body: &[u8],
    encoding: Option<&str>,
    max_bytes: u64,
) -> Result<Vec<String>, BodyError> {
    let mut lines = lines(body, encoding, max_bytes).expect("a known encoding");
    let mut out = Vec::new();
    while let Some(line) = lines.next_line()? {
        out.push(match line {
            Line::Text(text) => String::from_utf8_lossy(text).into_owned(),
            Line::TooLong(start) => format!("<too long: {}>", start.len()),
        });
    }
    Ok(out)
}

#[test]
fn lines_are_split_at_newlines_the_last_one_without_one_too() {
    let lines = all_lines(b"a f=1\n\nb f=2\r\nc f=3", None, 100).unwrap();
    assert_eq!(lines, ["a f=1", "", "b f=2\r", "c f=3"]);
    assert!(all_lines(b"", None, 100).unwrap().is_empty());
    assert_eq!(all_lines(b"x\n", None, 100).unwrap(), ["x"]);
}

#[test]
fn a_line_over_the_cap_is_skipped_to_its_newline_and_the_next_read() {
    let mut body = b"a f=1\n".to_vec();
    body.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
    body.extend_from_slice(b"\nb f=2\n");
    body.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES + 1));
    let lines = all_lines(&body, None, u64::MAX).unwrap();
    let long = format!("<too long: {KEPT_OF_LONG_LINE}>");
    assert_eq!(lines, ["a f=1", &long, "b f=2", &long]);
    let mut lines = Lines::new(&body[..]);
    while lines.next_line().unwrap().is_some() {
        assert!(lines.line.capacity() <= 2 * MAX_LINE_BYTES);
    }
}

#[test]
fn a_gzip_body_is_decoded_and_other_encodings_are_refused() {
    let text = b"a f=1\nb f=2\n";
    assert_eq!(
        all_lines(&gzip(text), Some("gzip"), 100).unwrap(),
        ["a f=1", "b f=2"]
    );
    // Two members, as a client that compresses each batch apart sends them.
    let mut two = gzip(b"a f=1\n");
    two.extend(gzip(b"b f=2\n"));
    assert_eq!(
        all_lines(&two, Some("gzip"), 100).unwrap(),
        ["a f=1", "b f=2"]
    );
    assert_eq!(all_lines(text, Some("identity"), 100).unwrap().len(), 2);
    assert!(lines(&text[..], Some("br"), 100).is_none());
    let error = all_lines(b"not gzip at all", Some("gzip"), 100).unwrap_err();
    assert!(matches!(error, BodyError::Gzip(_)), "{error:?}");
    assert_eq!(error.status(), 400);
}

#[test]
fn a_gzip_bomb_stops_at_the_ratio_cap_having_decoded_little() {
    // 16 MiB of one short comment line again and again: some 16 kB compressed, at
    // gzip's best ratio (a real line repeated reaches 412: under the cap).
    let line = b"#\n";
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..(16 << 20) / line.len() {
        encoder.write_all(line).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    let mut lines = lines(&bomb[..], Some("gzip"), u64::MAX).unwrap();
    let mut taken = 0;
    let error = loop {
        match lines.next_line() {
            Ok(Some(_)) => taken += 1,
            Ok(None) => panic!("the bomb was read whole"),
            Err(error) => break error,
        }
    };
    assert!(matches!(error, BodyError::OverRatio), "{error:?}");
    assert_eq!(error.status(), 413);
    assert!(error.to_string().contains("500 times"), "{error}");
    // Stopped a read after the ratio was passed, not at the end.
    assert!(taken * line.len() < 2 << 20, "{taken} lines decoded");
}

#[test]
fn a_gzip_body_stops_at_the_size_cap() {
    let text: Vec<u8> = (0..10_000)
        .flat_map(|n| format!("m,n={n} f={n}\n").into_bytes())
        .collect();
    let error = all_lines(&gzip(&text), Some("gzip"), 50_000).unwrap_err();
    assert!(matches!(error, BodyError::OverSize(50_000)), "{error:?}");
    assert_eq!(error.status(), 413);
    assert!(error.to_string().contains("50000 bytes, the cap"));
    assert_eq!(
        all_lines(&gzip(&text), Some("gzip"), 1 << 20)
            .unwrap()
            .len(),
        10_000
    );
}
