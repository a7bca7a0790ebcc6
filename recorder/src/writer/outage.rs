//! What the writer does when lines do not reach the disk: lines that fail to be appended
//! (a full disk, an I/O error) are counted and become one gap line once appending works
//! again; lines the sources dropped while the writer was behind become a gap line; a failed
//! fdatasync becomes a gap line over what it may have lost. Checkpointed batches are held
//! instead (`held.rs`), and lost only past its bound. Each is warned about once, and the
//! task is never affected.

use super::held::HELD_BYTES;
use crate::clock::Clock;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tc_profile_format::{encode_line, Gap, Line};

/// Lines are failing to reach the log since `since` (log time).
struct Outage {
    since: f64,
    lines: u64,
    reason: String,
}

/// The writer's failures so far, and the gap lines that tell of them.
pub(super) struct Outages {
    /// How warnings name the log.
    name: String,
    clock: Clock,
    current: Option<Outage>,
    /// Lines the sources dropped (a full channel), and how many of them are in a gap line.
    dropped: Arc<AtomicU64>,
    dropped_noted: u64,
    /// Log time at which the writer took its latest batch of lines.
    batch_time: f64,
    warned: bool,
}

impl Outages {
    pub(super) fn new(name: String, clock: Clock, dropped: Arc<AtomicU64>) -> Outages {
        Outages {
            name,
            clock,
            current: None,
            dropped,
            dropped_noted: 0,
            batch_time: clock.now_ms(),
            warned: false,
        }
    }

    /// `count` lines could not be written.
    pub(super) fn lost(&mut self, error: &io::Error, count: u64) {
        let since = self.clock.now_ms();
        let outage = self.current.get_or_insert_with(|| Outage {
            since,
            lines: 0,
            reason: error.to_string(),
        });
        outage.lines += count;
        self.warn_cannot_write(error);
    }

    /// A checkpointed batch could not be written, and is held for later.
    pub(super) fn holding(&mut self, error: &io::Error) {
        self.warn_cannot_write(error);
    }

    fn warn_cannot_write(&mut self, error: &io::Error) {
        if !self.warned {
            self.warned = true;
            eprintln!(
                "tc-profile: warning: {}: cannot write the log: {error}; lines are dropped \
                 until it can be written again, marker-file lines held for then ({} MiB at \
                 most; the task is not affected)",
                self.name,
                HELD_BYTES >> 20
            );
        }
    }

    /// The gap line of the outage under way, to write before the next line.
    pub(super) fn gap_line(&self) -> Option<Vec<u8>> {
        let gap = self.current.as_ref()?.gap_until(self.clock.now_ms());
        Some(encode_line(&Line::Gap(gap)))
    }

    /// The gap line of the outage is written, the `gaps`th one: the outage is over.
    pub(super) fn resumed(&mut self, gaps: u64) {
        let Some(outage) = self.current.take() else {
            return;
        };
        if gaps == 1 {
            eprintln!(
                "tc-profile: {}: writing again; {} lines lost from {:.3} s to {:.3} s, marked \
                 \"Data missing\" in the profile",
                self.name,
                outage.lines,
                outage.since / 1000.0,
                self.clock.now_ms() / 1000.0
            );
        }
    }

    /// Lines the sources dropped because the channel was full, as a gap line from the
    /// previous batch to this one; called once a batch.
    pub(super) fn dropped_gap_line(&mut self) -> Option<Vec<u8>> {
        let now = self.clock.now_ms();
        let previous_batch = std::mem::replace(&mut self.batch_time, now);
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped == self.dropped_noted {
            return None;
        }
        let gap = Gap {
            start_time: previous_batch,
            end_time: now,
            lines: dropped - self.dropped_noted,
            reason: "the log's disk was too slow: lines were dropped waiting for it".to_owned(),
        };
        self.dropped_noted = dropped;
        Some(encode_line(&Line::Gap(gap)))
    }

    /// What was written between `since` and the failed sync at `attempted_at` may not be
    /// durable: the gap line that says so, which is itself in the page cache and reaches
    /// the disk if the disk recovers.
    pub(super) fn sync_failed(
        &mut self,
        error: &io::Error,
        since: f64,
        attempted_at: f64,
    ) -> Vec<u8> {
        if !self.warned {
            self.warned = true;
            eprintln!(
                "tc-profile: warning: {}: cannot make the log durable: {error}; lines written \
                 from now on may be lost if the machine crashes (the task is not affected)",
                self.name
            );
        }
        let gap = Gap {
            start_time: since,
            end_time: attempted_at,
            lines: 0,
            reason: format!("fdatasync failed ({error}): these lines may not be on the disk"),
        };
        encode_line(&Line::Gap(gap))
    }

    /// The gap of an outage still under way at the end, which no line could carry.
    pub(super) fn unwritten_gap(&mut self) -> Option<Gap> {
        let now = self.clock.now_ms();
        self.current.take().map(|outage| outage.gap_until(now))
    }
}

impl Outage {
    fn gap_until(&self, end_time: f64) -> Gap {
        Gap {
            start_time: self.since,
            end_time,
            lines: self.lines,
            reason: self.reason.clone(),
        }
    }
}
