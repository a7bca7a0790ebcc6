//! The marker-file format (SPEC.md, "Marker files"): the lines that task and worker
//! processes append to `$TASKCLUSTER_PROFILE_DIR/<pid>.jsonl`, their decoder, the caps a
//! reader applies, and the problems it reports instead of failing.

pub use crate::metric::MetricKind;
use crate::schema::category;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest marker name, begin/end id or schema name, in bytes.
pub const NAME_MAX_BYTES: usize = 1024;

/// One line of a marker file. Times are Unix epoch milliseconds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum FileLine {
    /// An instant (no `endTime`) or a complete interval.
    Marker(FileMarker),
    /// The start of an interval that an `end` with the same key closes.
    Begin(Begin),
    /// The end of the latest open `begin` with the same key.
    End(End),
    /// A marker schema for `meta.markerSchema`, as the profiler reads it at version 47.
    Schema(Map<String, Value>),
    /// A metric sample (reserved for the metrics source; validated, not yet recorded).
    Metric(Metric),
    /// A `type` this version does not know.
    #[serde(other)]
    Unknown,
}

/// The `category` of a marker-file line, by name; `user` when absent.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Worker,
    Task,
    User,
}

impl Category {
    /// The index into `meta.categories`.
    pub fn index(category: Option<Category>) -> u32 {
        match category.unwrap_or(Category::User) {
            Category::Worker => category::WORKER,
            Category::Task => category::TASK,
            Category::User => category::USER,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FileMarker {
    pub name: String,
    #[serde(rename = "startTime")]
    pub start_time: f64,
    #[serde(rename = "endTime", default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Begin {
    pub name: String,
    /// Matches the `end` with the same id in any file; without it, the `end` with the same
    /// name in the same file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub time: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct End {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub time: f64,
    /// Replaces the begin's data when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub kind: MetricKind,
    /// A number; for a set, a number or a string.
    pub value: Value,
    pub time: f64,
}

impl FileLine {
    /// The time a line happened at, to order lines of several files; a schema has none.
    pub fn time(&self) -> f64 {
        match self {
            FileLine::Marker(marker) => marker.start_time,
            FileLine::Begin(begin) => begin.time,
            FileLine::End(end) => end.time,
            FileLine::Metric(metric) => metric.time,
            FileLine::Schema(_) | FileLine::Unknown => f64::NEG_INFINITY,
        }
    }
}

/// The match key of a begin or end: `id:ID` across files, else `file:FILE:NAME`.
pub fn interval_key(file: &str, name: &str, id: Option<&str>) -> String {
    match id {
        Some(id) => format!("id:{id}"),
        None => format!("file:{file}:{name}"),
    }
}

/// The caps a reader of a profile directory applies (SPEC.md, "Caps").
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Longest line, newline excluded.
    pub line_bytes: usize,
    /// Bytes read from one file; the rest is ignored.
    pub file_bytes: u64,
    /// Files followed in the directory (every `*.jsonl` entry counts, rejected ones too).
    pub files: usize,
    /// Deepest nesting of arrays and objects in a line.
    pub depth: usize,
    /// Intervals begun and not yet ended, over all files.
    pub open_intervals: usize,
    /// Schemas declared by marker files.
    pub schemas: usize,
    /// How far outside the recording (before its start, after now) a time may be, in ms.
    pub time_slack_ms: f64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            line_bytes: 64 << 10,
            file_bytes: 64 << 20,
            files: 1000,
            depth: 16,
            open_intervals: 10_000,
            schemas: 64,
            time_slack_ms: 600_000.0,
        }
    }
}

impl Limits {
    /// The names `--limit NAME=VALUE` accepts, with their meaning.
    pub const NAMES: &'static str = "line-bytes, file-bytes, files, depth, open-intervals, \
        schemas, time-slack (seconds)";

    /// Sets one cap from `NAME=VALUE`.
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("'{assignment}' is not NAME=VALUE"))?;
        let number: u64 = value
            .parse()
            .map_err(|_| format!("{name}: '{value}' is not a whole number"))?;
        if number == 0 {
            return Err(format!("{name}: must be at least 1"));
        }
        let size = usize::try_from(number).unwrap_or(usize::MAX);
        match name {
            "line-bytes" => self.line_bytes = size,
            "file-bytes" => self.file_bytes = number,
            "files" => self.files = size,
            "depth" => self.depth = size,
            "open-intervals" => self.open_intervals = size,
            "schemas" => self.schemas = size,
            "time-slack" => self.time_slack_ms = number as f64 * 1000.0,
            _ => return Err(format!("unknown limit '{name}'; known: {}", Limits::NAMES)),
        }
        Ok(())
    }
}

