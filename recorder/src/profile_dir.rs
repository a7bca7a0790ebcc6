//! The profile-directory source: follows the marker files that task and worker processes
//! write to `$TASKCLUSTER_PROFILE_DIR` and appends their new whole lines to the log as
//! batches that end in a checkpoint (SPEC.md, "Marker files", "Exactly once"). Woken by
//! inotify (its events read on the source's own thread), with a rescan every 5 s; every
//! poll interval where inotify is not available (and on every other OS so far).

use crate::channel::MarkerSink;
use crate::error::{spawn, RecorderError};
#[cfg(target_os = "linux")]
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use serde_json::{Map, Value};
#[cfg(target_os = "linux")]
use std::io::ErrorKind;
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tc_profile_format::marker_file::Limits;
use tc_profile_format::profile_dir::DirReader;
use tc_profile_format::schema::category;
use tc_profile_format::{
    encode_line_into, BatchEnd, Checkpoint, FileProgress, Line, Merger, MetricLimits, Taken,
};
use tc_profile_fs::{Dir, PRIVATE_DIR};

/// The rescan period while inotify works, for the writes it does not report (through a
/// shared mapping; on a file system that does not report every write). An overflowing
/// event queue is itself an event, which wakes the source at once. Slow, because the
/// wake-up is most of an idle rescan's cost (one stat of the directory, one a file).
const RESCAN_WITH_EVENTS: Duration = Duration::from_secs(5);
/// Messages waiting for the writer above which a batch waits for room, and how long it
/// waits at most: the files keep what is not taken yet, so waiting loses nothing and bounds
/// the memory while the disk is slow.
const BACKLOG_BATCHES: usize = 8;
const BATCH_WAIT: Duration = Duration::from_secs(10);
/// The least time from one scan's start to the next one's, and the time between scans while
/// they find lines (the events are not read then). Each scan costs a directory listing and
/// a few system calls a file: a burst's lines gather into batches a few hundred lines long
/// instead of a few dozen, for a millisecond more between a line's write and the log at most.
const SCAN_GAP: Duration = Duration::from_millis(1);

/// Where the marker files are, and how to read them.
#[derive(Clone, Debug)]
pub struct ProfileDirConfig {
    /// Created when missing; never followed through a symbolic link.
    pub path: PathBuf,
    pub limits: Limits,
    /// Use inotify; without it, or where it fails, rescan every `poll_interval`.
    pub watch: bool,
    pub poll_interval: Duration,
    /// The least time from one scan's start to the next one's with inotify (by default
    /// a millisecond): longer, a task's markers written one at a time are
    /// taken a batch of many a scan, for as much more time before they are in the log.
    pub scan_gap: Duration,
    /// How far an earlier log of the same directory took each file (its checkpoints): read
    /// on from there, so that a line is in one log only (the daemon's task logs in parts).
    pub resume: Vec<FileProgress>,
    /// The schemas marker files declared in those earlier logs: the lines read on are
    /// checked against them, as if read in the same log.
    pub resume_schemas: Vec<Map<String, Value>>,
}

impl ProfileDirConfig {
    pub fn new(path: PathBuf) -> ProfileDirConfig {
        ProfileDirConfig {
            path,
            limits: Limits::default(),
            watch: true,
            poll_interval: Duration::from_millis(100),
            scan_gap: SCAN_GAP,
            resume: Vec::new(),
            resume_schemas: Vec::new(),
        }
    }
}

/// Creates the directory when missing (its owner's alone, never through a symbolic link at
/// its name: SPEC.md, "Hostile directories"); returns its absolute path for the meta line.
/// `run`, `record` and the daemon create it first, to remove it at the end; this one, made
/// when the task removed it meanwhile, is left.
pub(crate) fn prepare(path: &Path) -> Result<PathBuf, RecorderError> {
    let error = |source| RecorderError::ProfileDir {
        path: path.to_owned(),
        source,
    };
    let created =
        Dir::open_parent(path).and_then(|(parent, name)| parent.create_dir(name, PRIVATE_DIR));
    match created {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(error(e)),
    }
    std::path::absolute(path).map_err(error)
}

