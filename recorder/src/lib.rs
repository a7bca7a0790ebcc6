//! The recording side of tc-profile: sources send encoded lines over a crossbeam channel to
//! one writer thread that owns the log (a single write per line, group-commit fdatasync).
//!
//! The modules follow the lines: `sources/` (what the sampler reads: /proc, /sys, the
//! task's cgroup and processes), `sampler` (composes them, one tick a message),
//! `profile_dir`, `statsd`, `influx` and `task_output` (the other sources: task marker
//! files, metrics packets, InfluxDB writes, the command's stdout and stderr; and
//! `task_log_file`, the worker's log file),
//! `channel` (the sending end every source holds, [`MarkerSink`]), `writer/` (the one
//! thread that owns the log), and this file, the API: [`Recorder`] starts them all, in
//! that order, after `header` has made the log's first lines durable.
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

// What Linux's sources share (the machine's /proc files, their parsing, the test helpers)
// builds everywhere and is unused elsewhere; dead code is caught by the Linux build.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

mod channel;
mod clock;
mod config;
mod error;
mod header;
mod influx;
mod meta;
mod profile_dir;
mod sampler;
mod sources;
mod statsd;
mod task_log_file;
mod task_output;
pub mod token;
mod writer;

pub use channel::{IntervalGuard, MarkerSink};
pub use clock::Clock;
pub use config::RecorderConfig;
pub use error::RecorderError;
pub use influx::{ForwardStats, MAX_BODY_BYTES, MAX_UNSENT_BYTES};
/// Reading one HTTP/1.1 request, bounded, and writing its answer (the InfluxDB endpoint's,
/// and the daemon's).
pub mod http {
    pub use crate::influx::http::{
        error_body, parse_head, read_request, write_chunked, write_response, Head, ReadError,
        Request, Response, JSON, MAX_HEAD_BYTES,
    };
}
pub use meta::{machine, task_from_env};
pub use profile_dir::ProfileDirConfig;
pub use sampler::{sampling_interval, Sampler, COARSE_AFTER, COARSE_INTERVAL};
#[cfg(target_os = "linux")]
pub use sources::cgroup::own::{own_cgroup_name, remove_created_cgroup, CgroupError, OwnCgroup};
#[cfg(not(target_os = "linux"))]
pub use sources::command_summary::command_line::summarize as summarize_command;
#[cfg(all(unix, not(target_os = "linux")))]
pub use sources::command_summary::wait_status::describe_status as describe_wait_status;
pub use sources::machine::SharedMachine;
#[cfg(target_os = "linux")]
pub use sources::process_tree::command_line::summarize as summarize_command;
#[cfg(target_os = "linux")]
pub use sources::process_tree::wait_status::describe_status as describe_wait_status;
pub use sources::{Follow, ProcessExits, TaskCgroup};
pub use statsd::{
    parse_line as parse_statsd_line, record_packet as record_statsd_packet, MAX_PACKET_BYTES,
};
pub use tc_profile_format::MetricLimits;
pub use tc_profile_influx::InfluxTarget;
pub use writer::{LogSink, Place, SyncPolicy, WriterStats, MIN_SYNC_PERIOD};

use channel::{start_writer, WriterThread};
use crossbeam_channel::RecvTimeoutError;
use error::spawn;
use header::MetricEndpoints;
#[cfg(target_os = "linux")]
use influx::Unserved;
use influx::{Forwarder, Forwarding, InfluxThreads};
use profile_dir::{DirWatch, Ingester};
use sampler::Steering;
#[cfg(target_os = "linux")]
use statsd::SocketFile;
use std::fs::File;
use std::io::Read;
#[cfg(target_os = "linux")]
use std::io::{PipeWriter, Write};
use std::net::SocketAddr;
#[cfg(target_os = "linux")]
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use task_log_file::LogFileSource;
use task_output::TaskOutput;
use tc_profile_format::marker_file::Limits as MarkerFileLimits;
use tc_profile_format::task_log::Stream;
use tc_profile_format::{EndReason, Footer, Line};
use writer::LogFile;

