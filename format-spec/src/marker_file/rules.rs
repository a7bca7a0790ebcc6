//! What a decoded marker-file line must hold to be used: names, times, a `data.type` that is
//! not the recorder's, and schemas the profiler at version 47 can draw; and the nesting cap,
//! checked before decoding.

use super::caps::Problem;
use super::line::FileLine;
use crate::metric::MetricKind;
use crate::schema::data_type;
use serde_json::{Map, Value};

/// Longest marker name, begin/end id or schema name, in bytes.
pub const NAME_MAX_BYTES: usize = 1024;

/// The rules of the line's kind.
pub(super) fn check_line(line: &FileLine) -> Result<(), Problem> {
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

pub(super) fn check_name(name: &str) -> Result<(), Problem> {
    if name.is_empty() || name.len() > NAME_MAX_BYTES || name.chars().any(char::is_control) {
        return Err(Problem::BadName);
    }
    Ok(())
}

pub(super) fn check_time(time: f64) -> Result<(), Problem> {
    if time.is_finite() {
        Ok(())
    } else {
        Err(Problem::BadTime)
    }
}

/// `data.type` picks the schema: it must be a string when present, and not the type of
/// one of the recorder's own tracks or markers, which the task would forge or break.
fn check_data(data: Option<&Map<String, Value>>) -> Result<(), Problem> {
    match data.and_then(|d| d.get("type")) {
        None => Ok(()),
        Some(Value::String(kind)) if data_type::is_reserved(kind) => Err(Problem::ReservedType),
        Some(Value::String(_)) => Ok(()),
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

/// Whether arrays and objects nest deeper than `depth`. A line with no more opening
/// brackets than that cannot (most lines: the count is one vectorized pass, the nesting a
/// byte-by-byte one that was 14 % of the instructions of decoding a spaced marker line).
pub(super) fn deeper_than(bytes: &[u8], depth: usize) -> bool {
    let openings = memchr::memchr2_iter(b'{', b'[', bytes).count();
    openings > depth && nesting_depth(bytes) > depth
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
