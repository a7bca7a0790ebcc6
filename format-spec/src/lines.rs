//! Line kinds of the log (SPEC.md, "Line kinds").

use crate::compact_json::{self, Numbers};
use crate::marker_file::Problem;
use serde::de::{Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

mod by_hand;
mod plain_marker;
mod track_line;
pub(crate) use plain_marker::encode_plain_marker_line_into;
pub use track_line::{encode_track_line_into, DataFields, TrackData};

/// One line of a log. Serialization puts `type` first, as the profiler requires.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Line {
    /// The first line: becomes `profile.meta`.
    Meta(Map<String, Value>),
    /// The second line: the one thread, with empty version-47 tables.
    Thread(Map<String, Value>),
    /// A complete instant or interval marker, exactly as the profiler reads it.
    Marker(Marker),
    /// An interval that has begun and not yet ended (ours).
    Open(OpenInterval),
    /// The clean-end footer (ours): the recording ended on purpose.
    Footer(Footer),
    /// A span in which lines could not be written or made durable (ours).
    Gap(Gap),
    /// Starts a batch of lines taken from marker files or the task's log file (ours); its
    /// `checkpoint` ends it.
    Ingest(Ingest),
    /// Ends a batch: how far each file it read has been taken (ours).
    Checkpoint(Checkpoint),
    /// What a batch dropped from one marker file, and why (ours).
    Dropped(Dropped),
    /// A marker schema declared by a marker file, for `meta.markerSchema` (ours).
    Schema(Map<String, Value>),
    /// The end of an interval whose begin was not open when the end was read (ours).
    Close(Close),
    /// A line kind this reader does not know: skipped.
    #[serde(other)]
    Unknown,
}

/// A marker. `end_time: None` is an instant.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Marker {
    pub name: String,
    /// Milliseconds since `meta.startTime`.
    #[serde(rename = "startTime")]
    pub start_time: f64,
    /// Milliseconds since `meta.startTime`; `null` for an instant.
    #[serde(rename = "endTime", default)]
    pub end_time: Option<f64>,
    /// Index into `meta.categories`; 0 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<u32>,
    /// Payload; `data.type` names its schema.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "payload"
    )]
    pub data: Option<Value>,
    /// Set when this marker ends the `open` line with the same id (ours; the profiler
    /// ignores the key).
    #[serde(rename = "openId", default, skip_serializing_if = "Option::is_none")]
    pub open_id: Option<u64>,
}

impl Marker {
    pub fn instant(name: impl Into<String>, time: f64) -> Marker {
        Marker {
            name: name.into(),
            start_time: time,
            end_time: None,
            category: None,
            data: None,
            open_id: None,
        }
    }

    pub fn interval(name: impl Into<String>, start: f64, end: f64) -> Marker {
        Marker {
            end_time: Some(end),
            ..Marker::instant(name, start)
        }
    }

    pub fn with_category(mut self, category: u32) -> Marker {
        self.category = Some(category);
        self
    }

    pub fn with_data(mut self, data: Value) -> Marker {
        self.data = Some(data);
        self
    }
}

/// An interval whose end is not known yet. A later `marker` line with `openId` equal to
/// `id` ends it; a reader closes one never ended at the last time seen, flagged as cut off.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OpenInterval {
    pub id: u64,
    pub name: String,
    #[serde(rename = "startTime")]
    pub start_time: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<u32>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "payload"
    )]
    pub data: Option<Value>,
    /// The begin/end key of an interval from a marker file (`id:ID` or `file:FILE:NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl OpenInterval {
    /// The marker that ends this interval at `end`, carrying `data` (or the opening data).
    pub fn close(&self, end: f64, data: Option<Value>) -> Marker {
        Marker {
            name: self.name.clone(),
            start_time: self.start_time,
            end_time: Some(end),
            category: self.category,
            data: data.or_else(|| self.data.clone()),
            open_id: Some(self.id),
        }
    }
}

/// Why a recording ended on purpose.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// The wrapped command exited.
    CommandExited,
    /// The recorder was asked to stop (SIGTERM, SIGINT, or the API's `finish`).
    Stopped,
}

