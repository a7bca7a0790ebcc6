//! Reads a log, whole or cut at any byte (SPEC.md, "Reading a damaged log"). A torn last
//! line is a normal end of file; damage elsewhere is skipped, counted with its bytes and a
//! reason, and reading resumes at the next newline. Only a log without a whole meta line
//! and thread line cannot be read.

use crate::marker_columns::Markers;
use crate::problems::Problems;
use crate::profile_marker::{MarkerRef, ProfileMarker};
use chunk::{Decoded, DecodedChunk, Undecodable, LINE_MAX};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead};
use tc_profile_format::{
    decode_line, Close, FileProgress, Footer, Gap, Line, OpenInterval, META_PREFIX,
};

mod chunk;
mod pipeline;

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
    /// A line longer than [`LINE_MAX`], skipped unread.
    TooLong,
}

impl DropReason {
    pub fn describe(self) -> &'static str {
        match self {
            DropReason::TornTail => "torn last line",
            DropReason::NulBytes => "NUL bytes",
            DropReason::NotJson => "not JSON",
            DropReason::BadShape => "wrong fields for its type",
            DropReason::ExtraHeader => "repeated meta or thread line",
            DropReason::TooLong => "line over 4 MiB",
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
    #[error("its meta or thread line is over 4 MiB, the longest line read")]
    LongHeader,
}

/// Reads every line of a log.
pub fn read_log(input: impl BufRead) -> Result<Recording, ReadError> {
    read_log_in_chunks(input, pipeline::CHUNK_BYTES)
}

/// [`read_log`], the lines after the header decoded `chunk_bytes` at a time.
fn read_log_in_chunks(mut input: impl BufRead, chunk_bytes: usize) -> Result<Recording, ReadError> {
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

    pipeline::each_chunk(&mut input, chunk_bytes, |chunk| recording.take_chunk(chunk))?;
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

impl Recording {
    /// Takes a chunk's lines in log order, counting what it drops.
    fn take_chunk(&mut self, chunk: &mut DecodedChunk) {
        chunk.each_line(|line| {
            if line.nuls > 0 {
                self.damage.add(DropReason::NulBytes, line.nuls);
            }
            let bytes = line.body_len + usize::from(line.terminated);
            match line.decoded {
                None => {}
                Some(Ok(decoded)) => {
                    if let Err(reason) = self.take(decoded) {
                        self.damage.add(reason, line.nuls + bytes);
                    }
                }
                Some(Err(why)) => {
                    let reason = match (line.terminated, why) {
                        (_, Undecodable::TooLong) => DropReason::TooLong,
                        (false, _) => DropReason::TornTail,
                        (true, Undecodable::WrongShape) => DropReason::BadShape,
                        (true, Undecodable::NotJson) => DropReason::NotJson,
                    };
                    self.damage.add(reason, bytes);
                }
            }
        });
    }

    /// Takes a line in log order: lines of a batch wait for its checkpoint.
    fn take(&mut self, decoded: Decoded) -> Result<(), DropReason> {
        let line = match decoded {
            Decoded::Marker(marker, open_id) => {
                match self.open_batch() {
                    Some(batch) => batch.push(Read::Marker {
                        marker: marker.owned(),
                        open_id,
                    }),
                    None => self.add_marker(marker, open_id),
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

/// The next line, [`LINE_MAX`] long at most.
fn next_line<'a>(
    input: &mut impl BufRead,
    buffer: &'a mut Vec<u8>,
) -> Result<Option<RawLine<'a>>, ReadError> {
    buffer.clear();
    let longest = LINE_MAX as u64 + 1;
    if io::Read::take(&mut *input, longest).read_until(b'\n', buffer)? == 0 {
        return Ok(None);
    }
    let terminated = buffer.last() == Some(&b'\n');
    if terminated {
        buffer.pop();
    } else if buffer.len() > LINE_MAX {
        return Err(ReadError::LongHeader);
    }
    Ok(Some(RawLine {
        bytes: buffer,
        terminated,
    }))
}

#[cfg(test)]
mod tests;
