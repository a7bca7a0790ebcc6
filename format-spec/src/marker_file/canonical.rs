//! A marker's `data` written as serde_json writes the object it decodes to: compact, each
//! object's keys in order (its map is sorted), a key given twice holding its last value,
//! numbers as their f64 or integer prints. The log has always held this for a line the
//! fast path did not take as it was written (spaced lines, lines with other keys), so
//! these lines keep their bytes, without a tree of the data per line.

use crate::compact_json::{Cursor, Numbers};
use std::ops::Range;

/// Writes `data` texts; its one buffer, of the entries of the objects under way, is kept
/// from one marker to the next.
#[derive(Default)]
pub(crate) struct CanonicalData {
    /// Key and value of each entry, as ranges of the text written.
    entries: Vec<(Range<usize>, Range<usize>)>,
}

impl CanonicalData {
    /// Appends `text`, a JSON value as the fast path checked it (no escapes, numbers in an
    /// f64's range, nested `depth` deep at most), as serde_json writes its `Value`; None,
    /// with part of it appended, for a text it did not check so.
    pub(crate) fn write(&mut self, text: &str, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        self.entries.clear();
        self.value(text, text, depth, out)
    }

    /// Appends `value`, a part of `text`.
    fn value(&mut self, text: &str, value: &str, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        let mut cursor = Cursor::spaced(value);
        match cursor.peek()? {
            b'{' => self.object(text, &mut cursor, depth.checked_sub(1)?, out)?,
            b'[' => {
                let inner = depth.checked_sub(1)?;
                out.push(b'[');
                let mut first = true;
                cursor.array(|cursor| {
                    let item = cursor.with_text(|item| item.skip_value(inner, Numbers::InRange))?;
                    if !std::mem::take(&mut first) {
                        out.push(b',');
                    }
                    self.value(text, item, inner, out)
                })?;
                out.push(b']');
            }
            byte => {
                let token = cursor.with_text(|token| token.skip_value(0, Numbers::InRange))?;
                match byte {
                    // Strings without escapes and the literals print as they are read.
                    b'"' | b't' | b'f' | b'n' => out.extend_from_slice(token.as_bytes()),
                    _ => {
                        let number: serde_json::Number = serde_json::from_str(token).ok()?;
                        serde_json::to_writer(&mut *out, &number).ok()?;
                    }
                }
            }
        }
        cursor.at_end().then_some(())
    }

    /// Appends the object at `cursor`, its values `depth` deep at most, keys sorted.
    fn object(
        &mut self,
        text: &str,
        cursor: &mut Cursor,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Option<()> {
        let first = self.entries.len();
        cursor.object(|cursor, key| {
            let value = cursor.with_text(|value| value.skip_value(depth, Numbers::InRange))?;
            self.entries
                .push((range_in(text, key), range_in(text, value)));
            Some(())
        })?;
        let end = self.entries.len();
        // Stable: of a key given twice, the last value stays last.
        self.entries[first..].sort_by(|a, b| text[a.0.clone()].cmp(&text[b.0.clone()]));
        out.push(b'{');
        let mut written = false;
        for index in first..end {
            let (key, value) = self.entries[index].clone();
            let same_key_next = (index + 1 < end)
                .then(|| &text[self.entries[index + 1].0.clone()])
                .is_some_and(|next| *next == text[key.clone()]);
            if same_key_next {
                continue; // a key given again: serde_json's map keeps the last value
            }
            if std::mem::replace(&mut written, true) {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(text[key].as_bytes());
            out.extend_from_slice(b"\":");
            self.value(text, &text[value], depth, out)?;
        }
        out.push(b'}');
        self.entries.truncate(first);
        Some(())
    }
}

/// Where `part`, a slice of `text`, lies in it.
fn range_in(text: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    start..start + part.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// `text` as [`CanonicalData`] writes it, and as serde_json writes its `Value`.
    fn both(text: &str) -> (String, String) {
        let mut ours = Vec::new();
        CanonicalData::default()
            .write(text, 16, &mut ours)
            .expect(text);
        let value: Value = serde_json::from_str(text).unwrap();
        (String::from_utf8(ours).unwrap(), value.to_string())
    }

    #[test]
    fn data_is_written_as_serde_json_writes_its_value() {
        for text in [
            r#"{"type": "Text", "text": "step 0"}"#,
            r#"{"type":"Text","text":"step 0"}"#,
            r#" { "z" : [ 1 , 2.50 , { "b" : null , "a" : true } ] , "é": "x", "e": false } "#,
            r#"{"a": 1, "b": 2, "a": 3}"#,
            r#"{"a": {"y": 1, "x": 2, "y": [3]}, "a": {"k": -0}}"#,
            r#"{"n": [0, -0, -0.0, 1.0, 1.5000, 18446744073709551615, 18446744073709551616]}"#,
            r#"{"n": [-9223372036854775808, -9223372036854775809, 0.1, 123456789.123456789]}"#,
            r#"{"big": 17976931348623157000000000000000000000000000000000000000000000000000000000000000000.0}"#,
            r#"{"s": "a, b: 😀 ] } ,"}"#,
            r#"{}"#,
            r#"{"e": [], "o": {}}"#,
            "{\"B\":1,\"a\":2,\"\":3,\"aa\":4}",
        ] {
            let (ours, serde) = both(text);
            assert_eq!(ours, serde, "{text}");
        }
    }

    #[test]
    fn nesting_past_the_depth_is_refused() {
        let nested = |levels: usize| "{\"a\":".repeat(levels - 1) + "{}" + &"}".repeat(levels - 1);
        let mut out = Vec::new();
        assert!(CanonicalData::default()
            .write(&nested(16), 16, &mut out)
            .is_some());
        assert!(CanonicalData::default()
            .write(&nested(17), 16, &mut out)
            .is_none());
    }
}
