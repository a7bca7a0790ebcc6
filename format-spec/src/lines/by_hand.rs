//! What the `marker` lines written by hand share ([`super::plain_marker`],
//! [`super::track_line`]): the line up to its `data`, strings and numbers, each in the
//! bytes serde_json writes for it.

use serde_json::ser::{CompactFormatter, Formatter};

/// `{"type":"marker","name":…,"startTime":…,"endTime":…,"category":…`
pub(super) fn write_marker_head(
    bytes: &mut Vec<u8>,
    name: &str,
    start_time: f64,
    end_time: Option<f64>,
    category: u32,
) {
    bytes.extend_from_slice(br#"{"type":"marker","name":"#);
    write_str(bytes, name);
    bytes.extend_from_slice(br#","startTime":"#);
    write_f64(bytes, start_time);
    bytes.extend_from_slice(br#","endTime":"#);
    match end_time {
        Some(time) => write_f64(bytes, time),
        None => bytes.extend_from_slice(b"null"),
    }
    bytes.extend_from_slice(br#","category":"#);
    write_u64(bytes, u64::from(category));
}

/// A JSON string as serde_json writes it: as it is unless it holds a byte to escape.
pub(super) fn write_str(bytes: &mut Vec<u8>, text: &str) {
    if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *bytes, text);
    } else {
        bytes.push(b'"');
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'"');
    }
}

/// A number as serde_json writes it (`null` when not finite).
pub(super) fn write_f64(bytes: &mut Vec<u8>, value: f64) {
    if value.is_finite() {
        let _ = CompactFormatter.write_f64(bytes, value);
    } else {
        bytes.extend_from_slice(b"null");
    }
}

pub(super) fn write_u64(bytes: &mut Vec<u8>, value: u64) {
    let _ = CompactFormatter.write_u64(bytes, value);
}
