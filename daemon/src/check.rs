//! What a request names, checked before anything is made for it: the paths the daemon
//! writes are absolute (never relative to the daemon's working directory), and the
//! processes a task follows exist and are not the daemon's own or, unless asked, the host's.
//! Linux: processes and cgroups are read from /proc and the cgroup files.

use crate::error::DaemonError;
use crate::state::Followed;
use std::path::Path;

/// The process every other descends from: following it takes the whole host.
const INIT: u32 = 1;

/// Refuses a relative `path`, naming `key`.
pub fn absolute(key: &str, path: &Path) -> Result<(), DaemonError> {
    if path.is_absolute() {
        return Ok(());
    }
    Err(DaemonError::Request(format!(
        "{key} {} is relative: give an absolute path (the daemon's working directory is not \
         the client's)",
        path.display()
    )))
}

/// Refuses processes a task may not follow: `allow_host` lets it have the whole host.
pub fn follow(follow: &Followed, allow_host: bool) -> Result<(), DaemonError> {
    match follow {
        Followed::Pid(pid) => process(*pid, allow_host),
        Followed::Cgroup(path) => cgroup(path, allow_host),
    }
}

fn process(pid: u32, allow_host: bool) -> Result<(), DaemonError> {
    let refuse = |why: &str| Err(DaemonError::Refused(format!("pid {pid} {why}")));
    if pid == 0 {
        return refuse("is not a process: give the pid of the task's running process");
    }
    if pid == INIT && !allow_host {
        return refuse("is init, the whole host: give the task's own process (or --allow-host)");
    }
    // The Tgid line names the process of a thread too (/proc/TID exists, unlisted).
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|_| DaemonError::NoSuchProcess { pid })?;
    let tgid = status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|tgid| tgid.trim().parse::<u32>().ok());
    if tgid == Some(std::process::id()) {
        return refuse("is the daemon itself: give the task's own process");
    }
    Ok(())
}

fn cgroup(path: &Path, allow_host: bool) -> Result<(), DaemonError> {
    absolute("cgroup", path)?;
    if !path.join("cgroup.procs").is_file() {
        return Err(DaemonError::NoSuchCgroup {
            path: path.to_owned(),
        });
    }
    // A hierarchy's root has no cgroup above it: its processes are the host's.
    let is_root = path
        .parent()
        .is_none_or(|parent| !parent.join("cgroup.procs").is_file());
    if is_root && !allow_host {
        return Err(DaemonError::Refused(format!(
            "{} is a cgroup hierarchy's root, the whole host: give the task's own cgroup (or \
             --allow-host)",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<(), DaemonError>) -> crate::ErrorCode {
        result.unwrap_err().code()
    }

    #[test]
    fn pid_zero_init_the_daemon_and_a_dead_pid_are_refused_a_live_child_is_not() {
        use crate::ErrorCode::{NoSuchProcess, Refused};
        assert_eq!(code(process(0, true)), Refused);
        assert_eq!(code(process(INIT, false)), Refused);
        assert!(process(INIT, true).is_ok());
        assert_eq!(code(process(std::process::id(), true)), Refused);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        assert!(process(pid, false).is_ok());
        child.wait().unwrap();
        assert_eq!(code(process(pid, false)), NoSuchProcess);
    }

    #[test]
    fn a_cgroup_must_exist_and_be_absolute_and_the_root_needs_allow_host() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let task = root.join("task");
        std::fs::create_dir_all(&task).unwrap();
        assert_eq!(code(cgroup(&task, false)), crate::ErrorCode::NoSuchCgroup);
        std::fs::write(root.join("cgroup.procs"), "").unwrap();
        std::fs::write(task.join("cgroup.procs"), "").unwrap();
        assert!(cgroup(&task, false).is_ok());
        assert_eq!(code(cgroup(&root, false)), crate::ErrorCode::Refused);
        assert!(cgroup(&root, true).is_ok());
        assert_eq!(
            code(cgroup(Path::new("task"), true)),
            crate::ErrorCode::BadRequest
        );
    }
}
