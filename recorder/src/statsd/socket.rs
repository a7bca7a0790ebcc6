//! The statsd socket: a Unix datagram socket in the task's profile directory, for the
//! directory's owner alone (SPEC.md, "Statsd socket"). The directory is the task's and may
//! be hostile: it is opened once, never through a symbolic link at its last component, and
//! the socket is bound inside that descriptor (`/proc/self/fd/N/NAME`, so that no
//! component of the path is looked up again). bind(2) never follows a link nor replaces a
//! name; the mode is set on the socket before it has a name (Linux gives the file the
//! socket's mode), and a thread of its own binds it as the directory's owner
//! (setfsuid(2) acts on the calling thread only): the recorder makes and removes there only
//! what the owner could.

use std::ffi::CStr;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

/// The socket's name in the profile directory.
pub const SOCKET_NAME: &str = "statsd.sock";
/// The same, for the calls that take a C string.
const SOCKET_C_NAME: &CStr = c"statsd.sock";
/// Readable and writable by its owner alone.
const SOCKET_MODE: libc::mode_t = 0o600;

/// The socket's file, to remove at the end.
pub(crate) struct SocketFile {
    /// As exported to the task (`STATSD_SOCKET`).
    path: PathBuf,
    directory: OwnedFd,
    /// The socket's device and inode, to tell it from what the task may put in its place.
    identity: (u64, u64),
}

/// Binds the socket in `directory`, in place of a socket left there by an earlier
/// recording; any other file at its name is refused.
pub(crate) fn bind(directory: &Path) -> io::Result<(UnixDatagram, SocketFile)> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(directory)?;
    let directory_fd = OwnedFd::from(opened);
    let bound = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("tc-profile-statsd-bind".to_owned())
            .spawn_scoped(scope, || bind_as_owner(directory_fd.as_raw_fd()))?
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the binding thread panicked")))
    })?;
    let (socket, identity) = bound;
    let file = SocketFile {
        path: directory.join(SOCKET_NAME),
        directory: directory_fd,
        identity,
    };
    Ok((socket, file))
}

impl SocketFile {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket, unless something else has taken its name since.
    pub(crate) fn remove(self) {
        let fd = self.directory.as_raw_fd();
        if let Ok(Some(status)) = status_at(fd) {
            if (status.st_dev, status.st_ino) == self.identity {
                // SAFETY: a valid descriptor and a NUL-terminated name; unlinkat(2) never
                // follows a link.
                unsafe { libc::unlinkat(fd, SOCKET_C_NAME.as_ptr(), 0) };
            }
        }
    }
}

/// On a thread of its own: takes the directory owner's file-system ids when root, then
/// removes a stale socket and binds a new one.
fn bind_as_owner(directory: RawFd) -> io::Result<(UnixDatagram, (u64, u64))> {
    let owner = status(directory)?;
    // SAFETY: geteuid, setfsgid and setfsuid take no memory; the ids change for this
    // thread alone, which ends after the bind.
    unsafe {
        if libc::geteuid() == 0 {
            libc::setfsgid(owner.st_gid);
            libc::setfsuid(owner.st_uid);
        }
    }
    remove_stale(directory)?;
    // SAFETY: socket(2) takes no memory; the descriptor is owned at once.
    let fd =
        check(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a descriptor just returned, owned by nothing else.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a valid descriptor; fchmod(2) of an unbound socket sets the mode its file gets.
    check(unsafe { libc::fchmod(socket.as_raw_fd(), SOCKET_MODE) })?;
    bind_to(&socket, &format!("/proc/self/fd/{directory}/{SOCKET_NAME}"))?;
    let status = status_at(directory)?.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
    Ok((UnixDatagram::from(socket), (status.st_dev, status.st_ino)))
}

/// A socket at the name is an earlier recording's (a killed recorder, a daemon's earlier
/// part): removed. Anything else there is the task's, and is left alone.
fn remove_stale(directory: RawFd) -> io::Result<()> {
    let Some(status) = status_at(directory)? else {
        return Ok(());
    };
    if status.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{SOCKET_NAME} is there and is not a socket; remove it"),
        ));
    }
    // SAFETY: a valid descriptor and a NUL-terminated name; unlinkat(2) never follows a link.
    check(unsafe { libc::unlinkat(directory, SOCKET_C_NAME.as_ptr(), 0) }).map(drop)
}

