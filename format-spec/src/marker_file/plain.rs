//! The commonest marker-file line on a path of its own: a `marker` of only the known keys
//! whose `data` is a compact JSON object with no escapes, decoded borrowed from its line and
//! checked once (its nesting measured in the same pass), `data` kept as the text it came as
//! (never parsed into a tree) to be written into the log as it is. A line this path doubts
//! goes the general way ([`super::decode_file_line`]), which takes or refuses it and says
//! why: so both ways take the same lines, with the same problems.

use super::line::Category;
use super::rules::{check_name, check_time};
use crate::schema::data_type;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::ops::Range;

/// Longest run of digits in a number of `data` taken as it is: a longer one could overflow
/// an f64, which the general way refuses (`NumberOutOfRange`).
const DIGITS_MAX: usize = 300;

/// A `marker` line taken on the plain path, borrowed from its line; times are Unix epoch
/// milliseconds.
#[derive(Debug)]
pub struct PlainMarker<'a> {
    /// Holds nothing that needs an escape in JSON.
    pub name: &'a str,
    pub start_time: f64,
    pub end_time: Option<f64>,
    pub category: Option<Category>,
    /// A compact JSON object, as the line held it.
    pub data: &'a str,
    /// `data.type`, which picks the marker's schema.
    pub data_type: Option<&'a str>,
}

/// Unknown keys are left to the general way, so that every nested value of the line is in
/// `data`, whose nesting [`plain_object_type`] measures.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Borrowed<'a> {
    #[serde(rename = "type")]
    _kind: IgnoredAny,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(rename = "startTime")]
    start_time: f64,
    #[serde(rename = "endTime", default)]
    end_time: Option<f64>,
    #[serde(default)]
    category: Option<Category>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

/// The marker of `text` (a `marker` line) when it can take the plain path, nested `depth`
/// deep at most, and every rule holds; None sends it the general way.
pub(super) fn decode(text: &str, depth: usize) -> Option<PlainMarker<'_>> {
    let line: Borrowed = serde_json::from_str(text).ok()?;
    let Cow::Borrowed(name) = line.name else {
        return None; // an escape in the name
    };
    check_name(name).ok()?;
    check_time(line.start_time).ok()?;
    if let Some(end) = line.end_time {
        check_time(end).ok()?;
        (end >= line.start_time).then_some(())?;
    }
    let data = line.data?.get();
    let plain = plain_object_type(data)?;
    // The line's own object is one level above `data`.
    (plain.depth < depth).then_some(())?;
    let data_type = plain.data_type.map(|range| &data[range]);
    if data_type.is_some_and(data_type::is_reserved) {
        return None;
    }
    Some(PlainMarker {
        name,
        start_time: line.start_time,
        end_time: line.end_time,
        category: line.category,
        data,
        data_type,
    })
}

/// What [`plain_object_type`] found in a plain object.
struct PlainObject {
    /// Where its `type` string is, quotes left out.
    data_type: Option<Range<usize>>,
    /// Its deepest nesting of objects and arrays, itself included.
    depth: usize,
}

/// For a JSON object (valid JSON already) that is compact, has no escape, control byte,
/// exponent or overlong number, and a `type` key once at most whose value is a string:
/// where that string is, and how deep it nests. None for anything else.
fn plain_object_type(json: &str) -> Option<PlainObject> {
    let bytes = json.as_bytes();
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let (mut depth, mut deepest, mut digits, mut in_string) = (0usize, 0, 0usize, false);
    // Whether the string under way is a key of the object itself, and where it started.
    let (mut top_key, mut string_start, mut after_type_key) = (false, 0, false);
    let mut data_type = None;
    for (i, &byte) in bytes.iter().enumerate() {
        if in_string {
            match byte {
                b'\\' | 0..=0x1f => return None,
                b'"' => {
                    in_string = false;
                    let string = &json[string_start..i];
                    if top_key && string == "type" {
                        (data_type.is_none()).then_some(())?; // a second `type`
                        after_type_key = true;
                    } else if after_type_key {
                        data_type = Some(string_start..i);
                        after_type_key = false;
                    }
                }
                _ => {}
            }
            continue;
        }
        if after_type_key && !matches!(byte, b':' | b'"') {
            return None; // `type` is not a string
        }
        if byte.is_ascii_digit() {
            digits += 1;
            if digits > DIGITS_MAX {
                return None;
            }
            continue;
        }
        let after_number = digits > 0 || bytes[i.saturating_sub(1)] == b'.';
        digits = 0;
        match byte {
            b'"' => {
                in_string = true;
                string_start = i + 1;
                top_key = depth == 1 && matches!(bytes[i - 1], b'{' | b',') && !after_type_key;
            }
            b'e' | b'E' if after_number => return None,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth -= 1,
            b' ' | b'\t' | b'\n' | b'\r' => return None,
            _ => {}
        }
    }
    Some(PlainObject {
        data_type,
        depth: deepest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compact_objects_without_escapes_or_exponents_are_plain() {
        fn plain(json: &str) -> Option<Option<&str>> {
            plain_object_type(json).map(|t| t.data_type.map(|r| &json[r]))
        }
        assert_eq!(
            plain(r#"{"type":"Text","text":"a, b: c"}"#),
            Some(Some("Text"))
        );
        assert_eq!(
            plain(r#"{"n":1.5,"list":[1,{"type":3}],"t":true}"#),
            Some(None)
        );
        assert_eq!(plain(r#"{"a":{"type":"x"},"type":"T"}"#), Some(Some("T")));
        assert_eq!(plain(r#"{"text":"type","type":"T"}"#), Some(Some("T")));
        for doubtful in [
            r#"{"type": "Text"}"#,
            r#"{"type":"Te\u0078t"}"#,
            r#"{"x":1e400}"#,
            r#"{"x":1.5E3}"#,
            r#"{"type":3}"#,
            r#"{"type":"A","type":"B"}"#,
            r#"["type","Text"]"#,
        ] {
            assert_eq!(plain(doubtful), None, "{doubtful}");
        }
        assert_eq!(plain(&format!("{{\"x\":{}}}", "9".repeat(400))), None);
    }
}
