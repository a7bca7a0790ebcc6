//! The one writer thread that owns the log: lines arrive encoded over a channel, each is
//! appended with a single write, and fdatasync is group-committed by the sync policy.

use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::fs::File;
use std::io::{self, Write};
use std::time::{Duration, Instant};

/// When the writer makes appended lines durable (SPEC.md, "Durability").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fdatasync after every batch of lines before taking the next.
    Always,
    /// fdatasync at most once per period, and at once after a lifecycle line.
    Interval(Duration),
    /// Never fdatasync: the kernel writes back when it likes.
    Never,
}

impl SyncPolicy {
    /// The name SPEC.md and `--sync` use.
    pub fn name(&self) -> String {
        match self {
            SyncPolicy::Always => "always".to_owned(),
            SyncPolicy::Interval(period) => format!("interval:{}ms", period.as_millis()),
            SyncPolicy::Never => "never".to_owned(),
        }
    }
}

/// Where the writer appends. A trait so that tests can keep a "written" and a "durable"
/// image and fail at the Nth operation.
pub trait LogSink: Send {
    /// Appends one whole line (newline included) in a single write.
    fn append(&mut self, line: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
}

impl LogSink for File {
    fn append(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_all(line)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}

/// What travels from the sources to the writer.
pub(crate) enum Message {
    /// An encoded line; `urgent` lines are made durable at once (lifecycle markers).
    Line { bytes: Vec<u8>, urgent: bool },
    /// Make everything durable and stop. Sent after the footer.
    Shutdown,
}

/// What the writer did, returned by [`crate::Recorder::finish`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    pub lines: u64,
    pub bytes: u64,
    pub syncs: u64,
    /// Lines that could not be written (the log's file system failed).
    pub lines_lost: u64,
    /// The first write or sync error, as text.
    pub first_error: Option<String>,
}

impl WriterStats {
    fn record_error(&mut self, error: &io::Error) {
        if self.first_error.is_none() {
            self.first_error = Some(error.to_string());
        }
    }
}

pub(crate) struct Writer<S> {
    sink: S,
    policy: SyncPolicy,
    stats: WriterStats,
    dirty: bool,
    last_sync: Instant,
}

impl<S: LogSink> Writer<S> {
    pub(crate) fn new(sink: S, policy: SyncPolicy) -> Writer<S> {
        Writer {
            sink,
            policy,
            stats: WriterStats::default(),
            dirty: false,
            last_sync: Instant::now(),
        }
    }

