//! A machine log read for a span only: its header, then the lines from shortly before the
//! span to shortly after it, found by a binary search over the log's own marker lines
//! (SPEC.md, "Reading a span of a machine log"). A machine log's marker lines come in
//! time order, so the log is its own index: nothing more is written, and nothing more can
//! be torn. Where a probe finds no marker line (damage, a line longer than a probe) the
//! search reads more rather than less; a log whose header cannot be read is read whole,
//! for the reader to say why.

use crate::reader::{read_log, ReadError, Recording};
use crate::span::Span;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use tc_profile_format::{decode_line, Line};

/// A probe reads this much after its offset to find a whole line there.
const PROBE_BYTES: u64 = 2048;
/// A stretch this short is read rather than searched further.
const SEARCH_BELOW: u64 = 8 << 10;
/// The header (meta and thread lines) is looked for in this many bytes at most.
const HEADER_MAX: u64 = 8 << 20;
/// Reads of the span's lines: as a log's (`input.rs`); the default 8 KiB took a system
/// call every 37 lines of an hour's 144,000 at 0.1 s.
const READ_BUFFER: usize = 1 << 16;
/// Lines this many of the log's intervals and [`SLACK_MS`] outside the span are read too:
/// a sample's line begins an interval before it is written, and a `gap` line comes just
/// before the first line written after its outage.
const SLACK_INTERVALS: f64 = 2.0;
const SLACK_MS: f64 = 1000.0;

/// A log read for a span, and the bytes it took to read it.
#[derive(Debug)]
pub struct SpanRead {
    pub recording: Recording,
    /// Bytes read from the file, the probes' included.
    pub bytes_read: u64,
}

/// Reads the first `length` bytes of a machine log (a recording of the sampler's tracks
/// only, as the daemon's segments are) for `span` (epoch ms): its header, and the lines
/// from the last marker line that begins well before the span to the first that begins
/// well after it.
pub fn read_log_within(
    file: impl Read + Seek,
    length: u64,
    span: Span,
) -> Result<SpanRead, ReadError> {
    let mut file = Counted {
        inner: file,
        read: 0,
    };
    let recording = match read_header(&mut file, length)? {
        Some((header, origin, interval)) => {
            let slack = SLACK_INTERVALS * interval + SLACK_MS;
            let body = header.len() as u64;
            let from = span.start - origin - slack;
            let from = search(&mut file, (body, length), from, Keep::Before)?;
            let to = span.end - origin + slack;
            let to = search(&mut file, (from, length), to, Keep::After)?;
            file.seek(SeekFrom::Start(from))?;
            let lines = Cursor::new(header).chain((&mut file).take(to - from));
            read_log(BufReader::with_capacity(READ_BUFFER, lines))?
        }
        None => {
            file.seek(SeekFrom::Start(0))?;
            read_log(BufReader::with_capacity(
                READ_BUFFER,
                (&mut file).take(length),
            ))?
        }
    };
    Ok(SpanRead {
        recording,
        bytes_read: file.read,
    })
}

/// The meta and thread lines' bytes, and the meta's `startTime` and `interval` (ms);
/// None when they cannot be found or read.
fn read_header(
    file: &mut Counted<impl Read + Seek>,
    length: u64,
) -> io::Result<Option<(Vec<u8>, f64, f64)>> {
    let mut header = Vec::new();
    let mut input = (&mut *file).take(length.min(HEADER_MAX));
    let mut newlines = 0;
    let mut chunk = [0; 8192];
    while newlines < 2 {
        let read = input.read(&mut chunk)?;
        if read == 0 {
            return Ok(None);
        }
        for (at, &byte) in chunk[..read].iter().enumerate() {
            if byte == b'\n' {
                newlines += 1;
                if newlines == 2 {
                    header.extend_from_slice(&chunk[..=at]);
                    break;
                }
            }
        }
        if newlines < 2 {
            header.extend_from_slice(&chunk[..read]);
        }
    }
    let meta_end = header.iter().position(|&b| b == b'\n').unwrap_or(0);
    let Ok(Line::Meta(meta)) = decode_line(&header[..meta_end]) else {
        return Ok(None);
    };
    let number = |key: &str| meta.get(key).and_then(serde_json::Value::as_f64);
    match (number("startTime"), number("interval")) {
        (Some(origin), Some(interval)) if interval.is_finite() && interval >= 0.0 => {
            Ok(Some((header, origin, interval)))
        }
        _ => Ok(None),
    }
}

/// Which side of the boundary a search keeps, and so which way a probe that finds no
/// marker line moves it: always towards reading more.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// The start of the last line found that begins at or before the time (or `lo`).
    Before,
    /// The start of the first line found that begins after the time (or `hi`).
    After,
}

/// A binary search of `lo..hi` for the marker lines on either side of `time` (log ms).
fn search(
    file: &mut Counted<impl Read + Seek>,
    (mut lo, mut hi): (u64, u64),
    time: f64,
    keep: Keep,
) -> io::Result<u64> {
    while hi - lo > SEARCH_BELOW {
        let mid = lo + (hi - lo) / 2;
        match probe(file, mid, hi)? {
            Some((start, begins)) if begins <= time => lo = start,
            Some((start, _)) => hi = start,
            None if keep == Keep::Before => hi = mid,
            None => lo = mid,
        }
    }
    Ok(if keep == Keep::Before { lo } else { hi })
}

/// The first whole line after `at` and before `hi`, when it is a marker line: where it
/// starts and its `startTime`.
fn probe(file: &mut Counted<impl Read + Seek>, at: u64, hi: u64) -> io::Result<Option<(u64, f64)>> {
    let mut bytes = Vec::with_capacity(PROBE_BYTES as usize);
    file.seek(SeekFrom::Start(at))?;
    (&mut *file)
        .take(PROBE_BYTES.min(hi - at))
        .read_to_end(&mut bytes)?;
    let mut newlines = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n');
    let (Some((first, _)), Some((second, _))) = (newlines.next(), newlines.next()) else {
        return Ok(None);
    };
    match decode_line(&bytes[first + 1..second]) {
        Ok(Line::Marker(marker)) if marker.start_time.is_finite() => {
            Ok(Some((at + first as u64 + 1, marker.start_time)))
        }
        _ => Ok(None),
    }
}

/// A file whose bytes read are counted.
struct Counted<F> {
    inner: F,
    read: u64,
}

impl<F: Read> Read for Counted<F> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.read += read as u64;
        Ok(read)
    }
}

impl<F: Seek> Seek for Counted<F> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }
}

#[cfg(test)]
mod tests;
