//! `tc-profile record`: a worker's sidecar. Records until SIGTERM or SIGINT, then writes
//! the profile.

use crate::cli::RecordArgs;
use crate::recording;
use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
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
