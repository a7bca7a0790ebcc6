//! The `marker` line of a marker-file marker taken on the fast path, written by hand:
//! the bytes serde writes for it, without serde's work a key.

use super::by_hand::write_marker_head;

/// [`crate::encode_marker_line_into`] of a marker whose `data`, if any, is the text of a
/// compact JSON object, checked already (a marker file's, on the fast path), written as it
/// is; the same bytes, without serde's per-key work (a third of ingesting a marker).
pub(crate) fn encode_plain_marker_line_into(
    bytes: &mut Vec<u8>,
    name: &str,
    start_time: f64,
    end_time: Option<f64>,
    category: u32,
    data: Option<&str>,
) {
    write_marker_head(bytes, name, start_time, end_time, category);
    if let Some(data) = data {
        bytes.extend_from_slice(br#","data":"#);
        bytes.extend_from_slice(data.as_bytes());
    }
    bytes.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{encode_line_into, encode_marker_line_into, Line, Marker};
    use serde_json::value::RawValue;

    #[test]
    fn a_plain_marker_encodes_as_serde_encodes_it() {
        let data = r#"{"type":"Text","text":"é, \"q\""}"#;
        let raw = RawValue::from_string(data.to_owned()).unwrap();
        let names = [
            "bench",
            "é ∑ 😀",
            "quote \" here",
            "back\\slash",
            "tab\t\u{1}",
            "",
        ];
        let times = [
            0.0,
            1.5,
            -3.25,
            1e-7,
            123456789.123,
            1e21,
            f64::MAX,
            f64::NAN,
        ];
        for name in names {
            for (start, end) in times.iter().zip(times.iter().rev()) {
                for end_time in [None, Some(*end)] {
                    let mut ours = Vec::new();
                    encode_plain_marker_line_into(&mut ours, name, *start, end_time, 7, Some(data));
                    let mut serde = Vec::new();
                    encode_marker_line_into(&mut serde, name, *start, end_time, 7, &raw);
                    assert_eq!(String::from_utf8(ours), String::from_utf8(serde));
                    let mut ours = Vec::new();
                    encode_plain_marker_line_into(&mut ours, name, *start, end_time, 7, None);
                    let mut serde = Vec::new();
                    let marker = Marker {
                        end_time,
                        category: Some(7),
                        ..Marker::instant(name, *start)
                    };
                    encode_line_into(&mut serde, &Line::Marker(marker));
                    assert_eq!(String::from_utf8(ours), String::from_utf8(serde));
                }
            }
        }
    }
}
