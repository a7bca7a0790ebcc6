//! The commonest marker-file line on a path of its own: a compact `marker` line (no
//! whitespace, no escape, `data` an object), read by the compact-JSON scanner
//! ([`crate::compact_json`]) in one pass that checks the JSON and the rules and borrows
//! from the line, `data` kept as the text it came as (never parsed into a tree) to be
//! written into the log as it is. A line this path doubts goes the general way
//! ([`super::decode_file_line`]), which takes or refuses it and says why: so both ways take
//! the same lines, with the same problems.

use super::line::Category;
use super::rules::{check_name, check_time};
use crate::compact_json::{Cursor, Numbers};
use crate::schema::data_type;

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
    let mut line = Cursor::new(text);
    let fields = fields(&mut line, depth.min(DEPTH_MAX))?;
    line.at_end().then_some(())?;
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

/// The fields of the line's object, `depth` levels deep at most, itself included.
fn fields<'a>(line: &mut Cursor<'a>, depth: usize) -> Option<Fields<'a>> {
    let mut fields = Fields::default();
    let mut typed = false;
    line.object(|line, key| {
        match key {
            "type" if !typed => {
                (line.string()? == "marker").then_some(())?;
                typed = true;
            }
            "name" if fields.name.is_none() => fields.name = Some(line.string()?),
            "startTime" if fields.start_time.is_none() => {
                fields.start_time = Some(line.f64()?);
            }
            "endTime" if fields.end_time.is_none() => {
                fields.end_time = Some(match line.peek()? {
                    b'n' => line.literal("null").map(|()| None)?,
                    _ => Some(line.f64()?),
                });
            }
            "category" if fields.category.is_none() => {
                fields.category = Some(match line.string()? {
                    "worker" => Category::Worker,
                    "task" => Category::Task,
                    "user" => Category::User,
                    _ => return None,
                });
            }
            "data" if fields.data.is_none() => {
                fields.data = Some(data(line, depth.checked_sub(1)?)?);
            }
            _ => return None, // another key, or a key twice
        }
        Some(())
    })?;
    Some(fields)
}

/// `data`, an object `depth` levels deep at most, itself included, its numbers in an f64's
/// range (the general way refuses others: `NumberOutOfRange`): its text and its `type`,
/// which must be a string given once.
fn data<'a>(line: &mut Cursor<'a>, depth: usize) -> Option<(&'a str, Option<&'a str>)> {
    let inner = depth.checked_sub(1)?;
    let mut data_type = None;
    let text = line.with_text(|line| {
        line.object(|line, key| match key {
            "type" => {
                data_type.is_none().then_some(())?;
                data_type = Some(line.string()?);
                Some(())
            }
            _ => line.skip_value(inner, Numbers::InRange),
        })
    })?;
    Some((text, data_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compact_objects_without_escapes_or_exponents_are_plain() {
        fn plain(json: &str) -> Option<Option<&str>> {
            let mut cursor = Cursor::new(json);
            let (_, data_type) = data(&mut cursor, 16)?;
            cursor.at_end().then_some(data_type)
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
