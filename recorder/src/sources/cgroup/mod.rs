//! The task's cgroup: its counters as tracks ("Cgroup Memory", "Cgroup CPU", "Cgroup IO"),
//! an "OOM kill" marker when its OOM-kill counter goes up, and [`own::OwnCgroup`], a fresh
//! cgroup that `run --own-cgroup` puts the command into, and [`cpu_total::CpuTotal`], the
//! CPU total by which the process tree skips reading processes that cannot have run.
//!
//! Both cgroup v2 and the v1 memory controller are read: hosts on the hybrid hierarchy
//! (systemd's, and this kind of CI machine) have v2 mounted without its memory controller.

pub(crate) mod cpu_total;
pub(crate) mod mount;
pub(crate) mod oom;
pub(crate) mod own;
pub(crate) mod tracks;

use crate::sources::process_tree::Follow;
use mount::{cgroup_dir, mounts};

pub(crate) use super::TaskCgroup;

/// The task's cgroup when a followed pid or cgroup has one of its own: a followed
/// cgroup, or a followed pid's cgroup when it is not the recorder's.
pub(crate) fn detect(follow: &Follow) -> Option<TaskCgroup> {
    let path = match follow {
        Follow::Cgroup(path) => path.clone(),
        Follow::Children => return None,
        Follow::Pid(pid) => mounts().iter().find_map(|mount| {
            let theirs = cgroup_dir(&pid.to_string(), mount)?;
            let ours = cgroup_dir("self", mount)?;
            (theirs != ours && theirs.join(mount.hierarchy.memory_file()).exists())
                .then_some(theirs)
        })?,
    };
    Some(TaskCgroup {
        path,
        created: false,
    })
}
