//! The system calls that read a hostile directory safely: entries opened and stat'ed
//! relative to the open directory, never through a symbolic link, as the directory's owner.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;

/// The entry `name` of `dir` itself, a symbolic link included (not what it points to).
pub(super) fn stat_entry(dir: &File, name: &OsStr) -> io::Result<libc::stat> {
    let name = CString::new(name.as_bytes()).map_err(io::Error::other)?;
    // SAFETY: a zeroed stat is a valid out-parameter; the name is NUL-terminated.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        let result = libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        );
        if result == 0 {
            Ok(stat)
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Opens a directory entry for reading: never through a symbolic link, never blocking on
/// a FIFO, never becoming a controlling terminal.
pub(super) fn open_entry(dir: &File, name: &OsStr) -> io::Result<File> {
    let name = CString::new(name.as_bytes()).map_err(io::Error::other)?;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    // SAFETY: the name is NUL-terminated; the descriptor returned is owned by the File.
    unsafe {
        let fd = libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC);
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(File::from_raw_fd(fd))
        }
    }
}

pub(super) fn fstat(file: &File) -> io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-parameter.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(file.as_raw_fd(), &mut stat) == 0 {
            Ok(stat)
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// While alive, this thread opens files with the directory owner's uid and gid, so that
/// a recorder running as root reads only what the task could read itself. A no-op when
/// not root or when root owns the directory.
pub(super) struct OwnerIdentity {
    previous: Option<(u32, u32)>,
}

impl OwnerIdentity {
    pub(super) fn assume((uid, gid): (u32, u32)) -> OwnerIdentity {
        // SAFETY: geteuid, setfsgid and setfsuid only change this thread's credentials.
        let previous = unsafe {
            if libc::geteuid() != 0 || uid == 0 {
                None
            } else {
                let old_gid = libc::setfsgid(gid) as u32;
                let old_uid = libc::setfsuid(uid) as u32;
                Some((old_uid, old_gid))
            }
        };
        OwnerIdentity { previous }
    }
}

impl Drop for OwnerIdentity {
    fn drop(&mut self) {
        if let Some((uid, gid)) = self.previous {
            // SAFETY: restores this thread's own earlier credentials.
            unsafe {
                libc::setfsuid(uid);
                libc::setfsgid(gid);
            }
        }
    }
}
