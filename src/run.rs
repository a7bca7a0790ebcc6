//! `tc-profile run`: records while a command runs, then finalizes its profile.

use crate::cli::{RecordingArgs, RunArgs, SyncArg};
use crate::recover::recover_state_dir;
use crate::report::describe_finalized;
use anyhow::{Context, Result};
use serde_json::json;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tc_profile_finalizer::{finalize_locked, FinalizeOptions, LockedLog};
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::EndReason;
use tc_profile_recorder::{MetricLimits, Recorder, RecorderConfig, SyncPolicy};

/// The longest command line kept in the profile; the rest is cut with an ellipsis.
const COMMAND_TEXT_MAX: usize = 200;

/// Runs the command and returns the exit code that tc-profile itself exits with: the
/// command's, whatever happened to the recording.
pub fn run(args: RunArgs) -> Result<u8> {
    let log = prepare_log(&args.recording)?;
    let recorder = Recorder::start(recorder_config(&args.recording, log.clone()))?;
    let markers = recorder.markers();
    let command_text = describe_command(&args.command);
    let forwarding = SignalForwarding::install()?;

    let mut command = Command::new(&args.command[0]);
    command.args(&args.command[1..]);
    if let Some(address) = recorder.statsd_address() {
        command
            .env("STATSD_HOST", address.ip().to_string())
            .env("STATSD_PORT", address.port().to_string())
            .env("TASKCLUSTER_STATSD_ADDR", address.to_string());
    }
    let spawned = command.spawn();
    let exit_code = match spawned {
        Ok(mut child) => {
            forwarding.set_target(child.id());
            let interval = markers.begin(
                "Command",
                category::TASK,
                Some(
                    json!({"type": data_type::COMMAND, "command": command_text, "pid": child.id()}),
                ),
            );
            let status = child.wait().context("waiting for the command")?;
            forwarding.set_target(0);
            interval.end(Some(json!({
                "type": data_type::COMMAND,
                "command": command_text,
                "pid": child.id(),
                "status": describe_status(status),
            })));
            exit_code(status)
        }
        Err(error) => {
            eprintln!("tc-profile: cannot run {command_text}: {error}");
            markers.instant(
                "Command failed to start",
                category::TASK,
                Some(json!({"type": data_type::TEXT, "text": format!("{command_text}: {error}")})),
            );
            if error.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    };
    forwarding.stop();
    if let Err(error) = finish(recorder, log, &args.recording) {
        eprintln!("tc-profile: error: {error:#}");
    }
    Ok(exit_code)
}

/// The log's path; with `--state-dir`, a unique name there, after the recovery of what
/// dead recorders left in it.
pub fn prepare_log(args: &RecordingArgs) -> Result<PathBuf> {
    let Some(dir) = &args.state_dir else {
        return Ok(log_path(args));
    };
    recover_state_dir(dir, false)?;
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

pub fn recorder_config(args: &RecordingArgs, log: PathBuf) -> RecorderConfig {
    let mut config = RecorderConfig::new(log);
    config.interval = args.interval;
    config.sync = match args.sync {
        SyncArg::Always => SyncPolicy::Always,
        SyncArg::Interval => SyncPolicy::Interval(args.interval),
        SyncArg::Never => SyncPolicy::Never,
    };
    config.statsd = (!args.no_statsd).then(|| MetricLimits {
        prefix: args.metric_prefix.clone(),
        ..MetricLimits::default()
    });
    config
}

fn log_path(args: &RecordingArgs) -> PathBuf {
    args.log.clone().unwrap_or_else(|| {
        let mut log = args.output.clone().into_os_string();
        log.push("l");
        match args.output.extension() {
            Some(ext) if ext == "json" => PathBuf::from(log),
            _ => args.output.with_extension("jsonl"),
        }
    })
}

/// Ends the recording cleanly and finalizes the log into the profile, holding the log's
/// lock from the recording to its removal.
pub fn finish(recorder: Recorder, log: PathBuf, args: &RecordingArgs) -> Result<()> {
    let finished = recorder.finish(EndReason::CommandExited)?;
    let stats = &finished.stats;
    if let Some(error) = &stats.first_error {
        eprintln!(
            "tc-profile: warning: {} lines could not be written to {}: {error}",
            stats.lines_lost,
            log.display()
        );
    }
    let report = finalize_locked(
        &LockedLog::held(log, finished.log),
        &FinalizeOptions {
            output: Some(args.output.clone()),
            keep_log: args.keep_log,
        },
    )?;
    eprintln!("tc-profile: {}", describe_finalized(&report));
    Ok(())
}

fn describe_command(command: &[std::ffi::OsString]) -> String {
    let text = command
        .iter()
        .map(|arg| arg.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    match text.char_indices().nth(COMMAND_TEXT_MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "unknown".to_owned(),
    }
}

/// The shell's convention: the exit code, or 128+N for a death by signal N.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        (None, None) => 1,
    }
}

/// Forwards SIGINT and SIGTERM sent to tc-profile by another process to the command.
/// Signals from the terminal reach the command's process group already: not sent twice.
struct SignalForwarding {
    target: Arc<AtomicI32>,
    handle: signal_hook::iterator::Handle,
    thread: std::thread::JoinHandle<()>,
}

impl SignalForwarding {
    fn install() -> Result<SignalForwarding> {
        let target = Arc::new(AtomicI32::new(0));
        let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM])
            .context("installing the SIGINT and SIGTERM handlers")?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("tc-profile-signals".to_owned())
            .spawn({
                let target = Arc::clone(&target);
                move || {
                    for origin in signals.forever() {
                        let pid = target.load(Ordering::SeqCst);
                        if pid > 0 && matches!(origin.cause, Cause::Sent(_)) {
                            // SAFETY: kill(2) has no memory-safety preconditions.
                            unsafe { libc::kill(pid, origin.signal) };
                        }
                    }
                }
            })
            .context("starting the signal thread")?;
        Ok(SignalForwarding {
            target,
            handle,
            thread,
        })
    }

    fn set_target(&self, pid: u32) {
        self.target.store(pid as i32, Ordering::SeqCst);
    }

    fn stop(self) {
        self.handle.close();
        let _ = self.thread.join();
    }
}
