//! A log sink in memory for the writer's tests: a disk with a page cache that fails the
//! operations it is told to.

use crate::writer::{LogSink, Place};
use std::io;
use std::sync::{Arc, Mutex};

/// A disk with a page cache: what was written, and how much of it is durable. An
/// operation fails while `failing` says so; a failed append leaves half its line, as a
/// short write on a full disk does.
#[derive(Clone, Default)]
pub(crate) struct MemoryDisk {
    pub(crate) state: Arc<Mutex<DiskState>>,
    /// A test that holds this hangs every sync until it lets go, as a stuck disk does.
    pub(crate) sync_gate: Arc<Mutex<()>>,
}

#[derive(Default)]
pub(crate) struct DiskState {
    written: Vec<u8>,
    durable: usize,
    pub(crate) operations: u64,
    /// Operations with these numbers fail (append, sync and cut count alike).
    failing: std::ops::Range<u64>,
    error: Option<i32>,
}

impl MemoryDisk {
    pub(crate) fn failing(operations: std::ops::Range<u64>, errno: i32) -> MemoryDisk {
        let disk = MemoryDisk::default();
        {
            let mut state = disk.state.lock().unwrap();
            state.failing = operations;
            state.error = Some(errno);
        }
        disk
    }

    /// Fails every operation from now on with `errno`, until [`MemoryDisk::recover`].
    pub(crate) fn fail_from_now(&self, errno: i32) {
        let mut state = self.state.lock().unwrap();
        state.failing = state.operations + 1..u64::MAX;
        state.error = Some(errno);
    }

    pub(crate) fn recover(&self) {
        self.state.lock().unwrap().failing = 0..0;
    }

    pub(crate) fn durable(&self) -> Vec<u8> {
        let state = self.state.lock().unwrap();
        state.written[..state.durable].to_vec()
    }

    pub(crate) fn written(&self) -> Vec<u8> {
        self.state.lock().unwrap().written.clone()
    }

    /// Counts the operation; the error it fails with, if it does.
    fn operate(&self) -> Result<std::sync::MutexGuard<'_, DiskState>, io::Error> {
        let mut state = self.state.lock().unwrap();
        state.operations += 1;
        if state.failing.contains(&state.operations) {
            return Err(io::Error::from_raw_os_error(
                state.error.unwrap_or(libc::EIO),
            ));
        }
        Ok(state)
    }
}

impl LogSink for MemoryDisk {
    fn append(&mut self, line: &[u8]) -> io::Result<()> {
        match self.operate() {
            Ok(mut state) => {
                state.written.extend_from_slice(line);
                Ok(())
            }
            Err(error) => {
                let mut state = self.state.lock().unwrap();
                state.written.extend_from_slice(&line[..line.len() / 2]);
                Err(error)
            }
        }
    }
    fn sync(&mut self) -> io::Result<()> {
        drop(self.sync_gate.lock());
        let mut state = self.operate()?;
        state.durable = state.written.len();
        Ok(())
    }
    fn cut(&mut self, length: u64) -> io::Result<()> {
        let mut state = self.operate()?;
        state.written.truncate(length as usize);
        state.durable = state.durable.min(length as usize);
        Ok(())
    }
    fn check_place(&mut self, _: u64) -> io::Result<Place> {
        Ok(Place::Linked)
    }
}
