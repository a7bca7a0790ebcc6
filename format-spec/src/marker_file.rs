//! The marker-file format (SPEC.md, "Marker files"): the lines that task and worker
//! processes append to `$TASKCLUSTER_PROFILE_DIR/<pid>.jsonl`, their decoder, the caps a
//! reader applies, and the problems it reports instead of failing.

mod canonical;
mod caps;
mod fast;
mod line;
mod rules;
mod values;

pub use crate::metric::MetricKind;
pub(crate) use canonical::CanonicalData;
pub use caps::{Limits, Problem};
use fast::FastLine;
pub use fast::{PlainData, PlainMarker};
pub use line::{interval_key, Begin, Category, End, FileLine, FileMarker, Metric};
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
    match fast::decode(text, limits.depth) {
        Some(line) => checked(line.into_line()),
        None => decode_tagged(text, limits),
    }
}

/// A line of the fast path, its kind's rules checked.
fn checked(line: FileLine) -> Result<FileLine, Problem> {
    rules::check_line(&line)?;
    Ok(line)
}

/// A line the fast path doubted, decoded through the tagged enum, the judge of every line:
/// taken, or refused with the reason.
fn decode_tagged(text: &str, limits: &Limits) -> Result<FileLine, Problem> {
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
    let line = serde_json::from_slice(bytes).map_err(|error| match error.classify() {
        serde_json::error::Category::Data => Problem::WrongFields,
        // serde_json has no other way to tell this syntax error apart.
        _ if error.to_string().starts_with("number out of range") => Problem::NumberOutOfRange,
        // serde_json calls some wrong types syntax errors (a number where an enum is due).
        _ if is_json(bytes) => Problem::WrongFields,
        _ => Problem::NotJson,
    })?;
    checked(line)
}

/// A line decoded by [`decode_line_or_plain`].
#[derive(Debug)]
pub enum Decoded<'a> {
    /// A marker of the fast path ([`PlainMarker`]): the same checks, no tree.
    Plain(PlainMarker<'a>),
    Line(FileLine),
}

/// [`decode_file_line`], markers of the fast path left borrowed from their line.
pub fn decode_line_or_plain<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Decoded<'a>, Problem> {
    match std::str::from_utf8(bytes) {
        Ok(text) => decode_text_or_plain(text, limits),
        Err(_) => Err(Problem::InvalidUtf8),
    }
}

/// [`decode_line_or_plain`] of a line known to be UTF-8: a batch of lines is checked as a
/// whole, in one pass rather than one a line.
pub fn decode_text_or_plain<'a>(text: &'a str, limits: &Limits) -> Result<Decoded<'a>, Problem> {
    match fast::decode(text, limits.depth) {
        Some(FastLine::Marker(marker)) => Ok(Decoded::Plain(marker)),
        Some(FastLine::Line(line)) => checked(line).map(Decoded::Line),
        None => decode_tagged(text, limits).map(Decoded::Line),
    }
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

#[cfg(test)]
mod tests;
