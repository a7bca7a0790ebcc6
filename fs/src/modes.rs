//! The modes tc-profile gives what it creates, set exactly whatever the umask.

/// A file for its owner alone: logs, state.
pub const PRIVATE_FILE: u32 = 0o600;
/// A file anyone may read: profiles, artifacts.
pub const SHARED_FILE: u32 = 0o644;
/// A directory for its owner alone.
pub const PRIVATE_DIR: u32 = 0o700;
/// A directory anyone may pass through, and only its owner list: the way to directories
/// owned by others under it, without showing what is there.
pub const PASSAGE_DIR: u32 = 0o711;
/// A directory anyone may read: the parents tc-profile creates on the way to another.
pub const SHARED_DIR: u32 = 0o755;
