//! The lines of a log read in chunks cut at newlines and decoded on two threads, taken in
//! log order on this one: decoding is most of the work of reading a log, taking its lines
//! (batches, checkpoints, damage) must stay in order. A second thread decodes the chunks
//! sent to it, this one those read while the second has [`WORKER_QUEUE`] waiting, and takes
//! each chunk once it and those before it are decoded. At most [`CHUNKS_IN_FLIGHT`] chunks
//! are read and not yet taken (and one more read ahead), so the memory in flight stays a
//! few hundred KiB (more of it showed in the peak RSS of a 100,000-marker log). A log's
//! first [`ALONE_CHUNKS`] are decoded on this thread, so a small log (the recorder's own, at
//! the end of most tasks) never starts a second one: its stack and allocator arena would
//! cost more resident memory than the log, for a millisecond saved.

use super::chunk::{DecodedChunk, LINE_MAX};
use std::collections::VecDeque;
use std::io::{self, BufRead};
use std::sync::mpsc;

/// Bytes read for a chunk (a line longer than this makes its chunk longer).
pub(crate) const CHUNK_BYTES: usize = 1 << 15;
/// Chunks decoded or being decoded, not yet taken.
const CHUNKS_IN_FLIGHT: usize = 3;
/// Chunks sent to the second thread and not yet decoded: one it decodes, one it finds next.
const WORKER_QUEUE: usize = 2;
/// Chunks decoded on this thread before the second one starts: 512 KiB, about 2 ms.
const ALONE_CHUNKS: usize = 16;

/// Calls `take` with each chunk of the rest of `input`, decoded, in order; chunks of
/// `chunk_bytes`.
pub(crate) fn each_chunk(
    input: &mut impl BufRead,
    chunk_bytes: usize,
    mut take: impl FnMut(&mut DecodedChunk),
) -> io::Result<()> {
    let mut chunks = Chunks {
        carry: Vec::new(),
        chunk_bytes,
        at_end: false,
    };
    // Chunks taken, their room kept for the next ones.
    let mut spare: Vec<Work> = Vec::new();
    let Some(first) = decode_here(&mut chunks, input, &mut spare, &mut take, ALONE_CHUNKS)? else {
        return Ok(());
    };
    std::thread::scope(|scope| {
        // Neither channel ever holds more than WORKER_QUEUE: no send waits.
        let (raw_sender, raw_chunks) = mpsc::sync_channel::<Work>(WORKER_QUEUE);
        let (decoded_sender, decoded_chunks) = mpsc::sync_channel(WORKER_QUEUE);
        let worker = std::thread::Builder::new().spawn_scoped(scope, move || {
            for work in raw_chunks {
                if decoded_sender.send(work.decode()).is_err() {
                    return;
                }
            }
        });
        // No thread to be had (a cgroup's pids.max, RLIMIT_NPROC): all of it here.
        if worker.is_err() {
            let mut first = first.decode();
            take(&mut first.decoded);
            spare.push(first);
            decode_here(&mut chunks, input, &mut spare, &mut take, usize::MAX)?;
            return Ok(());
        }
        // In log order: None for a chunk at the second thread, which returns them in the
        // order it was sent them.
        let mut pending: VecDeque<Option<Work>> = VecDeque::new();
        let mut at_worker = 0;
        let mut next = Some(first);
        // A decoder that panicked ends its channels; the scope then panics with it.
        loop {
            let worker_has_room = at_worker < WORKER_QUEUE && pending.len() < CHUNKS_IN_FLIGHT;
            let decoded = match (next.take(), pending.front()) {
                (Some(work), _) if worker_has_room => {
                    if raw_sender.send(work).is_err() {
                        return Ok(());
                    }
                    at_worker += 1;
                    pending.push_back(None);
                    next = chunks.next(input, &mut spare)?;
                    continue;
                }
                (work, Some(Some(_))) => {
                    next = work;
                    pending.pop_front().flatten()
                }
                (work, Some(None)) => match decoded_chunks.try_recv() {
                    Err(mpsc::TryRecvError::Empty)
                        if work.is_some() && pending.len() < CHUNKS_IN_FLIGHT =>
                    {
                        pending.push_back(work.map(Work::decode));
                        next = chunks.next(input, &mut spare)?;
                        continue;
                    }
                    Err(mpsc::TryRecvError::Empty) => {
                        next = work;
                        decoded_chunks.recv().ok()
                    }
                    Ok(decoded) => {
                        next = work;
                        Some(decoded)
                    }
                    Err(mpsc::TryRecvError::Disconnected) => None,
                }
                .inspect(|_| {
                    pending.pop_front();
                    at_worker -= 1;
                }),
                // The worker has room whenever nothing is pending.
                (_, None) => return Ok(()),
            };
            let Some(mut work) = decoded else {
                return Ok(());
            };
            take(&mut work.decoded);
            spare.push(work);
        }
    })
}

