//! One stream of the command's output: every byte read from its pipe is written on at
//! once, then cut into lines; each line goes to the consumer without waiting (a full
//! queue drops it, counted), so the command is never slowed by its recording.

use crate::clock::Clock;
use crossbeam_channel::{Sender, TrySendError};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tc_profile_format::task_log::{Captured, LineSplitter, Stream};

/// Bytes read from the pipe at a time at most (a pipe's default capacity).
const CHUNK_BYTES: usize = 64 << 10;
/// The first reads' buffer: one that a read fills doubles, up to [`CHUNK_BYTES`], so that a
/// quiet stream zeroes and touches a page, not sixteen.
const FIRST_CHUNK_BYTES: usize = 4 << 10;

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
    let mut buffer = vec![0u8; FIRST_CHUNK_BYTES];
    let mut pending = LineSplitter::default();
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
        if read == buffer.len() && read < CHUNK_BYTES {
            buffer.resize(read * 2, 0);
        }
    }
    pending.finish(&mut |line, arrival| ended.push((line, arrival)));
    send(&mut ended);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::bounded;
    use std::io::Seek;

    /// A stream that fills every read: the buffer grows from its first size to the cap
    /// while every byte passes through in order and every line is taken.
    #[test]
    fn every_byte_passes_through_as_the_buffer_grows() {
        let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let mut to = tempfile::tempfile().unwrap();
        let (lines, messages) = bounded(1 << 10);
        let counters = RelayCounters::default();
        let from = std::io::Cursor::new(text.clone().into_bytes());
        relay(
            from,
            to.try_clone().unwrap(),
            Stream::Stdout,
            lines,
            Clock::start(),
            counters.clone(),
        );
        let mut passed = String::new();
        to.rewind().unwrap();
        to.read_to_string(&mut passed).unwrap();
        assert!(passed == text, "the output changed on its way through");
        assert_eq!(counters.bytes.load(Ordering::Relaxed), text.len() as u64);
        let mut taken = 0;
        while let Ok(Message::Lines { lines, .. }) = messages.try_recv() {
            taken += lines.len();
        }
        assert_eq!(taken, 20_000);
        assert_eq!(counters.queue_full.load(Ordering::Relaxed), 0);
    }
}