/// The clean-end footer: the last line of a log whose recorder finished on purpose.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Footer {
    #[serde(rename = "endTime")]
    pub end_time: f64,
    pub reason: EndReason,
}

/// A span of the recording whose lines did not reach the log (the disk was full, failed,
/// or read-only, or the writer fell behind), written once lines reach it again.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Gap {
    /// When the first line was lost (ms).
    #[serde(rename = "startTime")]
    pub start_time: f64,
    /// When lines reached the log again (ms).
    #[serde(rename = "endTime")]
    pub end_time: f64,
    /// Lines lost in the span; 0 when lines were written but may not be durable.
    pub lines: u64,
    /// The error, as the operating system words it.
    pub reason: String,
}

/// How far one marker file has been taken: `offset` bytes, all whole lines.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FileProgress {
    /// The file's name in the profile directory when it was read.
    pub name: String,
    pub dev: u64,
    pub ino: u64,
    /// The file's handle (type and bytes, hex), which tells it from a later file given the
    /// same inode number; absent where the file system gives none, and in older logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    pub offset: u64,
    /// Nothing more is read from this file (rejected, truncated, or over its cap).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
}

/// The line that opens a batch.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ingest {
    /// The batch is of the task's log file: without its checkpoint it is never used, since
    /// the file itself is read again from the checkpoint before it (marker files' batches
    /// are used when their directory cannot be read again).
    #[serde(
        rename = "taskLog",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub task_log: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The files whose progress changed in this batch.
    pub files: Vec<FileProgress>,
}

/// Lines or files of one marker file dropped for one reason.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub file: String,
    pub problem: Problem,
    /// Lines, or 1 for a whole file.
    pub count: u64,
    pub bytes: u64,
}

/// An `end` read while no `begin` with its key was open; the finalizer matches it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Close {
    pub key: String,
    pub name: String,
    pub time: f64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "payload"
    )]
    pub data: Option<Value>,
}

/// A line that is not valid JSON of a known shape.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("line is not UTF-8 JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Encodes one line, compact, `type` first, with its trailing newline: the bytes that go
/// into the log in a single write.
pub fn encode_line(line: &Line) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(160);
    encode_line_into(&mut bytes, line);
    bytes
}

/// Appends the encoded line, newline included, to `bytes` (to batch lines in one buffer).
pub fn encode_line_into(bytes: &mut Vec<u8>, line: &Line) {
    encode_into(bytes, line);
}

/// Appends a `marker` line whose `data` is a typed payload rather than a JSON value, for
/// sources that write many lines of one shape (the system sampler): no map is built. The
/// line is what [`encode_line`] gives for the same marker, `data`'s keys in its own order.
pub fn encode_marker_line_into<D: Serialize>(
    bytes: &mut Vec<u8>,
    name: &str,
    start_time: f64,
    end_time: Option<f64>,
    category: u32,
    data: &D,
) {
    #[derive(Serialize)]
    #[serde(tag = "type", rename = "marker")]
    struct TypedMarker<'a, D> {
        name: &'a str,
        #[serde(rename = "startTime")]
        start_time: f64,
        #[serde(rename = "endTime")]
        end_time: Option<f64>,
        category: u32,
        data: &'a D,
    }
    let marker = TypedMarker {
        name,
        start_time,
        end_time,
        category,
        data,
    };
    encode_into(bytes, &marker);
}

fn encode_into(bytes: &mut Vec<u8>, line: &impl Serialize) {
    // Lines hold only strings, numbers and JSON values: serializing them cannot fail.
    serde_json::to_writer(&mut *bytes, line).unwrap_or_else(|e| unreachable!("encode: {e}"));
    bytes.push(b'\n');
}

/// Decodes one line, without its newline.
pub fn decode_line(bytes: &[u8]) -> Result<Line, DecodeError> {
    match decode_marker_raw(bytes) {
        Some(marker) => Ok(Line::Marker(marker?.into_marker()?)),
        None => Ok(serde_json::from_slice(bytes)?),
    }
}

