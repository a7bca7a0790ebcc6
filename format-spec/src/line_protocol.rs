//! InfluxDB 1.x line protocol, as the recorder's HTTP endpoint takes it from the task
//! (SPEC.md, "InfluxDB endpoint"): the parser of one line, with a reason for each refusal,
//! and the mapping of a point onto the metric series of [`crate::Aggregator`], so that a
//! point becomes the same graph track as a statsd metric; and the encoder of a point, for
//! what the recorder forwards to an InfluxDB. Task bytes: the parser never panics and its
//! work is linear in the line.

use crate::aggregate::{sanitize_name, Sample, SampleValue, MAX_TAGS, MAX_TAG_BYTES};
use crate::metric::MetricKind;
use std::fmt::Write;

/// The longest line taken: a longer one is refused unread, so that no line is held whole
/// past it (InfluxDB has no such cap; its clients write lines of a few hundred bytes).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// A point: `measurement[,tag=value...] field=value[,field=value...] [timestamp]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub measurement: String,
    pub tags: Vec<(String, String)>,
    pub fields: Vec<(String, FieldValue)>,
    /// The timestamp as written, in the request's precision.
    pub timestamp: Option<i64>,
}

/// A field's value, by the line protocol's types.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    Float(f64),
    /// `12i`.
    Integer(i64),
    /// `12u`.
    Unsigned(u64),
    /// `t`, `T`, `true`, `True`, `TRUE` and the same for false.
    Boolean(bool),
    /// `"text"`, with `\"` and `\\` escaped.
    String(String),
}

/// Why a line was refused; worded as InfluxDB words its parse errors where it has one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    #[error("not UTF-8")]
    NotUtf8,
    #[error("line longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("missing measurement")]
    MissingMeasurement,
    #[error("missing tag key")]
    MissingTagKey,
    #[error("missing tag value")]
    MissingTagValue,
    #[error("missing fields")]
    MissingFields,
    #[error("missing field key")]
    MissingFieldKey,
    #[error("missing field value")]
    MissingFieldValue,
    #[error("invalid field format")]
    InvalidFieldFormat,
    #[error("invalid number")]
    InvalidNumber,
    #[error("invalid boolean")]
    InvalidBoolean,
    #[error("unbalanced quotes")]
    UnbalancedQuotes,
    #[error("bad timestamp")]
    BadTimestamp,
    #[error("timestamp outside the recording")]
    TimeOutsideRecording,
    #[error("series name empty once sanitized, or longer than 200 bytes")]
    SeriesName,
    #[error("more than {MAX_TAGS} tags, or a tag longer than {MAX_TAG_BYTES} bytes")]
    Tags,
}

/// The `precision` of a write: the unit of its timestamps (nanoseconds by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    #[default]
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
}

impl Precision {
    /// The `precision` query parameter: `n`/`ns`, `u`/`us`/`µ`, `ms`, `s`, `m`, `h`.
    pub fn parse(text: &str) -> Option<Precision> {
        Some(match text {
            "" | "n" | "ns" => Precision::Nanoseconds,
            "u" | "us" | "µ" => Precision::Microseconds,
            "ms" => Precision::Milliseconds,
            "s" => Precision::Seconds,
            "m" => Precision::Minutes,
            "h" => Precision::Hours,
            _ => return None,
        })
    }

    /// A timestamp of this precision in Unix epoch milliseconds.
    pub fn epoch_ms(self, timestamp: i64) -> f64 {
        let ms_per_unit = match self {
            Precision::Nanoseconds => 1e-6,
            Precision::Microseconds => 1e-3,
            Precision::Milliseconds => 1.0,
            Precision::Seconds => 1e3,
            Precision::Minutes => 6e4,
            Precision::Hours => 3.6e6,
        };
        timestamp as f64 * ms_per_unit
    }

    /// A timestamp of this precision in Unix epoch nanoseconds; None past what an i64
    /// holds (the year 2262).
    pub fn epoch_ns(self, timestamp: i64) -> Option<i64> {
        let ns_per_unit = match self {
            Precision::Nanoseconds => 1,
            Precision::Microseconds => 1_000,
            Precision::Milliseconds => 1_000_000,
            Precision::Seconds => 1_000_000_000,
            Precision::Minutes => 60_000_000_000,
            Precision::Hours => 3_600_000_000_000,
        };
        timestamp.checked_mul(ns_per_unit)
    }
}

