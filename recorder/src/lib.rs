//! The recording side of tc-profile: sources send encoded lines over a crossbeam channel to
//! one writer thread that owns the log (a single write per line, group-commit fdatasync).
//!
//! Main types: [`Recorder`] (start, then [`Recorder::finish`]), [`MarkerSink`] (a cloneable
//! handle that adds markers from any thread), [`IntervalGuard`] (ends an interval marker
//! when dropped), [`SyncPolicy`].
//!
//! ```no_run
//! use tc_profile_recorder::{Recorder, RecorderConfig};
//! use tc_profile_format::{schema::category, EndReason};
//!
//! let recorder = Recorder::start(RecorderConfig::new("build.jsonl".into()))?;
//! let markers = recorder.markers();
//! {
//!     let _compile = markers.begin("compile", category::TASK, None);
//!     // ... work ...
//! } // the "compile" interval ends here
//! markers.instant("tests passed", category::TASK, None);
//! let finished = recorder.finish(EndReason::Stopped)?;
//! println!("{} lines written", finished.stats.lines);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cgroup;
mod clock;
mod command_line;
mod load;
mod machine;
mod pressure;
mod process_tree;
mod procfs;
mod profile_dir;
mod sampler;
mod statsd;
mod system;
mod writer;

pub use cgroup::{own_cgroup_name, remove_created_cgroup, CgroupError, OwnCgroup, TaskCgroup};
pub use clock::Clock;
pub use command_line::summarize as summarize_command;
pub use machine::{machine, task_from_env};
pub use process_tree::Follow;
pub use profile_dir::ProfileDirConfig;
pub use sampler::Sampler;
pub use statsd::{parse_line as parse_statsd_line, MAX_PACKET_BYTES};
pub use tc_profile_format::{sanitize_name, MetricLimits};
pub use writer::{LogSink, Place, SyncPolicy, WriterStats, MIN_SYNC_PERIOD};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use profile_dir::Ingester;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tc_profile_format::{
    encode_line, meta_line, thread_line, EndReason, Footer, Line, Marker, MetaInfo, OpenInterval,
    StatsdInfo, TaskInfo,
};
use writer::{LogFile, Message, Writer};

/// Messages waiting for the writer at most. Past this, sources drop lines (counted) rather
/// than block the task or grow memory while the disk is stuck. The channel itself is
/// unbounded, so that its memory follows the backlog: a bounded one allocates and touches
/// every slot at start (3 MB, a third of the recorder's start-up CPU).
const BACKLOG_LINES: usize = 1 << 16;
/// How long [`MarkerSink::begin`] waits for its line to be durable. An fdatasync takes
/// milliseconds; a disk that takes longer is failing, and the task's step does not wait
/// for it.
const DURABLE_WAIT: Duration = Duration::from_secs(1);
/// How long [`Recorder::finish`] waits for the sources' last lines and the writer's last
/// sync, and how long a drop without it waits (as tracing-appender's guard does): past
/// this, the disk is hung and the log is left as a killed recorder leaves it.
const FINISH_WAIT: Duration = Duration::from_secs(30);
const DROP_WAIT: Duration = Duration::from_secs(1);

/// How to record.
#[derive(Clone, Debug)]
pub struct RecorderConfig {
    pub log_path: PathBuf,
    /// Sampling interval of the system tracks.
    pub interval: Duration,
    pub sync: SyncPolicy,
    pub task: TaskInfo,
    /// Whether to sample resources at all (CPU, memory, disk, network, and what follows).
    pub sample_system: bool,
    /// The statsd listener's limits, or None for no listener.
    pub statsd: Option<MetricLimits>,
    /// The profile directory to follow, if any.
    pub profile_dir: Option<ProfileDirConfig>,
    /// The task's processes, drawn against the rest of the machine; none by default.
    pub follow: Option<Follow>,
    /// The task's cgroup, whose counters are recorded. When None, the cgroup of a followed
    /// pid or cgroup is used if it is not the recorder's own.
    pub cgroup: Option<TaskCgroup>,
}

