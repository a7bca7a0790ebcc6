//! Reads a log, whole or cut at any byte (SPEC.md, "Reading a damaged log"). A torn last
//! line is a normal end of file; damage elsewhere is skipped, counted with its bytes and a
//! reason, and reading resumes at the next newline. Only a log without a whole meta line
//! and thread line cannot be read.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::{self, BufRead};
use tc_profile_format::{decode_line, Footer, Line, Marker, OpenInterval, META_PREFIX};

/// Why bytes of a log were not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DropReason {
    /// The last line has no newline and is not whole JSON: the writer was cut off.
    TornTail,
    /// NUL bytes: blocks a file system allocated but never wrote (a power cut).
    NulBytes,
    /// A line that is not JSON.
    NotJson,
    /// JSON of the wrong shape for its `type` (a marker without a name, say).
    BadShape,
    /// A second meta or thread line: the profiler would replace the first one with it.
    ExtraHeader,
}

impl DropReason {
    pub fn describe(self) -> &'static str {
        match self {
            DropReason::TornTail => "torn last line",
            DropReason::NulBytes => "NUL bytes",
            DropReason::NotJson => "not JSON",
            DropReason::BadShape => "wrong fields for its type",
            DropReason::ExtraHeader => "repeated meta or thread line",
        }
    }
}

/// What was dropped, by reason: (lines, bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    pub by_reason: BTreeMap<DropReason, (u64, u64)>,
}

impl Damage {
    fn add(&mut self, reason: DropReason, bytes: usize) {
        let entry = self.by_reason.entry(reason).or_default();
        entry.0 += 1;
        entry.1 += bytes as u64;
    }

    pub fn lines(&self) -> u64 {
        self.by_reason.values().map(|(lines, _)| lines).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.by_reason.values().map(|(_, bytes)| bytes).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_reason.is_empty()
    }

    /// "dropped 2 lines, 75 bytes: torn last line (1 line, 40 bytes), not JSON (1, 35)".
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .by_reason
            .iter()
            .map(|(reason, (lines, bytes))| {
                format!("{} ({lines} lines, {bytes} bytes)", reason.describe())
            })
            .collect();
        format!(
            "dropped {} lines, {} bytes: {}",
            self.lines(),
            self.bytes(),
            parts.join(", ")
        )
    }
}

/// Everything a log holds, in log order.
#[derive(Debug, Default)]
pub struct Recording {
    pub meta: Map<String, Value>,
    pub thread: Map<String, Value>,
    pub markers: Vec<Marker>,
    /// Intervals opened and never ended, by id.
    pub open: BTreeMap<u64, OpenInterval>,
    pub footer: Option<Footer>,
    /// The latest time any line mentions.
    pub last_time: f64,
    pub damage: Damage,
}

/// Why a log cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the log is empty")]
    Empty,
    #[error("it does not start with {{\"type\":\"meta\"")]
    NoMetaPrefix,
    #[error("its meta line is incomplete or not JSON: the recorder died while starting")]
    BadMeta,
    #[error("it has no complete thread line after meta: the recorder died while starting")]
    NoThread,
}

/// Reads every line of a log.
pub fn read_log(mut input: impl BufRead) -> Result<Recording, ReadError> {
    let mut buffer = Vec::with_capacity(4096);
    let mut recording = Recording::default();

    let meta = next_line(&mut input, &mut buffer)?.ok_or(ReadError::Empty)?;
    if !meta.bytes.starts_with(META_PREFIX) {
        return Err(ReadError::NoMetaPrefix);
    }
    recording.meta = match (meta.terminated, decode_line(meta.bytes)) {
        (_, Ok(Line::Meta(map))) => map,
        _ => return Err(ReadError::BadMeta),
    };
    let thread = next_line(&mut input, &mut buffer)?.ok_or(ReadError::NoThread)?;
    recording.thread = match decode_line(thread.bytes) {
        Ok(Line::Thread(map)) => map,
        _ => return Err(ReadError::NoThread),
    };

    while let Some(line) = next_line(&mut input, &mut buffer)? {
        let (body, nuls) = strip_leading_nuls(line.bytes);
        if nuls > 0 {
            recording.damage.add(DropReason::NulBytes, nuls);
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match decode_line(body) {
            Ok(decoded) => {
                if let Err(reason) = recording.take(decoded) {
                    recording.damage.add(reason, line.len_with_newline());
                }
            }
            Err(_) => {
                let reason = match (line.terminated, looks_like_json(body)) {
                    (false, _) => DropReason::TornTail,
                    (true, true) => DropReason::BadShape,
                    (true, false) => DropReason::NotJson,
                };
                recording
                    .damage
                    .add(reason, body.len() + usize::from(line.terminated));
            }
        }
    }
    Ok(recording)
}

impl Recording {
    fn take(&mut self, line: Line) -> Result<(), DropReason> {
        match line {
            Line::Marker(marker) => {
                if let Some(id) = marker.open_id {
                    self.open.remove(&id);
                }
                self.see(marker.start_time);
                self.see(marker.end_time.unwrap_or(marker.start_time));
                self.markers.push(marker);
            }
            Line::Open(open) => {
                self.see(open.start_time);
                self.open.insert(open.id, open);
            }
            Line::Footer(footer) => {
                self.see(footer.end_time);
                self.footer = Some(footer);
            }
            Line::Meta(_) | Line::Thread(_) => return Err(DropReason::ExtraHeader),
            Line::Unknown => {}
        }
        Ok(())
    }

    fn see(&mut self, time: f64) {
        if time.is_finite() && time > self.last_time {
            self.last_time = time;
        }
    }
}

struct RawLine<'a> {
    bytes: &'a [u8],
    terminated: bool,
}

impl RawLine<'_> {
    fn len_with_newline(&self) -> usize {
        self.bytes.len() + usize::from(self.terminated)
    }
}

fn next_line<'a>(
    input: &mut impl BufRead,
    buffer: &'a mut Vec<u8>,
) -> io::Result<Option<RawLine<'a>>> {
    buffer.clear();
    if input.read_until(b'\n', buffer)? == 0 {
        return Ok(None);
    }
    let terminated = buffer.last() == Some(&b'\n');
    if terminated {
        buffer.pop();
    }
    Ok(Some(RawLine {
        bytes: buffer,
        terminated,
    }))
}

fn strip_leading_nuls(bytes: &[u8]) -> (&[u8], usize) {
    let nuls = bytes.iter().take_while(|&&b| b == 0).count();
    (&bytes[nuls..], nuls)
}

/// Valid JSON that failed only on its shape, as opposed to bytes that are not JSON at all.
fn looks_like_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}
