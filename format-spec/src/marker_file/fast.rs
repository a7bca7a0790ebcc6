//! The one fast decoder of marker-file lines: a `marker`, `begin` or `end` line that gives
//! its `type` first, compact or with whitespace between the tokens (as Python's
//! `json.dumps` writes it), without escapes, read by the scanner of [`crate::compact_json`]
//! in one pass that checks the JSON and the rules and borrows from the line, `data` kept
//! as the text it came as (never parsed into a tree for a marker). A line this path doubts
//! (an escape, a key twice, a number it does not know to be in an f64's range, a `type` it
//! does not take) goes the tagged way ([`super::decode_file_line`]'s serde path), which
//! takes or refuses it and says why: so every spelling of a line is judged alike, and the
//! values taken are the tagged way's.

use super::line::{Begin, Category, End, FileLine, FileMarker};
use super::rules::{check_name, check_time};
use crate::compact_json::{Cursor, Numbers};
use crate::schema::data_type;
use serde_json::{Map, Value};

/// Deepest nesting this path takes, whatever the cap: below serde_json's own limit (128),
/// which the tagged way meets first.
const DEPTH_MAX: usize = 64;

/// A `marker` line taken on the fast path, borrowed from its line; times are Unix epoch
/// milliseconds.
#[derive(Debug)]
pub struct PlainMarker<'a> {
    /// Holds nothing that needs an escape in JSON.
    pub name: &'a str,
    pub start_time: f64,
    pub end_time: Option<f64>,
    pub category: Option<Category>,
    pub data: Option<PlainData<'a>>,
    /// `data.type`, which picks the marker's schema.
    pub data_type: Option<&'a str>,
}

/// A marker's `data` as its line held it: a JSON object without escapes, its numbers in an
/// f64's range, each object's keys in any order.
#[derive(Clone, Copy, Debug)]
pub struct PlainData<'a> {
    pub text: &'a str,
    /// Whether the log takes `text` as it is: a compact line of a marker's keys alone,
    /// which always went so. Any other line's `data` goes into the log as serde_json
    /// writes the object it decodes to (compact, keys sorted: [`super::canonical`]), as
    /// the tagged way always wrote it.
    pub as_written: bool,
}

/// A line taken on the fast path: a marker borrowed, a begin or an end decoded.
pub(super) enum FastLine<'a> {
    Marker(PlainMarker<'a>),
    Line(FileLine),
}

impl FastLine<'_> {
    pub(super) fn into_line(self) -> FileLine {
        match self {
            FastLine::Marker(marker) => FileLine::Marker(marker.into_file_marker()),
            FastLine::Line(line) => line,
        }
    }
}

impl PlainMarker<'_> {
    fn into_file_marker(self) -> FileMarker {
        FileMarker {
            name: self.name.to_owned(),
            start_time: self.start_time,
            end_time: self.end_time,
            category: self.category,
            // Checked JSON of an object: decoded.
            data: self.data.and_then(|data| object(data.text).ok()),
        }
    }
}

/// The line of `text` when it can take the fast path, nested `depth` deep at most, and a
/// marker's rules hold (a begin's or an end's are checked with the decoded line's); None
/// sends it the tagged way.
pub(super) fn decode(text: &str, depth: usize) -> Option<FastLine<'_>> {
    let mut line = Cursor::spaced(text);
    let fields = fields(&mut line, depth.min(DEPTH_MAX))?;
    line.at_end().then_some(())?;
    let as_written = !line.saw_space() && !fields.unknown_keys;
    let name = fields.name?;
    let time = fields.time?;
    let data = fields.data.flatten();
    let data_text = data.map(|(text, _)| text);
    Some(match fields.kind {
        Kind::Marker => FastLine::Marker(marker(name, time, &fields, data, as_written)?),
        Kind::Begin => FastLine::Line(FileLine::Begin(Begin {
            name: name.to_owned(),
            id: fields.id.map(str::to_owned),
            time,
            category: fields.category,
            data: data_text.map(object).transpose().ok()?,
        })),
        Kind::End => FastLine::Line(FileLine::End(End {
            name: name.to_owned(),
            id: fields.id.map(str::to_owned),
            time,
            data: data_text.map(object).transpose().ok()?,
        })),
    })
}

/// The marker of a line's fields when its rules hold.
fn marker<'a>(
    name: &'a str,
    start_time: f64,
    fields: &Fields<'a>,
    data: Option<(&'a str, Option<&'a str>)>,
    as_written: bool,
) -> Option<PlainMarker<'a>> {
    check_name(name).ok()?;
    check_time(start_time).ok()?;
    let end_time = fields.end_time.flatten();
    if let Some(end) = end_time {
        check_time(end).ok()?;
        (end >= start_time).then_some(())?;
    }
    let data_type = data.and_then(|(_, data_type)| data_type);
    if data_type.is_some_and(data_type::is_reserved) {
        return None;
    }
    Some(PlainMarker {
        name,
        start_time,
        end_time,
        category: fields.category,
        data: data.map(|(text, _)| PlainData { text, as_written }),
        data_type,
    })
}

/// `text`, checked JSON of an object, as serde_json decodes it.
fn object(text: &str) -> serde_json::Result<Map<String, Value>> {
    serde_json::from_str(text)
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Marker,
    Begin,
    End,
}

