//! The caps a reader of a profile directory applies (SPEC.md, "Caps"), and the problems it
//! reports instead of failing.

use serde::{Deserialize, Serialize};

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
    ReservedType,
    NonNumericGraphValue,
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
            Problem::ReservedType => "data.type of the recorder's own tracks and markers",
            Problem::NonNumericGraphValue => "a graph key of its schema missing or not a number",
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
