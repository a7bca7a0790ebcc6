//! The channel from the sources to the writer: its sending end, [`MarkerSink`] (with
//! [`IntervalGuard`]), which every source holds, and the writer thread at its other end,
//! started with it and stopped with a deadline, so that a hung disk cannot hold up the end
//! of a recording for ever.

use crate::clock::Clock;
use crate::error::{spawn, RecorderError};
use crate::writer::{inbox, LogSink, Message, Outbox, SyncPolicy, Writer, WriterStats};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tc_profile_format::{encode_line, Line, Marker, OpenInterval};

/// Messages waiting for the writer at most. Past this, sources drop lines (counted) rather
/// than block the task or grow memory while the disk is stuck. The channel itself is
/// unbounded, so that its memory follows the backlog: a bounded one allocates and touches
/// every slot at start (3 MB, a third of the recorder's start-up CPU).
const BACKLOG_LINES: usize = 1 << 16;
/// How long [`MarkerSink::begin`] waits for its line to be durable. An fdatasync takes
/// milliseconds; a disk that takes longer is failing, and the task's step does not wait
/// for it.
const DURABLE_WAIT: Duration = Duration::from_secs(1);

/// The writer thread, detached: [`WriterThread::stop`] waits for it until a deadline, and a
/// writer stuck on a hung disk is left behind rather than waited for for ever.
pub(crate) struct WriterThread<S> {
    finished: Receiver<(WriterStats, S)>,
}

impl<S> WriterThread<S> {
    /// Stops the writer after every line already sent (Shutdown travels behind them), and
    /// returns what it did and its sink; a timeout if it is not done by `deadline`.
    pub(crate) fn stop(
        self,
        markers: &MarkerSink,
        deadline: Instant,
    ) -> Result<(WriterStats, S), RecvTimeoutError> {
        markers.sender.send(Message::Shutdown);
        let (mut stats, sink) = self.finished.recv_deadline(deadline)?;
        stats.lines_lost += markers.dropped.load(Ordering::Relaxed);
        Ok((stats, sink))
    }
}

/// Starts the writer thread over a log of `length` bytes; the returned sink sends it lines.
pub(crate) fn start_writer<S: LogSink + 'static>(
    log: S,
    name: String,
    length: u64,
    policy: SyncPolicy,
    clock: Clock,
) -> Result<(MarkerSink, WriterThread<S>), RecorderError> {
    let (sender, receiver) = inbox();
    let dropped = Arc::new(AtomicU64::new(0));
    let writer = Writer::new(log, name, length, policy, clock, Arc::clone(&dropped));
    let (done, finished) = bounded(1);
    spawn("tc-profile-writer", move || {
        let _ = done.send(writer.run(receiver));
    })?;
    let markers = MarkerSink {
        sender,
        clock,
        next_id: Arc::new(AtomicU64::new(1)),
        dropped,
        durable_wait: (policy != SyncPolicy::Never).then_some(DURABLE_WAIT),
    };
    Ok((markers, WriterThread { finished }))
}

/// Adds markers to a recording. Cheap to clone; encoding happens on the caller's thread so
/// the writer only writes.
#[derive(Clone)]
pub struct MarkerSink {
    sender: Outbox<Message>,
    clock: Clock,
    pub(crate) next_id: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    /// How long `begin` waits for its line to be durable; None under the never policy.
    durable_wait: Option<Duration>,
}

impl MarkerSink {
    /// Now, in the log's time base.
    pub fn now(&self) -> f64 {
        self.clock.now_ms()
    }

    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Appends a marker; durable within the sync period.
    pub fn marker(&self, marker: &Marker) {
        self.send(encode_line(&Line::Marker(marker.clone())), false);
    }

    /// Appends a lifecycle marker, which the writer makes durable as soon as it takes it
    /// (this does not wait for that).
    pub fn lifecycle(&self, marker: &Marker) {
        self.send(encode_line(&Line::Marker(marker.clone())), true);
    }

    /// An instant lifecycle marker now.
    pub fn instant(&self, name: &str, category: u32, data: Option<Value>) {
        let mut marker = Marker::instant(name, self.now()).with_category(category);
        marker.data = data;
        self.lifecycle(&marker);
    }

    /// Begins an interval now, and ends it when the guard is dropped or
    /// [`IntervalGuard::end`] is called (its end is a [`MarkerSink::lifecycle`] marker).
    ///
    /// Unless the sync policy is never, the interval is durable in the log before this
    /// returns, so that the step it marks starts only once a crash can no longer lose it;
    /// but this waits one second at most: a hung disk does not hold up the task.
    pub fn begin(&self, name: &str, category: u32, data: Option<Value>) -> IntervalGuard {
        let open = OpenInterval {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            name: name.to_owned(),
            start_time: self.now(),
            category: Some(category),
            data,
            key: None,
        };
        self.send_durable(encode_line(&Line::Open(open.clone())));
        IntervalGuard {
            sink: self.clone(),
            open: Some(open),
        }
    }

    /// Appends any line of the log format (for sources with lines of their own).
    pub fn line(&self, line: &Line, urgent: bool) {
        self.send(encode_line(line), urgent);
    }

    fn send(&self, bytes: Vec<u8>, urgent: bool) -> bool {
        self.send_lines(bytes, 1, urgent)
    }

    /// Sends `count` encoded lines for one write, or drops them (counted) when the writer
    /// is that far behind; whether they were sent.
    pub(crate) fn send_lines(&self, bytes: Vec<u8>, count: u64, urgent: bool) -> bool {
        self.send_acknowledged(bytes, count, urgent, Vec::new())
    }

