//! The marker-file format (SPEC.md, "Marker files"): the lines that task and worker
//! processes append to `$TASKCLUSTER_PROFILE_DIR/<pid>.jsonl`, their decoder, the caps a
//! reader applies, and the problems it reports instead of failing.

mod caps;
mod line;
mod rules;

pub use crate::metric::MetricKind;
pub use caps::{Limits, Problem};
pub use line::{interval_key, Begin, Category, End, FileLine, FileMarker, Metric};
pub use rules::NAME_MAX_BYTES;

/// Decodes and checks one line (without its newline). Times are checked against the
/// recording by [`crate::Merger`].
pub fn decode_file_line(bytes: &[u8], limits: &Limits) -> Result<FileLine, Problem> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(Problem::InvalidUtf8);
    }
    if rules::nesting_depth(bytes) > limits.depth {
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
    rules::check_line(&line)?;
    Ok(line)
}

/// Lines that start with their `type`, as helpers and the examples write them, are decoded
/// straight into their kind; the tagged enum would first copy the whole line into a tree of
/// its own (two thirds of the instructions of ingesting a marker).
fn decode_object(bytes: &[u8]) -> serde_json::Result<FileLine> {
    if starts_with_type(bytes, "marker") {
        serde_json::from_slice(bytes).map(FileLine::Marker)
    } else if starts_with_type(bytes, "begin") {
        serde_json::from_slice(bytes).map(FileLine::Begin)
    } else if starts_with_type(bytes, "end") {
        serde_json::from_slice(bytes).map(FileLine::End)
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
