//! Linux: signals, cgroups, wait statuses, file modes and the process's environment block.

use crate::cli::RunArgs;
use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use signal_hook::low_level::siginfo::{Cause, Origin};
use signal_hook_registry::SigId;
use std::fs::{File, Metadata, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use tc_profile_finalizer::FinalizeReport;
use tc_profile_recorder::{
    describe_wait_status, own_cgroup_name, remove_created_cgroup, OwnCgroup, TaskCgroup,
};

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

/// Where `run`'s command runs: the cgroup of --cgroup (recorded only) or of --own-cgroup
/// (made for it, entered before exec, removed after).
pub struct CommandScope {
    own: Option<OwnCgroup>,
}

impl CommandScope {
    /// The scope, and the cgroup whose counters the recording reads.
    pub fn create(args: &RunArgs) -> Result<(CommandScope, Option<TaskCgroup>)> {
        let cgroup = args.cgroup.clone().map(task_cgroup).transpose()?;
        let own = args.own_cgroup.then(create_own_cgroup).flatten();
        let cgroup = own.as_ref().map(OwnCgroup::task_cgroup).or(cgroup);
        Ok((CommandScope { own }, cgroup))
    }

    pub fn prepare(&self, command: &mut Command) {
        if let Some(own) = &self.own {
            // SAFETY: the hook only opens, writes and closes a file (async-signal-safe).
            unsafe { command.pre_exec(own.enter_hook()) };
        }
    }

    /// Warns when the command is not in its own cgroup.
    pub fn adopt(&self, child: &Child) {
        if let Some(own) = self
            .own
            .as_ref()
            .filter(|own| own.holds(child.id()) == Some(false))
        {
            eprintln!(
                "tc-profile: warning: --own-cgroup: the command could not be moved into {}; \
                 its cgroup figures are not the task's",
                own.path().display()
            );
        }
    }

    pub fn remove(self) {
        if let Err(error) = self.own.map_or(Ok(()), OwnCgroup::remove) {
            eprintln!("tc-profile: warning: {error}");
        }
    }
}

/// The command's own cgroup, or a warning and none: a task must not fail because its
/// profile could not have a cgroup. Dropped on an error, it removes itself.
fn create_own_cgroup() -> Option<OwnCgroup> {
    OwnCgroup::create()
        .map_err(|error| eprintln!("tc-profile: warning: --own-cgroup: {error}"))
        .ok()
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

/// Makes the process non-dumpable: its memory is then closed to other processes of the
/// same user (the command gets its own flag back at exec).
pub fn close_memory_to_others() {
    // SAFETY: prctl(PR_SET_DUMPABLE) takes plain integers and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// Overwrites with NULs, in place, the values of these variables (what /proc/PID/environ
/// shows, to root too); true if one was set.
pub fn blank_environment_values(names: &[&str]) -> bool {
    let mut blanked = false;
    // SAFETY: environ is a NULL-terminated array of NUL-terminated strings that this
    // process owns; only bytes before each string's terminator are written, and no other
    // thread runs yet (the caller's contract).
    unsafe {
        let mut entry = libc::environ;
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

/// Removes the cgroup that a killed recorder left behind (`run --own-cgroup`); a warning
/// when it cannot: the profile is written all the same.
pub fn remove_left_cgroup(report: &FinalizeReport) {
    let Some(path) = report.left_cgroup.as_deref().filter(|p| p.exists()) else {
        return;
    };
    // A killed recorder that had our pid: `run --own-cgroup` has already removed its cgroup
    // and made one of the same name for this task.
    if path.file_name() == Some(std::ffi::OsStr::new(&own_cgroup_name())) {
        return;
    }
    match remove_created_cgroup(path) {
        Ok(()) => eprintln!(
            "tc-profile: removed {}, the cgroup its recorder left",
            path.display()
        ),
        Err(error) => eprintln!("tc-profile: warning: {error}"),
    }
}
