//! The one place of the operating system's file-system rules for what tc-profile creates,
//! writes, renames and removes (SPEC.md, "Hostile directories"). A task may write to the
//! directories tc-profile works in, and swap any entry for a symbolic link at any moment:
//! so a directory is opened once ([`Dir`], never through a symbolic link at its last
//! component), and everything in it is done by name relative to that descriptor, never
//! following a symbolic link. Modes are set exactly, whatever the umask (on unix; Windows
//! has none: what is created there has the ACL it inherits from its directory).
//!
//! The calls of one OS live in one module (`unix.rs`, `linux.rs` for what Linux alone has,
//! `windows.rs`); the API here is the same for all.

mod entry;
#[cfg(target_os = "linux")]
mod linux;
mod modes;
mod paths;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

pub use entry::{DirStatus, Entry, Identity, Kind, Owner};
#[cfg(target_os = "linux")]
pub use linux::ReadingAs;
pub use modes::{PASSAGE_DIR, PRIVATE_DIR, PRIVATE_FILE, SHARED_DIR, SHARED_FILE};
pub use paths::remove_created_tree;
#[cfg(unix)]
pub use unix::{
    entry_of, handle, identity, identity_of_path, is_symbolic_link_refused, open_file, read_at, Dir,
};
#[cfg(windows)]
pub use windows::{
    entry_of, handle, identity, identity_of_path, is_symbolic_link_refused, open_file, read_at, Dir,
};

/// Where a thread cannot take another user's file-system identity (all but Linux), it
/// reads as itself: [`ReadingAs`] does nothing.
#[cfg(not(target_os = "linux"))]
pub struct ReadingAs;

#[cfg(not(target_os = "linux"))]
impl ReadingAs {
    pub fn owner_of(_dir: &DirStatus) -> ReadingAs {
        ReadingAs
    }
}

#[cfg(test)]
mod reading_tests;
#[cfg(all(test, unix))]
mod tests;
#[cfg(test)]
mod writing_tests;