/// How long [`Recorder::finish`] waits for the sources' last lines and the writer's last
/// sync, and how long a drop without it waits (as tracing-appender's guard does): past
/// this, the disk is hung and the log is left as a killed recorder leaves it.
const FINISH_WAIT: Duration = Duration::from_secs(30);
const DROP_WAIT: Duration = Duration::from_secs(1);
/// How long [`Recorder::finish`] goes on forwarding the endpoint's points not sent yet.
const FORWARD_WAIT: Duration = Duration::from_secs(10);

/// What a recording ended with: the writer's statistics and the log, still open and still
/// locked, so that finalizing it leaves no moment in which a recoverer could take it.
#[must_use = "the log stays locked until this is dropped"]
pub struct Finished {
    pub stats: WriterStats,
    /// The log, opened for reading and appending, holding its exclusive lock.
    pub log: File,
    /// What forwarding to an InfluxDB did, when there was one.
    pub forwarded: Option<ForwardStats>,
}

/// What a recording of a task hands to the next one ([`Recorder::hand_over`]).
#[derive(Default)]
pub struct Handover {
    /// The statsd listener's sockets, bound and with what clients sent still queued.
    #[cfg(target_os = "linux")]
    statsd: Option<statsd::listener::Inputs>,
}

/// A sample asked for by [`Recorder::sample_now`].
#[must_use = "wait() tells when the sample is in the log"]
pub struct SampleTaken {
    /// None when the recording samples nothing.
    written: Option<crossbeam_channel::Receiver<()>>,
}

impl SampleTaken {
    /// Waits until the sample's lines are in the log (readable, not yet durable), or there
    /// are none to wait for, `timeout` at most; whether they came in time.
    pub fn wait(self, timeout: Duration) -> bool {
        self.written.is_none_or(|written| {
            !matches!(
                written.recv_timeout(timeout),
                Err(RecvTimeoutError::Timeout)
            )
        })
    }
}

/// A running recording. Call [`Recorder::finish`] to end it with a clean-end footer.
#[must_use = "a recorder ends cleanly only through finish()"]
pub struct Recorder {
    markers: MarkerSink,
    log_path: PathBuf,
    writer: Option<WriterThread<LogFile>>,
    sampler: Option<(Arc<Steering>, JoinHandle<()>)>,
    #[cfg(target_os = "linux")]
    statsd: Option<StatsdThread>,
    influx: Option<InfluxThreads>,
    forwarder: Option<Forwarder>,
    ingester: Option<Ingester>,
    task_output: Option<TaskOutput>,
    task_log: Option<LogFileSource>,
    /// The task's log file goes on after this recording: see [`Recorder::leave_task_log_open`].
    task_log_goes_on: bool,
}

/// The statsd listener's thread, and how to stop it.
#[cfg(target_os = "linux")]
struct StatsdThread {
    udp_address: Option<SocketAddr>,
    /// The socket's file, removed once the thread has ended.
    socket_file: Option<SocketFile>,
    /// Written to stop the thread: made at start, so that stopping needs no new descriptor
    /// (which the stop could fail to open, out of descriptors, and then wait for ever).
    stop: PipeWriter,
    handle: JoinHandle<statsd::listener::Sockets>,
}

#[cfg(target_os = "linux")]
impl StatsdThread {
    fn start(
        inputs: statsd::listener::Inputs,
        limits: MetricLimits,
        markers: &MarkerSink,
        interval: Duration,
        endpoint: Option<Unserved>,
    ) -> Result<StatsdThread, RecorderError> {
        let udp = inputs.udp;
        let udp_address = udp.as_ref().map(UdpSocket::local_addr).transpose();
        let udp_address = udp_address.map_err(RecorderError::Statsd)?;
        let (stopped, stop) = std::io::pipe().map_err(RecorderError::Statsd)?;
        let (socket, socket_file) = inputs.socket.unzip();
        let sockets = (socket, udp);
        let listener = statsd::listener::Listener::new(
            sockets,
            stopped,
            limits,
            markers.clone(),
            interval,
            endpoint,
        );
        let handle = spawn("tc-profile-statsd", move || listener.run())?;
        Ok(StatsdThread {
            udp_address,
            socket_file,
            stop,
            handle,
        })
    }

