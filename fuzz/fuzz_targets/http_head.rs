//! A request head (anyone who reaches the live profiles' server or the InfluxDB endpoint
//! sends one), parsed as the reader parses what has arrived so far (SPEC.md, "Live
//! profiles over HTTP"): the parser never panics; a head it takes ends at its empty line,
//! within the cap, is taken the same from its own bytes and not from fewer, carries one
//! `Content-Length` at most, of plain decimal digits, or else one `Transfer-Encoding`,
//! `chunked`;
//! anything longer than the cap that is not whole is refused, not waited for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tc_profile_recorder::http::{parse_head, ReadError, MAX_HEAD_BYTES};

fuzz_target!(|bytes: &[u8]| {
    let head = match parse_head(bytes) {
        Ok(Some(head)) => head,
        Ok(None) => {
            assert!(bytes.len() < MAX_HEAD_BYTES);
            return;
        }
        Err(ReadError::Refused(status, _)) => {
            assert!([400, 411, 431].contains(&status), "{status}");
            return;
        }
        Err(ReadError::Gone) => panic!("a parse cannot find the client gone"),
    };
    let length = head.length;
    assert!(length <= bytes.len() && length <= MAX_HEAD_BYTES);
    assert!(bytes[..length].ends_with(b"\n\r\n") || bytes[..length].ends_with(b"\n\n"));
    let again = parse_head(&bytes[..length]).ok().flatten().expect("its own bytes");
    assert_eq!(
        (&again.method, &again.target, again.content_length, again.length),
        (&head.method, &head.target, head.content_length, length)
    );
    for shorter in [length - 1, length / 2] {
        assert!(!matches!(parse_head(&bytes[..shorter]), Ok(Some(_))));
    }
    let mut lengths = Vec::new();
    let mut codings = Vec::new();
    for line in bytes[..length].split(|&b| b == b'\n').skip(1) {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            assert!(value.eq_ignore_ascii_case(b"chunked"), "{value:?}");
            codings.push(value);
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            assert!(value.iter().all(u8::is_ascii_digit), "{value:?}");
            lengths.push(std::str::from_utf8(value).unwrap().parse::<usize>().unwrap());
        }
    }
    assert!(lengths.len() <= 1, "{lengths:?}");
    assert!(codings.len() <= 1 && (codings.is_empty() || lengths.is_empty()));
    assert_eq!(head.chunked, codings.len() == 1);
    assert_eq!(head.content_length, lengths.first().copied().unwrap_or(0));
});