/// The running source; [`Ingester::stop`] takes what is left and ends it.
pub(crate) struct Ingester {
    /// The deadline of the last lines.
    stop: SyncSender<Instant>,
    /// The source's watch, removed by the stop: its removal event wakes the source.
    watch: Option<WatchHandle>,
    /// Disconnected when the source's thread ends.
    ended: Receiver<()>,
}

/// The directory's inotify watch, made before the log is created so that the log's
/// descriptor is above the watch's: the kernel releases a killed process's files from its
/// highest descriptor down, and releasing an inotify descriptor waits for the kernel's
/// pending work, which kept the log locked for 10 to 70 ms after a SIGKILL (1 ms with the
/// log above it; SPEC.md, "Locking and recovery").
pub(crate) struct DirWatch {
    watcher: Option<Watcher>,
}

impl DirWatch {
    pub(crate) fn start(config: &ProfileDirConfig) -> DirWatch {
        let watcher = config.watch.then(|| Watcher::add(&config.path)).flatten();
        DirWatch { watcher }
    }
}

impl Ingester {
    pub(crate) fn start(
        config: &ProfileDirConfig,
        watch: DirWatch,
        sink: MarkerSink,
        schemas: &[Value],
        metrics: (MetricLimits, Duration),
    ) -> Result<Ingester, RecorderError> {
        let mut reader =
            DirReader::open(&config.path, config.limits.clone()).map_err(|source| {
                RecorderError::ProfileDir {
                    path: config.path.clone(),
                    source,
                }
            })?;
        for progress in &config.resume {
            reader.resume(progress);
        }
        let ids = sink.next_id.clone();
        let mut merger = Merger::new(
            sink.clock().start_epoch_ms(),
            config.limits.clone(),
            schemas,
            Box::new(move || ids.fetch_add(1, Ordering::Relaxed)),
        )
        .with_metrics(metrics.0, metrics.1.as_secs_f64() * 1000.0);
        for schema in &config.resume_schemas {
            merger.adopt_schema(schema);
        }
        let watcher = watch.watcher;
        let stop_watch = watcher.as_ref().map(Watcher::handle);
        let (stop, stopped) = sync_channel(1);
        let (end, ended) = sync_channel::<()>(0);
        let mut source = Source {
            reader,
            merger,
            sink,
            stopped,
            deadline: None,
            batch_bytes: 0,
        };
        let (poll_interval, scan_gap) = (config.poll_interval, config.scan_gap);
        spawn("tc-profile-markers", move || {
            let _end = end;
            source.run(watcher, poll_interval, scan_gap);
        })?;
        Ok(Ingester {
            stop,
            watch: stop_watch,
            ended,
        })
    }

    /// Takes every whole line written so far, then stops; by `deadline` at most. Lines not
    /// taken by then stay in their files, past the last checkpoint, for the finalizer; a
    /// source stuck on a hung disk is left behind.
    pub(crate) fn stop(self, deadline: Instant) {
        let _ = self.stop.send(deadline);
        if let Some(handle) = self.watch {
            remove_watch(handle);
        }
        let _ = self
            .ended
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
    }
}

/// What removes a [`Watcher`]'s watch from another thread.
#[cfg(target_os = "linux")]
type WatchHandle = (Watches, WatchDescriptor);

#[cfg(target_os = "linux")]
fn remove_watch((mut watches, descriptor): WatchHandle) {
    // Fails only when the watch is gone already: its removal event is queued then.
    let _ = watches.remove(descriptor);
}

/// No change notices on the other systems yet: the directory is scanned every poll
/// interval, and a watcher is never made.
#[cfg(not(target_os = "linux"))]
enum Watcher {}

#[cfg(not(target_os = "linux"))]
type WatchHandle = Watcher;

#[cfg(not(target_os = "linux"))]
impl Watcher {
    fn add(_path: &Path) -> Option<Watcher> {
        None
    }

    fn handle(&self) -> WatchHandle {
        match *self {}
    }

    fn wait(&mut self, _timeout: Duration) -> Woken {
        match *self {}
    }
}