/// A `marker` line as read from the log: `data` left as the JSON text it is, borrowed with
/// the name from the line. Parsing a payload into a [`Value`] tree, serializing it again and
/// freeing it is most of the work of finalizing; a reader that only passes it on keeps it
/// as text.
#[derive(Deserialize, Debug)]
pub struct RawMarker<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(rename = "startTime")]
    pub start_time: f64,
    #[serde(rename = "endTime", default)]
    pub end_time: Option<f64>,
    #[serde(default)]
    pub category: Option<u32>,
    /// The payload's JSON text.
    #[serde(default, borrow, deserialize_with = "json_text")]
    pub data: Option<&'a str>,
    #[serde(rename = "openId", default)]
    pub open_id: Option<u64>,
}

/// The payload's text, refused unless the front-end takes it ([`ShownPayload`]).
fn json_text<'de, D: Deserializer<'de>>(value: D) -> Result<Option<&'de str>, D::Error> {
    let Some(text) = Option::<&RawValue>::deserialize(value)?.map(RawValue::get) else {
        return Ok(None);
    };
    serde_json::from_str::<ShownPayload>(text).map_err(D::Error::custom)?;
    Ok(Some(text))
}

/// A payload as a [`Value`], refused unless the front-end takes it ([`ShownPayload`]).
fn payload<'de, D: Deserializer<'de>>(value: D) -> Result<Option<Value>, D::Error> {
    let data = Option::<Value>::deserialize(value)?;
    match &data {
        None => Ok(None),
        Some(Value::Object(fields)) if fields.get("type").is_none_or(Value::is_string) => Ok(data),
        Some(_) => Err(D::Error::custom(PAYLOAD_EXPECTED)),
    }
}

/// What the front-end takes as a marker's `data` (SPEC.md, "marker"): it refuses a whole
/// profile over one payload that is not an object, or whose `type` is not a string.
const PAYLOAD_EXPECTED: &str = "data: an object whose type, if any, is a string";

/// A payload read only as far as the front-end's rule on it ([`PAYLOAD_EXPECTED`]),
/// building nothing.
struct ShownPayload;

impl<'de> Deserialize<'de> for ShownPayload {
    fn deserialize<D: Deserializer<'de>>(payload: D) -> Result<ShownPayload, D::Error> {
        payload.deserialize_map(ShownPayload)
    }
}

impl<'de> Visitor<'de> for ShownPayload {
    type Value = ShownPayload;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(PAYLOAD_EXPECTED)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<ShownPayload, A::Error> {
        while let Some(key) = fields.next_key::<Cow<'de, str>>()? {
            match key == "type" {
                true => drop(fields.next_value::<Cow<'de, str>>()?),
                false => drop(fields.next_value::<IgnoredAny>()?),
            }
        }
        Ok(ShownPayload)
    }
}

impl RawMarker<'_> {
    /// The marker with its payload parsed.
    pub fn into_marker(self) -> Result<Marker, DecodeError> {
        let data = match self.data {
            Some(raw) => serde_json::from_str(raw)?,
            None => None,
        };
        Ok(Marker {
            name: self.name.into_owned(),
            start_time: self.start_time,
            end_time: self.end_time,
            category: self.category,
            data,
            open_id: self.open_id,
        })
    }
}

/// Decodes a line that starts as the encoder starts every marker line,
/// `{"type":"marker",`, without parsing its payload (its `type` key is not read again);
/// None for any other line. Marker lines are nearly all of a log, and the tagged [`Line`]
/// would first copy each into a tree of its own.
pub fn decode_marker_raw(bytes: &[u8]) -> Option<Result<RawMarker<'_>, DecodeError>> {
    match std::str::from_utf8(bytes) {
        Ok(text) => decode_marker_text(text),
        Err(_) => starts_with_type(bytes, "marker").then(|| Ok(serde_json::from_slice(bytes)?)),
    }
}

/// Whether `line` opens with `{"type":"KIND",`, as the encoder starts every log line.
fn starts_with_type(line: &[u8], kind: &str) -> bool {
    line.strip_prefix(br#"{"type":""#)
        .and_then(|rest| rest.strip_prefix(kind.as_bytes()))
        .is_some_and(|rest| rest.starts_with(b"\","))
}

/// [`decode_marker_raw`] of a line known to be UTF-8 (a reader checks a chunk of lines at
/// once).
pub fn decode_marker_text(text: &str) -> Option<Result<RawMarker<'_>, DecodeError>> {
    starts_with_type(text.as_bytes(), "marker").then(|| match compact_marker(text) {
        Some(marker) => Ok(marker),
        None => Ok(serde_json::from_str(text)?),
    })
}

