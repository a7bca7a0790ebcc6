//! One stream of the command's output: every byte read from its pipe is written on at
//! once, then cut into lines; each line goes to the consumer without waiting (a full
//! queue drops it, counted), so the command is never slowed by its recording.

use crate::clock::Clock;
use crossbeam_channel::{Sender, TrySendError};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tc_profile_format::task_log::{Captured, Stream, MAX_LINE_BYTES};

/// Bytes read from the pipe at a time.
const CHUNK_BYTES: usize = 64 << 10;

/// What a relay sends the consumer.
pub(crate) enum Message {
    /// The lines ended by one read, each with when its first byte was read (log time).
    Lines {
        stream: Stream,
        lines: Vec<(Captured, f64)>,
    },
    /// The recording ends: lines after it are not taken.
    Stop,
}

/// What the relays share with the rest of the source.
#[derive(Clone, Default)]
pub(crate) struct RelayCounters {
    /// Bytes passed through, over both streams: whether the relays still make progress.
    pub bytes: Arc<AtomicU64>,
    /// Lines dropped because the consumer's queue was full.
    pub queue_full: Arc<AtomicU64>,
}

/// Passes `from` through to `to` until the end of the stream, sending its lines on. When
/// `to` fails (the reader of tc-profile's output has gone), `from` is closed, so that the
/// command sees what it would have seen without tc-profile: a broken pipe.
pub(crate) fn relay(
    mut from: impl Read,
    mut to: File,
    stream: Stream,
    lines: Sender<Message>,
    clock: Clock,
    counters: RelayCounters,
) {
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let mut pending = PendingLine::default();
    let mut ended = Vec::new();
    let send = |ended: &mut Vec<(Captured, f64)>| {
        if ended.is_empty() {
            return;
        }
        let message = Message::Lines {
            stream,
            lines: std::mem::take(ended),
        };
        if let Err(TrySendError::Full(Message::Lines { lines, .. })) = lines.try_send(message) {
            let count = lines.len() as u64;
            counters.queue_full.fetch_add(count, Ordering::Relaxed);
        }
    };
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if to.write_all(&buffer[..read]).is_err() {
            break;
        }
        counters.bytes.fetch_add(read as u64, Ordering::Relaxed);
        let mut end_line = |line, arrival| ended.push((line, arrival));
        pending.take(&buffer[..read], clock.now_ms(), &mut end_line);
        send(&mut ended);
    }
    pending.finish(&mut |line, arrival| ended.push((line, arrival)));
    send(&mut ended);
}

/// The line being read: its first [`MAX_LINE_BYTES`], its length so far, and when its
/// first byte came. A line of any length costs at most that much memory.
#[derive(Default)]
struct PendingLine {
    head: Vec<u8>,
    length: usize,
    arrival: Option<f64>,
}

impl PendingLine {
    /// Takes a chunk read at `now`, handing each line it ends to `emit`.
    fn take(&mut self, mut chunk: &[u8], now: f64, emit: &mut impl FnMut(Captured, f64)) {
        while !chunk.is_empty() {
            self.arrival.get_or_insert(now);
            match chunk.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.extend(&chunk[..end]);
                    self.finish(emit);
                    chunk = &chunk[end + 1..];
                }
                None => {
                    self.extend(chunk);
                    return;
                }
            }
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        let room = MAX_LINE_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.length += bytes.len();
    }

    /// Hands on the line, if one has begun: at a newline, or at the end of the stream.
    fn finish(&mut self, emit: &mut impl FnMut(Captured, f64)) {
        if let Some(arrival) = self.arrival.take() {
            emit(Captured::new(&self.head, self.length), arrival);
            self.head.clear();
            self.length = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]]) -> Vec<(String, usize, f64)> {
        let mut pending = PendingLine::default();
        let mut out = Vec::new();
        let mut emit = |line: Captured, arrival: f64| out.push((line.text, line.length, arrival));
        for (time, chunk) in chunks.iter().enumerate() {
            pending.take(chunk, time as f64, &mut emit);
        }
        pending.finish(&mut emit);
        out
    }

    #[test]
    fn lines_are_cut_at_newlines_across_chunks_and_a_last_partial_line_is_kept() {
        let got = lines(&[b"one\ntw", b"o\n\nthr", b"ee"]);
        let want = [
            ("one", 3, 0.0),
            ("two", 3, 0.0),
            ("", 0, 1.0),
            ("three", 5, 1.0),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(t, l, a)| ((*t).to_owned(), *l, *a))
            .collect();
        assert_eq!(got, want);
        assert!(
            lines(&[b"end\n"]).len() == 1,
            "no empty line after the last newline"
        );
    }

    #[test]
    fn a_long_line_keeps_only_its_head_and_its_length() {
        let long = vec![b'x'; 3 << 20];
        let chunks: Vec<&[u8]> = long.chunks(CHUNK_BYTES).chain([&b"\nok\n"[..]]).collect();
        let got = lines(&chunks);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0.len(), got[0].1), (MAX_LINE_BYTES, 3 << 20));
        assert_eq!(got[1].0, "ok");
    }
}
