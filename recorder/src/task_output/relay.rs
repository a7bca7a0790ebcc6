//! One stream of the command's output: every byte read from its pipe is written on at
//! once, then cut into lines; each line goes to the consumer without waiting (a full
//! queue drops it, counted), so the command is never slowed by its recording.

use crate::clock::Clock;
use crate::writer::Outbox;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tc_profile_format::task_log::{Captured, LineSplitter, Stream};

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
    lines: Outbox<Message>,
    clock: Clock,
    counters: RelayCounters,
) {
    let mut buffer = vec![0u8; CHUNK_BYTES];
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
        if let Err(Message::Lines { lines, .. }) = lines.try_send(message) {
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
