//! [`stretch::merge`]'s rules on flat payloads (an object of numbers and strings, its keys
//! in the same order in every sample, no escapes: what the recorder writes), read a
//! payload's text once and written as text, with the same bytes as a merged tree
//! serialized. Each sample through a tree (parsed, cloned, merged, serialized) was 5 µs,
//! most of bounding a daemon task's span. Anything else (a metric, a nested payload, keys
//! that differ) is left to the tree.

use super::stretch::{self, Rule};
use crate::profile_marker::{busy_share, MarkerRef};
use serde_json::Value;
use std::borrow::Cow;

/// A value of a flat payload, or of a merged one.
#[derive(Clone, Debug, PartialEq)]
enum Field<'a> {
    /// An integer that fits a u64 (serde_json's `as_u64`).
    Whole(u64),
    /// Any other number (a JSON number too big is an error, and left to the tree).
    Real(f64),
    Text(Cow<'a, str>),
}

impl Field<'_> {
    fn as_f64(&self) -> Option<f64> {
        match self {
            Field::Whole(n) => Some(*n as f64),
            // As a tree holds it: a number that is not finite is null.
            Field::Real(x) => x.is_finite().then_some(*x),
            Field::Text(_) => None,
        }
    }

    fn is_number(&self) -> bool {
        !matches!(self, Field::Text(_))
    }
}

impl From<Value> for Field<'_> {
    fn from(value: Value) -> Self {
        match value {
            Value::String(text) => Field::Text(Cow::Owned(text)),
            value => Field::Real(value.as_f64().unwrap_or(f64::NAN)),
        }
    }
}

/// The samples' payloads as a table: the keys (in the order every sample has them) and
/// each sample's values, row by row.
struct Table<'t, 'a> {
    keys: &'t [&'a str],
    values: &'t [Field<'a>],
    samples: usize,
}

impl<'a> Table<'_, 'a> {
    fn column(&self, key: usize) -> impl Iterator<Item = &Field<'a>> + Clone + '_ {
        self.values.iter().skip(key).step_by(self.keys.len())
    }

    fn row(&self, sample: usize) -> &[Field<'a>] {
        let width = self.keys.len();
        &self.values[sample * width..(sample + 1) * width]
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.keys.iter().position(|k| *k == key)
    }

    fn number(&self, sample: usize, key: &str) -> Option<f64> {
        self.row(sample)[self.position(key)?].as_f64()
    }
}

/// Merges groups of samples, reusing its buffers from one group to the next: a group's
/// own allocations, and sorting each merged payload's keys, were a fifth of merging.
#[derive(Default)]
pub(super) struct Merger<'a> {
    keys: Vec<&'a str>,
    values: Vec<Field<'a>>,
    again: Vec<&'a str>,
    /// The keys of the payload written last, in its order, and that order sorted (as
    /// indices): a track's merged payloads all have the same keys.
    written_keys: Vec<&'a str>,
    sorted: Vec<usize>,
    text: String,
}

