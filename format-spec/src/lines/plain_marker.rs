//! The `marker` line of a marker-file marker taken on the plain path, written by hand:
//! the bytes serde writes for it, without serde's work a key.

use super::by_hand::write_marker_head;

/// [`crate::encode_marker_line_into`] of a marker whose `data` is the text of a compact JSON
/// object, checked already (a marker file's, on the plain path), written as it is; the same
/// bytes, without serde's per-key work (a third of ingesting a marker).
pub(crate) fn encode_plain_marker_line_into(
    bytes: &mut Vec<u8>,
    name: &str,
    start_time: f64,
    end_time: Option<f64>,
    category: u32,
    data: &str,
) {
    write_marker_head(bytes, name, start_time, end_time, category);
    bytes.extend_from_slice(data.as_bytes());
    bytes.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode_marker_line_into;
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
                    encode_plain_marker_line_into(&mut ours, name, *start, end_time, 7, data);
                    let mut serde = Vec::new();
                    encode_marker_line_into(&mut serde, name, *start, end_time, 7, &raw);
                    assert_eq!(
                        String::from_utf8(ours).unwrap(),
                        String::from_utf8(serde).unwrap()
                    );
                }
            }
        }
    }
}