    /// Stops the thread once it has taken what is queued; then returns its sockets, to
    /// `keep`, or removes the socket's file.
    fn stop(mut self, keep: bool) -> Option<statsd::listener::Inputs> {
        let _ = self.stop.write_all(&[0]);
        let sockets = self.handle.join().ok();
        match (keep, sockets) {
            (true, Some((socket, udp))) => Some(statsd::listener::Inputs {
                socket: socket.zip(self.socket_file),
                udp,
            }),
            _ => {
                if let Some(file) = self.socket_file {
                    file.remove();
                }
                None
            }
        }
    }
}

impl Recorder {
    /// Creates the log (never over an existing one) and locks it for the recording's whole
    /// life, makes its meta and thread lines durable, and starts the writer and the sampler.
    pub fn start(config: RecorderConfig) -> Result<Recorder, RecorderError> {
        Recorder::take_over(config, Handover::default())
    }

    /// Starts as [`Recorder::start`] does, on what an earlier recording of the task handed
    /// over ([`Recorder::hand_over`]).
    pub fn take_over(
        config: RecorderConfig,
        #[cfg_attr(not(target_os = "linux"), allow(unused_variables))] handover: Handover,
    ) -> Result<Recorder, RecorderError> {
        if let Some(limits) = &config.statsd {
            if !MetricLimits::is_valid_prefix(&limits.prefix) {
                return Err(RecorderError::MetricPrefix(limits.prefix.clone()));
            }
        }
        let clock = Clock::start();
        let profile_dir = config
            .profile_dir
            .as_ref()
            .map(|dir| profile_dir::prepare(&dir.path))
            .transpose()?;
        let sampler = Sampler::probe(&config, clock);
        #[cfg(target_os = "linux")]
        let statsd_inputs = match &config.statsd {
            Some(limits) => {
                let inputs = match handover.statsd {
                    Some(inputs) => inputs,
                    None => {
                        statsd::listener::Inputs::bind(profile_dir.as_deref(), config.statsd_udp)?
                    }
                };
                let info = inputs.info(limits).map_err(RecorderError::Statsd)?;
                Some((inputs, info))
            }
            None => None,
        };
        // No statsd listener outside Linux yet: its source is left out of the meta line.
        #[cfg(not(target_os = "linux"))]
        let statsd_inputs: Option<((), tc_profile_format::StatsdInfo)> = None;
        let metric_limits = config.metric_limits();
        let influx_listener = match config.influx {
            true => {
                let listener = influx::bind().map_err(RecorderError::Influx)?;
                let info =
                    influx::info(&listener, &metric_limits).map_err(RecorderError::Influx)?;
                Some((listener, info))
            }
            false => None,
        };
        let endpoints = MetricEndpoints {
            statsd: statsd_inputs.as_ref().map(|(_, info)| info.clone()),
            influx: influx_listener.as_ref().map(|(_, info)| info.clone()),
        };
        let meta = header::meta(&config, clock, &sampler, endpoints, profile_dir);
        let watch = config.profile_dir.as_ref().map(DirWatch::start);
        let path = &config.log_path;
        let (log, length) = header::create(path, &meta)?;
        let name = path.display().to_string();
        let (markers, writer) = start_writer(log, name, length, config.sync, clock)?;
        let mut recorder = Recorder {
            markers: markers.clone(),
            log_path: path.clone(),
            writer: Some(writer),
            sampler: None,
            #[cfg(target_os = "linux")]
            statsd: None,
            influx: None,
            forwarder: None,
            ingester: None,
            task_output: None,
            task_log: None,
            task_log_goes_on: false,
        };
        if let Some(path) = &config.task_log_path() {
            let sink = markers.clone();
            let resume = &config.task_log_resume;
            let limits = config.metric_limits();
            let source = LogFileSource::start(path, resume, sink, limits, config.interval)?;
            recorder.task_log = Some(source);
        }
        if config.log_lines {
            let limits = config.metric_limits();
            recorder.task_output = Some(TaskOutput::start(&markers, limits, config.interval)?);
        }
        if let Some((listener, _)) = influx_listener {
            let slack = config.profile_dir.as_ref().map_or_else(
                || MarkerFileLimits::default().time_slack_ms,
                |dir| dir.limits.time_slack_ms,
            );
            let forwarder = config.forward.clone().map(Forwarder::start).transpose()?;
            let forwarding = forwarder.as_ref().map(|forwarder| Forwarding {
                queue: forwarder.queue(),
                prefix: metric_limits.prefix.clone(),
                task_tags: config.task.tags(),
            });
            recorder.forwarder = forwarder;
            recorder.influx = Some(InfluxThreads::start(
                listener,
                metric_limits.clone(),
                &markers,
                config.interval,
                slack,
                forwarding,
            )?);
        }
        if let (Some(dir), Some(watch)) = (&config.profile_dir, watch) {
            let metrics = (metric_limits, config.interval);
            let schemas = header::schemas(&meta);
            let ingester = Ingester::start(dir, watch, markers.clone(), schemas, metrics)?;
            recorder.ingester = Some(ingester);
        }
        // The statsd thread watches the InfluxDB endpoint until its first connection.
        let unserved = recorder.influx.as_ref().map(InfluxThreads::unserved);
        #[cfg(target_os = "linux")]
        let unserved = match statsd_inputs {
            Some((inputs, _)) => {
                recorder.statsd = Some(StatsdThread::start(
                    inputs,
                    config.metric_limits(),
                    &markers,
                    config.interval,
                    unserved,
                )?);
                None
            }
            None => unserved,
        };
        if let Some(unserved) = unserved {
            unserved.serve()?;
        }
        if !sampler.is_empty() {
            let steering = Arc::new(Steering::default());
            let interval = config.interval;
            let handle = spawn("tc-profile-sampler", {
                let steering = Arc::clone(&steering);
                move || sampler::run_sampler(sampler, markers, interval, &steering)
            })?;
            recorder.sampler = Some((steering, handle));
        }
        Ok(recorder)
    }