/// Decodes and takes `most` chunks on this thread, or all that are left; the next chunk, if
/// there is one and it is not the last (which is decoded here too).
fn decode_here(
    chunks: &mut Chunks,
    input: &mut impl BufRead,
    spare: &mut Vec<Work>,
    take: &mut impl FnMut(&mut DecodedChunk),
    most: usize,
) -> io::Result<Option<Work>> {
    let mut decoded = 0;
    while let Some(work) = chunks.next(input, spare)? {
        if decoded == most && !chunks.at_end {
            return Ok(Some(work));
        }
        decoded += 1;
        let mut work = work.decode();
        take(&mut work.decoded);
        spare.push(work);
    }
    Ok(None)
}

/// A chunk's bytes and its lines decoded; both kept for a later chunk, so that reading a
/// chunk allocates nothing.
struct Work {
    bytes: Vec<u8>,
    /// Lines over [`LINE_MAX`] skipped while reading the chunk: (bytes, ended by a newline).
    skipped: Vec<(usize, bool)>,
    decoded: DecodedChunk,
}

impl Work {
    /// Room for a chunk, allocated on this thread: what the second thread frees would not
    /// be reused here (an allocator's arena a thread), and would add to the peak RSS.
    fn with_room(chunk_bytes: usize) -> Work {
        Work {
            bytes: Vec::with_capacity(chunk_bytes),
            skipped: Vec::new(),
            decoded: DecodedChunk::with_room(chunk_bytes),
        }
    }

    fn decode(mut self) -> Work {
        self.decoded.decode(&self.bytes);
        for (length, terminated) in self.skipped.drain(..) {
            self.decoded.add_too_long(length, terminated);
        }
        self
    }
}

/// Reads whole lines a chunk at a time.
struct Chunks {
    /// The start of a line that the chunk before cut.
    carry: Vec<u8>,
    chunk_bytes: usize,
    /// The input has ended: the chunk read last has its rest, torn last line included.
    at_end: bool,
}

impl Chunks {
    /// The next chunk, read into the room of a spare one, or new room.
    fn next(
        &mut self,
        input: &mut impl BufRead,
        spare: &mut Vec<Work>,
    ) -> io::Result<Option<Work>> {
        if self.at_end {
            return Ok(None);
        }
        let mut work = spare
            .pop()
            .unwrap_or_else(|| Work::with_room(self.chunk_bytes));
        let bytes = &mut work.bytes;
        bytes.clear();
        bytes.append(&mut self.carry);
        loop {
            let searched = bytes.len();
            if read_up_to(input, bytes, self.chunk_bytes)? < self.chunk_bytes {
                self.at_end = true;
                let empty = bytes.is_empty() && work.skipped.is_empty();
                return Ok((!empty).then_some(work));
            }
            // The carry holds no newline: only what was read is searched.
            if let Some(at) = memchr::memrchr(b'\n', &bytes[searched..]) {
                self.carry.extend_from_slice(&bytes[searched + at + 1..]);
                bytes.truncate(searched + at + 1);
                return Ok(Some(work));
            }
            // No newline yet: all of `bytes` is one line, skipped once it is too long.
            if bytes.len() > LINE_MAX {
                let (rest, terminated) = skip_line(input)?;
                work.skipped
                    .push((bytes.len().saturating_add(rest), terminated));
                bytes.clear();
                bytes.shrink_to(self.chunk_bytes);
                if !terminated {
                    self.at_end = true;
                    return Ok(Some(work));
                }
            }
        }
    }
}

/// Consumes `input` up to its next newline, that included: how many bytes, and whether a
/// newline ended them (else the input did).
fn skip_line(input: &mut impl BufRead) -> io::Result<(usize, bool)> {
    let mut skipped = 0;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((skipped, false));
        }
        let (length, terminated) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        input.consume(length);
        skipped = skipped.saturating_add(length);
        if terminated {
            return Ok((skipped, true));
        }
    }
}

/// Appends `most` bytes of `input` to `bytes`, fewer only at its end; how many.
fn read_up_to(input: &mut impl BufRead, bytes: &mut Vec<u8>, most: usize) -> io::Result<usize> {
    let mut read = 0;
    while read < most {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            break;
        }
        let length = available.len().min(most - read);
        bytes.extend_from_slice(&available[..length]);
        input.consume(length);
        read += length;
    }
    Ok(read)
}