    /// Runs until Shutdown arrives or every sender is gone.
    pub(crate) fn run(mut self, receiver: Receiver<Message>) -> WriterStats {
        loop {
            let first = match self.sync_deadline() {
                Some(deadline) => match receiver.recv_deadline(deadline) {
                    Ok(message) => Some(message),
                    Err(RecvTimeoutError::Timeout) => {
                        self.sync();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => None,
                },
                None => receiver.recv().ok(),
            };
            let Some(first) = first else { break };
            // Group commit: take every line already waiting, then sync once for all.
            let mut urgent = false;
            let mut shutdown = false;
            for message in std::iter::once(first).chain(receiver.try_iter()) {
                match message {
                    Message::Line { bytes, urgent: u } => {
                        self.append(&bytes);
                        urgent |= u;
                    }
                    Message::Shutdown => {
                        shutdown = true;
                        break;
                    }
                }
            }
            if shutdown {
                break;
            }
            if self.should_sync_now(urgent) {
                self.sync();
            }
        }
        if self.policy != SyncPolicy::Never {
            self.sync();
        }
        self.stats
    }

    fn append(&mut self, line: &[u8]) {
        match self.sink.append(line) {
            Ok(()) => {
                self.stats.lines += 1;
                self.stats.bytes += line.len() as u64;
                self.dirty = true;
            }
            Err(error) => {
                self.stats.lines_lost += 1;
                self.stats.record_error(&error);
            }
        }
    }

    fn should_sync_now(&self, urgent: bool) -> bool {
        match self.policy {
            SyncPolicy::Always => true,
            SyncPolicy::Never => false,
            SyncPolicy::Interval(period) => urgent || self.last_sync.elapsed() >= period,
        }
    }

    /// When unsynced lines must be synced by, under the interval policy.
    fn sync_deadline(&self) -> Option<Instant> {
        match self.policy {
            SyncPolicy::Interval(period) if self.dirty => Some(self.last_sync + period),
            _ => None,
        }
    }

    fn sync(&mut self) {
        if !self.dirty {
            return;
        }
        match self.sink.sync() {
            Ok(()) => self.stats.syncs += 1,
            Err(error) => self.stats.record_error(&error),
        }
        self.dirty = false;
        self.last_sync = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;
    use std::sync::{Arc, Mutex};

    /// Keeps what was written and what was durable, like a disk with a page cache.
    #[derive(Clone, Default)]
    struct MemoryDisk {
        state: Arc<Mutex<(Vec<u8>, usize)>>,
    }

    impl MemoryDisk {
        fn durable(&self) -> Vec<u8> {
            let state = self.state.lock().unwrap();
            state.0[..state.1].to_vec()
        }
    }

    impl LogSink for MemoryDisk {
        fn append(&mut self, line: &[u8]) -> io::Result<()> {
            self.state.lock().unwrap().0.extend_from_slice(line);
            Ok(())
        }
        fn sync(&mut self) -> io::Result<()> {
            let mut state = self.state.lock().unwrap();
            state.1 = state.0.len();
            Ok(())
        }
    }

    fn line(text: &str, urgent: bool) -> Message {
        Message::Line {
            bytes: format!("{text}\n").into_bytes(),
            urgent,
        }
    }

    #[test]
    fn urgent_line_is_durable_before_the_next_is_taken() {
        let disk = MemoryDisk::default();
        let (tx, rx) = unbounded();
        let writer = Writer::new(
            disk.clone(),
            SyncPolicy::Interval(Duration::from_secs(3600)),
        );
        let handle = std::thread::spawn(move || writer.run(rx));
        tx.send(line("a", true)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while disk.durable() != b"a\n" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(disk.durable(), b"a\n");
        tx.send(Message::Shutdown).unwrap();
        let stats = handle.join().unwrap();
        assert_eq!(stats.lines, 1);
    }

    #[test]
    fn interval_policy_syncs_within_the_period() {
        let disk = MemoryDisk::default();
        let (tx, rx) = unbounded();
        let writer = Writer::new(
            disk.clone(),
            SyncPolicy::Interval(Duration::from_millis(20)),
        );
        let handle = std::thread::spawn(move || writer.run(rx));
        for i in 0..100 {
            tx.send(line(&i.to_string(), false)).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while disk.durable().len() < 290 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            disk.durable().len(),
            290,
            "all 100 lines durable without a shutdown"
        );
        drop(tx);
        let stats = handle.join().unwrap();
        assert_eq!(stats.lines, 100);
        assert!(stats.syncs < 100, "group commit: {} syncs", stats.syncs);
    }

    #[test]
    fn failing_sink_counts_lost_lines_and_keeps_going() {
        struct Full(u32);
        impl LogSink for Full {
            fn append(&mut self, _: &[u8]) -> io::Result<()> {
                self.0 += 1;
                if self.0 % 2 == 0 {
                    return Err(io::Error::from_raw_os_error(libc::ENOSPC));
                }
                Ok(())
            }
            fn sync(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let (tx, rx) = unbounded();
        for i in 0..10 {
            tx.send(line(&i.to_string(), false)).unwrap();
        }
        tx.send(Message::Shutdown).unwrap();
        let stats = Writer::new(Full(0), SyncPolicy::Always).run(rx);
        assert_eq!((stats.lines, stats.lines_lost), (5, 5));
        assert!(stats.first_error.unwrap().contains("space"));
    }
}