    /// The statsd listener's UDP port on 127.0.0.1, when it is on.
    #[cfg(target_os = "linux")]
    pub fn statsd_address(&self) -> Option<SocketAddr> {
        self.statsd.as_ref().and_then(|s| s.udp_address)
    }

    /// The statsd listener's socket in the profile directory, when it is on.
    #[cfg(target_os = "linux")]
    pub fn statsd_socket(&self) -> Option<&Path> {
        let file = self.statsd.as_ref()?.socket_file.as_ref()?;
        Some(file.path())
    }

    /// No statsd listener outside Linux yet: never on.
    #[cfg(not(target_os = "linux"))]
    pub fn statsd_address(&self) -> Option<SocketAddr> {
        None
    }

    /// No statsd listener outside Linux yet: never on.
    #[cfg(not(target_os = "linux"))]
    pub fn statsd_socket(&self) -> Option<&Path> {
        None
    }

    /// The InfluxDB endpoint's base URL with its token (`http://127.0.0.1:PORT/TOKEN`), when
    /// it is on: what the task is given, and no one else.
    pub fn influx_url(&self) -> Option<String> {
        self.influx.as_ref().map(InfluxThreads::url)
    }

    /// Passes `from` (the command's stdout or stderr) through to `to` unchanged, on a
    /// thread of its own, and records its lines (SPEC.md, "Log lines"). Only for a
    /// recording started with [`RecorderConfig::log_lines`], which declares their schema.
    pub fn relay_output(
        &mut self,
        from: impl Read + Send + 'static,
        to: File,
        stream: Stream,
    ) -> Result<(), RecorderError> {
        match &mut self.task_output {
            Some(output) => output.relay(from, to, stream),
            None => Err(RecorderError::LogLinesOff),
        }
    }

