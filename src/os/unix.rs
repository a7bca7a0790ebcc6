//! Unix (Linux and macOS): signals, wait statuses, file modes and the process's
//! environment block.

#[cfg(target_os = "linux")]
use super::linux::environment_block;
#[cfg(target_os = "macos")]
use super::macos::environment_block;
use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use signal_hook::low_level::siginfo::{Cause, Origin};
use signal_hook_registry::SigId;
use std::fs::{File, Metadata, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use tc_profile_recorder::describe_wait_status;

/// SIGTERM and SIGINT, caught from [`StopRequests::install`] on: `record` stops at the
/// first.
pub struct StopRequests(Signals);

impl StopRequests {
    pub fn install() -> Result<StopRequests> {
        Signals::new([SIGINT, SIGTERM])
            .map(StopRequests)
            .context("installing the SIGINT and SIGTERM handlers")
    }

    pub fn wait(mut self) {
        self.0.forever().next();
    }
}

/// The shell's convention: the exit code, or 128+N for a death by signal N.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        (None, None) => 1,
    }
}

/// "exit code N" or "killed by signal N".
pub fn describe_status(status: ExitStatus) -> String {
    describe_wait_status(Some(status.into_raw()))
}

/// A handle of tc-profile's own stdout or stderr, for the relay of the command's.
pub fn duplicate_output(own: &impl AsFd) -> std::io::Result<File> {
    own.as_fd().try_clone_to_owned().map(File::from)
}

/// Forwards SIGINT and SIGTERM sent to tc-profile by another process to the command.
/// Signals from the terminal reach the command's process group already: not sent twice.
/// The handler sends them itself (kill(2) is async-signal-safe): no thread waits for them,
/// which would cost a thread's start and exit in every run.
pub struct StopForwarding {
    target: Arc<AtomicI32>,
    handlers: Vec<SigId>,
}

impl StopForwarding {
    pub fn install() -> Result<StopForwarding> {
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
        Ok(StopForwarding { target, handlers })
    }

    pub fn set_target(&self, pid: u32) {
        self.target.store(pid as i32, Ordering::SeqCst);
    }

    pub fn stop(self) {
        for id in self.handlers {
            signal_hook_registry::unregister(id);
        }
    }
}

/// The process that ran tc-profile (the shell of a script).
pub fn parent_pid() -> u32 {
    // SAFETY: getppid has no preconditions.
    unsafe { libc::getppid() as u32 }
}

/// Opens a marker file to append to, readable by all, never through a symbolic link.
pub fn open_marker_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// The mode of a file that its group or others may read; None when only its owner may.
pub fn readable_by_others(metadata: &Metadata) -> Option<u32> {
    let mode = metadata.permissions().mode();
    (mode & 0o077 != 0).then_some(mode & 0o777)
}

/// Overwrites with NULs, in place, the values of these variables (what /proc/PID/environ
/// and macOS's KERN_PROCARGS2 show, to root too); true if one was set.
pub fn blank_environment_values(names: &[&str]) -> bool {
    let mut blanked = false;
    // SAFETY: environ is a NULL-terminated array of NUL-terminated strings that this
    // process owns; only bytes before each string's terminator are written, and no other
    // thread runs yet (the caller's contract).
    unsafe {
        let mut entry = environment_block();
        while !entry.is_null() && !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry).to_bytes();
            for name in names {
                let name = name.as_bytes();
                if text.len() > name.len() && text.starts_with(name) && text[name.len()] == b'=' {
                    let value = (*entry).add(name.len() + 1);
                    std::ptr::write_bytes(value, 0, text.len() - name.len() - 1);
                    blanked = true;
                }
            }
            entry = entry.add(1);
        }
    }
    blanked
}

/// Raises the soft open-file limit to the hard one, for the daemon: every task's tree keeps
/// its processes' /proc files open within half of it (a soft limit of 1,024 keeps 256
/// processes', the rest reopened each tick). The daemon starts no process that would
/// inherit it. Where the hard limit is more than the kernel takes (macOS's unlimited), the
/// soft one stays as it is.
pub fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) and setrlimit(2) read and write only the rlimit they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
