//! The one writer thread that owns the log: lines arrive encoded over a channel, each is
//! appended with a single write, and fdatasync is group-committed by the sync policy. This
//! file is that happy path; `inbox` is the channel in, `outage` handles lines that do not
//! reach the disk, `held` the checkpointed batches kept until they do, `log_file` the log
//! itself, deleted or not.

mod held;
mod inbox;
mod log_file;
mod outage;

pub(crate) use inbox::{inbox, Inbox, Outbox};
pub(crate) use log_file::{create_log, LogFile};
pub use log_file::{LogSink, Place};

use crate::clock::Clock;
use crossbeam_channel::{RecvTimeoutError, Sender};
use held::{Batch, Held};
use log_file::PlaceWatch;
use outage::Outages;
use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tc_profile_format::Gap;

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

/// The shortest period of the interval policy. An fdatasync costs 0.1 to 0.2 ms of CPU on
/// a virtual disk: ten a second would cost more than all the sampling.
pub const MIN_SYNC_PERIOD: Duration = Duration::from_secs(1);
/// Timed work (the sync, the log's place check) this close to due is done at a wake-up for
/// lines rather than at one of its own: a tick's lines come about when both fall due, and
/// a wake-up costs more than the work. Syncing early only makes lines durable sooner.
const DUE_SOON: Duration = Duration::from_millis(50);

impl SyncPolicy {
    /// The default policy for a sampling interval: sync at most once per interval, and at
    /// most once per [`MIN_SYNC_PERIOD`].
    pub fn interval(sampling: Duration) -> SyncPolicy {
        SyncPolicy::Interval(sampling.max(MIN_SYNC_PERIOD))
    }

    /// The name SPEC.md and `--sync` use.
    pub fn name(&self) -> String {
        match self {
            SyncPolicy::Always => "always".to_owned(),
            SyncPolicy::Interval(period) => format!("interval:{}ms", period.as_millis()),
            SyncPolicy::Never => "never".to_owned(),
        }
    }
}

/// What travels from the sources to the writer.
pub(crate) enum Message {
    /// `count` encoded lines (a batch of marker-file lines, or one line), written with one
    /// write; `urgent` ones are made durable at once (lifecycle markers). Each of `acks`
    /// is sent `()` once they are written and, urgent, durable, or could not be made so
    /// (the sync failed, the lines could not be written). `checkpointed` lines end in a checkpoint
    /// past them: a failed write holds them for later rather than losing them.
    Line {
        bytes: Vec<u8>,
        count: u64,
        urgent: bool,
        acks: Vec<Sender<()>>,
        checkpointed: bool,
    },
    /// Make everything durable and stop. Sent after the footer.
    Shutdown,
}

/// What the writer did, returned by [`crate::Recorder::finish`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriterStats {
    pub lines: u64,
    pub bytes: u64,
    pub syncs: u64,
    /// Lines that could not be written (the log's file system failed, or the writer fell
    /// behind and the sources dropped them). Checkpointed batches held past the end are
    /// not: `finalize` takes their lines from their files.
    pub lines_lost: u64,
    /// `gap` lines written: spans of the recording with data missing.
    pub gaps: u64,
    /// The first write or sync error, as text.
    pub first_error: Option<String>,
    /// Lines were still failing at the end: the gap that could not be written into the log,
    /// for the finalizer to add.
    pub unwritten_gap: Option<Gap>,
}

pub(crate) struct Writer<S> {
    sink: S,
    policy: SyncPolicy,
    clock: Clock,
    stats: WriterStats,
    /// Bytes of whole lines in the log: where a failed append is cut back to.
    length: u64,
    /// A failed append may have left a partial line past `length`.
    torn: bool,
    outages: Outages,
    held: Held,
    dirty: bool,
    last_sync: Instant,
    /// Log time of the last sync attempt: a failed sync puts in doubt what came after it.
    last_sync_time: f64,
    place: PlaceWatch,
    /// Acknowledgements due once the lines taken so far are durable.
    waiting: Vec<Sender<()>>,
}

impl<S: LogSink> Writer<S> {
    /// A writer for a log of `length` bytes (its meta and thread lines).
    pub(crate) fn new(
        sink: S,
        name: String,
        length: u64,
        policy: SyncPolicy,
        clock: Clock,
        dropped: Arc<AtomicU64>,
    ) -> Writer<S> {
        Writer {
            sink,
            policy,
            clock,
            stats: WriterStats::default(),
            length,
            torn: false,
            outages: Outages::new(name.clone(), clock, dropped),
            held: Held::default(),
            dirty: false,
            last_sync: Instant::now(),
            last_sync_time: clock.now_ms(),
            place: PlaceWatch::new(name),
            waiting: Vec::new(),
        }
    }