impl RecorderConfig {
    /// Defaults: 0.1 s interval, interval sync once a second, the task from the
    /// environment, system sampling on, statsd listener on under `task.`.
    pub fn new(log_path: PathBuf) -> RecorderConfig {
        let interval = Duration::from_millis(100);
        RecorderConfig {
            log_path,
            interval,
            sync: SyncPolicy::interval(interval),
            task: task_from_env(),
            sample_system: true,
            statsd: Some(MetricLimits::default()),
            profile_dir: None,
            follow: None,
            cgroup: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecorderError {
    #[error(
        "{path}: a log is already there; finalize it (tc-profile finalize) or remove it first"
    )]
    LogExists { path: PathBuf },
    #[error("{path}: cannot create the log: {source}")]
    CreateLog {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the statsd socket on 127.0.0.1: {0}")]
    Statsd(std::io::Error),
    #[error("cannot start the {thread} thread: {source}")]
    Thread {
        thread: &'static str,
        source: std::io::Error,
    },
    #[error("{path}: cannot use it as the profile directory: {source}")]
    ProfileDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the writer thread panicked; the log ends at its last complete line")]
    WriterPanicked,
    #[error(
        "{path}: the disk did not take the log's last lines within {} s; the log is left as a \
         killed recorder leaves it, locked until this process exits: finalize it then \
         (tc-profile finalize, or recover --state-dir)",
        waited.as_secs()
    )]
    WriterHung { path: PathBuf, waited: Duration },
}

/// What a recording ended with: the writer's statistics and the log, still open and still
/// locked, so that finalizing it leaves no moment in which a recoverer could take it.
#[must_use = "the log stays locked until this is dropped"]
pub struct Finished {
    pub stats: WriterStats,
    /// The log, opened for reading and appending, holding its exclusive lock.
    pub log: File,
}

/// A running recording. Call [`Recorder::finish`] to end it with a clean-end footer.
#[must_use = "a recorder ends cleanly only through finish()"]
pub struct Recorder {
    markers: MarkerSink,
    log_path: PathBuf,
    writer: Option<WriterThread<LogFile>>,
    sampler: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    statsd: Option<StatsdThread>,
    ingester: Option<Ingester>,
}

struct StatsdThread {
    address: SocketAddr,
    stop: Sender<()>,
    handle: JoinHandle<()>,
}

impl Recorder {
    /// Creates the log (never over an existing one) and locks it for the recording's whole
    /// life, makes its meta and thread lines durable, and starts the writer and the sampler.
    pub fn start(config: RecorderConfig) -> Result<Recorder, RecorderError> {
        let clock = Clock::start();
        let profile_dir = match &config.profile_dir {
            Some(dir) => Some(profile_dir::prepare(&dir.path)?),
            None => None,
        };
        let sampler = Sampler::probe(&config, clock);
        let mut sources = sampler.sources();
        let statsd_socket = match &config.statsd {
            Some(_) => Some(statsd::bind().map_err(RecorderError::Statsd)?),
            None => None,
        };
        let statsd_info = match (&statsd_socket, &config.statsd) {
            (Some(socket), Some(limits)) => {
                sources.push(tc_profile_format::schema::source::STATSD.to_owned());
                Some(StatsdInfo {
                    address: socket
                        .local_addr()
                        .map_err(RecorderError::Statsd)?
                        .to_string(),
                    prefix: limits.prefix.clone(),
                    max_packet_bytes: MAX_PACKET_BYTES,
                    max_series: limits.max_series,
                })
            }
            _ => None,
        };
        let meta = meta_line(&MetaInfo {
            start_time: clock.start_epoch_ms(),
            interval_ms: config.interval.as_secs_f64() * 1000.0,
            machine: machine(),
            task: config.task.clone(),
            sources,
            sync_policy: config.sync.name(),
            recorder: format!("tc-profile {}", env!("CARGO_PKG_VERSION")),
            statsd: statsd_info,
            profile_dir: profile_dir.map(|dir| dir.to_string_lossy().into_owned()),
            cgroup: sampler.cgroup().cloned(),
        });
        let schemas = schema_names(&meta);
        let headers = [meta, thread_line("tc-profile")].map(|line| encode_line(&line));
        let path = &config.log_path;
        let file = create_log(path, |file| {
            headers.iter().try_for_each(|h| file.write_all(h))
        })
        .map_err(|source| {
            if source.kind() == io::ErrorKind::AlreadyExists {
                RecorderError::LogExists { path: path.clone() }
            } else {
                RecorderError::CreateLog {
                    path: path.clone(),
                    source,
                }
            }
        })?;

        let log = LogFile {
            path: path.clone(),
            file,
        };
        let length = headers.iter().map(|h| h.len() as u64).sum();
        let name = path.display().to_string();
        let (markers, writer) = start_writer(log, name, length, config.sync, clock)?;
        let mut recorder = Recorder {
            markers: markers.clone(),
            log_path: path.clone(),
            writer: Some(writer),
            sampler: None,
            statsd: None,
            ingester: None,
        };
        if let Some(dir) = &config.profile_dir {
            // Metrics in marker files go under the statsd listener's prefix and caps.
            let limits = config.statsd.clone().unwrap_or_default();
            let metrics = (limits, config.interval);
            recorder.ingester = Some(Ingester::start(dir, markers.clone(), schemas, metrics)?);
        }
        if let (Some(socket), Some(limits)) = (statsd_socket, config.statsd) {
            let address = socket.local_addr().map_err(RecorderError::Statsd)?;
            let (stop, stopped) = bounded(1);
            let listener = statsd::Listener::new(socket, limits, markers.clone(), config.interval);
            let handle = spawn("tc-profile-statsd", move || listener.run(stopped))?;
            recorder.statsd = Some(StatsdThread {
                address,
                stop,
                handle,
            });
        }
        if !sampler.is_empty() {
            let stop = Arc::new(AtomicBool::new(false));
            let interval = config.interval;
            let handle = spawn("tc-profile-sampler", {
                let stop = Arc::clone(&stop);
                move || run_sampler(sampler, markers, interval, &stop)
            })?;
            recorder.sampler = Some((stop, handle));
        }
        Ok(recorder)
    }

