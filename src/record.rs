//! `tc-profile record`: a worker's sidecar. Records until SIGTERM or SIGINT, then writes
//! the profile.

use crate::cli::RecordArgs;
use crate::recording;
use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use tc_profile_finalizer::write_atomically;
use tc_profile_format::EndReason;
use tc_profile_fs::PRIVATE_FILE;

pub fn record(args: RecordArgs) -> Result<u8> {
    // Installed first, so that a SIGTERM sent as soon as we are ready is never fatal.
    let mut signals =
        Signals::new([SIGINT, SIGTERM]).context("installing the SIGINT and SIGTERM handlers")?;
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
    signals.forever().next();
    recording::finish(session, &args.recording, EndReason::Stopped)?;
    Ok(0)
}

/// Tells the worker that it may start the task: the profile directory's path on stdout, or
/// in the ready file, which appears whole or not at all, with the live profile's base URL
/// on a second line.
fn announce_ready(args: &RecordArgs, session: &recording::Session) -> Result<()> {
    let mut line = session.profile_dir.as_os_str().as_bytes().to_vec();
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
/// it), for the worker alone: it holds the InfluxDB endpoint's token. Made under a
/// temporary name that must be new (never through a link a task put there) with mode 0600
/// from its creation, then renamed into place.
fn write_task_env(path: &Path, env: &[(&str, OsString)]) -> std::io::Result<()> {
    let mut text = Vec::new();
    for (name, value) in env {
        text.extend_from_slice(name.as_bytes());
        text.push(b'=');
        text.extend_from_slice(value.as_bytes());
        text.push(b'\n');
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temporary)?;
    let written = file
        .write_all(&text)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}
