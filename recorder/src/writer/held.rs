//! Checkpointed batches the log could not take. Their source has already moved past their
//! lines (the checkpoint at their end says so), so a batch that fails to be written is held
//! and written, in order, once the log takes lines again: a later batch's checkpoint would
//! otherwise claim lines that never reached the log. What is held is bounded; a batch past
//! the bound is lost, and counted so.

use std::collections::VecDeque;

/// Bytes of batches held at most: a few seconds of a busy task's marker files (a batch
/// holds 4 MiB of them at most).
pub(super) const HELD_BYTES: usize = 16 << 20;

/// One batch: its bytes, for one write, and its line count.
pub(super) struct Batch {
    pub(super) bytes: Vec<u8>,
    pub(super) count: u64,
}

#[derive(Default)]
pub(super) struct Held {
    batches: VecDeque<Batch>,
    bytes: usize,
}

impl Held {
    /// Holds `batch` behind the others; gives it back when that would pass [`HELD_BYTES`].
    pub(super) fn hold(&mut self, batch: Batch) -> Result<(), Batch> {
        if self.bytes + batch.bytes.len() > HELD_BYTES {
            return Err(batch);
        }
        self.bytes += batch.bytes.len();
        self.batches.push_back(batch);
        Ok(())
    }

    /// The oldest batch, to write next.
    pub(super) fn take_oldest(&mut self) -> Option<Batch> {
        let batch = self.batches.pop_front()?;
        self.bytes -= batch.bytes.len();
        Some(batch)
    }

    /// The oldest batch again, its write failed.
    pub(super) fn put_back(&mut self, batch: Batch) {
        self.bytes += batch.bytes.len();
        self.batches.push_front(batch);
    }
}