    /// Where the statsd listener takes packets, when it is on.
    pub fn statsd_address(&self) -> Option<SocketAddr> {
        self.statsd.as_ref().map(|s| s.address)
    }

    /// A handle that adds markers to this recording from any thread.
    pub fn markers(&self) -> MarkerSink {
        self.markers.clone()
    }

    /// Takes a last sample and the marker files' last lines, appends the clean-end footer,
    /// makes the log durable and joins the threads. The log stays locked in the returned
    /// [`Finished`]. Waits 30 s at most: when the log's disk hangs, it returns
    /// [`RecorderError::WriterHung`] and leaves the writer thread behind, holding the log
    /// (and its lock) until the process exits; what the writer had written is in the log,
    /// and what the sources had not taken is still in the marker files.
    pub fn finish(mut self, reason: EndReason) -> Result<Finished, RecorderError> {
        let deadline = Instant::now() + FINISH_WAIT;
        self.stop_sources(deadline);
        let footer = Line::Footer(Footer {
            end_time: self.markers.now(),
            reason,
        });
        self.markers.send(encode_line(&footer), true);
        let (stats, log) = match self.stop_writer(deadline) {
            Ok(Some(finished)) => finished,
            Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                return Err(RecorderError::WriterPanicked)
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(RecorderError::WriterHung {
                    path: self.log_path.clone(),
                    waited: FINISH_WAIT,
                })
            }
        };
        Ok(Finished {
            stats,
            log: log.file,
        })
    }

    fn stop_sources(&mut self, deadline: Instant) {
        if let Some((stop, handle)) = self.sampler.take() {
            stop.store(true, Ordering::Release);
            handle.thread().unpark();
            let _ = handle.join();
        }
        if let Some(statsd) = self.statsd.take() {
            let _ = statsd.stop.send(());
            statsd::wake(statsd.address);
            let _ = statsd.handle.join();
        }
        if let Some(ingester) = self.ingester.take() {
            ingester.stop(deadline);
        }
    }

    fn stop_writer(
        &mut self,
        deadline: Instant,
    ) -> Result<Option<(WriterStats, LogFile)>, RecvTimeoutError> {
        match self.writer.take() {
            Some(writer) => writer.stop(&self.markers, deadline).map(Some),
            None => Ok(None),
        }
    }
}

impl Drop for Recorder {
    /// Without finish(): the threads stop and the log stays as a crash would leave it,
    /// without a footer, so that the finalizer says the recording ended early. Waits a
    /// second at most for the log's disk.
    fn drop(&mut self) {
        let deadline = Instant::now() + DROP_WAIT;
        self.stop_sources(deadline);
        let _ = self.stop_writer(deadline);
    }
}

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
        let _ = markers.sender.send(Message::Shutdown);
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
    let (sender, receiver) = unbounded();
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

/// The `name` of every schema in a meta line.
fn schema_names(meta: &Line) -> Vec<String> {
    let Line::Meta(meta) = meta else {
        return Vec::new();
    };
    let schemas = meta.get("markerSchema").and_then(Value::as_array);
    schemas
        .into_iter()
        .flatten()
        .filter_map(|schema| Some(schema.get("name")?.as_str()?.to_owned()))
        .collect()
}

pub(crate) fn spawn<T: Send + 'static>(
    name: &'static str,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, RecorderError> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(body)
        .map_err(|source| RecorderError::Thread {
            thread: name,
            source,
        })
}

