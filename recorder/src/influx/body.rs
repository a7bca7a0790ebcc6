//! A write's body as lines, read as it comes: decompressed when the client sent it gzipped
//! (`Content-Encoding: gzip`), under a size cap and a ratio cap, and split into lines of at
//! most [`MAX_LINE_BYTES`], so that no more than one line is held whatever the body's size
//! (SPEC.md, "InfluxDB endpoint").

use super::http::Body;
use flate2::bufread::MultiGzDecoder;
use std::io::{self, BufRead, BufReader, Read};
use tc_profile_format::capped::{counted, CapReached, Capped, Caps};
use tc_profile_format::line_protocol::MAX_LINE_BYTES;

/// Decompressed bytes per compressed byte at most, once past [`RATIO_FROM`]: gzip's own
/// limit is about 1,030 (zeros); line protocol of real clients compresses 5 to 30 times,
/// and the same line repeated some 300.
pub const MAX_GZIP_RATIO: u64 = 500;
/// Decompressed bytes before the ratio is checked: a small body may well compress better.
const RATIO_FROM: u64 = 1 << 20;
/// What is read from the body at once.
const READ_BYTES: usize = 64 << 10;
/// Bytes kept of a line over [`MAX_LINE_BYTES`], to quote it.
const KEPT_OF_LONG_LINE: usize = 1024;

/// Why a body could not be read to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BodyError {
    #[error("request body decompresses past {0} bytes, the cap")]
    OverSize(u64),
    /// Chunks past the cap.
    #[error("request body over {0} bytes, the cap")]
    TooLong(usize),
    #[error(
        "request body decompresses to over {MAX_GZIP_RATIO} times its size, the cap \
         (a decompression bomb?)"
    )]
    OverRatio,
    #[error("request body is not valid gzip: {0}")]
    Gzip(io::Error),
    #[error("{0}")]
    Chunks(io::Error),
    /// The client went away or was too slow: nothing to answer.
    #[error("the client went away or was too slow")]
    Gone,
}

impl BodyError {
    /// The status InfluxDB answers it with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            BodyError::OverSize(_) | BodyError::OverRatio | BodyError::TooLong(_) => 413,
            BodyError::Gzip(_) | BodyError::Chunks(_) | BodyError::Gone => 400,
        }
    }

    fn of(error: io::Error) -> BodyError {
        if Body::gone(&error) {
            return BodyError::Gone;
        }
        if let Some(max) = Body::too_long(&error) {
            return BodyError::TooLong(max);
        }
        if Body::bad_chunks(&error) {
            // Under gzip's decoder or none.
            return BodyError::Chunks(error);
        }
        match CapReached::of(&error) {
            Some(CapReached::Size { max }) => BodyError::OverSize(max),
            Some(CapReached::Ratio { .. }) => BodyError::OverRatio,
            None => BodyError::Gzip(error),
        }
    }
}

/// A line of the body, without its newline.
#[derive(Debug, PartialEq)]
pub(crate) enum Line<'a> {
    Text(&'a [u8]),
    /// Over [`MAX_LINE_BYTES`]: its first bytes ([`KEPT_OF_LONG_LINE`]), the rest skipped
    /// to its newline without being held.
    TooLong(&'a [u8]),
}

/// The lines of a body.
pub(crate) struct Lines<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
}

/// The body's content encodings: none, or gzip.
pub(crate) type BodyLines<'a> = Lines<Box<dyn Read + 'a>>;

/// The lines of `body`, decoded as `encoding` says (`identity` or none, `gzip`), none past
/// `max_bytes` once decompressed; None for another encoding.
pub(crate) fn lines<'a>(
    body: impl Read + 'a,
    encoding: Option<&str>,
    max_bytes: u64,
) -> Option<BodyLines<'a>> {
    let reader: Box<dyn Read + 'a> = match encoding.map(str::trim) {
        None | Some("" | "identity") => Box::new(body),
        Some("gzip" | "x-gzip") => {
            let caps = Caps {
                max_size: max_bytes,
                max_ratio: MAX_GZIP_RATIO,
                ratio_from: RATIO_FROM,
            };
            let (input, consumed) = counted(BufReader::with_capacity(READ_BYTES, body));
            Box::new(Capped::new(MultiGzDecoder::new(input), consumed, caps))
        }
        Some(_) => return None,
    };
    Some(Lines::new(reader))
}

impl<R: Read> Lines<R> {
    pub(crate) fn new(reader: R) -> Lines<R> {
        Lines {
            reader: BufReader::with_capacity(READ_BYTES, reader),
            line: Vec::new(),
        }
    }

    /// The next line, None at the body's end.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line<'_>>, BodyError> {
        self.line.clear();
        let mut too_long = false;
        loop {
            let buffer = self.reader.fill_buf().map_err(BodyError::of)?;
            if buffer.is_empty() {
                let ended = self.line.is_empty() && !too_long;
                return Ok((!ended).then(|| self.taken(too_long)));
            }
            let newline = memchr::memchr(b'\n', buffer);
            let piece = &buffer[..newline.unwrap_or(buffer.len())];
            too_long |= self.line.len() + piece.len() > MAX_LINE_BYTES;
            let kept = match too_long {
                true => KEPT_OF_LONG_LINE.saturating_sub(self.line.len()),
                false => piece.len(),
            };
            self.line.extend_from_slice(&piece[..kept.min(piece.len())]);
            let used = newline.map_or(buffer.len(), |at| at + 1);
            self.reader.consume(used);
            if newline.is_some() {
                return Ok(Some(self.taken(too_long)));
            }
        }
    }

    fn taken(&mut self, too_long: bool) -> Line<'_> {
        if too_long {
            self.line.truncate(KEPT_OF_LONG_LINE);
            return Line::TooLong(&self.line);
        }
        Line::Text(&self.line)
    }
}

#[cfg(test)]
mod tests;
