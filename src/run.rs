//! `tc-profile run`: records while a command runs, then finalizes its profile.

use crate::cli::RunArgs;
use crate::export::CREDENTIAL_VARIABLES;
use crate::os::{self, CommandScope, StopForwarding};
use crate::recording;
use crate::report::describe_error;
use anyhow::{Context, Result};
use serde_json::json;
use std::io::IsTerminal;
use std::process::{Child, Command, ExitStatus};
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::task_log::Stream;
use tc_profile_format::EndReason;
use tc_profile_recorder::{summarize_command, Follow, MarkerSink, Recorder};

/// Runs the command and returns the exit code that tc-profile itself exits with: the
/// command's, whatever happened to the recording. A wrapper never stops the task: when
/// the recording cannot start (the log's disk full, its directory unwritable), the command
/// runs all the same, unrecorded. Only an unsafe invocation is refused before it runs.
pub fn run(args: RunArgs) -> Result<u8> {
    let checked = recording::check(&args.recording)?;
    let log_lines = records_log_lines(&args);
    let (scope, cgroup) = CommandScope::create(&args)?;
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
    let forwarding = StopForwarding::install()?;

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
    scope.prepare(&mut command);
    let spawned = command.spawn();
    // The pipes' write ends are the command's alone now: its exit ends the relays.
    drop(command);
    let exit_code = match spawned {
        Ok(child) => {
            scope.adopt(&child);
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
    scope.remove();
    Ok(exit_code)
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
        (Stream::Stdout, os::duplicate_output(&std::io::stdout())),
        (Stream::Stderr, os::duplicate_output(&std::io::stderr())),
    ];
    for (stream, own) in ours {
        let relayed = own.map_err(anyhow::Error::from).and_then(|own| {
            let (reader, writer) = std::io::pipe()?;
            recorder.relay_output(reader, own, stream)?;
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
    forwarding: &StopForwarding,
) -> Result<u8> {
    let pid = child.id();
    forwarding.set_target(pid);
    let data = |status: Option<ExitStatus>| {
        let mut data = json!({"type": data_type::COMMAND, "command": command_text, "pid": pid});
        if let Some(status) = status {
            data["status"] = json!(os::describe_status(status));
        }
        data
    };
    let interval = markers.map(|m| m.begin("Command", category::TASK, Some(data(None))));
    let status = child.wait().context("waiting for the command")?;
    forwarding.set_target(0);
    if let Some(interval) = interval {
        interval.end(Some(data(Some(status))));
    }
    Ok(os::exit_code(status))
}

fn describe_command(command: &[std::ffi::OsString]) -> String {
    let args: Vec<_> = command.iter().map(|arg| arg.to_string_lossy()).collect();
    summarize_command(&args)
}
