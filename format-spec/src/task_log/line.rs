//! One line: its `[component(:level)? TIME]` prefix, the cap it is kept under, and the
//! `Log` marker it becomes.

use crate::merge::log_time;
use crate::schema::{category, data_type};
use crate::Marker;
use serde_json::json;

/// The longest message a marker keeps, in bytes; the rest of the line is counted only.
pub const MAX_LINE_BYTES: usize = 1024;
/// Longest component or level a prefix may have: longer is taken for plain text.
const MAX_LABEL_BYTES: usize = 64;
/// The prefix of a line that is a statsd metric, not a log line (issue 15).
const STAT_PREFIX: &str = "[taskcluster-task:stat] ";

/// Where a line came from: its marker's name when it has no prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
    /// A log file (`--task-log`, `add-log`).
    File,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::File => "log",
        }
    }
}

/// What a line's `[component(:level)? TIME] ` prefix says.
#[derive(Clone, Debug, PartialEq)]
pub struct Prefix<'a> {
    pub component: &'a str,
    pub level: Option<&'a str>,
    /// Unix epoch milliseconds.
    pub epoch_ms: f64,
    /// The line after the prefix.
    pub message: &'a str,
}

/// The prefix of a line, when it has one the Taskcluster UI would read.
pub fn parse_prefix(line: &str) -> Option<Prefix<'_>> {
    let rest = line.strip_prefix('[')?;
    let close = rest.find(']')?;
    let (label, time) = rest[..close].split_once(' ')?;
    let (component, level) = match label.split_once(':') {
        Some((component, level)) => (component, Some(level)),
        None => (label, None),
    };
    if !is_label(component) || !level.is_none_or(is_label) {
        return None;
    }
    let after = &rest[close + 1..];
    Some(Prefix {
        component,
        level,
        epoch_ms: parse_utc(time)?,
        message: after.strip_prefix(' ').unwrap_or(after),
    })
}

/// The statsd line of a `[taskcluster-task:stat] name:value|type` line.
pub fn stat_line(line: &str) -> Option<&str> {
    line.strip_prefix(STAT_PREFIX)
}

fn is_label(text: &str) -> bool {
    (1..=MAX_LABEL_BYTES).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Epoch milliseconds of an ISO 8601 time: `YYYY-MM-DDTHH:MM:SS`, a fraction or not, then
/// `Z`, an offset (`+01:00`, `+0100`, `+01`) or nothing (UTC).
pub fn parse_utc(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    // Only ASCII is indexed by byte below: a multibyte character there is no time.
    if b.len() < 19 || !b.is_ascii() {
        return None;
    }
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(i, c)| b[i] != c) || !matches!(b[10], b'T' | b't') {
        return None;
    }
    let year = number(&b[0..4])?;
    let (month, day) = (number(&b[5..7])?, number(&b[8..10])?);
    let (hour, minute, second) = (
        number(&b[11..13])?,
        number(&b[14..16])?,
        number(&b[17..19])?,
    );
    if !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut fraction = 0.0;
    if let Some(digits) = rest.strip_prefix(b".") {
        let count = digits.iter().take_while(|d| d.is_ascii_digit()).count();
        if count == 0 || count > 9 {
            return None;
        }
        fraction = number(&digits[..count])? as f64 / 10f64.powi(count as i32);
        rest = &digits[count..];
    }
    let offset_minutes = offset(rest)?;
    let days = days_from_civil(year, month, day);
    let seconds = ((days * 24 + hour) * 60 + minute - offset_minutes) * 60 + second;
    Some((seconds as f64 + fraction) * 1000.0)
}

fn number(digits: &[u8]) -> Option<i64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
}