    /// [`MarkerSink::send_lines`], with `acks` for the writer to wake once they are written
    /// (and, `urgent`, durable).
    pub(crate) fn send_acknowledged(
        &self,
        bytes: Vec<u8>,
        count: u64,
        urgent: bool,
        acks: Vec<Sender<()>>,
    ) -> bool {
        if self.sender.len() >= BACKLOG_LINES {
            self.dropped.fetch_add(count, Ordering::Relaxed);
            return false;
        }
        self.enqueue(bytes, count, urgent, acks, false)
    }

    /// Sends `count` encoded lines for one write, however far behind the writer is: a
    /// batch of marker-file lines ending in its checkpoint is never dropped, and the writer
    /// holds it through a failing disk, or a later checkpoint would claim it.
    pub(crate) fn send_batch(&self, bytes: Vec<u8>, count: u64, urgent: bool) -> bool {
        self.enqueue(bytes, count, urgent, Vec::new(), true)
    }

    fn enqueue(
        &self,
        bytes: Vec<u8>,
        count: u64,
        urgent: bool,
        acks: Vec<Sender<()>>,
        checkpointed: bool,
    ) -> bool {
        let message = Message::Line {
            bytes,
            count,
            urgent,
            acks,
            checkpointed,
        };
        let sent = self.sender.send(message);
        if !sent {
            self.dropped.fetch_add(count, Ordering::Relaxed);
        }
        sent
    }

    /// Messages waiting for the writer.
    pub(crate) fn backlog(&self) -> usize {
        self.sender.len()
    }

    /// Sends one urgent line and waits until the writer has made it durable (or found it
    /// cannot), up to `durable_wait`; at once under the never policy.
    fn send_durable(&self, bytes: Vec<u8>) {
        let Some(wait) = self.durable_wait else {
            self.send(bytes, true);
            return;
        };
        let (ack, durable) = bounded(1);
        if self.send_acknowledged(bytes, 1, true, vec![ack]) {
            let _ = durable.recv_timeout(wait);
        }
    }
}

/// An interval marker in progress; ends when dropped.
#[must_use = "the interval ends when this guard is dropped"]
pub struct IntervalGuard {
    sink: MarkerSink,
    open: Option<OpenInterval>,
}

impl IntervalGuard {
    /// Ends the interval now, replacing its data (for example with an exit status).
    pub fn end(mut self, data: Option<Value>) {
        self.close(data);
    }

    fn close(&mut self, data: Option<Value>) {
        if let Some(open) = self.open.take() {
            let marker = open.close(self.sink.now(), data);
            self.sink.lifecycle(&marker);
        }
    }
}

impl Drop for IntervalGuard {
    fn drop(&mut self) {
        self.close(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::memory_disk::MemoryDisk;

    /// A writer thread over `disk` and the sink that feeds it, as a recorder has them.
    fn start(
        disk: &MemoryDisk,
        policy: SyncPolicy,
        durable_wait: Duration,
    ) -> (
        crate::channel::MarkerSink,
        crate::channel::WriterThread<MemoryDisk>,
    ) {
        let (mut markers, thread) =
            start_writer(disk.clone(), "memory".into(), 0, policy, Clock::start()).unwrap();
        markers.durable_wait = Some(durable_wait);
        (markers, thread)
    }

    fn far_away() -> Instant {
        Instant::now() + Duration::from_secs(600)
    }

    #[test]
    fn begin_returns_once_its_interval_is_durable() {
        let disk = MemoryDisk::default();
        let (markers, thread) = start(
            &disk,
            SyncPolicy::Interval(Duration::from_secs(3600)),
            Duration::from_secs(600),
        );
        let step = markers.begin("pull image", 1, None);
        let durable = String::from_utf8(disk.durable()).unwrap();
        assert!(durable.contains("\"type\":\"open\""), "{durable:?}");
        drop(step);
        let (stats, _) = thread.stop(&markers, far_away()).unwrap();
        assert_eq!(stats.lines, 2);
    }

    #[test]
    fn begin_on_a_hung_disk_returns_without_waiting_for_it() {
        let disk = MemoryDisk::default();
        let hang = disk.sync_gate.lock().unwrap();
        let (markers, thread) = start(&disk, SyncPolicy::Always, Duration::from_millis(10));
        let step = markers.begin("pull image", 1, None);
        assert!(disk.durable().is_empty(), "returned while the sync hangs");
        drop(step);
        drop(hang);
        let (stats, _) = thread.stop(&markers, far_away()).unwrap();
        assert_eq!(stats.lines, 2);
        assert_eq!(disk.durable(), disk.written());
    }

    #[test]
    fn stopping_a_writer_stuck_on_a_hung_disk_gives_up_at_the_deadline() {
        let disk = MemoryDisk::default();
        let hang = disk.sync_gate.lock().unwrap();
        let (markers, thread) = start(&disk, SyncPolicy::Always, Duration::from_millis(10));
        markers.instant("footer-like", 1, None);
        let stopped = thread.stop(&markers, Instant::now() + Duration::from_millis(10));
        assert!(
            matches!(stopped, Err(RecvTimeoutError::Timeout)),
            "the writer is left behind"
        );
        drop(hang);
        let deadline = far_away();
        while disk.durable().is_empty() {
            assert!(Instant::now() < deadline, "the writer never resumed");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
