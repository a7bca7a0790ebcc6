//! The unix calls: `openat`, `mkdirat`, `renameat`, `unlinkat` and `fstatat` relative to a
//! directory's descriptor, through rustix; Linux's file handles (`linux.rs`).

use crate::{DirStatus, Entry, Identity, Kind, Owner};
use rustix::fs::{self as sys, AtFlags, FileType, Gid, Mode, OFlags, Stat, Uid, CWD};
use rustix::io::Errno;
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How a directory is opened: never through a symbolic link at the name opened.
const DIRECTORY: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How an entry is opened to be read: never through a symbolic link (an error), never
/// waiting on a FIFO, never taking a terminal.
const READ_ENTRY: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// A directory, open: what is done in it is done by name relative to it.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// Opens the directory at `path`. A symbolic link at its last component is refused;
    /// the components before it are the caller's, and followed.
    pub fn open(path: &Path) -> io::Result<Dir> {
        open_dir(CWD, path)
    }

    /// This directory, opened anew.
    pub(crate) fn reopen(&self) -> io::Result<Dir> {
        self.open_dir(OsStr::new("."))
    }

    /// Opens the directory `name` in this one, never through a symbolic link.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        open_dir(&self.fd, name)
    }

    /// Creates the directory `name` (it must not exist) with exactly `mode`, whatever the
    /// umask, and opens it.
    pub fn create_dir(&self, name: &OsStr, mode: u32) -> io::Result<Dir> {
        // Private until its mode is set: never more open than asked, even for a moment.
        sys::mkdirat(&self.fd, name, Mode::RWXU)?;
        let dir = self.open_dir(name)?;
        dir.set_mode(mode)?;
        Ok(dir)
    }

    /// Creates the file `name`, which must not exist (not even as a symbolic link), with
    /// exactly `mode`; open for reading and appending.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let flags = OFlags::RDWR
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC;
        let fd = sys::openat(&self.fd, name, flags, Mode::RUSR | Mode::WUSR)?;
        sys::fchmod(&fd, exactly(mode))?;
        Ok(File::from(fd))
    }

    /// Opens the file `name` for appending, created if missing, never through a symbolic
    /// link; its mode set to exactly `mode`.
    pub fn open_append(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let flags =
            OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = sys::openat(&self.fd, name, flags, Mode::RUSR | Mode::WUSR)?;
        sys::fchmod(&fd, exactly(mode))?;
        Ok(File::from(fd))
    }

    /// Opens the existing entry `name` for reading, to look at it: never through a
    /// symbolic link (an error), never waiting on a FIFO, never taking a terminal.
    pub fn open_file(&self, name: &OsStr) -> io::Result<File> {
        Ok(File::from(sys::openat(
            &self.fd,
            name,
            READ_ENTRY,
            Mode::empty(),
        )?))
    }

    /// The entry `name` itself (a symbolic link's own, never followed).
    pub fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        Ok(entry_of_stat(&sys::statat(
            &self.fd,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
        )?))
    }

    /// The handle of the entry `name` itself (see [`handle`]).
    pub fn handle(&self, name: &OsStr) -> Option<String> {
        let name = CString::new(name.as_bytes()).ok()?;
        file_handle(self.fd.as_fd(), &name, false)
    }

    /// This directory's identity.
    pub fn identity(&self) -> io::Result<Identity> {
        Ok(identity_of_stat(&sys::fstat(&self.fd)?))
    }

    /// This directory's owner and when its entries last changed (its change time).
    // The fields' types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    pub fn status(&self) -> io::Result<DirStatus> {
        let stat = sys::fstat(&self.fd)?;
        Ok(DirStatus {
            owner: Some((stat.st_uid, stat.st_gid)),
            changed: Some((stat.st_ctime as i64, stat.st_ctime_nsec as i64)),
        })
    }

    /// Hands each name in this directory (but `.` and `..`) to `visit`, read through the
    /// open directory itself; an entry that cannot be read is left out.
    pub fn list(&self, visit: &mut dyn FnMut(&OsStr)) -> io::Result<()> {
        for entry in sys::Dir::read_from(&self.fd)?.flatten() {
            let name = entry.file_name();
            if name != c"." && name != c".." {
                visit(OsStr::from_bytes(name.to_bytes()));
            }
        }
        Ok(())
    }

    /// Renames `from` to `to`, both in this directory; `to` is replaced (a symbolic link
    /// there itself, never what it points to).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(sys::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Removes the entry `name`, a file or a symbolic link (never followed).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        Ok(sys::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Makes this directory's entries durable: created, renamed and removed ones.
    pub fn sync(&self) -> io::Result<()> {
        Ok(sys::fsync(&self.fd)?)
    }

    /// Sets this directory's mode to exactly `mode`.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        Ok(sys::fchmod(&self.fd, exactly(mode))?)
    }

    /// Gives this directory to `owner`.
    pub fn give_to(&self, owner: Owner) -> io::Result<()> {
        // -1 means "unchanged" to the kernel: never a user or group to give a directory to.
        if owner.uid == u32::MAX || owner.gid == Some(u32::MAX) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "4294967295 (-1) is neither a user nor a group",
            ));
        }
        let gid = owner.gid.map(Gid::from_raw);
        Ok(sys::fchown(&self.fd, Some(Uid::from_raw(owner.uid)), gid)?)
    }

    /// Removes the empty directory `name`.
    pub(crate) fn remove_empty_dir(&self, name: &OsStr) -> io::Result<()> {
        Ok(sys::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }
}