#[cfg(not(target_os = "linux"))]
fn remove_watch(handle: WatchHandle) {
    match handle {}
}

/// The events that can mean lines to take. Not the opens, reads and closes after reading
/// that the source's own scans cause: waking on those, it would scan for ever. An
/// overflowing queue (which may hide new lines) is reported whatever the mask.
#[cfg(target_os = "linux")]
const LINE_EVENTS: WatchMask = WatchMask::CREATE
    .union(WatchMask::MODIFY)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::DELETE)
    .union(WatchMask::ATTRIB);
/// The events one read takes at most (about 32 bytes each).
#[cfg(target_os = "linux")]
const EVENT_BUFFER: usize = 64 << 10;

/// The directory's inotify watch, read on the source's thread.
#[cfg(target_os = "linux")]
struct Watcher {
    inotify: Inotify,
    descriptor: WatchDescriptor,
    buffer: Vec<u8>,
}

/// What waiting on a [`Watcher`] ended with.
#[derive(Debug, PartialEq)]
enum Woken {
    Events,
    Timeout,
    /// The watch is gone: removed by the stop, or with its directory.
    Removed,
}

#[cfg(target_os = "linux")]
impl Watcher {
    /// None where inotify is not available.
    fn add(path: &Path) -> Option<Watcher> {
        let inotify = Inotify::init().ok()?;
        let descriptor = inotify.watches().add(path, LINE_EVENTS).ok()?;
        Some(Watcher {
            inotify,
            descriptor,
            buffer: vec![0; EVENT_BUFFER],
        })
    }

    /// What removes the watch from another thread.
    fn handle(&self) -> (Watches, WatchDescriptor) {
        (self.inotify.watches(), self.descriptor.clone())
    }

    /// Waits up to `timeout` for events, and takes what one read gets of them: the events
    /// left from a burst cost a read a scan, not a wake-up each.
    fn wait(&mut self, timeout: Duration) -> Woken {
        let mut ready = libc::pollfd {
            fd: self.inotify.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one pollfd, valid for the call.
        if unsafe { libc::poll(&mut ready, 1, timeout_ms) } <= 0 {
            return Woken::Timeout; // or interrupted: a rescan costs little
        }
        match self.inotify.read_events(&mut self.buffer) {
            Ok(mut events) => match events.any(|e| e.mask.contains(EventMask::IGNORED)) {
                true => Woken::Removed,
                false => Woken::Events,
            },
            Err(error) if error.kind() == ErrorKind::WouldBlock => Woken::Events,
            // The descriptor failed: rescans go on by the poll interval.
            Err(_) => Woken::Removed,
        }
    }
}

struct Source {
    reader: DirReader,
    merger: Merger,
    sink: MarkerSink,
    /// The standard library's channel, not crossbeam's: crossbeam's blocking receive spins
    /// and yields about a dozen times before it sleeps, and this thread waits on it at each
    /// scan (with 16 tasks at the daemon's 1 s scan gap, those yields were 7 % of its CPU).
    stopped: Receiver<Instant>,
    /// Once stopping: when to stop taking lines.
    deadline: Option<Instant>,
    /// The last batch's encoded size, which the next one likely needs too: its lines (a
    /// second's at the daemon's scan gap) are encoded into one allocation, not into one
    /// grown from 4 KiB by reallocations (each of which makes glibc consolidate its free
    /// chunks).
    batch_bytes: usize,
}

impl Source {
    /// Scans when `watcher` reports events (a rescan every [`RESCAN_WITH_EVENTS`] all the
    /// same; at most one scan a `scan_gap`), or every `poll_interval` without a watch,
    /// until the stop.
    fn run(&mut self, mut watcher: Option<Watcher>, poll_interval: Duration, scan_gap: Duration) {
        while self.deadline.is_none() {
            let scanned = Instant::now();
            let took = self.take_all();
            let woken = match &mut watcher {
                // While scans find lines, the next one comes a scan gap later without the
                // events being read: a burst's thousands of them (one a write) stay in the
                // kernel's queue, which drops what overflows, until the files are quiet.
                Some(_) if took => Woken::Events,
                Some(watch) => watch.wait(RESCAN_WITH_EVENTS),
                None => match self.stopped.recv_timeout(poll_interval) {
                    Ok(deadline) => {
                        self.deadline = Some(deadline);
                        continue;
                    }
                    Err(_) => Woken::Timeout,
                },
            };
            if woken == Woken::Removed {
                watcher = None;
            }
            self.deadline = match woken {
                // At most one scan a scan gap: a burst's events gather meanwhile.
                Woken::Events => {
                    let wait = (scanned + scan_gap).saturating_duration_since(Instant::now());
                    self.stopped.recv_timeout(wait).ok()
                }
                Woken::Timeout | Woken::Removed => self.stopped.try_recv().ok(),
            };
        }
        self.take_all();
    }