    /// Runs until Shutdown arrives or every sender is gone; returns the sink, still open.
    pub(crate) fn run(mut self, receiver: Inbox<Message>) -> (WriterStats, S) {
        loop {
            let first = match receiver.recv_deadline(self.wake_deadline()) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    self.on_timer();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            if let Some(gap) = self.outages.dropped_gap_line() {
                self.write_gap(&gap);
            }
            // Group commit: take every line already waiting, then sync once for all.
            let mut urgent = false;
            let mut shutdown = false;
            for message in std::iter::once(first).chain(receiver.try_iter()) {
                match message {
                    Message::Line {
                        bytes,
                        count,
                        urgent: u,
                        acks,
                        checkpointed,
                    } => {
                        self.append(Batch { bytes, count }, checkpointed);
                        urgent |= u;
                        self.waiting.extend(acks);
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
            self.wake_waiting();
            self.on_timer();
        }
        if self.torn && self.sink.cut(self.length).is_ok() {
            self.torn = false;
        }
        // What stays held is not in the log, nor its checkpoint: `finalize` takes those
        // lines from their files, as it takes those of any batch without its checkpoint.
        let _ = self.write_held();
        if self.policy != SyncPolicy::Never {
            self.sync();
            // A failed sync appends a gap line: one more attempt to make that durable.
            self.sync();
        }
        self.wake_waiting();
        self.stats.unwritten_gap = self.outages.unwritten_gap();
        (self.stats, self.sink)
    }

    /// Wakes those waiting for their lines, after the sync that covered them when it was
    /// due or they were urgent (or, under the never policy, which has none, at once).
    fn wake_waiting(&mut self) {
        for waiter in self.waiting.drain(..) {
            let _ = waiter.send(());
        }
    }

    /// Appends `lines`, after the gap line that an outage left and the batches held
    /// before them. Checkpointed lines that cannot be written are held (behind the others),
    /// other lines are lost.
    fn append(&mut self, lines: Batch, checkpointed: bool) {
        let written = self
            .end_outage()
            .and_then(|()| self.write_held())
            .and_then(|()| self.write(&lines.bytes, lines.count));
        let Err(error) = written else {
            return;
        };
        self.record_error(&error);
        let lost = match checkpointed {
            true => self.held.hold(lines).err(),
            false => Some(lines),
        };
        match lost {
            Some(lines) => self.lose_lines(&error, lines.count),
            None => self.outages.holding(&error),
        }
    }

    /// Writes the gap line of the outage under way, which ends it.
    fn end_outage(&mut self) -> io::Result<()> {
        if let Some(gap) = self.outages.gap_line() {
            self.write(&gap, 1)?;
            self.stats.gaps += 1;
            self.outages.resumed(self.stats.gaps);
        }
        Ok(())
    }

    /// Writes the batches held, oldest first, up to the first that fails.
    fn write_held(&mut self) -> io::Result<()> {
        while let Some(batch) = self.held.take_oldest() {
            if let Err(error) = self.write(&batch.bytes, batch.count) {
                self.held.put_back(batch);
                return Err(error);
            }
        }
        Ok(())
    }

    /// One write, after the cut of a partial line that an earlier one left; on failure the
    /// partial line it may leave is cut at once if possible.
    fn write(&mut self, line: &[u8], count: u64) -> io::Result<()> {
        if self.torn {
            self.sink.cut(self.length)?;
            self.torn = false;
        }
        match self.sink.append(line) {
            Ok(()) => {
                self.stats.lines += count;
                self.stats.bytes += line.len() as u64;
                self.length += line.len() as u64;
                self.dirty = true;
                Ok(())
            }
            Err(error) => {
                self.torn = self.sink.cut(self.length).is_err();
                Err(error)
            }
        }
    }

    /// A gap line that tells of lines lost elsewhere: if it cannot be written either, the
    /// outage under way says what it can.
    fn write_gap(&mut self, gap: &[u8]) {
        if self.write(gap, 1).is_ok() {
            self.stats.gaps += 1;
        }
    }

    fn lose_lines(&mut self, error: &io::Error, count: u64) {
        self.stats.lines_lost += count;
        self.outages.lost(error, count);
    }

    fn record_error(&mut self, error: &io::Error) {
        if self.stats.first_error.is_none() {
            self.stats.first_error = Some(error.to_string());
        }
    }

    fn should_sync_now(&self, urgent: bool) -> bool {
        match self.policy {
            SyncPolicy::Always => true,
            SyncPolicy::Never => false,
            SyncPolicy::Interval(period) => {
                urgent || self.last_sync + period <= Instant::now() + DUE_SOON
            }
        }
    }

    /// When the writer must wake without a line: to sync unsynced lines under the interval
    /// policy, or to check the log's place.
    fn wake_deadline(&self) -> Instant {
        // The place check may wait a little, so that a tick's wake-up takes it first; the
        // sync may not (it bounds durability).
        let next_place_check = self.place.next_check() + DUE_SOON;
        match self.policy {
            SyncPolicy::Interval(period) if self.dirty => {
                (self.last_sync + period).min(next_place_check)
            }
            _ => next_place_check,
        }
    }

    /// Work that is due by time rather than by lines, or soon due: see [`DUE_SOON`].
    fn on_timer(&mut self) {
        let soon = Instant::now() + DUE_SOON;
        if let Err(error) = self.place.check_if_due(&mut self.sink, self.length, soon) {
            self.record_error(&error);
        }
        if matches!(self.policy, SyncPolicy::Interval(period) if self.last_sync + period <= soon) {
            self.sync();
        }
    }

    fn sync(&mut self) {
        if !self.dirty {
            return;
        }
        let attempted_at = self.clock.now_ms();
        let result = self.sink.sync();
        self.dirty = false;
        self.last_sync = Instant::now();
        let previous = std::mem::replace(&mut self.last_sync_time, attempted_at);
        match result {
            Ok(()) => self.stats.syncs += 1,
            Err(error) => {
                self.record_error(&error);
                let gap = self.outages.sync_failed(&error, previous, attempted_at);
                self.write_gap(&gap);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod memory_disk;
#[cfg(test)]
mod tests;
