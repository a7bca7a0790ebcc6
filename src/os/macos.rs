//! macOS: `run`'s command runs as it is (no cgroups), the process's environment block is
//! _NSGetEnviron's; the rest is unix.rs's.

use super::refuse_cgroup_options;
use crate::cli::RunArgs;
use anyhow::Result;
use std::process::{Child, Command};
use tc_profile_recorder::TaskCgroup;

/// `run`'s command, as started: macOS has no cgroups to hold it in.
pub struct CommandScope(());

impl CommandScope {
    /// The scope; no cgroup.
    pub fn create(args: &RunArgs) -> Result<(CommandScope, Option<TaskCgroup>)> {
        refuse_cgroup_options(args)?;
        Ok((CommandScope(()), None))
    }

    pub fn prepare(&self, _: &mut Command) {}

    pub fn adopt(&self, _: &Child) {}

    pub fn remove(self) {}
}

/// Nothing to do. Reading another process's memory (task_for_pid) already takes root or
/// the debugging entitlement on macOS; ptrace(PT_DENY_ATTACH) is no equivalent of Linux's
/// non-dumpable flag: root is not stopped by it, and a process already being debugged is
/// killed by it.
pub fn close_memory_to_others() {}

/// The process's environment block: libc has no `environ` on Apple's targets.
///
/// # Safety
/// The block may be changed by another thread's setenv: no other thread may run.
pub(super) unsafe fn environment_block() -> *mut *mut libc::c_char {
    // SAFETY: _NSGetEnviron returns a valid pointer to the block's pointer; the caller's
    // contract for the rest.
    unsafe { *libc::_NSGetEnviron() }
}
