//! Who holds a log's lock, for a finalizer that cannot take it, and whether it is still
//! running or already exiting. A SIGKILLed recorder looks dead (a zombie) some time before
//! the kernel has closed its files and so released the lock (SPEC.md, "Locking and
//! recovery"); only this tells the two apart. The lock itself is std's `File::lock` on every
//! OS (`flock` on unix, `LockFileEx` on Windows); naming its holder is the OS's: Linux's
//! `/proc/locks` (`linux.rs`); elsewhere it is [`LockHolder::Unknown`].

use std::fmt;
use std::fs::File;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux::UNNAMED;

/// The process that holds a lock, as far as it can be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockHolder {
    /// It runs: a recorder still recording, or another finalizer at work.
    Running { pid: u32, command: String },
    /// It is dying (killed, or every thread past its exit) but has not closed its files yet.
    Exiting { pid: u32, command: String },
    /// No process is named for the lock: `/proc/locks` is unreadable, or the holder is in
    /// another pid namespace; or the OS names none (all but Linux).
    Unknown,
}

impl LockHolder {
    /// The holder of the lock on `file`, which the caller just failed to take.
    pub(crate) fn of(file: &File) -> LockHolder {
        holder(file)
    }
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            LockHolder::Running { pid, command } => write!(f, "a running {command} (pid {pid})"),
            LockHolder::Exiting { pid, command } => {
                write!(f, "{command} (pid {pid}), which is exiting")
            }
            LockHolder::Unknown => write!(f, "{UNNAMED}"),
        }
    }
}

#[cfg(target_os = "linux")]
fn holder(file: &File) -> LockHolder {
    match linux::holder(file) {
        Some(linux::Named {
            pid,
            command,
            exiting: true,
        }) => LockHolder::Exiting { pid, command },
        Some(linux::Named { pid, command, .. }) => LockHolder::Running { pid, command },
        None => LockHolder::Unknown,
    }
}

/// Where no process is named for a lock.
#[cfg(not(target_os = "linux"))]
const UNNAMED: &str = "a process that this OS does not name";

#[cfg(not(target_os = "linux"))]
fn holder(_file: &File) -> LockHolder {
    LockHolder::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_of_a_lock_this_process_holds_is_this_process_running() {
        let file = tempfile::tempfile().unwrap();
        file.lock().unwrap();
        match LockHolder::of(&file) {
            LockHolder::Running { pid, .. } => assert_eq!(pid, std::process::id()),
            // Where /proc/locks is unreadable or names no pid, or off Linux: nothing better known.
            LockHolder::Unknown => {}
            exiting => panic!("{exiting:?}"),
        }
    }
}
