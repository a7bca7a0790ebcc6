//! Whole lines of a log decoded apart from the recording they go to. Decoding is pure and
//! most of reading a log, so one thread decodes a chunk while another takes the one before
//! (`pipeline.rs`). What a chunk holds borrows nothing: a marker's name and payload are
//! copied into the chunk's own text.

use crate::profile_marker::MarkerRef;
use std::ops::Range;
use tc_profile_format::{decode_line, decode_marker_raw, decode_marker_text, Line};

/// The longest line read, newline excluded (SPEC.md, "Reading a damaged log"): a longer
/// one is skipped as it is read, never held whole, so a chunk's memory is bounded. The
/// recorder's lines are far shorter under the default caps: a marker-file line is 64 KiB
/// at most, a checkpoint of 1,000 files about 350 KB.
pub(crate) const LINE_MAX: usize = 4 << 20;

/// A line as decoded: a marker (nearly every line), or any other.
pub(crate) enum Decoded<'a> {
    Marker(MarkerRef<'a>, Option<u64>),
    Line(Line),
}

/// A line of a chunk and what a damage count needs of it.
pub(crate) struct DecodedLine<'a> {
    /// Leading NUL bytes.
    pub nuls: usize,
    /// The bytes after the NULs, without the newline.
    pub body_len: usize,
    /// Ended by a newline: only a log's last line may not be.
    pub terminated: bool,
    /// None for a line of whitespace.
    pub decoded: Option<Result<Decoded<'a>, Undecodable>>,
}

/// Why a line was not decoded.
#[derive(Clone, Copy)]
pub(crate) enum Undecodable {
    NotJson,
    /// Whole JSON, of the wrong shape for its type.
    WrongShape,
    /// Longer than [`LINE_MAX`]: not read.
    TooLong,
}

/// The lines of a chunk, decoded, in order.
pub(crate) struct DecodedChunk {
    /// The names and payloads of its markers.
    text: String,
    lines: Vec<StoredLine>,
}

struct StoredLine {
    nuls: usize,
    body_len: usize,
    terminated: bool,
    content: Content,
}

enum Content {
    Blank,
    Marker(StoredMarker),
    /// Boxed: other lines are few, and a marker is a quarter of a `Line`'s size.
    Line(Box<Line>),
    Undecodable(Undecodable),
}

/// A marker whose name and payload are ranges of [`DecodedChunk::text`].
struct StoredMarker {
    name: Range<usize>,
    start_time: f64,
    end_time: Option<f64>,
    category: Option<u32>,
    data: Option<Range<usize>>,
    open_id: Option<u64>,
}

/// The fewest bytes a marker line takes, for the room a chunk's lines need.
const MARKER_LINE_MIN: usize = 60;

impl DecodedChunk {
    /// Room for the lines of `bytes` bytes of a log, of markers of that length or longer.
    pub(crate) fn with_room(bytes: usize) -> DecodedChunk {
        DecodedChunk {
            // Names and payloads are less than their lines.
            text: String::with_capacity(bytes),
            lines: Vec::with_capacity(bytes / MARKER_LINE_MIN),
        }
    }

    /// Decodes `bytes`, whole lines each ended by a newline but perhaps the last, in
    /// place of the lines it held (whose room it keeps).
    pub(crate) fn decode(&mut self, bytes: &[u8]) {
        self.text.clear();
        self.lines.clear();
        // UTF-8 checked once for the chunk, not a line at a time (a twentieth of decoding
        // them); the lines of a chunk that is not are checked one by one as they decode.
        let chunk_text = std::str::from_utf8(bytes).ok();
        let mut start = 0;
        while start < bytes.len() {
            let (end, terminated) = match memchr::memchr(b'\n', &bytes[start..]) {
                Some(length) => (start + length, true),
                None => (bytes.len(), false),
            };
            if end - start > LINE_MAX {
                self.add_too_long(end - start + usize::from(terminated), terminated);
                start = end + 1;
                continue;
            }
            let nuls = bytes[start..end].iter().take_while(|&&b| b == 0).count();
            let body = start + nuls..end;
            // Cut at ASCII bytes (NUL, newline): a chunk's text cuts into lines' text.
            let body_text = chunk_text.and_then(|text| text.get(body.clone()));
            let line = self.decode_line(&bytes[body], body_text, nuls, terminated);
            self.lines.push(line);
            start = end + 1;
        }
    }

    /// Adds a line longer than [`LINE_MAX`], of `length` bytes with its newline, if any.
    pub(crate) fn add_too_long(&mut self, length: usize, terminated: bool) {
        self.lines.push(StoredLine {
            nuls: 0,
            body_len: length - usize::from(terminated),
            terminated,
            content: Content::Undecodable(Undecodable::TooLong),
        });
    }

    /// A line's body (after its NULs), and its text when its chunk is known to be UTF-8.
    fn decode_line(
        &mut self,
        body: &[u8],
        body_text: Option<&str>,
        nuls: usize,
        terminated: bool,
    ) -> StoredLine {
        let content = if body.iter().all(u8::is_ascii_whitespace) {
            Content::Blank
        } else {
            let marker = match body_text {
                Some(text) => decode_marker_text(text),
                None => decode_marker_raw(body),
            };
            match marker {
                Some(Ok(raw)) => Content::Marker(StoredMarker {
                    name: self.keep(&raw.name),
                    start_time: raw.start_time,
                    end_time: raw.end_time,
                    category: raw.category,
                    data: raw.data.map(|data| self.keep(data)),
                    open_id: raw.open_id,
                }),
                Some(Err(_)) => Content::Undecodable(undecodable(body)),
                None => match decode_line(body) {
                    Ok(line) => Content::Line(Box::new(line)),
                    Err(_) => Content::Undecodable(undecodable(body)),
                },
            }
        };
        StoredLine {
            nuls,
            body_len: body.len(),
            terminated,
            content,
        }
    }

    fn keep(&mut self, text: &str) -> Range<usize> {
        let start = self.text.len();
        self.text.push_str(text);
        start..self.text.len()
    }

    /// Calls `take` with each line, in order; the chunk is left empty.
    pub(crate) fn each_line(&mut self, mut take: impl FnMut(DecodedLine<'_>)) {
        let text = self.text.as_str();
        for line in self.lines.drain(..) {
            let decoded = match line.content {
                Content::Blank => None,
                Content::Marker(marker) => Some(Ok(Decoded::Marker(
                    MarkerRef {
                        name: &text[marker.name],
                        start_time: marker.start_time,
                        end_time: marker.end_time,
                        category: marker.category,
                        data: marker.data.map(|data| &text[data]),
                    },
                    marker.open_id,
                ))),
                Content::Line(line) => Some(Ok(Decoded::Line(*line))),
                Content::Undecodable(why) => Some(Err(why)),
            };
            take(DecodedLine {
                nuls: line.nuls,
                body_len: line.body_len,
                terminated: line.terminated,
                decoded,
            });
        }
    }
}

/// Why a line did not decode: whole JSON of another shape, or not JSON at all.
fn undecodable(bytes: &[u8]) -> Undecodable {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => Undecodable::WrongShape,
        Err(_) => Undecodable::NotJson,
    }
}
