//! What `run` and `record` share: the log's place, starting a recorder with its profile
//! directory and its live profile (`--http`), and ending it into a profile.

use crate::cli::{RecordingArgs, SyncArg};
use crate::export::{export_at_end, hide_credentials, report_forwarding, Destinations};
use crate::malloc::share_malloc_arenas;
use crate::output;
use crate::progress::Reading;
use crate::recover::recover_state_dir;
use crate::report::describe_finalized;
use anyhow::{Context, Result};
use serde_json::{Map, Value};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tc_profile_daemon::LiveServer;
use tc_profile_finalizer::{finalize_locked, FinalizeOptions, LockedLog, DEFAULT_LOCK_WAIT};
use tc_profile_format::marker_file::decode_schema_file;
use tc_profile_format::scope::MetricScopes;
use tc_profile_format::EndReason;
use tc_profile_fs::{remove_created_tree, Dir, Identity, PRIVATE_DIR};
use tc_profile_recorder::{
    Follow, MetricLimits, ProfileDirConfig, Recorder, RecorderConfig, SyncPolicy, TaskCgroup,
};
use tc_profile_reports::{summarize, SummaryFormat, TaskReport};

/// A recording in progress.
pub struct Session {
    pub recorder: Recorder,
    log: PathBuf,
    /// The profile directory, absolute: what TASKCLUSTER_PROFILE_DIR is set to.
    pub profile_dir: PathBuf,
    /// The directory's identity when this session created it (and so removes it, that
    /// directory alone, at the end).
    created_dir: Option<Identity>,
    /// Where the profile goes once written.
    export: Option<Destinations>,
    /// The live profile's server (`--http`), stopped with the recording.
    live: Option<LiveServer>,
}

impl Session {
    /// What tells the task where the recording takes its markers and metrics, as
    /// environment variables (SPEC.md, "Metric tracks"): the InfluxDB URL's token among
    /// them, so for the task alone.
    pub fn task_env(&self) -> Vec<(&'static str, OsString)> {
        let mut env = vec![("TASKCLUSTER_PROFILE_DIR", self.profile_dir.clone().into())];
        if let Some(socket) = self.recorder.statsd_socket() {
            let mut url = OsString::from("unix://");
            url.push(socket);
            env.push(("STATSD_SOCKET", socket.into()));
            env.push(("DD_DOGSTATSD_URL", url));
        }
        if let Some(address) = self.recorder.statsd_address() {
            let (host, port) = (address.ip().to_string(), address.port().to_string());
            // Python's statsd.defaults.env; the DogStatsD clients' (DD_DOGSTATSD_URL wins).
            env.push(("STATSD_HOST", host.clone().into()));
            env.push(("STATSD_PORT", port.clone().into()));
            env.push(("DD_AGENT_HOST", host.into()));
            env.push(("DD_DOGSTATSD_PORT", port.into()));
            env.push(("TASKCLUSTER_STATSD_ADDR", address.to_string().into()));
        }
        if let Some(url) = self.recorder.influx_url() {
            env.extend(influx_env(&url));
        }
        env
    }

    /// The live profile's base URL (with its token), when served.
    pub fn live_url(&self) -> Option<&str> {
        self.live.as_ref().map(LiveServer::url)
    }
}

/// The InfluxDB endpoint's variables: its URL with the token for 1.x clients, and the
/// URL, the token and an organisation (any is taken) as InfluxDB 2.x clients read them:
/// the `influx` CLI (`INFLUX_*`) and the client libraries' `from_env` (`INFLUXDB_V2_*`).
fn influx_env(url: &str) -> Vec<(&'static str, OsString)> {
    let (base, token) = url.rsplit_once('/').unwrap_or((url, ""));
    let mut env = vec![("TASKCLUSTER_INFLUX_URL", url.into())];
    for (name, value) in [
        ("INFLUX_HOST", base),
        ("INFLUX_TOKEN", token),
        ("INFLUX_ORG", INFLUX_ORG),
        ("INFLUXDB_V2_URL", base),
        ("INFLUXDB_V2_TOKEN", token),
        ("INFLUXDB_V2_ORG", INFLUX_ORG),
    ] {
        env.push((name, value.into()));
    }
    env
}

/// The organisation 2.x clients are given: the endpoint takes any.
const INFLUX_ORG: &str = "tc-profile";

/// What is checked before anything starts: a refusal here (credentials others could read,
/// a schema file the profiler could not use) is the invocation's to fix.
pub struct Checked {
    /// Where the profile is exported at the end.
    export: Option<Destinations>,
    /// The `--schema` files' schemas, for the meta line.
    task_schemas: Vec<Map<String, Value>>,
    /// `--metric-scope` and the task definition's scopes.
    metric_scopes: Vec<String>,
    /// The task definition's `metadata.name`.
    task_name: Option<String>,
}