    /// The task's log file goes on after this recording (the daemon restarts, and its
    /// next recording of the task resumes the file from this one's checkpoints): the end
    /// takes only its whole lines, and does not say the file is done.
    pub fn leave_task_log_open(&mut self) {
        self.task_log_goes_on = true;
    }

    /// Takes a sample now, besides those due every interval (the daemon's machine sample
    /// at a task's end, rather than one up to an interval later); the returned
    /// [`SampleTaken`] says when its lines are in the log. Requests that come together
    /// share one tick.
    pub fn sample_now(&self) -> SampleTaken {
        let written = self.sampler.as_ref().map(|(steering, handle)| {
            let written = steering.ask_tick();
            handle.thread().unpark();
            written
        });
        SampleTaken { written }
    }

    /// A handle that adds markers to this recording from any thread.
    pub fn markers(&self) -> MarkerSink {
        self.markers.clone()
    }

    /// Takes a last sample and the marker files' last lines, appends the clean-end footer,
    /// makes the log durable and joins the threads; then forwards what the InfluxDB
    /// endpoint took and has not forwarded yet, for 10 s at most. The log stays locked in
    /// the returned [`Finished`]. Waits 30 s at most: when the log's disk hangs, it returns
    /// [`RecorderError::WriterHung`] and leaves the writer thread behind, holding the log
    /// (and its lock) until the process exits; what the writer had written is in the log,
    /// and what the sources had not taken is still in the marker files.
    pub fn finish(self, reason: EndReason) -> Result<Finished, RecorderError> {
        self.end(reason, false).map(|(finished, _)| finished)
    }

    /// Finishes as [`Recorder::finish`] does, for a next recording of the task that takes
    /// over at once ([`Recorder::take_over`]): the task's log file is left open (see
    /// [`Recorder::leave_task_log_open`]) and the statsd listener's sockets are handed
    /// over, so that a client connected to them stays connected and what it sends
    /// meanwhile waits in them.
    pub fn hand_over(mut self) -> Result<(Finished, Handover), RecorderError> {
        self.task_log_goes_on = true;
        self.end(EndReason::Stopped, true)
    }

    fn end(
        mut self,
        reason: EndReason,
        hand_over: bool,
    ) -> Result<(Finished, Handover), RecorderError> {
        let deadline = Instant::now() + FINISH_WAIT;
        let handover = self.stop_sources(deadline, !self.task_log_goes_on, hand_over);
        let footer = Line::Footer(Footer {
            end_time: self.markers.now(),
            reason,
        });
        self.markers.line(&footer, true);
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
        let forwarded = self.forwarder.take().map(|f| f.finish(FORWARD_WAIT));
        let finished = Finished {
            stats,
            log: log.file,
            forwarded,
        };
        Ok((finished, handover))
    }

    /// Stops every source; with `end_task_log`, the task's log file is done with; with
    /// `hand_over`, the statsd listener's sockets are returned rather than closed.
    fn stop_sources(
        &mut self,
        deadline: Instant,
        end_task_log: bool,
        #[cfg_attr(not(target_os = "linux"), allow(unused_variables))] hand_over: bool,
    ) -> Handover {
        if let Some(output) = self.task_output.take() {
            output.stop(deadline);
        }
        if let Some(task_log) = self.task_log.take() {
            task_log.stop(deadline, end_task_log);
        }
        if let Some((steering, handle)) = self.sampler.take() {
            steering.stop();
            handle.thread().unpark();
            let _ = handle.join();
        }
        let handover = Handover {
            #[cfg(target_os = "linux")]
            statsd: self.statsd.take().and_then(|statsd| statsd.stop(hand_over)),
        };
        if let Some(influx) = self.influx.take() {
            influx.stop();
        }
        if let Some(ingester) = self.ingester.take() {
            ingester.stop(deadline);
        }
        handover
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
        // As a crash leaves it: the rest of the task's log file for whoever reads it next.
        self.stop_sources(deadline, false, false);
        let _ = self.stop_writer(deadline);
        if let Some(forwarder) = self.forwarder.take() {
            forwarder.abandon();
        }
    }
}

#[cfg(test)]
mod tests;
