//! The victim of an OOM kill in the task's cgroup, named from the kernel log.

use crate::sources::cgroup::mount::mounts;
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use tc_profile_format::schema::{category, data_type, track};
use tc_profile_format::Marker;

/// At most this many kernel log records are read after an OOM kill, to find its victim.
const KMSG_RECORDS_MAX: usize = 10_000;

/// Names the victim of an OOM kill from the kernel log: the `oom-kill:` line that Linux
/// writes for each kill names the cgroup, the process and its pid. Reading /dev/kmsg needs
/// privileges; without them the marker says only how many were killed.
pub(crate) struct OomWatch {
    kmsg: Option<File>,
    /// The cgroup's path as the kernel writes it (inside its hierarchy).
    kernel_path: Option<String>,
}

impl OomWatch {
    pub(crate) fn start(path: &Path) -> OomWatch {
        let kmsg = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()
            .filter(|file| {
                use std::os::fd::AsRawFd;
                // SAFETY: lseek on a file descriptor we own. Only records from now on.
                unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_END) >= 0 }
            });
        let kernel_path = mounts().into_iter().find_map(|mount| {
            let inside = path.strip_prefix(&mount.point).ok()?;
            let root = mount.root.trim_end_matches('/');
            Some(format!("{root}/{}", inside.to_string_lossy()))
        });
        OomWatch { kmsg, kernel_path }
    }

    pub(crate) fn marker(&mut self, now: f64, kills: u64, path: &Path) -> Marker {
        let mut data = json!({"type": data_type::OOM_KILL, "kills": kills,
                              "cgroup": path.to_string_lossy()});
        if let Some((process, pid)) = self.victim() {
            data["process"] = json!(process);
            data["pid"] = json!(pid);
        }
        Marker::instant(track::OOM_KILL, now)
            .with_category(category::TASK)
            .with_data(data)
    }

    /// The last victim in our cgroup among the kernel log's new records.
    fn victim(&mut self) -> Option<(String, u32)> {
        let (kmsg, ours) = (self.kmsg.as_mut()?, self.kernel_path.as_deref()?);
        let mut victim = None;
        let mut record = [0u8; 8192];
        for _ in 0..KMSG_RECORDS_MAX {
            match kmsg.read(&mut record) {
                Ok(0) => break,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&record[..n]);
                    victim = parse_oom_record(&text, ours).or(victim);
                }
                // EPIPE: records were overwritten before we read them; go on.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
                Err(_) => break, // EAGAIN: no more records
            }
        }
        victim
    }
}

/// `6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,...,oom_memcg=/a/b,task_memcg=/a/b,task=dd,pid=42,uid=0`
fn parse_oom_record(record: &str, cgroup: &str) -> Option<(String, u32)> {
    let line = record.split_once(';')?.1.lines().next()?;
    let fields = line.strip_prefix("oom-kill:")?;
    let value = |key: &str| {
        fields
            .split(',')
            .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
    };
    // The victim's own cgroup: the limit that was hit may be an ancestor's (a task in a
    // cgroup of its own without a limit, on a worker whose cgroup has one).
    let memcg = value("task_memcg").or_else(|| value("oom_memcg"))?;
    let inside = memcg == cgroup || memcg.strip_prefix(cgroup)?.starts_with('/');
    inside.then_some(())?;
    Some((value("task")?.to_owned(), value("pid")?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oom_victim_is_taken_only_from_our_cgroup_or_below() {
        let record = "3,822,3791,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/ci/tc-profile-7,task_memcg=/ci/tc-profile-7,task=dd,pid=4242,uid=0\n";
        assert_eq!(
            parse_oom_record(record, "/ci/tc-profile-7"),
            Some(("dd".to_owned(), 4242))
        );
        assert_eq!(
            parse_oom_record(record, "/ci"),
            Some(("dd".to_owned(), 4242))
        );
        assert_eq!(
            parse_oom_record(record, "/ci/tc-profile"),
            None,
            "a sibling's kill"
        );
        assert_eq!(
            parse_oom_record("6,1,2,-;Killed process 5 (dd)\n", "/ci"),
            None
        );
        let ancestors_limit = record.replace("oom_memcg=/ci/tc-profile-7", "oom_memcg=/ci");
        assert_eq!(
            parse_oom_record(&ancestors_limit, "/ci/tc-profile-7"),
            Some(("dd".to_owned(), 4242)),
            "killed in our cgroup for the limit of its parent"
        );
    }
}
