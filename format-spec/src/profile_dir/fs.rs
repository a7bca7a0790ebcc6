//! The system calls that read a hostile directory safely: entries opened and stat'ed
//! relative to the open directory, never through a symbolic link, as the directory's owner;
//! and the file handles that tell a file from a later one given its freed inode number.

use std::ffi::{CStr, CString, OsStr};
use std::fmt::Write as _;
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

/// MAX_HANDLE_SZ of <linux/fcntl.h>.
const MAX_HANDLE_BYTES: usize = 128;

/// The handle of the entry `name` of `dir` itself, a symbolic link included.
pub(super) fn handle_of_entry(dir: &File, name: &OsStr) -> Option<String> {
    let name = CString::new(name.as_bytes()).ok()?;
    file_handle(dir.as_raw_fd(), &name, 0)
}

/// The handle of an open file.
pub(crate) fn handle_of(file: &File) -> Option<String> {
    file_handle(file.as_raw_fd(), c"", libc::AT_EMPTY_PATH)
}

/// The file's handle (name_to_handle_at) as the log spells it: its type and bytes in hex.
/// The kernel makes it of the inode number and the inode's generation, which differs for
/// each file given the number, so that a file given a freed inode number has another handle
/// (device and inode alone take it for the file that had the number). It is written on
/// the disk with the inode, so another process finds the same handle. `None` where the
/// file system gives none: then device and inode are all there is.
fn file_handle(fd: libc::c_int, path: &CStr, flags: libc::c_int) -> Option<String> {
    #[repr(C)]
    struct Buffer {
        header: libc::file_handle,
        bytes: [u8; MAX_HANDLE_BYTES],
    }
    let mut buffer = Buffer {
        header: libc::file_handle {
            handle_bytes: MAX_HANDLE_BYTES as libc::c_uint,
            handle_type: 0,
            f_handle: [],
        },
        bytes: [0; MAX_HANDLE_BYTES],
    };
    let mut mount_id = 0;
    // The whole buffer's pointer: the kernel writes the bytes past the header.
    let handle = std::ptr::addr_of_mut!(buffer).cast::<libc::file_handle>();
    let mut call = |flags| {
        // SAFETY: the buffer holds handle_bytes bytes after its header, as the call
        // expects; the path is NUL-terminated.
        unsafe { libc::name_to_handle_at(fd, path.as_ptr(), handle, &mut mount_id, flags) }
    };
    // AT_HANDLE_FID (Linux 6.5) asks for a handle only to compare, which more file
    // systems give (overlayfs among them); earlier kernels refuse the flag.
    let mut result = call(flags | libc::AT_HANDLE_FID);
    if result != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        result = call(flags);
    }
    if result != 0 {
        return None;
    }
    let length = (buffer.header.handle_bytes as usize).min(MAX_HANDLE_BYTES);
    let mut text = format!("{:x}:", buffer.header.handle_type);
    for byte in &buffer.bytes[..length] {
        let _ = write!(text, "{byte:02x}");
    }
    Some(text)
}

/// While alive, this thread opens files with the directory owner's uid and gid, so that
/// a recorder running as root reads only what the task could read itself. A no-op when
/// not `root` or when root owns the directory.
pub(super) struct OwnerIdentity {
    previous: Option<(u32, u32)>,
}

impl OwnerIdentity {
    pub(super) fn assume((uid, gid): (u32, u32), root: bool) -> OwnerIdentity {
        // SAFETY: setfsgid and setfsuid only change this thread's credentials.
        let previous = unsafe {
            if !root || uid == 0 {
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