/// The keys of a line, each given once at most.
struct Fields<'a> {
    kind: Kind,
    name: Option<&'a str>,
    id: Option<&'a str>,
    /// A marker's `startTime`, a begin's or an end's `time`.
    time: Option<f64>,
    /// `Some(None)` for `null`.
    end_time: Option<Option<f64>>,
    category: Option<Category>,
    /// `Some(None)` for `null`; else its text and its `type`.
    data: Option<Option<(&'a str, Option<&'a str>)>>,
    /// Whether keys the kind does not read were passed over.
    unknown_keys: bool,
}

/// The fields of the line's object, `depth` levels deep at most, itself included: `type`
/// first, then the kind's keys, each once; others passed over, their values checked.
fn fields<'a>(line: &mut Cursor<'a>, depth: usize) -> Option<Fields<'a>> {
    let inner = depth.checked_sub(1)?;
    let mut typed: Option<Fields> = None;
    line.object(|line, key| match &mut typed {
        Some(fields) => field(fields, line, key, inner),
        None => {
            (key == "type").then_some(())?;
            typed = Some(Fields::of(kind(line.string()?)?));
            Some(())
        }
    })?;
    typed
}

fn kind(name: &str) -> Option<Kind> {
    match name {
        "marker" => Some(Kind::Marker),
        "begin" => Some(Kind::Begin),
        "end" => Some(Kind::End),
        _ => None,
    }
}

impl Fields<'_> {
    fn of(kind: Kind) -> Self {
        Fields {
            kind,
            name: None,
            id: None,
            time: None,
            end_time: None,
            category: None,
            data: None,
            unknown_keys: false,
        }
    }
}

/// Reads the value of `key`, `depth` levels deep at most, into `fields`; None for a value
/// this path does not take, or a key twice (`type` included).
fn field<'a>(
    fields: &mut Fields<'a>,
    line: &mut Cursor<'a>,
    key: &str,
    depth: usize,
) -> Option<()> {
    let kind = fields.kind;
    let time_key = if kind == Kind::Marker {
        "startTime"
    } else {
        "time"
    };
    match key {
        "type" => return None,
        "name" if fields.name.is_none() => fields.name = Some(line.string()?),
        "id" if kind != Kind::Marker && fields.id.is_none() => fields.id = Some(line.string()?),
        _ if key == time_key && fields.time.is_none() => fields.time = Some(line.f64()?),
        "endTime" if kind == Kind::Marker && fields.end_time.is_none() => {
            fields.end_time = Some(match line.peek()? {
                b'n' => line.literal("null").map(|()| None)?,
                _ => Some(line.f64()?),
            });
        }
        "category" if kind != Kind::End && fields.category.is_none() => {
            fields.category = Some(match line.string()? {
                "worker" => Category::Worker,
                "task" => Category::Task,
                "user" => Category::User,
                _ => return None,
            });
        }
        "data" if fields.data.is_none() => {
            fields.data = Some(match line.peek()? {
                b'n' => line.literal("null").map(|()| None)?,
                _ => Some(data(line, depth)?),
            });
        }
        "name" | "id" | "startTime" | "time" | "endTime" | "category" | "data"
            if is_key_of(kind, key) =>
        {
            return None; // a key twice
        }
        _ => {
            fields.unknown_keys = true;
            line.skip_value(depth, Numbers::InRange)?;
        }
    }
    Some(())
}

/// Whether the kind's line reads `key` (besides `type`).
fn is_key_of(kind: Kind, key: &str) -> bool {
    let keys: &[&str] = match kind {
        Kind::Marker => &MARKER_KEYS,
        Kind::Begin => &BEGIN_KEYS,
        Kind::End => &END_KEYS,
    };
    keys.contains(&key)
}

/// The keys each kind reads, besides `type` (a test checks them against the kinds' fields).
pub(super) const MARKER_KEYS: [&str; 5] = ["name", "startTime", "endTime", "category", "data"];
pub(super) const BEGIN_KEYS: [&str; 5] = ["name", "id", "time", "category", "data"];
pub(super) const END_KEYS: [&str; 4] = ["name", "id", "time", "data"];

/// `data`, an object `depth` levels deep at most, itself included, its numbers in an f64's
/// range (the tagged way refuses others: `NumberOutOfRange`): its text and its `type`,
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
    fn only_objects_without_escapes_or_exponents_are_plain() {
        fn plain(json: &str) -> Option<Option<&str>> {
            let mut cursor = Cursor::spaced(json);
            let (_, data_type) = data(&mut cursor, 16)?;
            cursor.at_end().then_some(data_type)
        }
        assert_eq!(
            plain(r#"{"type":"Text","text":"a, b: c"}"#),
            Some(Some("Text"))
        );
        assert_eq!(
            plain(" {\"type\" :\t\"Text\" , \"n\": [1 , {} ]}\r"),
            Some(Some("Text"))
        );
        assert_eq!(
            plain(r#"{"n":1.5,"list":[1,{"type":3}],"t":true}"#),
            Some(None)
        );
        assert_eq!(plain(r#"{"a":{"type":"x"},"type":"T"}"#), Some(Some("T")));
        assert_eq!(plain(r#"{"text":"type","type":"T"}"#), Some(Some("T")));
        for doubtful in [
            r#"{"type":"Te\u0078t"}"#,
            r#"{"x":1e400}"#,
            r#"{"x":1.5E3}"#,
            r#"{"type":3}"#,
            r#"{"type":"A","type":"B"}"#,
            r#"["type","Text"]"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":1 .5}"#,
            r#"{"a":- 1}"#,
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
            "{\"a\":\u{b}1}",
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