/// Checks the invocation. Call it before any thread starts (credentials are hidden from
/// the environment).
pub fn check(args: &RecordingArgs) -> Result<Checked> {
    let export = Destinations::at_end(&args.export, args.quiet)?;
    hide_credentials(export.as_ref());
    let limits = args.limits.limits();
    let mut names = Vec::new();
    let mut task_schemas = Vec::new();
    for path in &args.schemas {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--schema {}: cannot read it", path.display()))?;
        let schemas = decode_schema_file(&text, &limits, &mut names)
            .with_context(|| format!("--schema {}", path.display()))?;
        task_schemas.extend(schemas);
    }
    let mut metric_scopes = args.metric_scopes.clone();
    let mut task_name = None;
    if let Some(path) = &args.task_definition {
        let definition = TaskDefinition::read(path)?;
        metric_scopes.extend(definition.scopes);
        task_name = definition.metadata.name;
    }
    Ok(Checked {
        export,
        task_schemas,
        metric_scopes,
        task_name,
    })
}

/// What `--task-definition` takes from a task definition.
#[derive(serde::Deserialize)]
struct TaskDefinition {
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    metadata: TaskMetadata,
}

#[derive(serde::Deserialize, Default)]
struct TaskMetadata {
    name: Option<String>,
}

impl TaskDefinition {
    fn read(path: &Path) -> Result<TaskDefinition> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--task-definition {}: cannot read it", path.display()))?;
        serde_json::from_str(&text).with_context(|| {
            format!(
                "--task-definition {}: not a task definition (scopes: a list of strings, \
                 metadata.name: a string)",
                path.display()
            )
        })
    }
}

/// The task's log lines a recording takes.
#[derive(Default)]
pub struct TaskLogs {
    /// The command's stdout and stderr (`run`).
    pub output: bool,
    /// A log file followed (`record --task-log`).
    pub file: Option<PathBuf>,
}

/// Creates the log and the profile directory, and starts recording into them, with the
/// task's processes (`follow`) and cgroup when known, and its log lines.
pub fn start(
    args: &RecordingArgs,
    checked: Checked,
    follow: Option<Follow>,
    cgroup: Option<TaskCgroup>,
    logs: TaskLogs,
) -> Result<Session> {
    share_malloc_arenas();
    let log = prepare_log(args)?;
    let dir = args
        .profile_dir
        .clone()
        .unwrap_or_else(|| with_suffix(&args.output, "markers"));
    let created_dir = create_profile_dir(&dir)?;
    let mut config = recorder_config(args, log.clone(), dir.clone());
    config.follow = follow;
    config.cgroup = cgroup;
    config.log_lines = logs.output;
    config.task_log = logs.file;
    config.task_schemas = checked.task_schemas;
    config.metric_scopes = MetricScopes::new(checked.metric_scopes);
    config.forward = checked
        .export
        .as_ref()
        .and_then(Destinations::influx)
        .cloned();
    if checked.task_name.is_some() {
        config.task.name = checked.task_name;
    }
    let live = args
        .http
        .map(|address| serve_live(address, &config, &log))
        .transpose()?;
    config.live_server = live
        .as_ref()
        .map(|live| format!("http://{}", live.address()));
    let recorder = match Recorder::start(config) {
        Ok(recorder) => recorder,
        Err(error) => {
            if let Some(created) = created_dir {
                // Nothing could be recorded into it.
                let _ = remove_created_tree(&dir, created);
            }
            return Err(error.into());
        }
    };
    let profile_dir = std::path::absolute(&dir)
        .with_context(|| format!("{}: cannot resolve the profile directory", dir.display()))?;
    let session = Session {
        recorder,
        log,
        profile_dir,
        created_dir,
        export: checked.export,
        live,
    };
    if let Some(url) = session.live_url().filter(|_| !args.quiet) {
        eprintln!("tc-profile: live profile at {url}/profile.json");
    }
    Ok(session)
}

/// Creates the profile directory when missing, its user's alone (0700), never through a
/// symbolic link at its name; its identity when created.
fn create_profile_dir(dir: &Path) -> Result<Option<Identity>> {
    if dir.is_dir() {
        return Ok(None);
    }
    let created = Dir::open_parent(dir).and_then(|(parent, name)| {
        match parent.create_dir(name, PRIVATE_DIR) {
            Ok(created) => created.identity().map(Some),
            // Created meanwhile, by the task: its own.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
            Err(error) => Err(error),
        }
    });
    created.with_context(|| {
        format!(
            "{}: cannot create the profile directory; check --profile-dir",
            dir.display()
        )
    })
}

/// Serves the recording's task (as the meta line names it) from its log, only ever read.
fn serve_live(address: SocketAddr, config: &RecorderConfig, log: &Path) -> Result<LiveServer> {
    let task = &config.task;
    let run = task.run_id.as_deref().and_then(|run| run.parse().ok());
    let live = LiveServer::for_recording(address, task.task_id.clone(), run, log.to_owned())?;
    Ok(live)
}