impl<'a> Merger<'a> {
    /// Reads the group's payloads into `keys` and `values`; None unless each is flat with
    /// the same keys in the same order, none twice.
    fn read(&mut self, group: &[MarkerRef<'a>]) -> Option<Table<'_, 'a>> {
        self.keys.clear();
        self.values.clear();
        let first = read_flat(group[0].data?, &mut self.keys, &mut self.values)?;
        // A key twice is the last one's in a tree.
        let keys = &self.keys;
        let twice = (1..first).any(|i| keys[..i].contains(&keys[i]));
        if first == 0 || twice {
            return None;
        }
        for marker in &group[1..] {
            self.again.clear();
            read_flat(marker.data?, &mut self.again, &mut self.values)?;
            if self.again != self.keys {
                return None;
            }
        }
        Some(Table {
            keys: &self.keys,
            values: &self.values,
            samples: group.len(),
        })
    }

    /// The payload text of `group` (samples in time order) merged, or None when a payload
    /// is not flat or the rule is a metric's. One sample is written back as a tree would
    /// write it.
    pub(super) fn merge(&mut self, group: &[MarkerRef<'a>]) -> Option<&str> {
        let table = self.read(group)?;
        let mut merged = merged_fields(&table, group)?;
        if group.len() > 1 {
            set(&mut merged, "samples", Field::Whole(group.len() as u64));
        }
        self.write(&merged);
        Some(&self.text)
    }

    /// As serde_json writes a map of them: keys in order, compact, integers by itoa and
    /// fractions by zmij (`core::fmt` was a tenth of merging).
    fn write(&mut self, fields: &[(&'a str, Field)]) {
        let same_keys = self.written_keys.len() == fields.len()
            && self
                .written_keys
                .iter()
                .zip(fields)
                .all(|(a, (b, _))| a == b);
        if !same_keys {
            self.written_keys.clear();
            self.written_keys.extend(fields.iter().map(|(key, _)| *key));
            self.sorted.clear();
            self.sorted.extend(0..fields.len());
            self.sorted.sort_unstable_by_key(|&i| fields[i].0);
        }
        let text = &mut self.text;
        text.clear();
        text.push('{');
        for (n, &i) in self.sorted.iter().enumerate() {
            let (key, value) = &fields[i];
            if n > 0 {
                text.push(',');
            }
            // Neither needs escaping: read without escapes, or written by us.
            text.push('"');
            text.push_str(key);
            text.push_str("\":");
            match value {
                Field::Whole(n) => text.push_str(itoa::Buffer::new().format(*n)),
                Field::Real(x) if x.is_finite() => {
                    text.push_str(zmij::Buffer::new().format_finite(*x));
                }
                Field::Real(_) => text.push_str("null"),
                Field::Text(t) => {
                    text.push('"');
                    text.push_str(t);
                    text.push('"');
                }
            }
        }
        text.push('}');
    }
}

/// The fields of `group`'s merged payload, by its rule; None for a metric's.
fn merged_fields<'a>(
    table: &Table<'_, 'a>,
    group: &[MarkerRef],
) -> Option<Vec<(&'a str, Field<'a>)>> {
    let last = group.len() - 1;
    let kind = match table.position("type").map(|k| &table.row(last)[k]) {
        Some(Field::Text(kind)) => Some(kind.as_ref()),
        _ => None,
    };
    Some(match stretch::rule(kind) {
        _ if group.len() == 1 => fields(table, last),
        Rule::Metric(_) => return None,
        Rule::KeepHighest(key) => {
            let value = |sample: &usize| table.number(*sample, key).unwrap_or(0.0);
            let highest = (0..group.len()).max_by(|a, b| value(a).total_cmp(&value(b)))?;
            fields(table, highest)
        }
        Rule::Sum => combine(table, |key| sum(table.column(key))),
        Rule::CpuMean => cpu_mean(table, group),
        Rule::ShareMean => {
            let mut merged = mean(table, group);
            if let Some(cpu) = get(&merged, "cpu") {
                let as_text = is_text(&merged, "cpuPercent");
                set(
                    &mut merged,
                    "cpuPercent",
                    stretch::share_as(as_text, cpu).into(),
                );
            }
            merged
        }
        Rule::Mean => mean(table, group),
    })
}

fn fields<'a>(table: &Table<'_, 'a>, sample: usize) -> Vec<(&'a str, Field<'a>)> {
    // Room for the keys a merge adds (`samples`, `peak`, `cpuPercent`).
    let mut fields = Vec::with_capacity(table.keys.len() + 3);
    let row = table.row(sample).iter().cloned();
    fields.extend(table.keys.iter().copied().zip(row));
    fields
}

/// The last sample's fields, each number replaced by `number_of(its column)`.
fn combine<'a>(
    table: &Table<'_, 'a>,
    number_of: impl Fn(usize) -> Field<'a>,
) -> Vec<(&'a str, Field<'a>)> {
    let mut merged = fields(table, table.samples - 1);
    for (key, (_, value)) in merged.iter_mut().enumerate() {
        if value.is_number() {
            *value = number_of(key);
        }
    }
    merged
}

/// The total, a whole number when every one is.
fn sum<'f, 'a: 'f>(values: impl Iterator<Item = &'f Field<'a>> + Clone) -> Field<'a> {
    let whole = values.clone().map(|value| match value {
        Field::Whole(n) => Some(*n),
        _ => None,
    });
    match whole.sum::<Option<u64>>() {
        Some(total) => Field::Whole(total),
        None => Field::Real(values.filter_map(Field::as_f64).sum::<f64>()),
    }
}

fn duration(marker: &MarkerRef) -> f64 {
    marker
        .end_time
        .map_or(0.0, |end| (end - marker.start_time).max(0.0))
}

/// The time-weighted mean of each number.
fn mean<'a>(table: &Table<'_, 'a>, group: &[MarkerRef]) -> Vec<(&'a str, Field<'a>)> {
    let total: f64 = group.iter().map(duration).sum();
    let weight = |m: &MarkerRef| {
        if total > 0.0 {
            duration(m) / total
        } else {
            1.0 / group.len() as f64
        }
    };
    combine(table, |key| {
        let mean = table
            .column(key)
            .zip(group)
            .map(|(value, m)| value.as_f64().unwrap_or(0.0) * weight(m))
            .sum::<f64>();
        Field::Real(mean)
    })
}

