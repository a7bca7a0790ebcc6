//! `tc-profile run`: records while a command runs, then finalizes its profile.

use crate::cli::RunArgs;
use crate::export::CREDENTIAL_VARIABLES;
use crate::recording;
use crate::report::describe_error;
use anyhow::{Context, Result};
use serde_json::json;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::low_level::siginfo::{Cause, Origin};
use signal_hook_registry::SigId;
use std::fs::File;
use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::task_log::Stream;
use tc_profile_format::EndReason;
use tc_profile_recorder::{
    describe_wait_status, summarize_command, Follow, MarkerSink, OwnCgroup, Recorder, TaskCgroup,
};

/// Runs the command and returns the exit code that tc-profile itself exits with: the
/// command's, whatever happened to the recording. A wrapper never stops the task: when
/// the recording cannot start (the log's disk full, its directory unwritable), the command
/// runs all the same, unrecorded. Only an unsafe invocation is refused before it runs.
pub fn run(args: RunArgs) -> Result<u8> {
    let checked = recording::check(&args.recording)?;
    let log_lines = records_log_lines(&args);
    let cgroup = args.cgroup.map(task_cgroup).transpose()?;
    let own_cgroup = args.own_cgroup.then(create_own_cgroup).flatten();
    let cgroup = own_cgroup.as_ref().map(OwnCgroup::task_cgroup).or(cgroup);
    let follow = Some(Follow::Children);
    let logs = recording::TaskLogs {
        output: log_lines,
        file: None,
    };
    let mut session = match recording::start(&args.recording, checked, follow, cgroup, logs) {
        Ok(session) => Some(session),
        Err(error) => {
            eprintln!(
                "tc-profile: warning: {}; running the command without recording: no profile \
                 will be written",
                describe_error(&error)
            );
            None
        }
    };
    let markers = session.as_ref().map(|s| s.recorder.markers());
    // Task logs are often public: the profile and stderr get the command with secrets masked.
    let command_text = describe_command(&args.command);
    let program = args.command[0].to_string_lossy();
    let forwarding = SignalForwarding::install()?;

    let mut command = Command::new(&args.command[0]);
    command.args(&args.command[1..]);
    for variable in CREDENTIAL_VARIABLES {
        command.env_remove(variable);
    }
    if let Some(session) = &mut session {
        command.envs(session.task_env());
        if log_lines {
            relay_output(&mut command, &mut session.recorder);
        }
    }
    if let Some(own) = &own_cgroup {
        // SAFETY: the hook only opens, writes and closes a file (async-signal-safe).
        unsafe { command.pre_exec(own.enter_hook()) };
    }
    let spawned = command.spawn();
    // The pipes' write ends are the command's alone now: its exit ends the relays.
    drop(command);
    let exit_code = match spawned {
        Ok(child) => {
            if let Some(own) = own_cgroup
                .as_ref()
                .filter(|own| own.holds(child.id()) == Some(false))
            {
                eprintln!(
                    "tc-profile: warning: --own-cgroup: the command could not be moved into {}; \
                     its cgroup figures are not the task's",
                    own.path().display()
                );
            }
            run_child(child, markers.as_ref(), &command_text, &forwarding)?
        }
        Err(error) => {
            eprintln!("tc-profile: cannot run {program}: {error}");
            if let Some(markers) = &markers {
                markers.instant(
                    "Command failed to start",
                    category::TASK,
                    Some(json!({"type": data_type::TEXT, "text": format!("{program}: {error}")})),
                );
            }
            if error.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    };
    forwarding.stop();
    if let Some(session) = session {
        if let Err(error) = recording::finish(session, &args.recording, EndReason::CommandExited) {
            eprintln!("tc-profile: error: {}", describe_error(&error));
        }
    }
    remove_own_cgroup(own_cgroup);
    Ok(exit_code)
}

/// The command's own cgroup, or a warning and none: a task must not fail because its
/// profile could not have a cgroup. Dropped on an error, it removes itself.
fn create_own_cgroup() -> Option<OwnCgroup> {
    OwnCgroup::create()
        .map_err(|error| eprintln!("tc-profile: warning: --own-cgroup: {error}"))
        .ok()
}

fn remove_own_cgroup(own: Option<OwnCgroup>) {
    if let Err(error) = own.map_or(Ok(()), OwnCgroup::remove) {
        eprintln!("tc-profile: warning: {error}");
    }
}

fn task_cgroup(path: PathBuf) -> Result<TaskCgroup> {
    if !Path::new(&path).join("cgroup.procs").exists() {
        anyhow::bail!(
            "--cgroup {}: not a cgroup directory (it has no cgroup.procs); give one under /sys/fs/cgroup",
            path.display()
        );
    }
    Ok(TaskCgroup {
        path,
        created: false,
    })
}

/// `--log-lines`, `--no-log-lines`, or by default whether tc-profile's stdout is not a
/// terminal (CI, where the output goes to the task's log).
fn records_log_lines(args: &RunArgs) -> bool {
    match (args.log_lines, args.no_log_lines) {
        (true, _) => true,
        (_, true) => false,
        _ => !std::io::stdout().is_terminal(),
    }
}

/// Gives the command pipes for its stdout and stderr, relayed to tc-profile's own by the
/// recording; a stream that cannot be relayed is left as it is, with a warning.
fn relay_output(command: &mut Command, recorder: &mut Recorder) {
    let ours = [
        (
            Stream::Stdout,
            std::io::stdout().as_fd().try_clone_to_owned(),
        ),
        (
            Stream::Stderr,
            std::io::stderr().as_fd().try_clone_to_owned(),
        ),
    ];
    for (stream, own) in ours {
        let relayed = own.map_err(anyhow::Error::from).and_then(|own| {
            let (reader, writer) = std::io::pipe()?;
            recorder.relay_output(reader, File::from(own), stream)?;
            Ok(writer)
        });
        match relayed {
            Ok(writer) if stream == Stream::Stdout => command.stdout(writer),
            Ok(writer) => command.stderr(writer),
            Err(error) => {
                eprintln!(
                    "tc-profile: warning: the command's {} is not recorded: {error:#}",
                    stream.name()
                );
                continue;
            }
        };
    }
}

/// Waits for the command, inside a Command interval when recording; its exit code.
fn run_child(
    mut child: Child,
    markers: Option<&MarkerSink>,
    command_text: &str,
    forwarding: &SignalForwarding,
) -> Result<u8> {
    let pid = child.id();
    forwarding.set_target(pid);
    let data = |status: Option<ExitStatus>| {
        let mut data = json!({"type": data_type::COMMAND, "command": command_text, "pid": pid});
        if let Some(status) = status {
            data["status"] = json!(describe_wait_status(Some(status.into_raw())));
        }
        data
    };
    let interval = markers.map(|m| m.begin("Command", category::TASK, Some(data(None))));
    let status = child.wait().context("waiting for the command")?;
    forwarding.set_target(0);
    if let Some(interval) = interval {
        interval.end(Some(data(Some(status))));
    }
    Ok(exit_code(status))
}

fn describe_command(command: &[std::ffi::OsString]) -> String {
    let args: Vec<_> = command.iter().map(|arg| arg.to_string_lossy()).collect();
    summarize_command(&args)
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
/// The handler sends them itself (kill(2) is async-signal-safe): no thread waits for them,
/// which would cost a thread's start and exit in every run.
struct SignalForwarding {
    target: Arc<AtomicI32>,
    handlers: Vec<SigId>,
}

impl SignalForwarding {
    fn install() -> Result<SignalForwarding> {
        let target = Arc::new(AtomicI32::new(0));
        let mut handlers = Vec::new();
        for signal in [SIGINT, SIGTERM] {
            let target = Arc::clone(&target);
            // SAFETY: the action only loads an atomic, reads the siginfo and calls kill(2),
            // all async-signal-safe; it allocates nothing and takes no lock.
            let id = unsafe {
                signal_hook_registry::register_sigaction(signal, move |info| {
                    let pid = target.load(Ordering::SeqCst);
                    let sent = matches!(Origin::extract(info).cause, Cause::Sent(_));
                    if pid > 0 && sent {
                        libc::kill(pid, signal);
                    }
                })
            }
            .context("installing the SIGINT and SIGTERM handlers")?;
            handlers.push(id);
        }
        Ok(SignalForwarding { target, handlers })
    }

    fn set_target(&self, pid: u32) {
        self.target.store(pid as i32, Ordering::SeqCst);
    }

    fn stop(self) {
        for id in self.handlers {
            signal_hook_registry::unregister(id);
        }
    }
}
