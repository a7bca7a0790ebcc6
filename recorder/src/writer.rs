//! The one writer thread that owns the log: lines arrive encoded over a channel, each is
//! appended with a single write, and fdatasync is group-committed by the sync policy.

use crate::Clock;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tc_profile_format::{encode_line, Gap, Line};

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

/// Where the writer appends. A trait so that tests can keep a "written" and a "durable"
/// image and fail at the Nth operation.
pub trait LogSink: Send {
    /// Appends whole lines (newlines included) in a single write.
    fn append(&mut self, lines: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the log back to its first `length` bytes: drops the partial line that a failed
    /// append can leave, so that the next line starts on a line of its own.
    fn cut(&mut self, length: u64) -> io::Result<()>;
    /// Checks that the log is still reachable at its path, and creates it there again,
    /// with its first `length` bytes, if it was deleted.
    fn check_place(&mut self, length: u64) -> io::Result<Place>;
}

/// Where the log stands, as [`LogSink::check_place`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On a disk: at its path, or moved elsewhere by someone.
    Linked,
    /// It had been deleted; it is at its path again, with everything written so far.
    Recreated,
    /// It and its directory are gone: lines go on into the deleted file, which lives only
    /// as long as the recorder.
    Orphaned,
}

/// The log file and its path: the sink of a real recording.
pub(crate) struct LogFile {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
}

