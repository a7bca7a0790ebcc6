//! A request's body as it comes: the bytes of its `Content-Length`, or its chunks
//! (`Transfer-Encoding: chunked`, as clients that stream a body send it: Telegraf's gzip)
//! decoded up to a cap; each read waiting only for what is left of the request's deadline.

use std::io::{self, BufRead, BufReader, Read};
use std::net::TcpStream;
use std::time::Instant;

/// The longest chunk-size line (with its extensions) or trailer line.
const MAX_CHUNK_LINE: u64 = 4096;
/// What is read from the stream at once.
const READ_BYTES: usize = 16 << 10;

/// A request's body. Its errors say why it stopped: [`Body::gone`] (the client went away
/// or was too slow), [`Body::too_long`] (chunks past the cap), else bad chunk framing.
pub struct Body<'a> {
    raw: BufReader<Raw<'a>>,
    framing: Framing,
    /// Decoded bytes a chunked body may have.
    max_bytes: usize,
    /// Decoded bytes read so far.
    read: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Framing {
    /// `Content-Length`: the bytes not read yet.
    Length(usize),
    /// Before a chunk-size line.
    ChunkSize,
    /// Inside a chunk: its bytes not read yet.
    ChunkData(usize),
    /// Past the last chunk and the trailers.
    Done,
}

/// The error of a body whose client went away or was too slow.
#[derive(Debug, thiserror::Error)]
#[error("the client went away or was too slow")]
struct ClientGone;

/// The error of a chunked body past its cap.
#[derive(Debug, thiserror::Error)]
#[error("request body over {0} bytes")]
pub struct TooLong(pub usize);

/// The error of chunks not framed as HTTP/1.1 frames them.
#[derive(Debug, thiserror::Error)]
#[error("bad chunked body: {0}")]
struct BadChunk(&'static str);

impl Body<'_> {
    pub(crate) fn new(
        stream: &TcpStream,
        early: Vec<u8>,
        framing: Framing,
        max_bytes: usize,
        deadline: Instant,
    ) -> Body<'_> {
        let raw = Raw {
            stream,
            early: io::Cursor::new(early),
            deadline,
        };
        Body {
            raw: BufReader::with_capacity(READ_BYTES, raw),
            framing,
            max_bytes,
            read: 0,
        }
    }

    /// Whether the whole body has been read.
    pub fn is_read(&self) -> bool {
        matches!(self.framing, Framing::Length(0) | Framing::Done)
    }

    /// Whether a read's error (of this body, or of a decoder reading it) says that the
    /// client went away or was too slow.
    pub fn gone(error: &io::Error) -> bool {
        error
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<ClientGone>().is_some())
    }

    /// Whether the error is of chunks not framed as HTTP/1.1 frames them.
    pub fn bad_chunks(error: &io::Error) -> bool {
        error.get_ref().is_some_and(|inner| inner.is::<BadChunk>())
    }

    /// The cap a chunked body went past, if that is what the error says.
    pub fn too_long(error: &io::Error) -> Option<usize> {
        let inner = error.get_ref()?.downcast_ref::<TooLong>()?;
        Some(inner.0)
    }

    /// Reads the bytes of the chunk being read, or of the `Content-Length`.
    fn read_data(&mut self, buf: &mut [u8], left: usize) -> io::Result<usize> {
        let wanted = buf.len().min(left);
        let read = self.raw.read(&mut buf[..wanted])?;
        if read == 0 {
            return Err(io::Error::other(ClientGone));
        }
        self.framing = match self.framing {
            Framing::Length(left) => Framing::Length(left - read),
            _ => Framing::ChunkData(left - read),
        };
        Ok(read)
    }

    /// A line of the chunk framing, without its CRLF.
    fn framing_line(&mut self) -> io::Result<Vec<u8>> {
        let mut line = Vec::new();
        (&mut self.raw)
            .take(MAX_CHUNK_LINE)
            .read_until(b'\n', &mut line)?;
        if line.last() != Some(&b'\n') {
            return Err(match line.len() as u64 {
                MAX_CHUNK_LINE => bad("a line too long"),
                _ => io::Error::other(ClientGone),
            });
        }
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(line)
    }

    /// Reads a chunk-size line: the next chunk's length, or the end and its trailers.
    fn next_chunk(&mut self) -> io::Result<()> {
        let line = self.framing_line()?;
        let digits = line.split(|&b| b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(digits.trim_ascii())
            .ok()
            .filter(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|hex| usize::from_str_radix(hex, 16).ok())
            .ok_or_else(|| bad("a chunk size that is not hexadecimal"))?;
        if size == 0 {
            while !self.framing_line()?.is_empty() {}
            self.framing = Framing::Done;
        } else if size > self.max_bytes - self.read {
            return Err(io::Error::other(TooLong(self.max_bytes)));
        } else {
            self.framing = Framing::ChunkData(size);
        }
        Ok(())
    }
}

fn bad(why: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, BadChunk(why))
}

impl Read for Body<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.framing {
                Framing::Length(0) | Framing::Done => return Ok(0),
                Framing::Length(left) => return self.read_data(buf, left),
                Framing::ChunkData(0) => {
                    if !self.framing_line()?.is_empty() {
                        return Err(bad("a chunk longer than its size"));
                    }
                    self.framing = Framing::ChunkSize;
                }
                Framing::ChunkData(left) => {
                    let read = self.read_data(buf, left)?;
                    self.read += read;
                    return Ok(read);
                }
                Framing::ChunkSize => self.next_chunk()?,
            }
        }
    }
}

/// The bytes that came with the head, then the stream's, before the deadline.
struct Raw<'a> {
    stream: &'a TcpStream,
    early: io::Cursor<Vec<u8>>,
    deadline: Instant,
}

impl Read for Raw<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.early.read(buf)? {
            0 => read_before(self.stream, buf, self.deadline)
                .ok_or_else(|| io::Error::other(ClientGone)),
            early => Ok(early),
        }
    }
}

/// A read that waits no longer than the deadline; None at the end of the stream, past the
/// deadline or on an error: the client is gone.
pub(super) fn read_before(
    mut stream: &TcpStream,
    chunk: &mut [u8],
    deadline: Instant,
) -> Option<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return None;
    }
    stream.set_read_timeout(Some(left)).ok()?;
    match stream.read(chunk) {
        Ok(0) | Err(_) => None,
        Ok(read) => Some(read),
    }
}

#[cfg(test)]
mod tests;
