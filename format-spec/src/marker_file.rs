//! The marker-file format (SPEC.md, "Marker files"): the lines that task and worker
//! processes append to `$TASKCLUSTER_PROFILE_DIR/<pid>.jsonl`, their decoder, the caps a
//! reader applies, and the problems it reports instead of failing.

mod caps;
mod line;
mod plain;
mod rules;
mod typed;
mod values;

pub use crate::metric::MetricKind;
pub use caps::{Limits, Problem};
pub use line::{interval_key, Begin, Category, End, FileLine, FileMarker, Metric};
pub use plain::PlainMarker;
pub use rules::NAME_MAX_BYTES;
use serde_json::{Map, Value};
pub use values::ValueRules;

/// Decodes and checks one line (without its newline). Times are checked against the
/// recording by [`crate::Merger`].
pub fn decode_file_line(bytes: &[u8], limits: &Limits) -> Result<FileLine, Problem> {
    match std::str::from_utf8(bytes) {
        Ok(text) => decode_text(text, limits),
        Err(_) => Err(Problem::InvalidUtf8),
    }
}

/// [`decode_file_line`] of a line known to be UTF-8.
fn decode_text(text: &str, limits: &Limits) -> Result<FileLine, Problem> {
    let bytes = text.as_bytes();
    if rules::deeper_than(bytes, limits.depth) {
        return Err(Problem::TooDeep);
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(if is_json(bytes) {
            Problem::NotObject
        } else {
            Problem::NotJson
        });
    }
    let line = decode_object(bytes).map_err(|error| match error.classify() {
        serde_json::error::Category::Data => Problem::WrongFields,
        // serde_json has no other way to tell this syntax error apart.
        _ if error.to_string().starts_with("number out of range") => Problem::NumberOutOfRange,
        // serde_json calls some wrong types syntax errors (a number where an enum is due).
        _ if is_json(bytes) => Problem::WrongFields,
        _ => Problem::NotJson,
    })?;
    rules::check_line(&line)?;
    Ok(line)
}

/// A line decoded by [`decode_line_or_plain`].
#[derive(Debug)]
pub enum Decoded<'a> {
    /// A marker that took the plain path ([`PlainMarker`]): the same checks, no tree.
    Plain(PlainMarker<'a>),
    Line(FileLine),
}

/// [`decode_file_line`], with the commonest marker lines taken on the plain path.
pub fn decode_line_or_plain<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Decoded<'a>, Problem> {
    match std::str::from_utf8(bytes) {
        Ok(text) => decode_text_or_plain(text, limits),
        Err(_) => Err(Problem::InvalidUtf8),
    }
}

/// [`decode_line_or_plain`] of a line known to be UTF-8: a batch of lines is checked as a
/// whole, in one pass rather than one a line.
pub fn decode_text_or_plain<'a>(text: &'a str, limits: &Limits) -> Result<Decoded<'a>, Problem> {
    if starts_with_type(text.as_bytes(), "marker") {
        if let Some(marker) = plain::decode(text, limits.depth) {
            return Ok(Decoded::Plain(marker));
        }
    }
    decode_text(text, limits).map(Decoded::Line)
}

fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// Why a file of schemas given before the recording (`--schema FILE`) was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum SchemaFileError {
    #[error("line {line}: {}", problem.describe())]
    Line { line: usize, problem: Problem },
    #[error(
        "line {line}: not a schema line; this file holds only {{\"type\":\"schema\",...}} lines"
    )]
    NotSchema { line: usize },
    #[error("line {line}: schema {name} is declared twice")]
    Twice { line: usize, name: String },
    #[error("more than {0} schemas (the schemas cap)")]
    TooMany(usize),
}

/// The schemas of a file of schema lines, as a marker file declares them, checked by the
/// same rules, with the same cap, and shown the same way (a `unique-string` field is a
/// `string`); blank lines are skipped. `names` are those already declared (by other
/// files): a name may be declared once.
pub fn decode_schema_file(
    text: &str,
    limits: &Limits,
    names: &mut Vec<String>,
) -> Result<Vec<Map<String, Value>>, SchemaFileError> {
    let mut schemas = Vec::new();
    for (index, text) in text.lines().enumerate() {
        let line = index + 1;
        if text.trim().is_empty() {
            continue;
        }
        let mut schema = match decode_file_line(text.as_bytes(), limits) {
            Ok(FileLine::Schema(schema)) => schema,
            Ok(_) => return Err(SchemaFileError::NotSchema { line }),
            Err(problem) => return Err(SchemaFileError::Line { line, problem }),
        };
        let name = schema["name"].as_str().unwrap_or_default().to_owned();
        if names.contains(&name) {
            return Err(SchemaFileError::Twice { line, name });
        }
        if names.len() >= limits.schemas {
            return Err(SchemaFileError::TooMany(limits.schemas));
        }
        crate::schema::as_task_schema(&mut schema);
        names.push(name);
        schemas.push(schema);
    }
    Ok(schemas)
}

/// Lines that start with their `type`, as helpers and the examples write them, are decoded
/// straight into their kind; the tagged enum would first copy the whole line into a tree of
/// its own (two thirds of the instructions of ingesting a marker). Lines with whitespace
/// between the tokens (Python's `json.dumps`) go the same way, through [`typed`], which
/// keeps the tagged enum's checks.
fn decode_object(bytes: &[u8]) -> serde_json::Result<FileLine> {
    if starts_with_type(bytes, "marker") {
        serde_json::from_slice(bytes).map(FileLine::Marker)
    } else if starts_with_type(bytes, "begin") {
        serde_json::from_slice(bytes).map(FileLine::Begin)
    } else if starts_with_type(bytes, "end") {
        serde_json::from_slice(bytes).map(FileLine::End)
    } else if let Some(line) = typed::decode(bytes) {
        Ok(line)
    } else {
        serde_json::from_slice(bytes)
    }
}

/// Whether `line` opens with `{"type":"KIND",`: the encoder starts every log line so, and
/// helpers and the examples start marker-file lines so. Both decoders take such a line
/// straight into its kind.
pub(crate) fn starts_with_type(line: &[u8], kind: &str) -> bool {
    line.strip_prefix(br#"{"type":""#)
        .and_then(|rest| rest.strip_prefix(kind.as_bytes()))
        .is_some_and(|rest| rest.starts_with(b"\","))
}

#[cfg(test)]
mod tests;