impl LogSink for LogFile {
    fn append(&mut self, line: &[u8]) -> io::Result<()> {
        self.file.write_all(line)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn cut(&mut self, length: u64) -> io::Result<()> {
        self.file.set_len(length)
    }

    fn check_place(&mut self, length: u64) -> io::Result<Place> {
        if self.file.metadata()?.nlink() > 0 {
            return Ok(Place::Linked);
        }
        // Deleted. Created again only where nothing else is, and only in a directory that
        // exists: tc-profile never creates a directory that someone removed.
        let copy = |new: &mut File| {
            let mut old = &self.file;
            old.seek(SeekFrom::Start(0))?;
            io::copy(&mut old.take(length), new)?;
            Ok(())
        };
        match crate::create_log(&self.path, copy) {
            Ok(file) => {
                self.file = file;
                Ok(Place::Recreated)
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Place::Orphaned),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(Place::Orphaned),
            Err(error) => Err(error),
        }
    }
}

/// What travels from the sources to the writer.
pub(crate) enum Message {
    /// `count` encoded lines (a batch of marker-file lines, or one line), written with one
    /// write; `urgent` ones are made durable at once (lifecycle markers).
    Line {
        bytes: Vec<u8>,
        count: u64,
        urgent: bool,
    },
    /// Wake the sender once every line sent before this is durable, or could not be made
    /// so (the sync failed, the line could not be written): by sending `()` on it.
    Durable(Sender<()>),
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
    /// behind and the sources dropped them).
    pub lines_lost: u64,
    /// `gap` lines written: spans of the recording with data missing.
    pub gaps: u64,
    /// The first write or sync error, as text.
    pub first_error: Option<String>,
    /// Lines were still failing at the end: the gap that could not be written into the log,
    /// for the finalizer to add.
    pub unwritten_gap: Option<Gap>,
}

/// How often the writer checks that the log is still at its path.
const PLACE_CHECK_PERIOD: Duration = Duration::from_secs(1);

/// Lines are failing to reach the log since `since` (log time).
struct Outage {
    since: f64,
    lines: u64,
    reason: String,
}

pub(crate) struct Writer<S> {
    sink: S,
    /// How warnings name the log.
    name: String,
    policy: SyncPolicy,
    clock: Clock,
    stats: WriterStats,
    /// Bytes of whole lines in the log: where a failed append is cut back to.
    length: u64,
    /// A failed append may have left a partial line past `length`.
    torn: bool,
    outage: Option<Outage>,
    /// Lines the sources dropped (a full channel), and how many of them are in a gap line.
    dropped: Arc<AtomicU64>,
    dropped_noted: u64,
    /// Log time at which the writer took its latest batch of lines.
    batch_time: f64,
    dirty: bool,
    last_sync: Instant,
    /// Log time of the last sync attempt: a failed sync puts in doubt what came after it.
    last_sync_time: f64,
    next_place_check: Instant,
    place: Place,
    warned: bool,
    /// Waiting for the lines before their Durable message to be made durable.
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
            name,
            policy,
            clock,
            stats: WriterStats::default(),
            length,
            torn: false,
            outage: None,
            dropped,
            dropped_noted: 0,
            batch_time: clock.now_ms(),
            dirty: false,
            last_sync: Instant::now(),
            last_sync_time: clock.now_ms(),
            next_place_check: Instant::now() + PLACE_CHECK_PERIOD,
            place: Place::Linked,
            warned: false,
            waiting: Vec::new(),
        }
    }

    /// Runs until Shutdown arrives or every sender is gone; returns the sink, still open.
    pub(crate) fn run(mut self, receiver: Receiver<Message>) -> (WriterStats, S) {
        loop {
            let first = match receiver.recv_deadline(self.wake_deadline()) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    self.on_timer();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            self.note_dropped_lines();
            // Group commit: take every line already waiting, then sync once for all.
            let mut urgent = false;
            let mut shutdown = false;
            for message in std::iter::once(first).chain(receiver.try_iter()) {
                match message {
                    Message::Line {
                        bytes,
                        count,
                        urgent: u,
                    } => {
                        self.append(&bytes, count);
                        urgent |= u;
                    }
                    Message::Durable(waiter) => {
                        self.waiting.push(waiter);
                        urgent = true;
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
        if self.policy != SyncPolicy::Never {
            self.sync();
            // A failed sync appends a gap line: one more attempt to make that durable.
            self.sync();
        }
        self.wake_waiting();
        self.stats.unwritten_gap = self.outage.take().map(|outage| Gap {
            start_time: outage.since,
            end_time: self.clock.now_ms(),
            lines: outage.lines,
            reason: outage.reason,
        });
        (self.stats, self.sink)
    }

    /// Wakes those waiting for durability, after the sync that covered their lines (or, under
    /// the never policy, which has none, at once).
    fn wake_waiting(&mut self) {
        for waiter in self.waiting.drain(..) {
            let _ = waiter.send(());
        }
    }

    /// Appends `count` lines, after the gap line that an outage left.
    fn append(&mut self, lines: &[u8], count: u64) {
        if let Some(outage) = &self.outage {
            let gap = Gap {
                start_time: outage.since,
                end_time: self.clock.now_ms(),
                lines: outage.lines,
                reason: outage.reason.clone(),
            };
            if let Err(error) = self.write(&encode_line(&Line::Gap(gap)), 1) {
                return self.lose_lines(&error, count);
            }
            self.stats.gaps += 1;
            if let Some(outage) = self.outage.take() {
                self.note_resumed(&outage);
            }
        }
        if let Err(error) = self.write(lines, count) {
            self.lose_lines(&error, count);
        }
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

    fn lose_lines(&mut self, error: &io::Error, count: u64) {
        self.stats.lines_lost += count;
        self.record_error(error);
        let since = self.clock.now_ms();
        let outage = self.outage.get_or_insert_with(|| Outage {
            since,
            lines: 0,
            reason: error.to_string(),
        });
        outage.lines += count;
        if !self.warned {
            self.warned = true;
            eprintln!(
                "tc-profile: warning: {}: cannot write the log: {error}; lines are dropped \
                 until it can be written again (the task is not affected)",
                self.name
            );
        }
    }

    fn note_resumed(&self, outage: &Outage) {
        if self.stats.gaps == 1 {
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

    /// Lines the sources dropped because the channel was full become a gap line, from the
    /// previous batch to this one.
    fn note_dropped_lines(&mut self) {
        let now = self.clock.now_ms();
        let previous_batch = std::mem::replace(&mut self.batch_time, now);
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped == self.dropped_noted {
            return;
        }
        let gap = Gap {
            start_time: previous_batch,
            end_time: now,
            lines: dropped - self.dropped_noted,
            reason: "the log's disk was too slow: lines were dropped waiting for it".to_owned(),
        };
        self.dropped_noted = dropped;
        if self.write(&encode_line(&Line::Gap(gap)), 1).is_ok() {
            self.stats.gaps += 1;
        }
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
            SyncPolicy::Interval(period) => urgent || self.last_sync.elapsed() >= period,
        }
    }

    /// When the writer must wake without a line: to sync unsynced lines under the interval
    /// policy, or to check the log's place.
    fn wake_deadline(&self) -> Instant {
        match self.policy {
            SyncPolicy::Interval(period) if self.dirty => {
                (self.last_sync + period).min(self.next_place_check)
            }
            _ => self.next_place_check,
        }
    }

    /// Work that is due by time rather than by lines.
    fn on_timer(&mut self) {
        if Instant::now() >= self.next_place_check {
            self.check_place();
        }
        if matches!(self.policy, SyncPolicy::Interval(period) if self.last_sync.elapsed() >= period)
        {
            self.sync();
        }
    }

    fn check_place(&mut self) {
        self.next_place_check = Instant::now() + PLACE_CHECK_PERIOD;
        let place = match self.sink.check_place(self.length) {
            Ok(place) => place,
            Err(error) => return self.record_error(&error),
        };
        match (self.place, place) {
            (_, Place::Recreated) => eprintln!(
                "tc-profile: warning: {} was deleted; created again with everything recorded",
                self.name
            ),
            (Place::Linked, Place::Orphaned) => eprintln!(
                "tc-profile: warning: {} was deleted and cannot be created again (its \
                 directory is gone, or another file took its name); recording goes on into \
                 the deleted file, lost if tc-profile is killed, until the log can be created",
                self.name
            ),
            _ => {}
        }
        self.place = if place == Place::Recreated {
            Place::Linked
        } else {
            place
        };
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
            Err(error) => self.sync_failed(&error, previous, attempted_at),
        }
    }

    /// What was written since the last sync may not be durable: say so in a gap line, which
    /// is itself in the page cache and reaches the disk if the disk recovers.
    fn sync_failed(&mut self, error: &io::Error, since: f64, attempted_at: f64) {
        self.record_error(error);
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
        if self.write(&encode_line(&Line::Gap(gap)), 1).is_ok() {
            self.stats.gaps += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;
    use std::sync::Mutex;
    use tc_profile_format::decode_line;

    /// A disk with a page cache: what was written, and how much of it is durable. An
    /// operation fails while `failing` says so; a failed append leaves half its line, as a
    /// short write on a full disk does.
    #[derive(Clone, Default)]
    struct MemoryDisk {
        state: Arc<Mutex<DiskState>>,
        /// A test that holds this hangs every sync until it lets go, as a stuck disk does.
        sync_gate: Arc<Mutex<()>>,
    }

    #[derive(Default)]
    struct DiskState {
        written: Vec<u8>,
        durable: usize,
        operations: u64,
        /// Operations with these numbers fail (append, sync and cut count alike).
        failing: std::ops::Range<u64>,
        error: Option<i32>,
    }

    impl MemoryDisk {
        fn failing(operations: std::ops::Range<u64>, errno: i32) -> MemoryDisk {
            let disk = MemoryDisk::default();
            {
                let mut state = disk.state.lock().unwrap();
                state.failing = operations;
                state.error = Some(errno);
            }
            disk
        }

        fn durable(&self) -> Vec<u8> {
            let state = self.state.lock().unwrap();
            state.written[..state.durable].to_vec()
        }

        fn written(&self) -> Vec<u8> {
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

    fn line(text: &str, urgent: bool) -> Message {
        Message::Line {
            bytes: format!("{text}\n").into_bytes(),
            count: 1,
            urgent,
        }
    }

    fn writer(disk: &MemoryDisk, policy: SyncPolicy) -> Writer<MemoryDisk> {
        Writer::new(
            disk.clone(),
            "memory".into(),
            0,
            policy,
            Clock::start(),
            Arc::new(AtomicU64::new(0)),
        )
    }

    /// Sends `count` numbered marker lines and a shutdown; returns the writer's stats.
    fn write_markers(disk: &MemoryDisk, count: u32, policy: SyncPolicy) -> WriterStats {
        let (tx, rx) = unbounded();
        for i in 0..count {
            let marker = tc_profile_format::Marker::instant(i.to_string(), f64::from(i));
            let bytes = encode_line(&Line::Marker(marker));
            tx.send(Message::Line {
                bytes,
                count: 1,
                urgent: false,
            })
            .unwrap();
        }
        tx.send(Message::Shutdown).unwrap();
        writer(disk, policy).run(rx).0
    }

    /// Decodes every line; fails on a partial or garbled one.
    fn decoded(bytes: &[u8]) -> Vec<Line> {
        assert!(
            bytes.is_empty() || bytes.ends_with(b"\n"),
            "ends in a whole line"
        );
        decoded_whole_lines(bytes)
    }

    /// Decodes every whole line, ignoring a partial last one.
    fn decoded_whole_lines(bytes: &[u8]) -> Vec<Line> {
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes[..end]
            .split_inclusive(|&b| b == b'\n')
            .map(|l| decode_line(&l[..l.len() - 1]).expect("every line is whole JSON"))
            .collect()
    }

    fn marker_numbers(lines: &[Line]) -> Vec<u32> {
        lines
            .iter()
            .filter_map(|l| match l {
                Line::Marker(m) => Some(m.name.parse().unwrap()),
                _ => None,
            })
            .collect()
    }

    fn gaps(lines: &[Line]) -> Vec<&Gap> {
        lines
            .iter()
            .filter_map(|l| match l {
                Line::Gap(gap) => Some(gap),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_interval_policy_syncs_at_most_once_a_second() {
        let policy = SyncPolicy::interval(Duration::from_millis(100));
        assert_eq!(policy, SyncPolicy::Interval(Duration::from_secs(1)));
        assert_eq!(policy.name(), "interval:1000ms");
        let slow = SyncPolicy::interval(Duration::from_secs(5));
        assert_eq!(slow, SyncPolicy::Interval(Duration::from_secs(5)));
    }

    /// A writer thread over `disk` and the sink that feeds it, as a recorder has them.
    fn start(
        disk: &MemoryDisk,
        policy: SyncPolicy,
        durable_wait: Duration,
    ) -> (crate::MarkerSink, crate::WriterThread<MemoryDisk>) {
        let (mut markers, thread) =
            crate::start_writer(disk.clone(), "memory".into(), 0, policy, Clock::start()).unwrap();
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

    #[test]
    fn urgent_line_is_durable_before_the_next_is_taken() {
        let disk = MemoryDisk::default();
        let (tx, rx) = unbounded();
        let writer = writer(&disk, SyncPolicy::Interval(Duration::from_secs(3600)));
        let handle = std::thread::spawn(move || writer.run(rx));
        tx.send(line("a", true)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while disk.durable() != b"a\n" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(disk.durable(), b"a\n");
        tx.send(Message::Shutdown).unwrap();
        let (stats, _) = handle.join().unwrap();
        assert_eq!(stats.lines, 1);
    }

    #[test]
    fn interval_policy_syncs_within_the_period() {
        let disk = MemoryDisk::default();
        let (tx, rx) = unbounded();
        let writer = writer(&disk, SyncPolicy::Interval(Duration::from_millis(20)));
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
        let (stats, _) = handle.join().unwrap();
        assert_eq!(stats.lines, 100);
        assert!(stats.syncs < 100, "group commit: {} syncs", stats.syncs);
    }

    #[test]
    fn a_full_disk_loses_lines_but_leaves_no_partial_one_and_a_gap_says_how_many() {
        // Operations 4 to 9 fail: the append of line 3, its cut, and so on.
        let disk = MemoryDisk::failing(4..10, libc::ENOSPC);
        let stats = write_markers(&disk, 10, SyncPolicy::Never);
        let lines = decoded(&disk.written());
        let kept = marker_numbers(&lines);
        let gaps = gaps(&lines);
        assert_eq!(gaps.len(), 1, "{lines:?}");
        assert_eq!(kept.len() as u64 + gaps[0].lines, 10, "{kept:?}");
        assert_eq!(stats.lines_lost, gaps[0].lines);
        assert!(
            gaps[0].reason.contains("No space left"),
            "{}",
            gaps[0].reason
        );
        assert!(gaps[0].start_time <= gaps[0].end_time);
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "in order: {kept:?}");
        assert_eq!(kept.last(), Some(&9), "writing resumed");
    }

    #[test]
    fn a_failed_sync_is_marked_as_a_span_that_may_not_be_durable() {
        // Operation 4 is the sync after the first batch of three lines.
        let disk = MemoryDisk::failing(4..5, libc::EIO);
        let (tx, rx) = unbounded();
        for i in 0..3 {
            tx.send(line(&format!("{{\"type\":\"x{i}\"}}"), false))
                .unwrap();
        }
        tx.send(Message::Shutdown).unwrap();
        let (stats, _) = writer(&disk, SyncPolicy::Always).run(rx);
        let lines = decoded(&disk.written());
        let gaps = gaps(&lines);
        assert_eq!(gaps.len(), 1);
        assert_eq!(gaps[0].lines, 0);
        assert!(
            gaps[0].reason.contains("fdatasync failed"),
            "{}",
            gaps[0].reason
        );
        assert_eq!(stats.syncs, 1, "the final sync makes the gap line durable");
        assert_eq!(disk.durable(), disk.written());
    }

    /// Like redb's crash tests: fail every operation from the Nth on for a while, for every
    /// N, and check what was written against what was sent.
    #[test]
    fn any_run_of_failed_operations_leaves_whole_lines_in_order_with_losses_counted() {
        for policy in [SyncPolicy::Always, SyncPolicy::Never] {
            for first in 1..60 {
                for length in [1, 2, 3, 7, 1000] {
                    let disk = MemoryDisk::failing(first..first + length, libc::EIO);
                    let stats = write_markers(&disk, 20, policy);
                    let operations = disk.state.lock().unwrap().operations;
                    let written = disk.written();
                    let case = format!("{policy:?}, fail {first}+{length} of {operations}");
                    if !written.ends_with(b"\n") {
                        assert!(first + length >= operations, "torn tail: {case}");
                    }
                    let lines = decoded_whole_lines(&written);
                    let kept = marker_numbers(&lines);
                    let in_gaps: u64 = gaps(&lines).iter().map(|g| g.lines).sum();
                    let case = format!("{case}: {kept:?}");
                    assert!(kept.windows(2).all(|w| w[0] < w[1]), "{case}");
                    assert_eq!(kept.len() as u64 + stats.lines_lost, 20, "{case}");
                    // Lines lost at the end, with no line after them, have no gap line.
                    assert!(in_gaps <= stats.lines_lost, "{case}");
                    let unwritten = stats.unwritten_gap.map_or(0, |gap| gap.lines);
                    assert_eq!(in_gaps + unwritten, stats.lines_lost, "{case}");
                }
            }
        }
    }

    #[test]
    fn lines_the_sources_dropped_become_a_gap() {
        let disk = MemoryDisk::default();
        let dropped = Arc::new(AtomicU64::new(5));
        let (tx, rx) = unbounded();
        tx.send(line("{\"type\":\"x\"}", false)).unwrap();
        tx.send(Message::Shutdown).unwrap();
        let writer = Writer::new(
            disk.clone(),
            "memory".into(),
            0,
            SyncPolicy::Never,
            Clock::start(),
            dropped,
        );
        writer.run(rx);
        let lines = decoded(&disk.written());
        assert_eq!(gaps(&lines)[0].lines, 5);
        assert!(gaps(&lines)[0].reason.contains("too slow"));
    }

    #[test]
    fn a_deleted_log_is_created_again_with_everything_and_an_orphan_waits_for_its_directory() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("logs");
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let file = crate::create_log(&path, |f| f.write_all(b"one\n")).unwrap();
        let mut log = LogFile {
            path: path.clone(),
            file,
        };
        log.append(b"two\n").unwrap();
        assert_eq!(log.check_place(8).unwrap(), Place::Linked);

        std::fs::remove_file(&path).unwrap();
        assert_eq!(log.check_place(8).unwrap(), Place::Recreated);
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\n");
        assert!(
            std::fs::File::open(&path).unwrap().try_lock().is_err(),
            "the new log is locked"
        );

        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(log.check_place(8).unwrap(), Place::Orphaned);
        log.append(b"three\n").unwrap();
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(log.check_place(14).unwrap(), Place::Recreated);
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\nthree\n");
    }
}