    /// Sends batches until nothing new is left, or the deadline of stopping has passed;
    /// whether any bytes were read.
    fn take_all(&mut self) -> bool {
        let mut took = false;
        while self
            .deadline
            .is_none_or(|deadline| Instant::now() < deadline)
        {
            let mut lines = Vec::with_capacity(self.batch_bytes.max(4096));
            encode_line_into(&mut lines, &Line::Ingest(Default::default()));
            let (mut count, mut urgent) = (0, false);
            let mut encode = |line: Taken| {
                // Worker lifecycle lines are made durable at once, like the recorder's own.
                urgent |= line.category() == Some(category::WORKER);
                line.encode_into(&mut lines);
                count += 1;
            };
            let Ok(end) =
                self.merger
                    .read_batch_with(&mut self.reader, false, now_epoch_ms(), &mut encode)
            else {
                return took; // The directory is gone or unreadable: nothing to take.
            };
            let more = end.scan.more;
            took |= end.scan.bytes > 0;
            self.send(lines, count, urgent, end);
            if !more {
                return took;
            }
        }
        took
    }

    /// Waits while the writer is behind, [`BATCH_WAIT`] at most, and not past the deadline
    /// of stopping (which may arrive meanwhile).
    fn wait_for_room(&mut self) {
        let waited_enough = Instant::now() + BATCH_WAIT;
        while self.sink.backlog() >= BACKLOG_BATCHES {
            if let Ok(deadline) = self.stopped.try_recv() {
                self.deadline = Some(deadline);
            }
            let until = self
                .deadline
                .map_or(waited_enough, |d| d.min(waited_enough));
            if Instant::now() >= until {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// One write: `ingest`, the `count` lines encoded after it in `lines`, what was
    /// dropped, and the checkpoint.
    fn send(&mut self, mut lines: Vec<u8>, count: u64, urgent: bool, end: BatchEnd) {
        let files = self.reader.take_progress();
        if count == 0 && end.dropped.is_empty() && end.scan.bytes == 0 && files.is_empty() {
            return;
        }
        let count = count + end.dropped.len() as u64 + 2;
        for dropped in end.dropped {
            encode_line_into(&mut lines, &Line::Dropped(dropped));
        }
        encode_line_into(&mut lines, &Line::Checkpoint(Checkpoint { files }));
        self.wait_for_room();
        self.batch_bytes = lines.len();
        self.sink.send_batch(lines, count, urgent);
    }
}

pub(crate) fn now_epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1000.0
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_write_wakes_the_source_its_own_reads_do_not_and_the_stop_removing_the_watch_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut watcher = Watcher::add(dir.path()).expect("inotify");
        let file = dir.path().join("1.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        assert_eq!(watcher.wait(Duration::from_secs(10)), Woken::Events);
        std::thread::sleep(Duration::from_millis(50));
        watcher.wait(Duration::ZERO); // the write's later events, if read apart
        std::fs::read(&file).unwrap();
        assert_eq!(
            watcher.wait(Duration::from_millis(200)),
            Woken::Timeout,
            "woken by its own read"
        );
        let (mut watches, descriptor) = watcher.handle();
        let removing = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            watches.remove(descriptor).unwrap();
        });
        assert_eq!(watcher.wait(Duration::from_secs(600)), Woken::Removed);
        removing.join().unwrap();
    }
}