/// Parses one line (without its newline). `Ok(None)` for a blank line or a `#` comment.
/// A string field cannot hold a newline: the body is split into lines first.
pub fn parse_line(line: &str) -> Result<Option<Point>, LineError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let line = line.trim_start_matches([' ', '\t']);
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut cursor = Cursor {
        bytes: line.as_bytes(),
        pos: 0,
    };
    let measurement = cursor.unescaped_until(b", ", b", ");
    if measurement.is_empty() {
        return Err(LineError::MissingMeasurement);
    }
    let tags = cursor.tags()?;
    if !cursor.skip_spaces() {
        return Err(LineError::MissingFields);
    }
    let fields = cursor.fields()?;
    let timestamp = match cursor.skip_spaces() {
        true => Some(cursor.timestamp()?),
        false => None,
    };
    Ok(Some(Point {
        measurement,
        tags,
        fields,
        timestamp,
    }))
}

impl Point {
    /// The point as metric samples, one per field (SPEC.md, "InfluxDB endpoint"): the
    /// series `measurement.field`, its tags kept; a number (a boolean as 1 or 0) is a
    /// histogram sample, so that the track shows the count, min, mean and max of the
    /// points of an interval; a string is a set member (the distinct values seen).
    pub fn samples(&self) -> Result<Vec<Sample>, LineError> {
        if self.tags.len() > MAX_TAGS
            || self
                .tags
                .iter()
                .any(|(key, value)| key.len() + value.len() + 1 > MAX_TAG_BYTES)
        {
            return Err(LineError::Tags);
        }
        if sanitize_name(&self.measurement).is_none() {
            return Err(LineError::SeriesName);
        }
        self.fields
            .iter()
            .map(|(field, value)| {
                let name = format!("{}.{field}", self.measurement);
                // Each part on its own too: it is what a forwarded point is named.
                if sanitize_name(field).is_none() || sanitize_name(&name).is_none() {
                    return Err(LineError::SeriesName);
                }
                let (kind, value) = match value {
                    FieldValue::String(text) => {
                        (MetricKind::Set, SampleValue::Member(text.clone()))
                    }
                    number => (MetricKind::Histogram, SampleValue::Number(number.as_f64())),
                };
                Ok(Sample {
                    kind,
                    name,
                    value,
                    rate: 1.0,
                    tags: self.tags.clone(),
                })
            })
            .collect()
    }

    /// Appends the point as a line, its timestamp in the unit the write names.
    pub fn encode_into(&self, out: &mut String) {
        out.push_str(&escape(&self.measurement, ", "));
        for (key, value) in &self.tags {
            let _ = write!(out, ",{}={}", escape(key, ",= "), escape(value, ",= "));
        }
        for (index, (key, value)) in self.fields.iter().enumerate() {
            let separator = if index == 0 { ' ' } else { ',' };
            let _ = write!(out, "{separator}{}=", escape(key, ",= "));
            match value {
                FieldValue::Float(v) => write!(out, "{v}"),
                FieldValue::Integer(v) => write!(out, "{v}i"),
                FieldValue::Unsigned(v) => write!(out, "{v}u"),
                FieldValue::Boolean(v) => write!(out, "{v}"),
                FieldValue::String(text) => write!(out, "\"{}\"", escape(text, "\"")),
            }
            .unwrap_or_default();
        }
        if let Some(timestamp) = self.timestamp {
            let _ = write!(out, " {timestamp}");
        }
        out.push('\n');
    }
}

