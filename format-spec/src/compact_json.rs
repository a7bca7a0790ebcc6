//! The one scanner of compact JSON text (no whitespace, no escapes), as the encoder writes
//! it and most marker files do. A [`Cursor`] reads it forward, finding fields and the ends
//! of values without building anything, and refuses (None) whatever it does not know to be
//! JSON that serde_json reads the same way, so a caller sends those bytes to serde_json
//! instead. Two fast paths stand on it: a log's marker lines ([`each_field`], for
//! `lines.rs`: reading them through serde_json's derive took most of the time of
//! finalizing) and plain marker-file lines (`marker_file/plain.rs`).

/// Nesting of a field's value deeper than this is left to serde_json (which refuses past
/// 128).
const FIELD_DEPTH_MAX: usize = 32;
/// Longest run of digits in a [`Numbers::InRange`] number: a longer one could overflow an
/// f64.
const DIGITS_MAX: usize = 300;

/// Calls `field` with each key and value text of the object that is all of `text`;
/// None when `text` is not such an object or `field` returns None.
pub(crate) fn each_field<'a>(
    text: &'a str,
    mut field: impl FnMut(&'a str, &'a str) -> Option<()>,
) -> Option<()> {
    let mut cursor = Cursor::new(text);
    cursor.object(|cursor, key| field(key, cursor.value(FIELD_DEPTH_MAX, Numbers::Any)?))?;
    cursor.at_end().then_some(())
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

/// The numbers a value may hold.
#[derive(Clone, Copy)]
pub(crate) enum Numbers {
    /// JSON's number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    Any,
    /// Without exponent, each run of digits [`DIGITS_MAX`] long at most: none overflows an
    /// f64.
    InRange,
}

/// Reads a text forward; each step is None where the text is not compact JSON of the
/// shape asked for.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor { text, at: 0 }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.at == self.text.len()
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    /// The text that `read` reads.
    pub(crate) fn with_text(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<&'a str> {
        let start = self.at;
        read(self)?;
        Some(&self.text[start..self.at])
    }

    /// An object, each field's value read by `field`, given the cursor at the value and
    /// the key.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.items(b'}', |cursor| {
            let key = cursor.string()?;
            cursor.eat(b':')?;
            field(cursor, key)
        })
    }

    /// Any value, containers `depth` levels deep at most; its text.
    pub(crate) fn value(&mut self, depth: usize, numbers: Numbers) -> Option<&'a str> {
        self.with_text(|cursor| cursor.skip_value(depth, numbers))
    }

    /// [`Cursor::value`], its text left alone.
    pub(crate) fn skip_value(&mut self, depth: usize, numbers: Numbers) -> Option<()> {
        match self.peek()? {
            b'{' => {
                let inner = depth.checked_sub(1)?;
                self.object(|cursor, _| cursor.skip_value(inner, numbers))
            }
            b'[' => {
                let inner = depth.checked_sub(1)?;
                self.at += 1;
                self.items(b']', |cursor| cursor.skip_value(inner, numbers))
            }
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.skip_number(numbers),
        }
    }

    /// The items of a container whose opening byte was read, up to its `close`.
    fn items(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.next()? {
                b',' => {}
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// A string without escapes or control bytes, quotes left out.
    pub(crate) fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let rest = &self.text.as_bytes()[start..];
        // Keys and names are short: one pass beats a vectorized search's set-up.
        let length = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        (rest[length] == b'"').then_some(())?;
        self.at = start + length + 1;
        Some(&self.text[start..start + length])
    }

    pub(crate) fn literal(&mut self, word: &str) -> Option<()> {
        self.text.as_bytes()[self.at..]
            .starts_with(word.as_bytes())
            .then_some(())?;
        self.at += word.len();
        Some(())
    }

    /// A number of the grammar `numbers` names; its text.
    pub(crate) fn number(&mut self, numbers: Numbers) -> Option<&'a str> {
        self.with_text(|cursor| cursor.skip_number(numbers))
    }

    fn skip_number(&mut self, numbers: Numbers) -> Option<()> {
        let most = match numbers {
            Numbers::Any => usize::MAX,
            Numbers::InRange => DIGITS_MAX,
        };
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let first = self.peek();
        if self.digits(most)? > 1 && first == Some(b'0') {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits(most)?;
        }
        if matches!(numbers, Numbers::Any) && matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits(most)?;
        }
        Some(())
    }

    /// One digit or more, `most` at most; how many.
    fn digits(&mut self, most: usize) -> Option<usize> {
        let rest = &self.text.as_bytes()[self.at..];
        let count = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        (1..=most).contains(&count).then_some(())?;
        self.at += count;
        Some(count)
    }
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
        let nested =
            |levels: usize| format!("{{\"a\":{}1{}}}", "[".repeat(levels), "]".repeat(levels));
        assert!(fields(&nested(32)).is_some());
        assert_eq!(fields(&nested(33)), None);
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