/// Why a marker file, or a line of one, was not used. Every problem is counted and
/// summarised in the profile; none stops the recording.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Problem {
    Symlink,
    NotRegular,
    HardLink,
    Unreadable,
    Replaced,
    Truncated,
    FileTooBig,
    TooManyFiles,
    LineTooLong,
    InvalidUtf8,
    NotJson,
    NotObject,
    NumberOutOfRange,
    TooDeep,
    WrongFields,
    UnknownType,
    BadName,
    BadTime,
    BadSchema,
    TooManySchemas,
    TooManyOpen,
    EndWithoutBegin,
    DirectoryUnreadable,
}

impl Problem {
    pub fn describe(self) -> &'static str {
        match self {
            Problem::Symlink => "symbolic link (not followed)",
            Problem::NotRegular => "not a regular file (FIFO, socket, device or directory)",
            Problem::HardLink => "hard link (more than one name)",
            Problem::Unreadable => "cannot be opened by the directory's owner",
            Problem::Replaced => "replaced by another file under the same name",
            Problem::Truncated => "truncated while being read",
            Problem::FileTooBig => "over the file size cap (the rest is ignored)",
            Problem::TooManyFiles => "over the file count cap",
            Problem::LineTooLong => "line over the size cap",
            Problem::InvalidUtf8 => "invalid UTF-8",
            Problem::NotJson => "not JSON",
            Problem::NotObject => "JSON that is not an object",
            Problem::NumberOutOfRange => "number out of range",
            Problem::TooDeep => "nested deeper than the cap",
            Problem::WrongFields => "wrong fields for its type",
            Problem::UnknownType => "unknown type",
            Problem::BadName => "empty name, name too long, or control characters in it",
            Problem::BadTime => "time not finite, outside the recording, or end before start",
            Problem::BadSchema => "schema the profiler could not use",
            Problem::TooManySchemas => "over the schema count cap",
            Problem::TooManyOpen => "over the open-interval cap",
            Problem::EndWithoutBegin => "end without its begin",
            Problem::DirectoryUnreadable => {
                "profile directory unreadable when finalizing after a kill"
            }
        }
    }

    /// Whether the problem is counted in files (once per file) rather than lines.
    pub fn counts_files(self) -> bool {
        matches!(
            self,
            Problem::Symlink
                | Problem::NotRegular
                | Problem::HardLink
                | Problem::Unreadable
                | Problem::Replaced
                | Problem::Truncated
                | Problem::FileTooBig
                | Problem::TooManyFiles
                | Problem::DirectoryUnreadable
        )
    }
}

/// Decodes and checks one line (without its newline). Times are checked against the
/// recording by [`crate::Merger`].
pub fn decode_file_line(bytes: &[u8], limits: &Limits) -> Result<FileLine, Problem> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(Problem::InvalidUtf8);
    }
    if nesting_depth(bytes) > limits.depth {
        return Err(Problem::TooDeep);
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                Ok(_) => Problem::NotObject,
                Err(_) => Problem::NotJson,
            },
        );
    }
    let line = decode_object(bytes).map_err(|error| match error.classify() {
        serde_json::error::Category::Data => Problem::WrongFields,
        // serde_json has no other way to tell this syntax error apart.
        _ if error.to_string().starts_with("number out of range") => Problem::NumberOutOfRange,
        _ => Problem::NotJson,
    })?;
    check(&line)?;
    Ok(line)
}

/// Lines that start with their `type`, as helpers and the examples write them, are decoded
/// straight into their kind; the tagged enum would first copy the whole line into a tree of
/// its own (two thirds of the instructions of ingesting a marker).
fn decode_object(bytes: &[u8]) -> serde_json::Result<FileLine> {
    if bytes.starts_with(br#"{"type":"marker","#) {
        serde_json::from_slice(bytes).map(FileLine::Marker)
    } else if bytes.starts_with(br#"{"type":"begin","#) {
        serde_json::from_slice(bytes).map(FileLine::Begin)
    } else if bytes.starts_with(br#"{"type":"end","#) {
        serde_json::from_slice(bytes).map(FileLine::End)
    } else {
        serde_json::from_slice(bytes)
    }
}

