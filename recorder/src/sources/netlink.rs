//! What the two netlink sources of exits share ([`crate::sources::taskstats`] over generic
//! netlink, [`crate::sources::proc_connector`] over the connector): a bound socket with a
//! timeout on its receives and a large receive queue, sending and receiving one datagram,
//! and walking the messages of a datagram within its length (`include/uapi/linux/netlink.h`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(crate) const NLMSG_ERROR: u16 = 2;
pub(crate) const NLMSG_HEADER: usize = 16;

/// The receive queue asked for (as root, beyond `rmem_max`): the kernel charges some
/// 1.5 KiB a record, and a tree sampled once a second (more than 64 processes) may see
/// ten thousand exits between two reads.
const RECEIVE_QUEUE: libc::c_int = 16 << 20;
/// One datagram at most: a taskstats record is some 500 bytes, a family reply a few
/// hundred, a proc connector event 76.
pub(crate) const DATAGRAM_MAX: usize = 16 << 10;

/// A netlink socket of `protocol`, bound to the multicast `groups` (a bit mask; 0: none),
/// whose blocking receives give up after `timeout`.
pub(crate) fn socket(
    protocol: libc::c_int,
    groups: u32,
    timeout: libc::timeval,
) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned below.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            protocol,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero sockaddr_nl is valid; nl_pid 0 lets the kernel choose the port.
    let mut address: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    address.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    address.nl_groups = groups;
    let size = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
    // SAFETY: a valid address of that size, for the call.
    let bound = unsafe { libc::bind(fd, (&raw const address).cast(), size) };
    if bound < 0 {
        return Err(io::Error::last_os_error());
    }
    let timeout_size = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: a valid timeval of that size, for the call.
    let timed = unsafe {
        let value = (&raw const timeout).cast();
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, value, timeout_size)
    };
    if timed < 0 {
        return Err(io::Error::last_os_error());
    }
    let queue = RECEIVE_QUEUE;
    let option_size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid int of that size, for the call. Forcing past rmem_max needs
    // CAP_NET_ADMIN, which both sources need too; failing, the default queue stays.
    unsafe {
        let value = (&raw const queue).cast();
        let forced = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            value,
            option_size,
        );
        if forced < 0 {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, value, option_size);
        }
    }
    Ok(socket)
}

pub(crate) fn send(socket: &OwnedFd, request: &[u8]) -> io::Result<()> {
    // SAFETY: a valid buffer of that length, for the call.
    let sent = unsafe {
        libc::send(
            socket.as_raw_fd(),
            request.as_ptr().cast(),
            request.len(),
            0,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One datagram into `buffer`; its length (a truncated one is cut to the buffer).
pub(crate) fn receive(
    socket: &OwnedFd,
    buffer: &mut [u8],
    flags: libc::c_int,
) -> io::Result<usize> {
    // SAFETY: a valid buffer of that length, for the call.
    let length = unsafe {
        libc::recv(
            socket.as_raw_fd(),
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            flags,
        )
    };
    if length < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((length as usize).min(buffer.len()))
}

/// A netlink message: header (length, type, flags, sequence 1, the kernel's port) and
/// payload, padded to its alignment.
pub(crate) fn message(kind: u16, flags: u16, payload: &[u8]) -> Vec<u8> {
    let length = NLMSG_HEADER + payload.len();
    let mut message = Vec::with_capacity(align(length));
    message.extend_from_slice(&(length as u32).to_ne_bytes());
    message.extend_from_slice(&kind.to_ne_bytes());
    message.extend_from_slice(&flags.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    message.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel's
    message.extend_from_slice(payload);
    message.resize(align(length), 0);
    message
}

pub(crate) fn align(length: usize) -> usize {
    (length + 3) & !3
}

pub(crate) fn read_u16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

pub(crate) fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

pub(crate) fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The netlink messages of a datagram: (type, payload after the 16-byte header); stops
/// at the first whose length does not fit.
pub(crate) fn messages(mut bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let length = read_u32(bytes, 0)? as usize;
        let kind = read_u16(bytes, 4)?;
        let payload = bytes.get(NLMSG_HEADER..length)?;
        bytes = bytes.get(align(length)..).unwrap_or_default();
        Some((kind, payload))
    })
}

pub(crate) fn invalid() -> io::Error {
    io::ErrorKind::InvalidData.into()
}