/// A marker line as the encoder writes it, read without serde_json's derive (four times
/// the work) into what serde_json reads from it; None for any other line, which is left
/// to serde_json.
fn compact_marker(text: &str) -> Option<RawMarker<'_>> {
    let mut marker = RawMarker {
        name: Cow::Borrowed(""),
        start_time: 0.0,
        end_time: None,
        category: None,
        data: None,
        open_id: None,
    };
    let mut seen = 0u8;
    compact_json::each_field(text, |value| {
        let Some(field) = marker_field(value)? else {
            // Ignored, as serde_json ignores a key it does not know.
            return value.skip_value(compact_json::FIELD_DEPTH_MAX, Numbers::Any);
        };
        // A repeated key is an error to serde_json.
        if seen & field as u8 != 0 {
            return None;
        }
        seen |= field as u8;
        let null = value.peek()? == b'n' && value.literal("null").is_some();
        match field {
            // A null name or start is left to serde_json (bytes after the null, as in
            // `null354`, are not a value of their own).
            MarkerField::Name | MarkerField::StartTime if null => return None,
            MarkerField::Name => marker.name = Cow::Borrowed(value.string()?),
            MarkerField::StartTime => marker.start_time = value.f64()?,
            _ if null => {}
            MarkerField::EndTime => marker.end_time = Some(value.f64()?),
            MarkerField::Category => marker.category = Some(value.unsigned()?),
            MarkerField::Data => marker.data = Some(shown_payload(value)?),
            MarkerField::OpenId => marker.open_id = Some(value.unsigned()?),
        }
        Some(())
    })?;
    // Without a name and a start, serde_json says what is missing.
    (seen & 3 == 3).then_some(marker)
}

/// The field of the key at the cursor, its colon passed over; None within for `type` or a
/// key [`compact_marker`] does not read. A key of its own is told by its first letter and
/// checked whole in one comparison; only another is scanned (scanning every key byte by
/// byte, then matching it, was 40 % of reading a marker line).
fn marker_field(line: &mut compact_json::Cursor<'_>) -> Option<Option<MarkerField>> {
    let (known, field) = match line.peek_second()? {
        b'n' => (line.skip_known(b"\"name\":"), Some(MarkerField::Name)),
        b's' => (
            line.skip_known(b"\"startTime\":"),
            Some(MarkerField::StartTime),
        ),
        b'e' => (line.skip_known(b"\"endTime\":"), Some(MarkerField::EndTime)),
        b'c' => (
            line.skip_known(b"\"category\":"),
            Some(MarkerField::Category),
        ),
        b'd' => (line.skip_known(b"\"data\":"), Some(MarkerField::Data)),
        b'o' => (line.skip_known(b"\"openId\":"), Some(MarkerField::OpenId)),
        b't' => (line.skip_known(b"\"type\":"), None),
        _ => (false, None),
    };
    if known {
        return Some(field);
    }
    line.key()?;
    Some(None)
}

/// A payload's text when it is an object whose `type`, if any, is a string of compact JSON
/// ([`PAYLOAD_EXPECTED`]); None for any other, which serde_json then reads, and refuses if
/// the front-end would: read in the same pass that finds its end.
fn shown_payload<'a>(value: &mut compact_json::Cursor<'a>) -> Option<&'a str> {
    let inner = compact_json::FIELD_DEPTH_MAX - 1;
    value.with_text(|payload| {
        // `type`, nearly always the first key, is checked whole rather than scanned.
        payload.keyed_object(|field| match field.skip_known(b"\"type\":") {
            true => field.string().map(drop),
            false => field
                .key()
                .and_then(|_| field.skip_value(inner, Numbers::Any)),
        })
    })
}

/// The keys of a marker line that [`compact_marker`] reads, each a bit of the keys seen.
#[derive(Clone, Copy)]
enum MarkerField {
    Name = 1,
    StartTime = 2,
    EndTime = 4,
    Category = 8,
    Data = 16,
    OpenId = 32,
}

#[cfg(test)]
mod tests;