/// The log's path; with `--state-dir`, a unique name there, after the recovery of what
/// dead recorders left in it.
fn prepare_log(args: &RecordingArgs) -> Result<PathBuf> {
    let Some(dir) = &args.state_dir else {
        return Ok(args
            .log
            .clone()
            .unwrap_or_else(|| with_suffix(&args.output, "jsonl")));
    };
    recover_state_dir(dir, DEFAULT_LOCK_WAIT, false)?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the state directory {}", dir.display()))?;
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    Ok(dir.join(format!(
        "profile_resource-usage-{started}-{}.jsonl",
        std::process::id()
    )))
}

fn recorder_config(args: &RecordingArgs, log: PathBuf, profile_dir: PathBuf) -> RecorderConfig {
    let mut config = RecorderConfig::new(log);
    config.interval = args.interval;
    config.process_markers = args.process_markers.map(Duration::from_millis);
    if let Some(way) = args.process_exits {
        config.process_exits = way;
    }
    config.sync = match args.sync {
        SyncArg::Always => SyncPolicy::Always,
        SyncArg::Interval => SyncPolicy::interval(args.interval),
        SyncArg::Never => SyncPolicy::Never,
    };
    config.statsd = (!args.no_statsd).then(|| MetricLimits {
        prefix: args.metric_prefix.clone(),
        ..MetricLimits::default()
    });
    config.statsd_udp = args.statsd_udp;
    config.influx = !args.no_influx;
    let mut dir = ProfileDirConfig::new(profile_dir);
    dir.limits = args.limits.limits();
    dir.poll_interval = args.interval;
    config.profile_dir = Some(dir);
    config
}

/// `profile.json` becomes `profile.SUFFIX`, also when compressed (`profile.json.gz`,
/// `profile.json.zst`); any other name gets `.SUFFIX` added.
fn with_suffix(output: &Path, suffix: &str) -> PathBuf {
    let output = match output.extension() {
        Some(ext) if ext == "gz" || ext == "zst" => output.with_extension(""),
        _ => output.to_owned(),
    };
    match output.extension() {
        Some(ext) if ext == "json" => output.with_extension(suffix),
        _ => {
            let mut name = output.as_os_str().to_owned();
            name.push(format!(".{suffix}"));
            PathBuf::from(name)
        }
    }
}

/// Ends the recording cleanly and finalizes the log into the profile, holding the log's
/// lock from the recording to its removal; prints the short summary unless quiet; then
/// removes the profile directory if this session created it (unless the log is kept).
pub fn finish(session: Session, args: &RecordingArgs, reason: EndReason) -> Result<()> {
    drop(session.live);
    let finished = session.recorder.finish(reason)?;
    let stats = &finished.stats;
    if let Some(error) = &stats.first_error {
        eprintln!(
            "tc-profile: warning: {} lines could not be written to {}: {error}",
            stats.lines_lost,
            session.log.display()
        );
    }
    if let Some(forwarded) = &finished.forwarded {
        report_forwarding(forwarded, args.quiet);
    }
    let reading = Reading::start(&session.log, "writing the profile");
    let finalized = finalize_locked(
        &LockedLog::held(session.log, finished.log),
        &FinalizeOptions {
            output: Some(args.output.clone()),
            keep_log: args.keep_log,
            // The directory the log names: if task code removed or replaced it, the
            // profile is written all the same.
            profile_dir: None,
            limits: args.limits.limits(),
            // The file the recorder followed, if any, from its last checkpoint.
            task_log: None,
            unwritten_gaps: stats.unwritten_gap.iter().cloned().collect(),
            progress: reading.callback(),
            ..FinalizeOptions::default()
        },
    )?;
    drop(reading);
    let report = &finalized.report;
    // Only what is printed or exported: a quiet run without exports needs no summary.
    let summary = (!args.quiet || session.export.is_some()).then(|| summarize(&finalized.profile));
    if let Some(summary) = summary.as_ref().filter(|_| !args.quiet) {
        eprintln!("tc-profile: {}", describe_finalized(report));
        output::to_stderr(&SummaryFormat::Short.serialize(summary))?;
    }
    if let Some(created) = session.created_dir.filter(|_| !args.keep_log) {
        // Only the directory created: not one the task put in its place or led to.
        if let Err(error) = remove_created_tree(&session.profile_dir, created) {
            eprintln!(
                "tc-profile: warning: {}: the profile directory is left: {error}",
                session.profile_dir.display()
            );
        }
    }
    if let (Some(export), Some(summary)) = (&session.export, &summary) {
        let task_report = TaskReport::new(&finalized.profile, summary);
        export_at_end(export, &task_report, &report.output);
    }
    Ok(())
}
