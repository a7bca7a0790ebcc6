//! [`OwnCgroup`]: the cgroup that `run --own-cgroup` creates for the command, and the
//! removal of one that a killed recorder left behind.

use crate::sources::cgroup::mount::{cgroup_dir, mounts, Hierarchy};
use crate::sources::cgroup::TaskCgroup;
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Every cgroup the recorder creates is named this and its pid; only such a cgroup is
/// ever removed.
const OWN_PREFIX: &str = "tc-profile-";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupError {
    #[error(
        "no writable cgroup: neither a cgroup v2 with the memory controller delegated nor a \
         cgroup v1 memory controller is mounted; run without --own-cgroup"
    )]
    NoHierarchy,
    #[error("{path}: cannot create a cgroup: {source}; run as root or without --own-cgroup")]
    Create { path: PathBuf, source: io::Error },
    #[error("{path}: not a cgroup that tc-profile created (a cgroup named {OWN_PREFIX}<pid>); left alone")]
    NotOurs { path: PathBuf },
    #[error("{path}: cannot remove the cgroup: {source}")]
    Remove { path: PathBuf, source: io::Error },
}

/// A cgroup created for the task, under the recorder's own: its memory peak and OOM kills
/// are the task's alone. Remove it with [`OwnCgroup::remove`] when the task is over (when
/// dropped, it removes itself, silently); one left behind by a killed recorder is named in
/// its log's meta line (`tcProfile.cgroup.created`), for [`remove_created_cgroup`].
#[derive(Debug)]
pub struct OwnCgroup {
    path: PathBuf,
    removed: bool,
}

impl OwnCgroup {
    /// Creates `tc-profile-<pid>` in cgroup v2 where the memory controller is delegated to
    /// the recorder's cgroup, else in the v1 memory controller.
    pub fn create() -> Result<OwnCgroup, CgroupError> {
        let mounts = mounts();
        let parent = |hierarchy: Hierarchy| {
            let mount = mounts.iter().find(|m| m.hierarchy == hierarchy)?;
            cgroup_dir("self", mount)
        };
        let v2_with_memory = parent(Hierarchy::V2).filter(|dir| {
            fs::read_to_string(dir.join("cgroup.subtree_control"))
                .is_ok_and(|text| text.split_ascii_whitespace().any(|c| c == "memory"))
        });
        let parent = match v2_with_memory {
            Some(dir) => dir,
            None => parent(Hierarchy::V1Memory).ok_or(CgroupError::NoHierarchy)?,
        };
        let path = parent.join(own_cgroup_name());
        if path.exists() {
            // Left by a killed recorder that had our pid.
            remove_created_cgroup(&path)?;
        }
        fs::create_dir(&path).map_err(|source| CgroupError::Create {
            path: path.clone(),
            source,
        })?;
        Ok(OwnCgroup {
            path,
            removed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the recorder's config names as the task's cgroup.
    pub fn task_cgroup(&self) -> TaskCgroup {
        TaskCgroup {
            path: self.path.clone(),
            created: true,
        }
    }

    /// A hook for `CommandExt::pre_exec` that moves the command into this cgroup before it
    /// runs: it only opens, writes and closes, which is safe between fork and exec. It never
    /// fails: the task runs even where the move is refused (see [`OwnCgroup::holds`]).
    pub fn enter_hook(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let procs =
            CString::new(self.path.join("cgroup.procs").as_os_str().as_bytes()).unwrap_or_default();
        move || {
            // SAFETY: open, write and close are async-signal-safe; `procs` outlives the calls.
            unsafe {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    // "0" is the writing process itself.
                    libc::write(fd, b"0\n".as_ptr().cast(), 2);
                    libc::close(fd);
                }
            }
            Ok(())
        }
    }

    /// Whether process `pid` is in this cgroup; None when that cannot be read (it has gone).
    pub fn holds(&self, pid: u32) -> Option<bool> {
        let name = self.path.file_name()?.to_str()?;
        let cgroups = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        Some(
            cgroups
                .lines()
                .any(|line| line.ends_with(&format!("/{name}"))),
        )
    }

    /// Moves what is still inside to the parent cgroup and removes this one.
    pub fn remove(mut self) -> Result<(), CgroupError> {
        self.removed = true;
        remove_created_cgroup(&self.path)
    }
}

impl Drop for OwnCgroup {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_created_cgroup(&self.path);
        }
    }
}

/// The name of the cgroup that [`OwnCgroup::create`] makes for this process.
pub fn own_cgroup_name() -> String {
    format!("{OWN_PREFIX}{}", std::process::id())
}

/// Removes a cgroup that tc-profile created (named `tc-profile-<pid>`), with any cgroups
/// inside it: processes still in them move to its parent first. For `recover`, after a
/// killed recorder; nothing to do when it is already gone.
pub fn remove_created_cgroup(path: &Path) -> Result<(), CgroupError> {
    let ours = path
        .file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with(OWN_PREFIX));
    let parent = path.parent().filter(|_| ours).ok_or(CgroupError::NotOurs {
        path: path.to_owned(),
    })?;
    if !path.exists() {
        return Ok(());
    }
    // A log names the path: whatever it says, only a cgroup is emptied and removed.
    if !path.join("cgroup.procs").exists() {
        return Err(CgroupError::NotOurs {
            path: path.to_owned(),
        });
    }
    empty_and_remove(path, &parent.join("cgroup.procs")).map_err(|source| CgroupError::Remove {
        path: path.to_owned(),
        source,
    })
}

fn empty_and_remove(dir: &Path, parent_procs: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)?.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            empty_and_remove(&entry.path(), parent_procs)?;
        }
    }
    // A process that exited in the meantime is no error; the retries below see it go.
    let pids = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    for pid in pids.lines() {
        let _ = fs::write(parent_procs, pid);
    }
    // A cgroup stays busy for a moment after its last process is reaped.
    let mut attempts = 0;
    loop {
        match fs::remove_dir(dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempts < 50 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cgroups_named_as_ours_are_removed() {
        let error = remove_created_cgroup(Path::new("/sys/fs/cgroup/memory/system.slice"));
        assert!(
            matches!(error, Err(CgroupError::NotOurs { .. })),
            "{error:?}"
        );
        assert!(remove_created_cgroup(Path::new("/nonexistent/tc-profile-1")).is_ok());
        let plain = tempfile::tempdir().unwrap();
        let named_like_ours = plain.path().join("tc-profile-1");
        fs::create_dir(&named_like_ours).unwrap();
        let error = remove_created_cgroup(&named_like_ours);
        assert!(
            matches!(error, Err(CgroupError::NotOurs { .. })),
            "{error:?}"
        );
        assert!(named_like_ours.exists(), "a plain directory is left alone");
    }
}