fn check(line: &FileLine) -> Result<(), Problem> {
    match line {
        FileLine::Marker(marker) => {
            check_name(&marker.name)?;
            check_data(marker.data.as_ref())?;
            check_time(marker.start_time)?;
            if let Some(end) = marker.end_time {
                check_time(end)?;
                if end < marker.start_time {
                    return Err(Problem::BadTime);
                }
            }
        }
        FileLine::Begin(begin) => {
            check_name(&begin.name)?;
            begin.id.as_deref().map(check_name).transpose()?;
            check_data(begin.data.as_ref())?;
            check_time(begin.time)?;
        }
        FileLine::End(end) => {
            check_name(&end.name)?;
            end.id.as_deref().map(check_name).transpose()?;
            check_data(end.data.as_ref())?;
            check_time(end.time)?;
        }
        FileLine::Schema(schema) => check_schema(schema)?,
        FileLine::Metric(metric) => {
            check_name(&metric.name)?;
            check_time(metric.time)?;
            let set_member = metric.kind == MetricKind::Set && metric.value.is_string();
            if !(metric.value.is_number() || set_member) {
                return Err(Problem::WrongFields);
            }
        }
        FileLine::Unknown => return Err(Problem::UnknownType),
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), Problem> {
    if name.is_empty() || name.len() > NAME_MAX_BYTES || name.chars().any(char::is_control) {
        return Err(Problem::BadName);
    }
    Ok(())
}

fn check_time(time: f64) -> Result<(), Problem> {
    if time.is_finite() {
        Ok(())
    } else {
        Err(Problem::BadTime)
    }
}

/// `data.type` picks the schema: it must be a string when present.
fn check_data(data: Option<&Map<String, Value>>) -> Result<(), Problem> {
    match data.and_then(|d| d.get("type")) {
        None | Some(Value::String(_)) => Ok(()),
        Some(_) => Err(Problem::WrongFields),
    }
}

const DISPLAY_AREAS: [&str; 6] = [
    "marker-chart",
    "marker-table",
    "timeline-overview",
    "timeline-memory",
    "timeline-ipc",
    "timeline-fileio",
];
const FIELD_FORMATS: [&str; 18] = [
    "string",
    "url",
    "file-path",
    "sanitized-string",
    "unique-string",
    "duration",
    "time",
    "seconds",
    "milliseconds",
    "microseconds",
    "nanoseconds",
    "bytes",
    "percentage",
    "integer",
    "decimal",
    "pid",
    "tid",
    "list",
];
const GRAPH_TYPES: [&str; 3] = ["bar", "line", "line-filled"];
const COLORS: [&str; 10] = [
    "blue", "green", "grey", "ink", "magenta", "orange", "purple", "red", "teal", "yellow",
];

/// A schema the profiler at version 47 accepts: a name, `display` areas it knows, fields
/// under `data` with known formats, graphs of known types and colours. Anything else could
/// break the front-end for the whole profile.
fn check_schema(schema: &Map<String, Value>) -> Result<(), Problem> {
    let bad = Err(Problem::BadSchema);
    match schema.get("name") {
        Some(Value::String(name)) => check_name(name)?,
        _ => return bad,
    }
    let strings_in = |value: Option<&Value>, allowed: &[&str]| match value {
        Some(Value::String(s)) => allowed.contains(&s.as_str()),
        _ => false,
    };
    let Some(Value::Array(display)) = schema.get("display") else {
        return bad;
    };
    if !display.iter().all(|d| strings_in(Some(d), &DISPLAY_AREAS)) {
        return bad;
    }
    let Some(Value::Array(fields)) = schema.get("data") else {
        return bad;
    };
    for field in fields {
        let key_ok = field.get("key").is_some_and(Value::is_string);
        if !key_ok || !strings_in(field.get("format"), &FIELD_FORMATS) {
            return bad;
        }
    }
    for label in ["tooltipLabel", "tableLabel", "chartLabel", "description"] {
        if schema.get(label).is_some_and(|l| !l.is_string()) {
            return bad;
        }
    }
    match schema.get("graphs") {
        None => Ok(()),
        Some(Value::Array(graphs)) => {
            let graph_ok = |g: &Value| {
                g.get("key").is_some_and(Value::is_string)
                    && strings_in(g.get("type"), &GRAPH_TYPES)
                    && strings_in(g.get("color"), &COLORS)
            };
            if graphs.iter().all(graph_ok) {
                Ok(())
            } else {
                bad
            }
        }
        Some(_) => bad,
    }
}

/// The deepest nesting of arrays and objects, brackets inside strings left out.
fn nesting_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> Result<FileLine, Problem> {
        decode_file_line(text.as_bytes(), &Limits::default())
    }

    #[test]
    fn every_line_kind_decodes() {
        let marker = decode(
            r#"{"type":"marker","name":"clone","startTime":1000,"endTime":1500,"category":"task","data":{"type":"Text","text":"git"}}"#,
        );
        match marker.unwrap() {
            FileLine::Marker(m) => {
                assert_eq!((m.start_time, m.end_time), (1000.0, Some(1500.0)));
                assert_eq!(Category::index(m.category), category::TASK);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode(r#"{"type":"begin","name":"build","id":"b1","time":1}"#),
            Ok(FileLine::Begin(_))
        ));
        assert!(matches!(
            decode(r#"{"type":"end","name":"build","time":2}"#),
            Ok(FileLine::End(_))
        ));
        assert!(matches!(
            decode(r#"{"type":"metric","name":"tests","kind":"c","value":3,"time":2}"#),
            Ok(FileLine::Metric(_))
        ));
        assert!(matches!(
            decode(
                r#"{"type":"schema","name":"Test","display":["marker-table"],"data":[{"key":"status","format":"string"}]}"#
            ),
            Ok(FileLine::Schema(_))
        ));
    }

    #[test]
    fn each_kind_of_bad_line_has_its_own_problem() {
        let cases = [
            ("[1,2]", Problem::NotObject),
            ("{\"type\":\"marker\"", Problem::NotJson),
            (
                r#"{"type":"marker","name":5,"startTime":1}"#,
                Problem::WrongFields,
            ),
            (
                r#"{"type":"marker","name":"a","startTime":1,"category":"root"}"#,
                Problem::WrongFields,
            ),
            (
                r#"{"type":"marker","name":"a","startTime":1,"data":[]}"#,
                Problem::WrongFields,
            ),
            (
                r#"{"type":"marker","name":"a","startTime":1,"data":{"type":7}}"#,
                Problem::WrongFields,
            ),
            (r#"{"type":"surprise"}"#, Problem::UnknownType),
            (
                r#"{"type":"marker","name":"a\u0007b","startTime":1}"#,
                Problem::BadName,
            ),
            (
                r#"{"type":"marker","name":"","startTime":1}"#,
                Problem::BadName,
            ),
            (
                r#"{"type":"marker","name":"a","startTime":5,"endTime":4}"#,
                Problem::BadTime,
            ),
            (
                r#"{"type":"marker","name":"a","startTime":1e999}"#,
                Problem::NumberOutOfRange,
            ),
            (
                r#"{"type":"schema","name":"T","display":["everywhere"],"data":[]}"#,
                Problem::BadSchema,
            ),
            (
                r#"{"type":"metric","name":"m","kind":"c","value":"x","time":1}"#,
                Problem::WrongFields,
            ),
        ];
        for (text, problem) in cases {
            assert_eq!(decode(text), Err(problem), "{text}");
        }
        assert_eq!(
            decode_file_line(b"{\"name\":\"\xff\"}", &Limits::default()),
            Err(Problem::InvalidUtf8)
        );
    }

    #[test]
    fn nesting_is_capped_but_brackets_in_strings_do_not_count() {
        let deep = format!(
            r#"{{"type":"marker","name":"a","startTime":1,"data":{}{}}}"#,
            "[".repeat(40),
            "]".repeat(40)
        );
        assert_eq!(decode(&deep), Err(Problem::TooDeep));
        let text = format!(
            r#"{{"type":"marker","name":"{}","startTime":1}}"#,
            "[".repeat(40)
        );
        assert!(decode(&text).is_ok());
    }

    #[test]
    fn limits_are_set_by_name() {
        let mut limits = Limits::default();
        limits.set("line-bytes=100").unwrap();
        limits.set("time-slack=5").unwrap();
        assert_eq!((limits.line_bytes, limits.time_slack_ms), (100, 5000.0));
        assert!(limits.set("bogus=1").unwrap_err().contains("known:"));
        assert!(limits.set("files=0").is_err());
    }

    #[test]
    fn begin_and_end_keys_are_global_by_id_and_per_file_by_name() {
        assert_eq!(interval_key("1.jsonl", "b", Some("x")), "id:x");
        assert_eq!(interval_key("1.jsonl", "b", None), "file:1.jsonl:b");
    }
}
