//! What Linux alone has: file handles (name_to_handle_at), which tell a file from a later
//! one given its freed inode number, and the file-system uid and gid of a thread
//! (setfsuid), with which a recorder running as root reads as a directory's owner.

use crate::DirStatus;
use std::ffi::CStr;
use std::fmt::Write as _;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// MAX_HANDLE_SZ of <linux/fcntl.h>.
const MAX_HANDLE_BYTES: usize = 128;

/// The file's handle (name_to_handle_at) as the log spells it: its type and bytes in hex.
/// The kernel makes it of the inode number and the inode's generation, which differs for
/// each file given the number, so that a file given a freed inode number has another handle
/// (device and inode alone take it for the file that had the number). It is written on
/// the disk with the inode, so another process finds the same handle. `None` where the
/// file system gives none: then device and inode are all there is. An empty `path` with
/// `empty_path` is the open file `at` itself.
pub(crate) fn file_handle(at: BorrowedFd<'_>, path: &CStr, empty_path: bool) -> Option<String> {
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
    let flags = if empty_path { libc::AT_EMPTY_PATH } else { 0 };
    let mut mount_id = 0;
    // The whole buffer's pointer: the kernel writes the bytes past the header.
    let handle = std::ptr::addr_of_mut!(buffer).cast::<libc::file_handle>();
    let mut call = |flags| {
        // SAFETY: the buffer holds handle_bytes bytes after its header, as the call
        // expects; the path is NUL-terminated.
        unsafe {
            libc::name_to_handle_at(at.as_raw_fd(), path.as_ptr(), handle, &mut mount_id, flags)
        }
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

/// While alive, this thread opens files with a directory owner's uid and gid, so that a
/// process running as root reads only what the directory's owner could read itself. Nothing
/// when not root, or when root owns the directory.
pub struct ReadingAs {
    previous: Option<(u32, u32)>,
}

impl ReadingAs {
    pub fn owner_of(dir: &DirStatus) -> ReadingAs {
        // SAFETY: geteuid has no preconditions; setfsgid and setfsuid only change this
        // thread's credentials.
        let previous = unsafe {
            match dir.owner {
                Some((uid, gid)) if uid != 0 && libc::geteuid() == 0 => {
                    let old_gid = libc::setfsgid(gid) as u32;
                    let old_uid = libc::setfsuid(uid) as u32;
                    Some((old_uid, old_gid))
                }
                _ => None,
            }
        };
        ReadingAs { previous }
    }
}

impl Drop for ReadingAs {
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