/// Backslash before each of `special` and before a backslash; newlines, which no escape
/// allows, become spaces (escaped too).
pub fn escape(text: &str, special: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        let c = if c == '\n' || c == '\r' { ' ' } else { c };
        if special.contains(c) || c == '\\' {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

impl FieldValue {
    fn as_f64(&self) -> f64 {
        match self {
            FieldValue::Float(v) => *v,
            FieldValue::Integer(v) => *v as f64,
            FieldValue::Unsigned(v) => *v as f64,
            FieldValue::Boolean(v) => f64::from(u8::from(*v)),
            FieldValue::String(_) => f64::NAN,
        }
    }

    /// An unquoted value: a number with its type suffix, or a boolean.
    fn parse_bare(text: &str) -> Result<FieldValue, LineError> {
        match text {
            "" => Err(LineError::MissingFieldValue),
            "t" | "T" | "true" | "True" | "TRUE" => Ok(FieldValue::Boolean(true)),
            "f" | "F" | "false" | "False" | "FALSE" => Ok(FieldValue::Boolean(false)),
            _ if text.starts_with(|c: char| c.is_ascii_alphabetic()) => {
                Err(LineError::InvalidBoolean)
            }
            _ => {
                let typed = if let Some(digits) = text.strip_suffix('i') {
                    digits.parse().map(FieldValue::Integer)
                } else if let Some(digits) = text.strip_suffix('u') {
                    digits.parse().map(FieldValue::Unsigned)
                } else {
                    return parse_float(text);
                };
                typed.map_err(|_| LineError::InvalidNumber)
            }
        }
    }
}

/// A float as the line protocol writes one: digits, a sign, a point and an exponent, never
/// `inf` or `NaN` (which Rust's parser would take).
fn parse_float(text: &str) -> Result<FieldValue, LineError> {
    let numeric = text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
    match text.parse::<f64>() {
        Ok(value) if numeric && value.is_finite() => Ok(FieldValue::Float(value)),
        _ => Err(LineError::InvalidNumber),
    }
}

/// A position in a line. Every delimiter is ASCII, so every cut is at a character boundary.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Reads up to the first byte of `stops` that is not escaped by a backslash, dropping
    /// the backslash before a byte of `escapable`; any other backslash is kept as written.
    fn unescaped_until(&mut self, stops: &[u8], escapable: &[u8]) -> String {
        let mut out = Vec::new();
        while let Some(byte) = self.peek() {
            let next = self.bytes.get(self.pos + 1).copied();
            if byte == b'\\' && next.is_some_and(|n| escapable.contains(&n)) {
                out.extend(next);
                self.pos += 2;
                continue;
            }
            if stops.contains(&byte) {
                break;
            }
            out.push(byte);
            self.pos += 1;
        }
        // Only ASCII backslashes were left out of valid UTF-8: still valid.
        String::from_utf8(out).unwrap_or_default()
    }

    /// True when something follows the spaces.
    fn skip_spaces(&mut self) -> bool {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
        self.peek().is_some()
    }

    fn tags(&mut self) -> Result<Vec<(String, String)>, LineError> {
        let mut tags = Vec::new();
        while self.peek() == Some(b',') {
            self.pos += 1;
            let key = self.unescaped_until(b"=, ", b",= ");
            if key.is_empty() {
                return Err(LineError::MissingTagKey);
            }
            if self.peek() != Some(b'=') {
                return Err(LineError::MissingTagValue);
            }
            self.pos += 1;
            let value = self.unescaped_until(b", ", b",= ");
            if value.is_empty() {
                return Err(LineError::MissingTagValue);
            }
            tags.push((key, value));
        }
        Ok(tags)
    }

    fn fields(&mut self) -> Result<Vec<(String, FieldValue)>, LineError> {
        let mut fields = Vec::new();
        loop {
            let key = self.unescaped_until(b"=, ", b",= ");
            if key.is_empty() {
                return Err(LineError::MissingFieldKey);
            }
            if self.peek() != Some(b'=') {
                return Err(LineError::InvalidFieldFormat);
            }
            self.pos += 1;
            let value = match self.peek() {
                Some(b'"') => self.quoted()?,
                _ => FieldValue::parse_bare(&self.unescaped_until(b", ", b""))?,
            };
            fields.push((key, value));
            if self.peek() != Some(b',') {
                return Ok(fields);
            }
            self.pos += 1;
        }
    }

    /// A string field, from its opening quote to its closing one.
    fn quoted(&mut self) -> Result<FieldValue, LineError> {
        self.pos += 1;
        let text = self.unescaped_until(b"\"", b"\"\\");
        if self.peek() != Some(b'"') {
            return Err(LineError::UnbalancedQuotes);
        }
        self.pos += 1;
        match self.peek() {
            None | Some(b',' | b' ') => Ok(FieldValue::String(text)),
            Some(_) => Err(LineError::InvalidFieldFormat),
        }
    }

    /// The timestamp, the line's last section.
    fn timestamp(&mut self) -> Result<i64, LineError> {
        let text = self.unescaped_until(b" ", b"");
        if self.skip_spaces() {
            return Err(LineError::BadTimestamp);
        }
        text.parse().map_err(|_| LineError::BadTimestamp)
    }
}

#[cfg(test)]
mod tests;
