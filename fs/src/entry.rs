//! What a file or directory is, whatever the name that reaches it, and whose.

/// Which file or directory an open one is: the same identity is the same object, whatever
/// the name that reached it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub device: u64,
    pub inode: u64,
}

/// What a name in a directory is, looked at without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub identity: Identity,
    pub kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Directory,
    SymbolicLink,
    /// A FIFO, a socket, a device.
    Other,
}

/// A user and group that a created directory is given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    /// None: the creator's group.
    pub gid: Option<u32>,
}
