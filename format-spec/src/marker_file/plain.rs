//! The commonest marker-file line on a path of its own: a compact `marker` line (no
//! whitespace, no escape, `data` an object), read by a scanner of that shape alone, which
//! checks the JSON and the rules in one pass and borrows from the line, `data` kept as the
//! text it came as (never parsed into a tree) to be written into the log as it is. A line
//! this path doubts goes the general way ([`super::decode_file_line`]), which takes or
//! refuses it and says why: so both ways take the same lines, with the same problems.

use super::line::Category;
use super::rules::{check_name, check_time};
use crate::schema::data_type;

/// Longest run of digits in a number of `data` taken as it is: a longer one could overflow
/// an f64, which the general way refuses (`NumberOutOfRange`).
const DIGITS_MAX: usize = 300;
/// Deepest nesting the plain path takes, whatever the cap: below serde_json's own limit
/// (128), which the general way meets first.
const DEPTH_MAX: usize = 64;

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

/// The marker of `text` (a `marker` line) when it can take the plain path, nested `depth`
/// deep at most, and every rule holds; None sends it the general way.
pub(super) fn decode(text: &str, depth: usize) -> Option<PlainMarker<'_>> {
    let mut line = Cursor { text, at: 0 };
    let fields = line.fields(depth.min(DEPTH_MAX))?;
    (line.at == text.len()).then_some(())?;
    let name = fields.name?;
    check_name(name).ok()?;
    let start_time = fields.start_time?;
    check_time(start_time).ok()?;
    let end_time = fields.end_time.flatten();
    if let Some(end) = end_time {
        check_time(end).ok()?;
        (end >= start_time).then_some(())?;
    }
    let (data, data_type) = fields.data?;
    if data_type.is_some_and(data_type::is_reserved) {
        return None;
    }
    Some(PlainMarker {
        name,
        start_time,
        end_time,
        category: fields.category,
        data,
        data_type,
    })
}

/// The keys of a marker line, each given once at most.
#[derive(Default)]
struct Fields<'a> {
    name: Option<&'a str>,
    start_time: Option<f64>,
    /// `Some(None)` for `null`.
    end_time: Option<Option<f64>>,
    category: Option<Category>,
    data: Option<(&'a str, Option<&'a str>)>,
}

/// Reads a line forward; each step is None where the line is not of the plain shape.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
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

    /// The line's object, `depth` levels deep at most, itself included.
    fn fields(&mut self, depth: usize) -> Option<Fields<'a>> {
        let mut fields = Fields::default();
        let mut typed = false;
        self.eat(b'{')?;
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            match key {
                "type" if !typed => {
                    (self.string()? == "marker").then_some(())?;
                    typed = true;
                }
                "name" if fields.name.is_none() => fields.name = Some(self.string()?),
                "startTime" if fields.start_time.is_none() => {
                    fields.start_time = Some(self.number()?);
                }
                "endTime" if fields.end_time.is_none() => {
                    fields.end_time = Some(match self.peek()? {
                        b'n' => self.literal("null").map(|()| None)?,
                        _ => Some(self.number()?),
                    });
                }
                "category" if fields.category.is_none() => {
                    fields.category = Some(match self.string()? {
                        "worker" => Category::Worker,
                        "task" => Category::Task,
                        "user" => Category::User,
                        _ => return None,
                    });
                }
                "data" if fields.data.is_none() => {
                    let start = self.at;
                    let data_type = self.object(depth.checked_sub(1)?, true)?;
                    fields.data = Some((&self.text[start..self.at], data_type));
                }
                _ => return None, // another key, or a key twice
            }
            match self.next()? {
                b',' => {}
                b'}' => return Some(fields),
                _ => return None,
            }
        }
    }

    /// A string without escapes or control bytes, quotes left out.
    fn string(&mut self) -> Option<&'a str> {
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

    fn literal(&mut self, word: &str) -> Option<()> {
        self.text[self.at..].starts_with(word).then_some(())?;
        self.at += word.len();
        Some(())
    }

    /// A number as JSON writes it, exponent included, as the nearest f64.
    fn number(&mut self) -> Option<f64> {
        let start = self.at;
        self.number_without_exponent(usize::MAX)?;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits(usize::MAX)?;
        }
        self.text[start..self.at].parse().ok()
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, each run of digits `most` long at most.
    fn number_without_exponent(&mut self, most: usize) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        if self.peek() == Some(b'0') {
            self.at += 1;
        } else {
            self.digits(most)?;
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits(most)?;
        }
        Some(())
    }

    /// One digit or more, `most` at most.
    fn digits(&mut self, most: usize) -> Option<()> {
        let rest = &self.text.as_bytes()[self.at..];
        let count = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        (1..=most).contains(&count).then_some(())?;
        self.at += count;
        Some(())
    }

    /// Any JSON value of `data`, `depth` levels deep at most, numbers without exponent.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth, false).map(drop),
            b'[' => self.array(depth),
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number_without_exponent(DIGITS_MAX),
        }
    }

    /// An object, `depth` levels deep at most, itself included; at the `top` of `data`,
    /// its `type`, which must be a string given once.
    fn object(&mut self, depth: usize, top: bool) -> Option<Option<&'a str>> {
        let inner = depth.checked_sub(1)?;
        self.eat(b'{')?;
        let mut data_type = None;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(None);
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            if top && key == "type" {
                data_type.is_none().then_some(())?;
                data_type = Some(self.string()?);
            } else {
                self.value(inner)?;
            }
            match self.next()? {
                b',' => {}
                b'}' => return Some(data_type),
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        let inner = depth.checked_sub(1)?;
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.value(inner)?;
            match self.next()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compact_objects_without_escapes_or_exponents_are_plain() {
        fn plain(json: &str) -> Option<Option<&str>> {
            let mut cursor = Cursor { text: json, at: 0 };
            let data_type = cursor.object(16, true)?;
            (cursor.at == json.len()).then_some(data_type)
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
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":-}"#,
            r#"{"a":+1}"#,
            r#"{"a":tru}"#,
            r#"{"a":1,}"#,
            r#"{"a":[1,]}"#,
            r#"{,}"#,
            r#"{"a"}"#,
            r#"{"a":1}}"#,
            r#"{"a":[1}"#,
            "{\"a\":\"x\u{1}\"}",
            r#"{"a":"x"#,
        ] {
            assert_eq!(plain(doubtful), None, "{doubtful}");
        }
        assert_eq!(plain(&format!("{{\"x\":{}}}", "9".repeat(400))), None);
        assert_eq!(plain(r#"{}"#), Some(None));
        assert_eq!(plain(r#"{"a":[],"b":{},"c":-0.25,"d":null}"#), Some(None));
        let nested = |levels: usize| "{\"a\":".repeat(levels - 1) + "{}" + &"}".repeat(levels - 1);
        assert_eq!(plain(&nested(16)), Some(None));
        assert_eq!(plain(&nested(17)), None);
    }
}