/// Creates a log that `fill` starts, durable, with its directory entry durable too, and
/// locked. The lock is taken before the first byte: a recoverer that wins the race to it
/// finds an empty file, which it leaves alone (SPEC.md, "Locking and recovery").
pub(crate) fn create_log(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .open(path)?;
    let made_durable = file
        .lock()
        .and_then(|()| fill(&mut file))
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            let parent = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            File::open(parent)?.sync_all()
        });
    if let Err(error) = made_durable {
        // Ours alone (created exclusively): a log without its headers would only be
        // something for a recoverer to clear away.
        let _ = std::fs::remove_file(path);
        return Err(error);
    }
    Ok(file)
}

/// From this far into a recording on, samples are at least [`COARSE_INTERVAL`] apart: a
/// day-long task then keeps a log of about 80 MB instead of 750 MB (README, "Long tasks").
pub const COARSE_AFTER: Duration = Duration::from_secs(600);
/// The shortest interval between samples after [`COARSE_AFTER`].
pub const COARSE_INTERVAL: Duration = Duration::from_secs(1);

/// The interval between samples `elapsed` into a recording sampled every `base` at first.
pub fn sampling_interval(base: Duration, elapsed: Duration) -> Duration {
    if elapsed >= COARSE_AFTER {
        base.max(COARSE_INTERVAL)
    } else {
        base
    }
}

/// Samples every `interval` (see [`sampling_interval`]) until `stop` is set, then once
/// more, the last time.
fn run_sampler(mut sampler: Sampler, markers: MarkerSink, interval: Duration, stop: &AtomicBool) {
    let started = Instant::now();
    let mut next = started;
    loop {
        let last = stop.load(Ordering::Acquire);
        let mut lines = Vec::with_capacity(2048);
        let now = markers.now();
        let count = if last {
            sampler.last_tick(now, &mut lines)
        } else {
            sampler.tick(now, &mut lines)
        };
        if count > 0 {
            markers.send_lines(lines, count, false);
        }
        if last {
            return;
        }
        let interval = sampling_interval(interval, next - started);
        next += interval;
        // After a stall (a suspended VM, an overloaded host) skip the missed ticks.
        let now = Instant::now();
        if next < now {
            next = now + interval;
        }
        sleep_until(next, stop);
    }
}

/// Sleeps until `deadline`, or until `stop` is set and the thread unparked. Parking is one
/// futex wait; a channel's receive with a deadline spins and yields a dozen times first,
/// which at ten ticks a second cost more than the sampling.
fn sleep_until(deadline: Instant, stop: &AtomicBool) {
    loop {
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Acquire) {
            return;
        }
        std::thread::park_timeout(deadline - now);
    }
}

/// Adds markers to a recording. Cheap to clone; encoding happens on the caller's thread so
/// the writer only writes.
#[derive(Clone)]
pub struct MarkerSink {
    sender: Sender<Message>,
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
        if self.send(encode_line(&Line::Open(open.clone())), true) {
            self.wait_durable();
        }
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
    fn send_lines(&self, bytes: Vec<u8>, count: u64, urgent: bool) -> bool {
        if self.sender.len() >= BACKLOG_LINES {
            self.dropped.fetch_add(count, Ordering::Relaxed);
            return false;
        }
        self.send_batch(bytes, count, urgent)
    }

    /// Sends `count` encoded lines for one write, however far behind the writer is: a
    /// batch of marker-file lines is never dropped, or a later checkpoint would claim it.
    pub(crate) fn send_batch(&self, bytes: Vec<u8>, count: u64, urgent: bool) -> bool {
        let message = Message::Line {
            bytes,
            count,
            urgent,
        };
        let sent = self.sender.send(message).is_ok();
        if !sent {
            self.dropped.fetch_add(count, Ordering::Relaxed);
        }
        sent
    }

    /// Messages waiting for the writer.
    pub(crate) fn backlog(&self) -> usize {
        self.sender.len()
    }

    /// Waits until every line this thread sent is durable, up to `durable_wait`.
    fn wait_durable(&self) {
        let Some(wait) = self.durable_wait else {
            return;
        };
        let (done, durable) = bounded(1);
        if self.sender.send(Message::Durable(done)).is_ok() {
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

    #[test]
    fn samples_thin_out_to_one_a_second_after_ten_minutes() {
        let tenth = Duration::from_millis(100);
        let minutes = |m: u64| Duration::from_secs(m * 60);
        assert_eq!(sampling_interval(tenth, minutes(9)), tenth);
        assert_eq!(sampling_interval(tenth, minutes(10)), COARSE_INTERVAL);
        assert_eq!(sampling_interval(tenth, minutes(24 * 60)), COARSE_INTERVAL);
        let slow = Duration::from_secs(5);
        assert_eq!(sampling_interval(slow, minutes(60)), slow, "never faster");
    }
}