/// Minutes east of UTC of `Z`, `±HH`, `±HHMM`, `±HH:MM`, or nothing.
fn offset(text: &[u8]) -> Option<i64> {
    let (sign, digits) = match text {
        [] | [b'Z' | b'z'] => return Some(0),
        [b'+', rest @ ..] => (1, rest),
        [b'-', rest @ ..] => (-1, rest),
        _ => return None,
    };
    let (hours, minutes) = match digits {
        [h1, h2] => (number(&[*h1, *h2])?, 0),
        [h1, h2, m1, m2] | [h1, h2, b':', m1, m2] => (number(&[*h1, *h2])?, number(&[*m1, *m2])?),
        _ => return None,
    };
    (hours <= 23 && minutes <= 59).then_some(sign * (hours * 60 + minutes))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// How loud a line is, from its prefix's level: its marker's category.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn of(level: Option<&str>) -> Level {
        let Some(level) = level else {
            return Level::Info;
        };
        let is = |names: &[&str]| names.iter().any(|n| level.eq_ignore_ascii_case(n));
        if is(&["warn", "warning"]) {
            Level::Warning
        } else if is(&["error", "err", "fatal", "critical", "crit"]) {
            Level::Error
        } else {
            Level::Info
        }
    }

    pub fn category(self) -> u32 {
        match self {
            Level::Info => category::LOG,
            Level::Warning => category::LOG_WARNING,
            Level::Error => category::LOG_ERROR,
        }
    }

    /// The marker chart's colour (the schema's `colorField`): it draws every marker blue
    /// whatever its category, so a warning or an error says its colour itself.
    pub fn color(self) -> Option<&'static str> {
        match self {
            Level::Info => None,
            Level::Warning => Some("orange"),
            Level::Error => Some("red"),
        }
    }
}

/// A line as a marker keeps it: at most [`MAX_LINE_BYTES`], cut on a character boundary,
/// invalid UTF-8 replaced by U+FFFD.
#[derive(Clone, Debug, PartialEq)]
pub struct Captured {
    pub text: String,
    /// The whole line's length in bytes, newline excluded.
    pub length: usize,
    pub cut: bool,
    pub invalid_utf8: bool,
}

impl Captured {
    /// `head` is the line's start (newline excluded): all of it, or at least
    /// [`MAX_LINE_BYTES`] when `length`, the whole line's, is more.
    pub fn new(head: &[u8], length: usize) -> Captured {
        let whole = head.len() >= length;
        let head = match whole {
            true => head.strip_suffix(b"\r").unwrap_or(head),
            false => head,
        };
        let mut kept = &head[..head.len().min(MAX_LINE_BYTES)];
        if kept.len() < head.len() || !whole {
            kept = without_split_character(kept);
        }
        let decoded = String::from_utf8_lossy(kept);
        let invalid_utf8 = matches!(decoded, std::borrow::Cow::Owned(_));
        let mut text = decoded.into_owned();
        // Each replaced byte takes three: the text may have outgrown the cap.
        let fits = text.len() <= MAX_LINE_BYTES;
        let mut end = text.len().min(MAX_LINE_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        Captured {
            cut: kept.len() < head.len() || !whole || !fits,
            text,
            length,
            invalid_utf8,
        }
    }

    /// The `Log` marker of this line, placed by `at`.
    pub fn marker(&self, stream: Stream, at: &Placement) -> Marker {
        let prefix = parse_prefix(&self.text);
        let (name, message, level) = match &prefix {
            Some(p) => (p.component, p.message, p.level),
            None => (stream.name(), self.text.as_str(), None),
        };
        let time = match &prefix {
            Some(p) => log_time(p.epoch_ms, at.start_epoch_ms).clamp(0.0, at.latest.max(0.0)),
            None => at.fallback,
        };
        let mut data = json!({"type": data_type::LOG, "message": message, "stream": stream.name()});
        if let Some(level) = level {
            data["level"] = json!(level);
        }
        if let Some(color) = Level::of(level).color() {
            data["color"] = json!(color);
        }
        if self.cut {
            data["length"] = json!(self.length);
        }
        if self.invalid_utf8 {
            data["invalidUtf8"] = json!("replaced by U+FFFD");
        }
        Marker::instant(name, time)
            .with_category(Level::of(level).category())
            .with_data(data)
    }
}

/// `head` without a last character that the cap cut in two.
fn without_split_character(head: &[u8]) -> &[u8] {
    for back in 1..=head.len().min(3) {
        let byte = head[head.len() - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needs = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needs > back {
            &head[..head.len() - back]
        } else {
            head
        };
    }
    head
}

/// Where a line goes on the recording's time axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// `meta.startTime`: a prefix's time is converted with it.
    pub start_epoch_ms: f64,
    /// The latest time a line may take (when it arrived, or the profile's end): a prefixed
    /// line is clamped into `[0, latest]`.
    pub latest: f64,
    /// The time of a line without a prefix.
    pub fallback: f64,
}

impl Placement {
    /// The `Log` marker of a line of a log file. A line without a prefix takes the time of
    /// the last one with, as in the Taskcluster UI (`fallback` before any).
    pub fn file_marker(&mut self, line: &Captured) -> Marker {
        let marker = line.marker(Stream::File, self);
        if parse_prefix(&line.text).is_some() {
            self.fallback = marker.start_time;
        }
        marker
    }
}
