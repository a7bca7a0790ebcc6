//! `tc-profile record`: a worker's sidecar. Records until SIGTERM or SIGINT, then writes
//! the profile.

use crate::cli::RecordArgs;
use crate::os::StopRequests;
use crate::recording;
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use tc_profile_finalizer::write_atomically;
use tc_profile_format::EndReason;
use tc_profile_fs::PRIVATE_FILE;

pub fn record(args: RecordArgs) -> Result<u8> {
    // Installed first, so that a SIGTERM sent as soon as we are ready is never fatal.
    let stop = StopRequests::install()?;
    let checked = recording::check(&args.recording)?;
    let session = recording::start(
        &args.recording,
        checked,
        None,
        None,
        recording::TaskLogs {
            output: false,
            file: args.task_log.clone(),
        },
    )?;
    if let Some(path) = &args.task_env {
        write_task_env(path, &session.task_env()).with_context(|| {
            format!(
                "{}: cannot write the task's environment; check --task-env",
                path.display()
            )
        })?;
    }
    announce_ready(&args, &session)?;
    stop.wait();
    recording::finish(session, &args.recording, EndReason::Stopped)?;
    Ok(0)
}

/// Tells the worker that it may start the task: the profile directory's path on stdout, or
/// in the ready file, which appears whole or not at all, with the live profile's base URL
/// on a second line.
fn announce_ready(args: &RecordArgs, session: &recording::Session) -> Result<()> {
    let mut line = session.profile_dir.as_os_str().as_encoded_bytes().to_vec();
    line.push(b'\n');
    match &args.ready_file {
        Some(path) => {
            let mut ready = line;
            if let Some(url) = session.live_url() {
                ready.extend_from_slice(format!("{url}\n").as_bytes());
            }
            write_atomically(path, PRIVATE_FILE, |out| out.write_all(&ready)).with_context(
                || {
                    format!(
                        "{}: cannot write the ready file; check --ready-file",
                        path.display()
                    )
                },
            )?;
        }
        None => {
            // A worker that does not read our stdout must not stop the recording.
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&line).and_then(|()| stdout.flush());
        }
    }
    Ok(())
}

/// Writes the task's environment, `NAME=VALUE` a line (as `docker run --env-file` reads
/// it), for the worker alone (mode 0600): it holds the InfluxDB endpoint's token.
fn write_task_env(path: &Path, env: &[(&str, OsString)]) -> std::io::Result<()> {
    let mut text = Vec::new();
    for (name, value) in env {
        text.extend_from_slice(name.as_bytes());
        text.push(b'=');
        text.extend_from_slice(value.as_encoded_bytes());
        text.push(b'\n');
    }
    write_atomically(path, PRIVATE_FILE, |out| out.write_all(&text)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;

    #[cfg(unix)]
    #[test]
    fn the_task_env_file_is_the_workers_only_and_replaces_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("task.env");
        std::fs::write(&path, "OLD=1\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let env = [("A", OsString::from("1")), ("B", OsString::from("x y"))];
        write_task_env(&path, &env).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "A=1\nB=x y\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
