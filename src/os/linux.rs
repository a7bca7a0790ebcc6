//! Linux: cgroups (`run`'s --cgroup and --own-cgroup, and the one a killed recorder left),
//! the non-dumpable flag and `environ`; the rest is unix.rs's.

use crate::cli::RunArgs;
use anyhow::Result;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use tc_profile_finalizer::FinalizeReport;
use tc_profile_recorder::{own_cgroup_name, remove_created_cgroup, OwnCgroup, TaskCgroup};

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

/// Makes the process non-dumpable: its memory is then closed to other processes of the
/// same user (the command gets its own flag back at exec).
pub fn close_memory_to_others() {
    // SAFETY: prctl(PR_SET_DUMPABLE) takes plain integers and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
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

/// The process's environment block (environ(7)).
///
/// # Safety
/// The block may be changed by another thread's setenv: no other thread may run.
pub(super) unsafe fn environment_block() -> *mut *mut libc::c_char {
    // SAFETY: the caller's contract; the pointer is copied, no reference made.
    unsafe { libc::environ }
}
