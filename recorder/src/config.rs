//! How to record: the one set of choices that [`crate::Recorder::start`] takes, with the
//! defaults a recording uses unless told otherwise.

use crate::meta::task_from_env;
use crate::profile_dir::ProfileDirConfig;
use crate::sources::machine::SharedMachine;
use crate::sources::{Follow, ProcessExits, TaskCgroup};
use crate::writer::SyncPolicy;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tc_profile_format::scope::MetricScopes;
use tc_profile_format::{FileProgress, MetricLimits, TaskInfo};
use tc_profile_influx::InfluxTarget;

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
    /// With `sample_system`, whether to sample the machine-wide tracks (CPU, memory, disk,
    /// network, pressure, load, swap, frequency) besides the task's own (its processes and
    /// cgroup): off for a task's log in the daemon, whose machine tracks come from the
    /// daemon's one machine recording.
    pub machine_tracks: bool,
    /// The machine's files as read once a tick for every recorder of the process that
    /// shares them (the daemon's segment and tasks); None: read by this recording alone.
    pub shared_machine: Option<Arc<SharedMachine>>,
    /// The statsd listener's limits, or None for no listener. It takes packets on a Unix
    /// socket in the profile directory, when there is one.
    pub statsd: Option<MetricLimits>,
    /// Whether the statsd listener takes packets on a UDP port of 127.0.0.1 too, which any
    /// local user can send to; off by default.
    pub statsd_udp: bool,
    /// The series the task may write, over every way in; none given: all.
    pub metric_scopes: MetricScopes,
    /// Whether to serve the InfluxDB endpoint (under the statsd listener's limits, or the
    /// defaults without one).
    pub influx: bool,
    /// The InfluxDB that the endpoint's points are forwarded to while recording, if any.
    pub forward: Option<InfluxTarget>,
    /// The profile directory to follow, if any.
    pub profile_dir: Option<ProfileDirConfig>,
    /// The task's processes, drawn against the rest of the machine; none by default.
    pub follow: Option<Follow>,
    /// Epoch ms: a process of the tree alive when the recording starts is drawn from its
    /// real start (its /proc stat) back to this at the earliest; None: from the log's start.
    /// For a recording that takes over a task begun earlier (the daemon's parts).
    pub processes_since: Option<f64>,
    /// The shortest life of a process of the task that gets a "Process" marker when the
    /// kernel reports every exit (taskstats or the proc connector); None: the sampling
    /// interval. Every exit is counted in the per-command totals whatever its length.
    pub process_markers: Option<Duration>,
    /// How the task's processes are seen as they end; by default the first of taskstats,
    /// the proc connector and sampling that the machine and the privilege allow, or what
    /// [`ProcessExits::VARIABLE`] says.
    pub process_exits: ProcessExits,
    /// The task's cgroup, whose counters are recorded. When None, the cgroup of a followed
    /// pid or cgroup is used if it is not the recorder's own.
    pub cgroup: Option<TaskCgroup>,
    /// Schemas of the task's markers, declared in the meta line so that the log shows those
    /// markers as it is written (`tc_profile_format::marker_file::decode_schema_file`).
    pub task_schemas: Vec<Map<String, Value>>,
    /// Whether the command's stdout and stderr are recorded, a `Log` marker a line
    /// ([`crate::Recorder::relay_output`]); off by default.
    pub log_lines: bool,
    /// A log file to follow as `tail -F` does, a `Log` marker a line (`record --task-log`).
    pub task_log: Option<PathBuf>,
    /// Checkpoints of earlier recordings that followed `task_log` (the daemon's parts): the
    /// file now at its path is read from its own.
    pub task_log_resume: Vec<FileProgress>,
    /// The live profile's server, as the meta line names it (`http://HOST:PORT`, no token).
    pub live_server: Option<String>,
}

impl RecorderConfig {
    /// Defaults: 0.1 s interval, interval sync once a second, the task from the
    /// environment, system sampling on, statsd listener (without its UDP port) and InfluxDB
    /// endpoint on under `task.`.
    pub fn new(log_path: PathBuf) -> RecorderConfig {
        let interval = Duration::from_millis(100);
        RecorderConfig {
            log_path,
            interval,
            sync: SyncPolicy::interval(interval),
            task: task_from_env(),
            sample_system: true,
            machine_tracks: true,
            shared_machine: None,
            statsd: Some(MetricLimits::default()),
            statsd_udp: false,
            metric_scopes: MetricScopes::default(),
            influx: true,
            forward: None,
            profile_dir: None,
            follow: None,
            processes_since: None,
            process_markers: None,
            process_exits: ProcessExits::from_env().unwrap_or_default(),
            cgroup: None,
            task_schemas: Vec::new(),
            log_lines: false,
            task_log: None,
            task_log_resume: Vec::new(),
            live_server: None,
        }
    }

    /// The task's log file as the meta line and the checkpoints name it: absolute.
    pub(crate) fn task_log_path(&self) -> Option<PathBuf> {
        let path = self.task_log.as_ref()?;
        Some(std::path::absolute(path).unwrap_or_else(|_| path.clone()))
    }

    /// The limits of every metric source: the statsd listener's prefix and caps (the
    /// defaults without a listener, for marker files and the InfluxDB endpoint), and the
    /// scopes.
    pub(crate) fn metric_limits(&self) -> MetricLimits {
        MetricLimits {
            scopes: self.metric_scopes.clone(),
            ..self.statsd.clone().unwrap_or_default()
        }
    }
}
