//! A scanner for compact JSON text, as the encoder writes it: no whitespace, no escapes. It
//! finds the fields of an object and the ends of values without building anything, and
//! refuses (None) whatever it does not know to be JSON that serde_json reads the same way,
//! so a caller sends those bytes to serde_json instead. Reading a log's marker lines
//! through serde_json's derive took most of the time of finalizing.

/// Nesting deeper than this is left to serde_json (which refuses past 128).
const DEPTH_MAX: usize = 32;

/// Calls `field` with each key and value text of the object that is all of `text`;
/// None when `text` is not such an object or `field` returns None.
pub(crate) fn each_field<'a>(
    text: &'a str,
    mut field: impl FnMut(&'a str, &'a str) -> Option<()>,
) -> Option<()> {
    let bytes = text.as_bytes();
    let mut at = 1;
    if bytes.first() != Some(&b'{') {
        return None;
    }
    if bytes.get(1) == Some(&b'}') {
        return (bytes.len() == 2).then_some(());
    }
    loop {
        let key_end = string_end(bytes, at)?;
        let key = &text[at + 1..key_end - 1];
        if bytes.get(key_end) != Some(&b':') {
            return None;
        }
        let value_end = value_end(bytes, key_end + 1, 0)?;
        field(key, &text[key_end + 1..value_end])?;
        match bytes.get(value_end) {
            Some(b',') => at = value_end + 1,
            Some(b'}') => return (value_end + 1 == bytes.len()).then_some(()),
            _ => return None,
        }
    }
}

/// The text of a string value without its quotes.
pub(crate) fn string(value: &str) -> Option<&str> {
    value.strip_prefix('"')?.strip_suffix('"')
}

/// A number value, read as serde_json reads one into an f64 (with `float_roundtrip`):
/// correctly rounded, an integer too (through its 64-bit integer, which rounds the same).
pub(crate) fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// An unsigned integer value that fits `T`.
pub(crate) fn unsigned<T: std::str::FromStr>(text: &str) -> Option<T> {
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Where the value that starts at `at` ends.
fn value_end(bytes: &[u8], at: usize, depth: usize) -> Option<usize> {
    match *bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' => container_end(bytes, at, depth, b'}', true),
        b'[' => container_end(bytes, at, depth, b']', false),
        b't' => literal_end(bytes, at, b"true"),
        b'f' => literal_end(bytes, at, b"false"),
        b'n' => literal_end(bytes, at, b"null"),
        b'-' | b'0'..=b'9' => number_end(bytes, at),
        _ => None,
    }
}

fn container_end(bytes: &[u8], at: usize, depth: usize, close: u8, keyed: bool) -> Option<usize> {
    if depth >= DEPTH_MAX {
        return None;
    }
    let mut at = at + 1;
    if bytes.get(at) == Some(&close) {
        return Some(at + 1);
    }
    loop {
        if keyed {
            at = string_end(bytes, at)?;
            if bytes.get(at) != Some(&b':') {
                return None;
            }
            at += 1;
        }
        at = value_end(bytes, at, depth + 1)?;
        match bytes.get(at) {
            Some(b',') => at += 1,
            Some(&b) if b == close => return Some(at + 1),
            _ => return None,
        }
    }
}

/// A string without escapes or control characters.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let rest = &bytes[at + 1..];
    let close = rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    (rest[close] == b'"').then_some(at + 1 + close + 1)
}

fn literal_end(bytes: &[u8], at: usize, literal: &[u8]) -> Option<usize> {
    bytes[at..]
        .starts_with(literal)
        .then_some(at + literal.len())
}

/// JSON's number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn number_end(bytes: &[u8], at: usize) -> Option<usize> {
    let digits = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut at = at + usize::from(bytes[at] == b'-');
    match digits(at) {
        0 => return None,
        n if n > 1 && bytes[at] == b'0' => return None,
        n => at += n,
    }
    if bytes.get(at) == Some(&b'.') {
        match digits(at + 1) {
            0 => return None,
            n => at += 1 + n,
        }
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        at += usize::from(matches!(bytes.get(at), Some(b'+' | b'-')));
        match digits(at) {
            0 => return None,
            n => at += n,
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Option<Vec<(String, String)>> {
        let mut found = Vec::new();
        each_field(text, |key, value| {
            found.push((key.to_owned(), value.to_owned()));
            Some(())
        })?;
        Some(found)
    }

    #[test]
    fn compact_objects_are_split_into_their_fields() {
        let text = r#"{"a":1,"b":{"c":[1,-2.5e3,"x",true,null,{}],"d":[]},"e":"caf\u00e9"}"#;
        let got = fields(&text.replace("\\u00e9", "\u{e9}")).unwrap();
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "e"]);
        assert_eq!(got[1].1, r#"{"c":[1,-2.5e3,"x",true,null,{}],"d":[]}"#);
        assert_eq!(fields("{}").unwrap(), []);
    }

    #[test]
    fn what_serde_json_might_read_otherwise_is_refused() {
        for text in [
            r#"{"a": 1}"#,
            r#"{"a":"x\"y"}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":1e}"#,
            r#"{"a":+1}"#,
            r#"{"a":tru}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} "#,
            r#"{"a":[1,]}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":1"#,
        ] {
            assert_eq!(fields(text), None, "{text}");
        }
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(40), "]".repeat(40));
        assert_eq!(fields(&deep), None);
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        for text in [
            "0",
            "-0",
            "-0.0",
            "1",
            "-17",
            "18446744073709551615",
            "1e400",
            "2.5e-3",
            "123456789012345678901234567890",
            "0.1",
            "850.163",
            "1.7976931348623157e308",
        ] {
            let expected: Option<f64> = serde_json::from_str(text).ok();
            let got = number(text);
            assert_eq!(got.map(f64::to_bits), expected.map(f64::to_bits), "{text}");
        }
        assert_eq!(unsigned::<u32>("4294967295"), Some(u32::MAX));
        assert_eq!(unsigned::<u32>("4294967296"), None);
        assert_eq!(unsigned::<u32>("-1"), None);
    }
}