fn cpu_mean<'a>(table: &Table<'_, 'a>, group: &[MarkerRef]) -> Vec<(&'a str, Field<'a>)> {
    let mut merged = mean(table, group);
    let peak = (0..group.len())
        .filter_map(|sample| busy_share(|key| table.number(sample, key)))
        .fold(0.0, f64::max);
    merged.retain(|(key, value)| !key.ends_with("_pct") || value.is_number());
    if let Some(busy) = busy_share(|key| get(&merged, key)) {
        let as_text = is_text(&merged, "cpuPercent");
        set(
            &mut merged,
            "cpuPercent",
            stretch::share_as(as_text, busy).into(),
        );
    }
    set(&mut merged, "peak", Field::Real(peak));
    merged
}

fn get(fields: &[(&str, Field)], key: &str) -> Option<f64> {
    fields.iter().find(|(k, _)| *k == key)?.1.as_f64()
}

fn is_text(fields: &[(&str, Field)], key: &str) -> bool {
    fields
        .iter()
        .any(|(k, value)| *k == key && matches!(value, Field::Text(_)))
}

fn set<'a>(fields: &mut Vec<(&'a str, Field<'a>)>, key: &'a str, value: Field<'a>) {
    match fields.iter_mut().find(|(k, _)| *k == key) {
        Some((_, old)) => *old = value,
        None => fields.push((key, value)),
    }
}

/// Reads a flat JSON object's keys and values onto the ends of `keys` and `values`; returns
/// how many, or None when `text` is anything else (nested, escaped, a negative number, not
/// JSON), for a parser. By byte offsets: `str` patterns were half of reading.
fn read_flat<'a>(
    text: &'a str,
    keys: &mut Vec<&'a str>,
    values: &mut Vec<Field<'a>>,
) -> Option<usize> {
    let bytes = text.as_bytes();
    let ends_at = |at: usize| skip_space(bytes, at) == bytes.len();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return ends_at(at + 1).then_some(0);
    }
    let mut count = 0;
    loop {
        let (key, next) = string(text, at)?;
        at = skip_space(bytes, next);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        let (value, next) = match string(text, at) {
            Some((text, next)) => (Field::Text(Cow::Borrowed(text)), next),
            None => number(text, at)?,
        };
        keys.push(key);
        values.push(value);
        count += 1;
        at = skip_space(bytes, next);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            b'}' => return ends_at(at + 1).then_some(count),
            _ => return None,
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// A string without escapes at `at` in `text`, and the offset past it.
fn string(text: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let body = &bytes[at + 1..];
    let end = body
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    (body[end] == b'"').then(|| (&text[at + 1..at + 1 + end], at + 2 + end))
}

/// A non-negative JSON number at `at` in `text`, as serde_json reads it (with
/// `float_roundtrip`, a correctly rounded f64), and the offset past it.
fn number(text: &str, at: usize) -> Option<(Field<'_>, usize)> {
    let bytes = text.as_bytes();
    let digits = |from: usize| {
        bytes.get(from..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let whole = digits(at);
    if whole == 0 || (whole > 1 && bytes[at] == b'0') {
        return None;
    }
    let mut end = at + whole;
    if bytes.get(end) == Some(&b'.') {
        let fraction = digits(end + 1);
        if fraction == 0 {
            return None;
        }
        end += 1 + fraction;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        let exponent = digits(end + 1 + sign);
        if exponent == 0 {
            return None;
        }
        end += 1 + sign + exponent;
    }
    let token = &text[at..end];
    let field = if end == at + whole {
        // Past u64, serde_json reads a float.
        Field::Whole(token.parse().ok()?)
    } else {
        // Past f64, serde_json refuses the payload.
        Field::Real(token.parse().ok().filter(|x: &f64| x.is_finite())?)
    };
    Some((field, end))
}

#[cfg(test)]
mod tests;
