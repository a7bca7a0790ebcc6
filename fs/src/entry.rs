//! What a file or directory is, whatever the name that reaches it, and whose.

/// Which file or directory an open one is: the same identity is the same object, whatever
/// the name that reached it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    pub device: u64,
    pub inode: u64,
}

/// What a name in a directory (or an open file) is, looked at without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub identity: Identity,
    pub kind: Kind,
    /// Bytes, for a file.
    pub size: u64,
    /// How many names the file has (hard links).
    pub links: u64,
}

/// What a reader of a directory needs of it now ([`crate::Dir::status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirStatus {
    /// Its owner's uid and gid, where the OS has them.
    pub owner: Option<(u32, u32)>,
    /// When its entries last changed (one added, removed or renamed): seconds and
    /// nanoseconds since the Unix epoch; `None` where the OS gives no time to trust.
    pub changed: Option<(i64, i64)>,
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
