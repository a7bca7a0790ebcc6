//! Reads a log, whole or cut at any byte (SPEC.md, "Reading a damaged log"). A torn last
//! line is a normal end of file; damage elsewhere is skipped, counted with its bytes and a
//! reason, and reading resumes at the next newline. Only a log without a whole meta line
//! and thread line cannot be read.

use crate::marker_columns::Markers;
use crate::problems::Problems;
use crate::profile_marker::{MarkerRef, ProfileMarker};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead};
use tc_profile_format::{
    decode_line, decode_marker_raw, Close, DecodeError, FileProgress, Footer, Gap, Line,
    OpenInterval, RawMarker, META_PREFIX,
};

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
    pub markers: Markers,
    /// Intervals opened and never ended, by id.
    pub open: BTreeMap<u64, OpenInterval>,
    pub footer: Option<Footer>,
    /// Spans whose lines did not reach the log.
    pub gaps: Vec<Gap>,
    /// The latest time any line mentions.
    pub last_time: f64,
    pub damage: Damage,
    /// How far each marker file was taken, by (device, inode), from checkpointed batches.
    pub progress: HashMap<(u64, u64), FileProgress>,
    /// Ends of marker-file intervals still to match with an open line.
    pub closes: Vec<Close>,
    /// Schemas declared by marker files.
    pub schemas: Vec<Map<String, Value>>,
    /// What was dropped from marker files.
    pub problems: Problems,
    /// The lines of a batch of marker files without its checkpoint (the recorder was cut
    /// off writing it).
    pub unfinished_batch: Option<Vec<Read>>,
    /// The same of a batch of the task's log file, which is kept apart: that file is read
    /// again from the checkpoint before it (`task_log.rs`), the batch used only when it
    /// cannot be.
    pub unfinished_task_log_batch: Option<Vec<Read>>,
    /// The largest `open` id seen.
    pub max_open_id: u64,
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
    if !meta.terminated && META_PREFIX.starts_with(meta.bytes) {
        return Err(ReadError::BadMeta);
    }
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
        match decode(body) {
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

/// A line of a batch, kept until its checkpoint: a marker with its payload left as text,
/// or any other line decoded.
#[derive(Debug)]
pub enum Read {
    Marker {
        marker: ProfileMarker,
        open_id: Option<u64>,
    },
    Line(Line),
}

/// A line as decoded: a marker borrowed from the line (nearly every line), or any other.
enum Decoded<'a> {
    Marker(RawMarker<'a>),
    Line(Line),
}

fn decode(bytes: &[u8]) -> Result<Decoded<'_>, DecodeError> {
    match decode_marker_raw(bytes) {
        Some(raw) => raw.map(Decoded::Marker),
        None => decode_line(bytes).map(Decoded::Line),
    }
}

impl Recording {
    /// Takes a line in log order: lines of a batch wait for its checkpoint.
    fn take(&mut self, decoded: Decoded) -> Result<(), DropReason> {
        let line = match decoded {
            Decoded::Marker(raw) => {
                match self.open_batch() {
                    Some(batch) => batch.push(Read::Marker {
                        marker: ProfileMarker::from_raw(&raw),
                        open_id: raw.open_id,
                    }),
                    None => self.add_marker(MarkerRef::from(&raw), raw.open_id),
                }
                return Ok(());
            }
            Decoded::Line(line) => line,
        };
        match line {
            Line::Ingest(ingest) => {
                // A batch never checkpointed (its write failed) is not used.
                self.unfinished_batch = None;
                self.unfinished_task_log_batch = None;
                let batch = match ingest.task_log {
                    true => &mut self.unfinished_task_log_batch,
                    false => &mut self.unfinished_batch,
                };
                *batch = Some(Vec::new());
            }
            Line::Checkpoint(checkpoint) => {
                let batch = self
                    .unfinished_batch
                    .take()
                    .or(self.unfinished_task_log_batch.take());
                for read in batch.unwrap_or_default() {
                    self.apply_read(read)?;
                }
                for file in checkpoint.files {
                    self.progress.insert((file.dev, file.ino), file);
                }
            }
            line => match self.open_batch() {
                Some(batch) => batch.push(Read::Line(line)),
                None => self.apply(line)?,
            },
        }
        Ok(())
    }

    /// The batch waiting for its checkpoint, if one is open.
    fn open_batch(&mut self) -> Option<&mut Vec<Read>> {
        self.unfinished_batch
            .as_mut()
            .or(self.unfinished_task_log_batch.as_mut())
    }

    /// Uses the lines of the batch that has no checkpoint, when its marker files cannot
    /// be read again.
    pub fn use_unfinished_batch(&mut self) {
        let reads = self.unfinished_batch.take();
        self.use_reads(reads);
    }

    /// Uses the lines of the task log's batch that has no checkpoint, when its file cannot
    /// be read again.
    pub fn use_unfinished_task_log_batch(&mut self) {
        let reads = self.unfinished_task_log_batch.take();
        self.use_reads(reads);
    }

    fn use_reads(&mut self, reads: Option<Vec<Read>>) {
        for read in reads.unwrap_or_default() {
            // Only extra header lines are refused, and a batch holds none.
            let _ = self.apply_read(read);
        }
    }

    fn apply_read(&mut self, read: Read) -> Result<(), DropReason> {
        match read {
            Read::Marker { marker, open_id } => {
                self.add_marker(marker.as_ref(), open_id);
                Ok(())
            }
            Read::Line(line) => self.apply(line),
        }
    }