/// bind(2) of a socket already made (std's binds make their own).
fn bind_to(socket: &OwnedFd, path: &str) -> io::Result<()> {
    // SAFETY: sockaddr_un is plain data; zeroed is a valid value (and ends the path).
    let mut raw: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    raw.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // Short: a descriptor's number and the name.
    if path.len() >= raw.sun_path.len() {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    for (to, from) in raw.sun_path.iter_mut().zip(path.as_bytes()) {
        *to = *from as libc::c_char;
    }
    let length = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: a valid descriptor and a sockaddr_un of the length passed.
    check(unsafe {
        libc::bind(
            socket.as_raw_fd(),
            (&raw as *const libc::sockaddr_un).cast(),
            length,
        )
    })
    .map(drop)
}

fn status(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: stat is plain data, filled by fstat(2) from a valid descriptor.
    let mut status: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstat(fd, &mut status) })?;
    Ok(status)
}

/// The status of the socket's name in the directory, not following a link; None when
/// nothing is there.
fn status_at(directory: RawFd) -> io::Result<Option<libc::stat>> {
    // SAFETY: stat is plain data, filled by fstatat(2); the name is NUL-terminated.
    let mut status: libc::stat = unsafe { std::mem::zeroed() };
    let done = unsafe {
        libc::fstatat(
            directory,
            SOCKET_C_NAME.as_ptr(),
            &mut status,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    match check(done) {
        Ok(_) => Ok(Some(status)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    #[test]
    fn the_socket_is_its_owners_alone_and_takes_datagrams() {
        let dir = tempfile::tempdir().unwrap();
        let (socket, file) = bind(dir.path()).unwrap();
        assert_eq!(file.path(), dir.path().join(SOCKET_NAME));
        let status = std::fs::symlink_metadata(file.path()).unwrap();
        assert!(status.file_type().is_socket());
        assert_eq!(status.permissions().mode() & 0o777, 0o600);
        UnixDatagram::unbound()
            .unwrap()
            .send_to(b"a:1|c", file.path())
            .unwrap();
        let mut packet = [0; 16];
        assert_eq!(socket.recv(&mut packet).unwrap(), 5);
        file.remove();
        assert!(!dir.path().join(SOCKET_NAME).exists());
    }

    #[test]
    fn a_stale_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let stale = UnixDatagram::bind(dir.path().join(SOCKET_NAME)).unwrap();
        drop(stale);
        let (socket, file) = bind(dir.path()).unwrap();
        UnixDatagram::unbound()
            .unwrap()
            .send_to(b"x", file.path())
            .unwrap();
        assert_eq!(socket.recv(&mut [0; 4]).unwrap(), 1);
    }

    #[test]
    fn a_planted_file_or_link_at_the_name_is_left_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"kept").unwrap();
        let name = dir.path().join(SOCKET_NAME);
        std::os::unix::fs::symlink(&target, &name).unwrap();
        let refused = bind(dir.path()).err().unwrap();
        assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists);
        assert!(std::fs::symlink_metadata(&name).unwrap().is_symlink());
        std::fs::remove_file(&name).unwrap();
        std::fs::write(&name, b"planted").unwrap();
        assert!(bind(dir.path()).is_err());
        assert_eq!(std::fs::read(&name).unwrap(), b"planted");
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
    }

    #[test]
    fn a_directory_reached_through_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = dir.path().join("profile");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        assert!(bind(&link).is_err());
        assert!(!elsewhere.join(SOCKET_NAME).exists());
    }

    #[test]
    fn what_took_the_sockets_name_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (_socket, file) = bind(dir.path()).unwrap();
        let name = dir.path().join(SOCKET_NAME);
        std::fs::remove_file(&name).unwrap();
        std::fs::write(&name, b"the task's").unwrap();
        file.remove();
        assert_eq!(std::fs::read(&name).unwrap(), b"the task's");
    }
}
