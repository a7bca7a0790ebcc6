//! The names and tags of metric series, sanitized so that a task cannot leave its prefix
//! or send a line InfluxDB refuses (SPEC.md, "Metric tracks").

use crate::metric::{self, MetricKind};
use std::collections::BTreeMap;

/// The longest series name, prefix excluded, after sanitizing.
pub const MAX_NAME_BYTES: usize = 200;
/// Tags per metric at most.
pub const MAX_TAGS: usize = 16;
/// The longest tag (`key:value`).
pub const MAX_TAG_BYTES: usize = 200;

/// A series name the task cannot use to leave its prefix: ASCII letters, digits, `_` and
/// `-` kept, `.` separating non-empty segments, everything else turned into `_`. None when
/// nothing is left or the result is longer than [`MAX_NAME_BYTES`].
pub fn sanitize_name(name: &str) -> Option<String> {
    let cleaned: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' => c,
            _ => '_',
        })
        .collect();
    let joined = cleaned
        .split('.')
        .filter(|segment| !segment.is_empty())
        .collect::<Vec<_>>()
        .join(".");
    (!joined.is_empty() && joined.len() <= MAX_NAME_BYTES).then_some(joined)
}

/// Tags as `key:value` pairs sorted by key, joined by commas; a key given twice keeps its
/// last value. Keys keep ASCII letters, digits, `_ - . /`; values any character but control
/// characters and `\\`; everything else becomes `_`. None when over [`MAX_TAGS`] or
/// [`MAX_TAG_BYTES`].
pub(super) fn sanitize_tags(tags: &[(String, String)]) -> Option<String> {
    let too_long = |(key, value): &(String, String)| key.len() + value.len() + 1 > MAX_TAG_BYTES;
    if tags.len() > MAX_TAGS || tags.iter().any(too_long) {
        return None;
    }
    let sanitized = tags.iter().map(|(key, value)| sanitize_tag(key, value));
    Some(metric::join_tags(&sorted_tags(sanitized)))
}

/// Tags sorted by key, a key given twice keeping its last value, a tag whose key is empty
/// (nothing of it was left by [`sanitize_tag`]) left out.
pub fn sorted_tags(tags: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    let by_key: BTreeMap<String, String> = tags
        .into_iter()
        .filter(|(key, _)| !key.is_empty())
        .collect();
    by_key.into_iter().collect()
}

/// One tag as [`sanitize_tags`] keeps it (the key may come out empty: such a tag is left
/// out).
pub fn sanitize_tag(key: &str, value: &str) -> (String, String) {
    let key = key
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' | '/' => c,
            _ => '_',
        })
        .collect();
    // Kept as InfluxDB keeps them (UTF-8, commas, spaces), so that two values stay two
    // series. No backslash: InfluxDB 1.x refuses a tag value ending in one, even escaped,
    // and the profile's tags are what the export and the forwarding send; none either
    // leaves a `\\,` in the joined tags unambiguous ([`metric::join_tags`]).
    let value = value
        .chars()
        .map(|c| if c.is_control() || c == '\\' { '_' } else { c })
        .collect();
    (key, value)
}

/// The name of a series' track (its markers' name): first what tells it from its siblings,
/// the tag values (the front-end shows the first 18 characters or so of a track's name),
/// then the series name and the unit of its figures, then the tags whole, which keep two
/// series apart whose values are the same under other keys:
/// `200 /a · task.requests (sum) #code:200,route:/a`. `tags` as [`metric::join_tags`]
/// joins them.
pub fn track_name(kind: MetricKind, metric: &str, tags: &str) -> String {
    let unit = kind
        .unit()
        .map(|unit| format!(" ({unit})"))
        .unwrap_or_default();
    if tags.is_empty() {
        return format!("{metric}{unit}");
    }
    let values: Vec<_> = metric::split_tags(tags)
        .map(|(key, value)| match value.is_empty() {
            true => key.to_owned(),
            false => value.into_owned(),
        })
        .collect();
    format!("{} · {metric}{unit} #{tags}", values.join(" "))
}