    fn add_marker(&mut self, marker: MarkerRef, open_id: Option<u64>) {
        if let Some(id) = open_id {
            self.open.remove(&id);
            self.max_open_id = self.max_open_id.max(id);
        }
        self.see(marker.start_time);
        self.see(marker.end_time.unwrap_or(marker.start_time));
        self.markers.push(marker);
    }

    /// Adds a line's content to the recording.
    pub fn apply(&mut self, line: Line) -> Result<(), DropReason> {
        match line {
            Line::Marker(marker) => {
                let open_id = marker.open_id;
                self.add_marker(ProfileMarker::from(marker).as_ref(), open_id);
            }
            Line::Open(open) => {
                self.see(open.start_time);
                self.max_open_id = self.max_open_id.max(open.id);
                self.open.insert(open.id, open);
            }
            Line::Close(close) => {
                self.see(close.time);
                self.closes.push(close);
            }
            Line::Schema(schema) => self.schemas.push(schema),
            Line::Dropped(dropped) => self.problems.add(&dropped),
            Line::Ingest(_) | Line::Checkpoint(_) => {}
            Line::Footer(footer) => {
                self.see(footer.end_time);
                self.footer = Some(footer);
            }
            Line::Gap(gap) => {
                self.see(gap.end_time);
                self.gaps.push(gap);
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

#[cfg(test)]
mod tests {
    use super::*;

    const HEADERS: &str =
        "{\"type\":\"meta\",\"startTime\":1000}\n{\"type\":\"thread\",\"name\":\"t\"}\n";
    const A: &str = "{\"type\":\"marker\",\"name\":\"a\",\"startTime\":1,\"endTime\":null}\n";
    const B: &str = "{\"type\":\"marker\",\"name\":\"b\",\"startTime\":2,\"endTime\":3}\n";

    fn read(tail: &[u8]) -> Recording {
        let mut bytes = HEADERS.as_bytes().to_vec();
        bytes.extend_from_slice(tail);
        read_log(bytes.as_slice()).unwrap()
    }

    fn names(recording: &Recording) -> Vec<&str> {
        recording.markers.iter().map(|m| m.name).collect()
    }

    #[test]
    fn truncated_last_line_is_dropped_as_a_torn_tail() {
        let torn = &B.as_bytes()[..20];
        let recording = read(&[A.as_bytes(), torn].concat());
        assert_eq!(names(&recording), ["a"]);
        assert_eq!(recording.damage.by_reason[&DropReason::TornTail], (1, 20));
    }

    #[test]
    fn whole_last_line_without_newline_is_kept() {
        let recording = read(B.trim_end().as_bytes());
        assert_eq!(names(&recording), ["b"]);
        assert!(recording.damage.is_empty());
    }

    #[test]
    fn nul_filled_tail_is_dropped() {
        let recording = read(&[A.as_bytes(), &[0u8; 4096]].concat());
        assert_eq!(names(&recording), ["a"]);
        assert_eq!(recording.damage.by_reason[&DropReason::NulBytes], (1, 4096));
    }

    #[test]
    fn line_appended_after_nul_blocks_is_recovered() {
        let recording = read(&[A.as_bytes(), &[0u8; 512], B.as_bytes()].concat());
        assert_eq!(names(&recording), ["a", "b"]);
        assert_eq!(recording.damage.bytes(), 512);
    }

    #[test]
    fn garbage_in_the_middle_is_skipped_and_reading_resumes() {
        let recording = read(
            format!("{A}not json at all\n{{\"type\":\"marker\",\"startTime\":1}}\n{B}").as_bytes(),
        );
        assert_eq!(names(&recording), ["a", "b"]);
        assert_eq!(recording.damage.by_reason[&DropReason::NotJson], (1, 16));
        assert_eq!(recording.damage.by_reason[&DropReason::BadShape].0, 1);
    }

    #[test]
    fn repeated_headers_are_dropped_not_obeyed() {
        let recording = read(format!("{A}{HEADERS}{B}").as_bytes());
        assert_eq!(names(&recording), ["a", "b"]);
        assert_eq!(recording.damage.by_reason[&DropReason::ExtraHeader].0, 2);
        assert_eq!(recording.meta["startTime"], 1000);
    }

    #[test]
    fn open_interval_is_removed_when_its_marker_arrives() {
        let open = "{\"type\":\"open\",\"id\":4,\"name\":\"x\",\"startTime\":5}\n";
        let close =
            "{\"type\":\"marker\",\"name\":\"x\",\"startTime\":5,\"endTime\":9,\"openId\":4}\n";
        assert_eq!(read(open.as_bytes()).open.len(), 1);
        let recording = read(format!("{open}{close}").as_bytes());
        assert!(recording.open.is_empty());
        assert_eq!(recording.last_time, 9.0);
    }

    #[test]
    fn a_log_without_its_thread_line_is_refused() {
        let meta_only = b"{\"type\":\"meta\",\"startTime\":1}\n";
        assert!(matches!(read_log(&meta_only[..]), Err(ReadError::NoThread)));
        assert!(matches!(read_log(&b""[..]), Err(ReadError::Empty)));
        assert!(matches!(
            read_log(&b"{\"type\":\"meta\",\"x\n"[..]),
            Err(ReadError::BadMeta)
        ));
    }
}
