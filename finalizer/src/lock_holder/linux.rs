//! Linux names a lock's holder: the process that `/proc/locks` names, and whether it is still
//! running or already exiting (`/proc/PID/task`).

use std::fs::{self, File};
use std::path::Path;

/// What a lock is said to be held by when `/proc/locks` names no process for it.
pub(super) const UNNAMED: &str = "a process that /proc/locks does not name";

/// `PF_EXITING` in the flags of `/proc/PID/task/TID/stat`: the thread is in the kernel's
/// exit path, where it closes the files (and drops the locks) it shares with the others.
const PF_EXITING: u64 = 0x4;
/// SIGKILL's bit in the pending-signal masks of `/proc/PID/task/TID/status`.
const SIGKILL_BIT: u64 = 1 << (9 - 1);

/// A lock's holder as Linux names it.
pub(super) struct Named {
    pub pid: u32,
    /// Its `comm`.
    pub command: String,
    /// Whether it is dying (see [`is_exiting`]).
    pub exiting: bool,
}

/// The holder of the `flock` on `file`, which the caller just failed to take; `None` when
/// `/proc/locks` names none.
pub(super) fn holder(file: &File) -> Option<Named> {
    let locked = tc_profile_fs::identity(file).ok()?;
    let locks = fs::read_to_string("/proc/locks").ok()?;
    let pid = flock_owner(&locks, locked.device, locked.inode)?;
    let command = fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|comm| comm.trim_end().to_owned())
        .unwrap_or_else(|_| "process".to_owned());
    Some(Named {
        pid,
        command,
        exiting: is_exiting(pid),
    })
}

/// The pid holding the `flock` on the file `dev`:`ino`, from the text of `/proc/locks`.
/// Its lines read `1: FLOCK  ADVISORY  WRITE 4711 fd:01:123456 0 EOF` (major and minor in
/// hex); a `->` after the number marks a process waiting for the lock, not holding it.
fn flock_owner(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let file_id = format!("{:02x}:{:02x}:{ino}", major(dev), minor(dev));
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, id, ..] if *id == file_id => {
                pid.parse().ok().filter(|&pid| pid != 0)
            }
            _ => None,
        }
    })
}

/// The major number of a `st_dev`, in the encoding of glibc's `gnu_dev_major`.
fn major(dev: u64) -> u64 {
    ((dev & 0x0000_0000_000f_ff00) >> 8) | ((dev & 0xffff_f000_0000_0000) >> 32)
}

/// The minor number of a `st_dev`, in the encoding of glibc's `gnu_dev_minor`.
fn minor(dev: u64) -> u64 {
    (dev & 0x0000_0000_0000_00ff) | ((dev & 0x0000_0fff_fff0_0000) >> 12)
}

/// Whether process `pid` is dying: every thread of it is in its exit path or has SIGKILL
/// pending (sent to the process, SIGKILL is pending in each thread until it runs; a thread
/// stuck in the kernel may not run for a while). A process already gone counts as exiting:
/// its lock is about to be free.
fn is_exiting(pid: u32) -> bool {
    let Ok(threads) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    threads
        .filter_map(Result::ok)
        .all(|thread| thread_is_exiting(&thread.path()))
}

fn thread_is_exiting(thread: &Path) -> bool {
    let (Ok(stat), Ok(status)) = (
        fs::read_to_string(thread.join("stat")),
        fs::read_to_string(thread.join("status")),
    ) else {
        return true; // It exited between the listing and the read.
    };
    stat_flags(&stat).is_some_and(|flags| flags & PF_EXITING != 0) || sigkill_pending(&status)
}

/// The flags field (the 9th) of a `/proc/.../stat` line, counted after the command name,
/// which is in parentheses and may hold spaces and parentheses itself.
fn stat_flags(stat: &str) -> Option<u64> {
    let (_, after_command) = stat.rsplit_once(')')?;
    after_command.split_whitespace().nth(6)?.parse().ok()
}

/// Whether a `/proc/.../status` text has SIGKILL pending, for the thread or the process.
fn sigkill_pending(status: &str) -> bool {
    status.lines().any(|line| {
        let Some((name, mask)) = line.split_once(':') else {
            return false;
        };
        matches!(name, "SigPnd" | "ShdPnd")
            && u64::from_str_radix(mask.trim(), 16).is_ok_and(|mask| mask & SIGKILL_BIT != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCKS: &str = "\
1: POSIX  ADVISORY  WRITE 812 fd:01:77 0 EOF
2: FLOCK  ADVISORY  WRITE 4711 fd:01:123456 0 EOF
2: -> FLOCK  ADVISORY  WRITE 4712 fd:01:123456 0 EOF
3: FLOCK  ADVISORY  WRITE 0 103:02:9 0 EOF
4: OFDLCK ADVISORY  READ  -1 08:01:55 0 EOF
";

    /// `st_dev` of major 0xfd, minor 1, as glibc's `makedev` encodes it.
    const DEV_FD_01: u64 = (0xfd << 8) | 1;

    #[test]
    fn the_flock_holder_is_found_by_device_and_inode() {
        assert_eq!(flock_owner(LOCKS, DEV_FD_01, 123456), Some(4711));
    }

    #[test]
    fn posix_locks_waiters_and_unnamed_holders_are_not_holders() {
        assert_eq!(flock_owner(LOCKS, DEV_FD_01, 77), None, "a POSIX lock");
        assert_eq!(flock_owner(LOCKS, (0x103 << 8) | 2, 9), None, "pid 0");
        assert_eq!(flock_owner(LOCKS, DEV_FD_01, 999), None, "no lock at all");
    }

    #[test]
    fn large_device_numbers_decode_as_glibc_encodes_them() {
        // makedev(0x1234, 0x56789): the high bits of each go above bit 32.
        let dev = (0x234 << 8) | (0x1000 << 32) | 0x89 | (0x56700 << 12);
        assert_eq!((major(dev), minor(dev)), (0x1234, 0x56789));
    }

    #[test]
    fn stat_flags_are_read_after_a_command_with_parentheses_and_spaces() {
        let stat = "4711 (tc-pro (x) y) Z 1 4711 4711 0 -1 4194820 0 0 0 0";
        assert_eq!(stat_flags(stat), Some(4194820));
        assert_eq!(stat_flags("4711 (cut"), None);
    }

    #[test]
    fn sigkill_counts_when_pending_for_the_thread_or_the_process() {
        let status = |sig: &str, shd: &str| format!("Name:\tx\nSigPnd:\t{sig}\nShdPnd:\t{shd}\n");
        assert!(sigkill_pending(&status(
            "0000000000000000",
            "0000000000000100"
        )));
        assert!(sigkill_pending(&status(
            "0000000000000100",
            "0000000000000000"
        )));
        assert!(!sigkill_pending(&status(
            "0000000000004000",
            "0000000000000000"
        )));
    }

    #[test]
    fn this_process_runs_and_a_dead_pid_is_exiting() {
        assert!(!is_exiting(std::process::id()));
        assert!(is_exiting(u32::MAX));
    }
}
