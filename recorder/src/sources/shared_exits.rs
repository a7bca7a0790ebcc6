//! One taskstats listener for every process tree of the process (the daemon's tasks), in
//! place of one each: the kernel sends every listener every exit of the machine, so 16
//! trees with a socket each received and decoded every exit 16 times (23 % of the daemon's
//! samples at 1 s, by perf). Here one socket's records are decoded once into a bounded
//! queue, and each tree reads what came in since its last tick through its own cursor
//! ([`ExitReader`]) and sorts it by its own rules (`process_tree::exits`).
//!
//! Data flows one way: the queue is a source, filled by whichever reader ticks first and
//! read by all; no reader writes to another. It holds what some reader has not read yet,
//! [`HELD_MAX`] records at most: a reader that falls further behind loses the oldest, and
//! counts each lost exit as an overrun, beside the kernel queue's overflows since it began.
//! The socket lives while a reader does: with no task open it is closed, and the next
//! reader opens it again.

use crate::sources::taskstats::{ProcessCpu, TaskExit, Taskstats, TaskstatsError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// Records held for the readers at most (some 100 bytes each): 16,384 exits are seconds of
/// a machine busy building, many ticks even at 1 s.
const HELD_MAX: usize = 16_384;

/// Where the queue's records come from: taskstats, or a test's.
trait ExitFeed: Send {
    /// Every record that came in since the last call, in order.
    fn drain(&mut self, exits: &mut Vec<TaskExit>);
    /// How many times the feed lost records so far.
    fn overruns(&self) -> u64;
    /// What the records' CPU is counted from.
    fn process_cpu(&self) -> ProcessCpu;
}

impl ExitFeed for Taskstats {
    fn drain(&mut self, exits: &mut Vec<TaskExit>) {
        Taskstats::drain(self, exits);
    }

    fn overruns(&self) -> u64 {
        Taskstats::overruns(self)
    }

    fn process_cpu(&self) -> ProcessCpu {
        Taskstats::process_cpu(self)
    }
}

/// One listener's records, for every reader.
pub(crate) struct SharedExits {
    queue: Mutex<Queue>,
}

struct Queue {
    feed: Box<dyn ExitFeed>,
    held: VecDeque<TaskExit>,
    held_max: usize,
    /// The sequence number of `held`'s first record (counted from the listener's start).
    first: u64,
    /// The next record each reader reads, by reader.
    cursors: HashMap<u64, u64>,
    next_reader: u64,
}

impl Queue {
    /// One past the last record held.
    fn end(&self) -> u64 {
        self.first + self.held.len() as u64
    }

    /// Takes what the feed received since, then lets go of what is no longer needed.
    fn take_in(&mut self) {
        let mut fresh = Vec::new();
        self.feed.drain(&mut fresh);
        self.held.extend(fresh);
        self.let_go();
    }

    /// Drops the records every reader has read, and the oldest past [`Queue::held_max`].
    fn let_go(&mut self) {
        let slowest = self.cursors.values().min().copied().unwrap_or(self.end());
        let read_by_all = usize::try_from(slowest.saturating_sub(self.first)).unwrap_or(0);
        let over = self.held.len().saturating_sub(self.held_max);
        let dropped = read_by_all.max(over).min(self.held.len());
        self.held.drain(..dropped);
        self.first += dropped as u64;
    }
}

impl SharedExits {
    /// Registers one taskstats listener for the exits on every possible CPU.
    pub(crate) fn open(possible_cpus: &str) -> Result<SharedExits, TaskstatsError> {
        Ok(SharedExits::over(
            Box::new(Taskstats::open(possible_cpus)?),
            HELD_MAX,
        ))
    }

    fn over(feed: Box<dyn ExitFeed>, held_max: usize) -> SharedExits {
        SharedExits {
            queue: Mutex::new(Queue {
                feed,
                held: VecDeque::new(),
                held_max,
                first: 0,
                cursors: HashMap::new(),
                next_reader: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A reader of the exits from now on.
    pub(crate) fn reader(self: &Arc<Self>) -> ExitReader {
        let mut queue = self.lock();
        queue.take_in();
        let id = queue.next_reader;
        queue.next_reader += 1;
        let end = queue.end();
        queue.cursors.insert(id, end);
        ExitReader {
            shared: Arc::clone(self),
            id,
            feed_overruns_before: queue.feed.overruns(),
            lost: 0,
        }
    }
}

/// One tree's cursor in the shared records.
pub(crate) struct ExitReader {
    shared: Arc<SharedExits>,
    id: u64,
    /// The feed's overruns when the reader began.
    feed_overruns_before: u64,
    /// Records let go before this reader read them.
    lost: u64,
}

impl ExitReader {
    /// Every exit received since the last call, in the order the kernel sent them.
    pub(crate) fn drain(&mut self, exits: &mut Vec<TaskExit>) {
        let mut queue = self.shared.lock();
        queue.take_in();
        let next = queue.cursors.get(&self.id).copied().unwrap_or(queue.first);
        self.lost += queue.first.saturating_sub(next);
        let from = usize::try_from(next.saturating_sub(queue.first)).unwrap_or(usize::MAX);
        exits.extend(queue.held.range(from.min(queue.held.len())..).cloned());
        let end = queue.end();
        queue.cursors.insert(self.id, end);
        queue.let_go();
    }

    /// The kernel queue's overflows since the reader began, and the exits lost to it for
    /// falling behind.
    pub(crate) fn overruns(&self) -> u64 {
        let feed = self.shared.lock().feed.overruns();
        feed.saturating_sub(self.feed_overruns_before) + self.lost
    }

    pub(crate) fn process_cpu(&self) -> ProcessCpu {
        self.shared.lock().feed.process_cpu()
    }
}

impl Drop for ExitReader {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.cursors.remove(&self.id);
        queue.let_go();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exits handed in by the test, through a queue it keeps a handle on.
    #[derive(Clone, Default)]
    struct TestFeed(Arc<Mutex<(Vec<TaskExit>, u64)>>);

    impl TestFeed {
        fn send(&self, pids: std::ops::Range<u32>) {
            let mut feed = self.0.lock().unwrap();
            feed.0.extend(pids.map(|pid| TaskExit {
                pid,
                ..TaskExit::default()
            }));
        }
    }

    impl ExitFeed for TestFeed {
        fn drain(&mut self, exits: &mut Vec<TaskExit>) {
            exits.append(&mut self.0.lock().unwrap().0);
        }

        fn overruns(&self) -> u64 {
            self.0.lock().unwrap().1
        }

        fn process_cpu(&self) -> ProcessCpu {
            ProcessCpu::Ticks
        }
    }

    fn pids(reader: &mut ExitReader) -> Vec<u32> {
        let mut exits = Vec::new();
        reader.drain(&mut exits);
        exits.iter().map(|exit| exit.pid).collect()
    }

    #[test]
    fn every_reader_sees_every_record_once_from_when_it_began() {
        let feed = TestFeed::default();
        let shared = Arc::new(SharedExits::over(Box::new(feed.clone()), 100));
        feed.send(0..3);
        let mut readers: Vec<_> = (0..4).map(|_| shared.reader()).collect();
        feed.send(3..10);
        assert_eq!(pids(&mut readers[0]), Vec::from_iter(3..10));
        feed.send(10..12);
        for reader in &mut readers[1..] {
            assert_eq!(pids(reader), Vec::from_iter(3..12));
        }
        assert_eq!(pids(&mut readers[0]), [10, 11]);
        for reader in &mut readers {
            assert!(pids(reader).is_empty());
            assert_eq!(reader.overruns(), 0);
        }
        assert!(shared.lock().held.is_empty(), "all read, none held");
    }

    #[test]
    fn a_reader_that_falls_behind_loses_the_oldest_and_counts_them_as_overruns() {
        let feed = TestFeed::default();
        let shared = Arc::new(SharedExits::over(Box::new(feed.clone()), 10));
        let (mut keeping_up, mut lagging) = (shared.reader(), shared.reader());
        for batch in 0..5 {
            feed.send(batch * 6..batch * 6 + 6);
            assert_eq!(pids(&mut keeping_up).len(), 6);
            assert!(shared.lock().held.len() <= 10, "bounded");
        }
        assert_eq!(pids(&mut lagging), Vec::from_iter(20..30));
        assert_eq!((lagging.overruns(), keeping_up.overruns()), (20, 0));
        feed.0.lock().unwrap().1 = 2;
        assert_eq!((lagging.overruns(), keeping_up.overruns()), (22, 2));
    }

    #[test]
    fn a_reader_that_ends_holds_nothing_back() {
        let feed = TestFeed::default();
        let shared = Arc::new(SharedExits::over(Box::new(feed.clone()), 100));
        let (mut reading, ended) = (shared.reader(), shared.reader());
        feed.send(0..5);
        pids(&mut reading);
        assert_eq!(shared.lock().held.len(), 5, "held for the other");
        drop(ended);
        assert!(shared.lock().held.is_empty());
    }
}