/// `mode` as the calls take it (16 bits on macOS; every mode here fits).
fn exactly(mode: u32) -> Mode {
    Mode::from_raw_mode(mode as _)
}

/// The identity of an open file.
pub fn identity(file: &File) -> io::Result<Identity> {
    Ok(identity_of_stat(&sys::fstat(file)?))
}

/// The identity of the file or directory at `path`, a symbolic link followed (as
/// `std::fs::metadata` does): which file a name given by the user leads to.
pub fn identity_of_path(path: &Path) -> io::Result<Identity> {
    Ok(identity_of_stat(&sys::stat(path)?))
}

/// What an open file is.
pub fn entry_of(file: &File) -> io::Result<Entry> {
    Ok(entry_of_stat(&sys::fstat(file)?))
}

/// The handle of an open file, which tells it from a later file given its identity once
/// it is deleted: Linux's file handle (`linux.rs`); `None` where the file system gives
/// none, and on other unixes.
pub fn handle(file: &File) -> Option<String> {
    file_handle(file.as_fd(), c"", true)
}

/// Opens the file at `path` to read it as [`Dir::open_file`] does: a symbolic link at
/// its last component is refused; the components before it are the caller's, and followed.
pub fn open_file(path: &Path) -> io::Result<File> {
    Ok(File::from(sys::openat(
        CWD,
        path,
        READ_ENTRY,
        Mode::empty(),
    )?))
}

/// Whether `error` is the refusal to open a symbolic link.
pub fn is_symbolic_link_refused(error: &io::Error) -> bool {
    error.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

/// Reads from `offset` without moving the file's position.
pub fn read_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buffer, offset)
}

#[cfg(target_os = "linux")]
use crate::linux::file_handle;

#[cfg(not(target_os = "linux"))]
fn file_handle(
    _at: std::os::fd::BorrowedFd<'_>,
    _path: &std::ffi::CStr,
    _empty: bool,
) -> Option<String> {
    None
}

fn open_dir<P: rustix::path::Arg + Copy>(at: impl AsFd, path: P) -> io::Result<Dir> {
    match sys::openat(&at, path, DIRECTORY, Mode::empty()) {
        Ok(fd) => Ok(Dir { fd }),
        // Linux says ENOTDIR of a symbolic link opened as a directory without following.
        Err(error @ (Errno::LOOP | Errno::NOTDIR)) => {
            match sys::statat(&at, path, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                    Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "a symbolic link, not followed: give the directory itself",
                    ))
                }
                _ => Err(error.into()),
            }
        }
        Err(error) => Err(error.into()),
    }
}

// The fields' types differ between targets (u64 on some, c_ulong on others).
#[allow(clippy::unnecessary_cast)]
fn entry_of_stat(stat: &Stat) -> Entry {
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Directory,
        FileType::Symlink => Kind::SymbolicLink,
        _ => Kind::Other,
    };
    Entry {
        identity: identity_of_stat(stat),
        kind,
        size: stat.st_size as u64,
        links: stat.st_nlink as u64,
    }
}

// The fields' types differ between targets (u64 on some, c_ulong on others).
#[allow(clippy::unnecessary_cast)]
fn identity_of_stat(stat: &Stat) -> Identity {
    Identity {
        device: stat.st_dev as u64,
        inode: stat.st_ino as u64,
    }
}
