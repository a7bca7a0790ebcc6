//! The task's cgroup: its counters as tracks ("Cgroup Memory", "Cgroup CPU", "Cgroup IO"),
//! an "OOM kill" marker when its OOM-kill counter goes up, and [`OwnCgroup`], a fresh
//! cgroup that `run --own-cgroup` puts the command into.
//!
//! Both cgroup v2 and the v1 memory controller are read: hosts on the hybrid hierarchy
//! (systemd's, and this kind of CI machine) have v2 mounted without its memory controller.

use crate::process_tree::Follow;
use crate::procfs::{keyed_number, sysconf, ReadBuffer};
use crate::sampler::{fraction, Lines, Percent, Source};
use crate::system::{self, IoData};
use serde::Serialize;
use serde_json::json;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tc_profile_format::schema::{category, data_type, source, track};
use tc_profile_format::{CgroupInfo, Marker};

/// Every cgroup the recorder creates is named this and its pid; only such a cgroup is
/// ever removed.
const OWN_PREFIX: &str = "tc-profile-";
/// A v1 limit at or above this is "no limit" (the kernel shows its page counter's maximum).
const V1_UNLIMITED: u64 = 1 << 62;
/// At most this many kernel log records are read after an OOM kill, to find its victim.
const KMSG_RECORDS_MAX: usize = 10_000;

/// The task's cgroup, whose counters are recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCgroup {
    pub path: PathBuf,
    /// The recorder's caller created it for the task (`run --own-cgroup`).
    pub created: bool,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupError {
    #[error(
        "no writable cgroup: neither a cgroup v2 with the memory controller delegated nor a \
         cgroup v1 memory controller is mounted; run without --own-cgroup"
    )]
    NoHierarchy,
    #[error("{path}: cannot create a cgroup: {source}; run as root or without --own-cgroup")]
    Create { path: PathBuf, source: io::Error },
    #[error("{path}: not a cgroup that tc-profile created (a cgroup named {OWN_PREFIX}<pid>); left alone")]
    NotOurs { path: PathBuf },
    #[error("{path}: cannot remove the cgroup: {source}")]
    Remove { path: PathBuf, source: io::Error },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hierarchy {
    V2,
    V1Memory,
}

impl Hierarchy {
    fn name(self) -> &'static str {
        match self {
            Hierarchy::V2 => "v2",
            Hierarchy::V1Memory => "v1-memory",
        }
    }

    /// A file that a cgroup of this hierarchy with memory accounting has.
    fn memory_file(self) -> &'static str {
        match self {
            Hierarchy::V2 => "memory.current",
            Hierarchy::V1Memory => "memory.usage_in_bytes",
        }
    }
}

/// A cgroup hierarchy as mounted: `root` is the mount's root inside the hierarchy (not
/// `/` in a cgroup namespace or a container).
struct Mount {
    hierarchy: Hierarchy,
    point: PathBuf,
    root: String,
}

fn mounts() -> Vec<Mount> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines().filter_map(parse_mount).collect()
}

/// `36 25 0:30 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory`.
fn parse_mount(line: &str) -> Option<Mount> {
    let (mount, filesystem) = line.split_once(" - ")?;
    let mount: Vec<&str> = mount.split(' ').collect();
    let filesystem: Vec<&str> = filesystem.split(' ').collect();
    let hierarchy = match *filesystem.first()? {
        "cgroup2" => Hierarchy::V2,
        "cgroup" if filesystem.get(2)?.split(',').any(|o| o == "memory") => Hierarchy::V1Memory,
        _ => return None,
    };
    Some(Mount {
        hierarchy,
        point: PathBuf::from(unescape_mount(mount.get(4)?)),
        root: unescape_mount(mount.get(3)?),
    })
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape_mount(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The directory of process `pid`'s cgroup in `mount`, from /proc/<pid>/cgroup.
fn cgroup_dir(pid: &str, mount: &Mount) -> Option<PathBuf> {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let wanted = match mount.hierarchy {
            Hierarchy::V2 => id == "0" && controllers.is_empty(),
            Hierarchy::V1Memory => controllers.split(',').any(|c| c == "memory"),
        };
        wanted.then_some(path)
    })?;
    let inside = path
        .strip_prefix(mount.root.trim_end_matches('/'))
        .unwrap_or(path);
    Some(mount.point.join(inside.trim_start_matches('/')))
}

/// The task's cgroup when a followed pid or cgroup has one of its own: a followed
/// cgroup, or a followed pid's cgroup when it is not the recorder's.
pub(crate) fn detect(follow: &Follow) -> Option<TaskCgroup> {
    let path = match follow {
        Follow::Cgroup(path) => path.clone(),
        Follow::Children => return None,
        Follow::Pid(pid) => mounts().iter().find_map(|mount| {
            let theirs = cgroup_dir(&pid.to_string(), mount)?;
            let ours = cgroup_dir("self", mount)?;
            (theirs != ours && theirs.join(mount.hierarchy.memory_file()).exists())
                .then_some(theirs)
        })?,
    };
    Some(TaskCgroup {
        path,
        created: false,
    })
}

/// A cgroup created for the task, under the recorder's own: its memory peak and OOM kills
/// are the task's alone. Remove it with [`OwnCgroup::remove`] when the task is over (when
/// dropped, it removes itself, silently); one left behind by a killed recorder is named in
/// its log's meta line (`tcProfile.cgroup.created`), for [`remove_created_cgroup`].
#[derive(Debug)]
pub struct OwnCgroup {
    path: PathBuf,
    removed: bool,
}

impl OwnCgroup {
    /// Creates `tc-profile-<pid>` in cgroup v2 where the memory controller is delegated to
    /// the recorder's cgroup, else in the v1 memory controller.
    pub fn create() -> Result<OwnCgroup, CgroupError> {
        let mounts = mounts();
        let parent = |hierarchy: Hierarchy| {
            let mount = mounts.iter().find(|m| m.hierarchy == hierarchy)?;
            cgroup_dir("self", mount)
        };
        let v2_with_memory = parent(Hierarchy::V2).filter(|dir| {
            fs::read_to_string(dir.join("cgroup.subtree_control"))
                .is_ok_and(|text| text.split_ascii_whitespace().any(|c| c == "memory"))
        });
        let parent = match v2_with_memory {
            Some(dir) => dir,
            None => parent(Hierarchy::V1Memory).ok_or(CgroupError::NoHierarchy)?,
        };
        let path = parent.join(own_cgroup_name());
        if path.exists() {
            // Left by a killed recorder that had our pid.
            remove_created_cgroup(&path)?;
        }
        fs::create_dir(&path).map_err(|source| CgroupError::Create {
            path: path.clone(),
            source,
        })?;
        Ok(OwnCgroup {
            path,
            removed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the recorder's config names as the task's cgroup.
    pub fn task_cgroup(&self) -> TaskCgroup {
        TaskCgroup {
            path: self.path.clone(),
            created: true,
        }
    }

    /// A hook for `CommandExt::pre_exec` that moves the command into this cgroup before it
    /// runs: it only opens, writes and closes, which is safe between fork and exec. It never
    /// fails: the task runs even where the move is refused (see [`OwnCgroup::holds`]).
    pub fn enter_hook(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let procs =
            CString::new(self.path.join("cgroup.procs").as_os_str().as_bytes()).unwrap_or_default();
        move || {
            // SAFETY: open, write and close are async-signal-safe; `procs` outlives the calls.
            unsafe {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    // "0" is the writing process itself.
                    libc::write(fd, b"0\n".as_ptr().cast(), 2);
                    libc::close(fd);
                }
            }
            Ok(())
        }
    }

    /// Whether process `pid` is in this cgroup; None when that cannot be read (it has gone).
    pub fn holds(&self, pid: u32) -> Option<bool> {
        let name = self.path.file_name()?.to_str()?;
        let cgroups = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        Some(
            cgroups
                .lines()
                .any(|line| line.ends_with(&format!("/{name}"))),
        )
    }

    /// Moves what is still inside to the parent cgroup and removes this one.
    pub fn remove(mut self) -> Result<(), CgroupError> {
        self.removed = true;
        remove_created_cgroup(&self.path)
    }
}

impl Drop for OwnCgroup {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_created_cgroup(&self.path);
        }
    }
}

/// The name of the cgroup that [`OwnCgroup::create`] makes for this process.
pub fn own_cgroup_name() -> String {
    format!("{OWN_PREFIX}{}", std::process::id())
}

/// Removes a cgroup that tc-profile created (named `tc-profile-<pid>`), with any cgroups
/// inside it: processes still in them move to its parent first. For `recover`, after a
/// killed recorder; nothing to do when it is already gone.
pub fn remove_created_cgroup(path: &Path) -> Result<(), CgroupError> {
    let ours = path
        .file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with(OWN_PREFIX));
    let parent = path.parent().filter(|_| ours).ok_or(CgroupError::NotOurs {
        path: path.to_owned(),
    })?;
    if !path.exists() {
        return Ok(());
    }
    // A log names the path: whatever it says, only a cgroup is emptied and removed.
    if !path.join("cgroup.procs").exists() {
        return Err(CgroupError::NotOurs {
            path: path.to_owned(),
        });
    }
    empty_and_remove(path, &parent.join("cgroup.procs")).map_err(|source| CgroupError::Remove {
        path: path.to_owned(),
        source,
    })
}

fn empty_and_remove(dir: &Path, parent_procs: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)?.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            empty_and_remove(&entry.path(), parent_procs)?;
        }
    }
    // A process that exited in the meantime is no error; the retries below see it go.
    let pids = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    for pid in pids.lines() {
        let _ = fs::write(parent_procs, pid);
    }
    // A cgroup stays busy for a moment after its last process is reaped.
    let mut attempts = 0;
    loop {
        match fs::remove_dir(dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempts < 50 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            result => return result,
        }
    }
}

/// Samples the task's cgroup, from its files kept open; each is read only if it was there
/// at start.
pub(crate) struct CgroupSampler {
    path: PathBuf,
    hierarchy: Hierarchy,
    created: bool,
    files: Vec<(&'static str, File)>,
    memory: bool,
    cpu: bool,
    /// `major:minor` of the whole disks, for io.stat; empty when there is no io.stat.
    disks: Vec<String>,
    oom: Option<OomWatch>,
    cpus: f64,
    buffer: ReadBuffer,
    previous: Option<(f64, Counters)>,
}

/// The cgroup's counters at a tick; None where a file could not be read (the cgroup was
/// removed, or a read failed): that interval is left out, never drawn as zeros.
#[derive(Clone, Copy, Default)]
struct Counters {
    cpu: Option<CpuCounters>,
    io: Option<system::Counters>,
    oom_kills: Option<u64>,
}

#[derive(Clone, Copy)]
struct CpuCounters {
    usage_usec: u64,
    throttled_usec: u64,
    throttled_count: u64,
}

#[derive(Serialize)]
struct MemoryData {
    #[serde(rename = "type")]
    kind: &'static str,
    current: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failcnt: Option<u64>,
}

#[derive(Serialize)]
struct CpuData {
    #[serde(rename = "type")]
    kind: &'static str,
    cpu: f64,
    #[serde(rename = "cpuPercent")]
    cpu_percent: Percent,
    throttled: f64,
    #[serde(rename = "throttledCount")]
    throttled_count: u64,
}

/// The files read, per hierarchy; the first one of the v1 list tells the hierarchy.
const V1_FILES: [&str; 5] = [
    "memory.usage_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.limit_in_bytes",
    "memory.failcnt",
    "memory.oom_control",
];
const V2_FILES: [&str; 6] = [
    "memory.current",
    "memory.peak",
    "memory.max",
    "memory.events",
    "cpu.stat",
    "io.stat",
];

impl CgroupSampler {
    pub(crate) fn probe(task: &TaskCgroup, sys_root: &Path) -> Option<CgroupSampler> {
        let hierarchy = if task.path.join(V1_FILES[0]).exists() {
            Hierarchy::V1Memory
        } else if task.path.join("cgroup.controllers").exists() {
            Hierarchy::V2
        } else {
            return None;
        };
        let names: &[&'static str] = match hierarchy {
            Hierarchy::V1Memory => &V1_FILES,
            Hierarchy::V2 => &V2_FILES,
        };
        let files: Vec<(&'static str, File)> = names
            .iter()
            .filter_map(|name| Some((*name, File::open(task.path.join(name)).ok()?)))
            .collect();
        let has = |name: &str| files.iter().any(|(n, _)| *n == name);
        let mut sampler = CgroupSampler {
            path: task.path.clone(),
            hierarchy,
            created: task.created,
            memory: has(hierarchy.memory_file()),
            cpu: has("cpu.stat"),
            disks: if has("io.stat") {
                disk_numbers(&sys_root.join("block"))
            } else {
                Vec::new()
            },
            files,
            oom: None,
            cpus: online_cpus(),
            buffer: ReadBuffer::new(),
            previous: None,
        };
        if sampler.oom_kills().is_some() {
            sampler.oom = Some(OomWatch::start(&task.path));
        }
        (sampler.memory || sampler.cpu || !sampler.disks.is_empty()).then_some(sampler)
    }

    /// What the meta line says about it.
    pub(crate) fn info(&self) -> CgroupInfo {
        CgroupInfo {
            path: self.path.to_string_lossy().into_owned(),
            hierarchy: self.hierarchy.name().to_owned(),
            created: self.created,
        }
    }

    fn read(&mut self, name: &str) -> Option<&str> {
        let file = self
            .files
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| f)?;
        std::str::from_utf8(self.buffer.read_file(file).ok()?).ok()
    }

    fn number(&mut self, name: &str) -> Option<u64> {
        self.read(name)?.trim().parse().ok()
    }

    fn oom_kills(&mut self) -> Option<u64> {
        let file = match self.hierarchy {
            Hierarchy::V2 => "memory.events",
            Hierarchy::V1Memory => "memory.oom_control",
        };
        keyed_number(self.read(file)?, "oom_kill")
    }

    fn memory_data(&mut self) -> Option<MemoryData> {
        let (current, peak, limit, failcnt) = match self.hierarchy {
            Hierarchy::V2 => {
                let hits = self
                    .read("memory.events")
                    .and_then(|t| keyed_number(t, "max"));
                (
                    self.number("memory.current")?,
                    self.number("memory.peak"),
                    // "max", no limit, is not a number.
                    self.number("memory.max"),
                    hits,
                )
            }
            Hierarchy::V1Memory => (
                self.number("memory.usage_in_bytes")?,
                self.number("memory.max_usage_in_bytes"),
                self.number("memory.limit_in_bytes")
                    .filter(|l| *l < V1_UNLIMITED),
                self.number("memory.failcnt"),
            ),
        };
        Some(MemoryData {
            kind: data_type::CGROUP_MEMORY,
            current,
            peak,
            limit,
            failcnt,
        })
    }

    fn counters(&mut self) -> Counters {
        let mut counters = Counters::default();
        if self.cpu {
            counters.cpu = self.read("cpu.stat").and_then(|text| {
                Some(CpuCounters {
                    usage_usec: keyed_number(text, "usage_usec")?,
                    throttled_usec: keyed_number(text, "throttled_usec").unwrap_or(0),
                    throttled_count: keyed_number(text, "nr_throttled").unwrap_or(0),
                })
            });
        }
        if !self.disks.is_empty() {
            let disks = std::mem::take(&mut self.disks);
            counters.io = self.read("io.stat").map(|text| parse_io_stat(text, &disks));
            self.disks = disks;
        }
        if self.oom.is_some() {
            counters.oom_kills = self.oom_kills();
        }
        counters
    }
}

impl Source for CgroupSampler {
    fn names(&self) -> Vec<&'static str> {
        let on = [
            (source::CGROUP_MEMORY, self.memory),
            (source::CGROUP_CPU, self.cpu),
            (source::CGROUP_IO, !self.disks.is_empty()),
            (source::OOM_KILLS, self.oom.is_some()),
        ];
        on.iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| *name)
            .collect()
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let memory = if self.memory {
            self.memory_data()
        } else {
            None
        };
        let mut after = self.counters();
        if let Some((_, before)) = &self.previous {
            // A failed read is not "no kills": the next count is compared with the last one.
            after.oom_kills = after.oom_kills.or(before.oom_kills);
        }
        let Some((start, before)) = self.previous.replace((now, after)) else {
            return;
        };
        if let Some(memory) = memory {
            out.track(track::CGROUP_MEMORY, start, now, &memory);
        }
        let interval_us = (now - start) * 1000.0;
        if let (Some(before), Some(after)) = (before.cpu, after.cpu) {
            let used = after.usage_usec.saturating_sub(before.usage_usec) as f64;
            let cpu = fraction(used, interval_us * self.cpus);
            let throttled = after.throttled_usec.saturating_sub(before.throttled_usec) as f64;
            let data = CpuData {
                kind: data_type::CGROUP_CPU,
                cpu,
                cpu_percent: Percent(cpu),
                throttled: fraction(throttled, interval_us),
                throttled_count: after.throttled_count.saturating_sub(before.throttled_count),
            };
            out.track(track::CGROUP_CPU, start, now, &data);
        }
        if let (Some(before), Some(after)) = (before.io, after.io) {
            out.track(
                track::CGROUP_IO,
                start,
                now,
                &IoData::from(after.since(before)),
            );
        }
        let kills = before.oom_kills.zip(after.oom_kills);
        if let (Some(oom), Some((before, after))) = (&mut self.oom, kills) {
            if after > before {
                out.marker(oom.marker(now, after - before, &self.path));
            }
        }
    }
}

/// Sums io.stat's lines (`8:0 rbytes=1 wbytes=2 rios=3 wios=4 ...`) of whole disks only,
/// so that a partition or device-mapper device and its disk are not counted twice.
fn parse_io_stat(text: &str, disks: &[String]) -> system::Counters {
    let mut counters = system::Counters::default();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        if !fields
            .next()
            .is_some_and(|device| disks.iter().any(|d| d == device))
        {
            continue;
        }
        for field in fields {
            let Some((key, value)) = field.split_once('=') else {
                continue;
            };
            let value: u64 = value.parse().unwrap_or(0);
            match key {
                "rbytes" => counters.read_bytes += value,
                "wbytes" => counters.write_bytes += value,
                "rios" => counters.read_count += value,
                "wios" => counters.write_count += value,
                _ => {}
            }
        }
    }
    counters
}

/// `major:minor` of the disks that have a `device` link in /sys/block (as the IO track
/// counts them).
fn disk_numbers(sys_block: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(sys_block) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().join("device").exists())
        .filter_map(|e| fs::read_to_string(e.path().join("dev")).ok())
        .map(|dev| dev.trim().to_owned())
        .collect()
}

fn online_cpus() -> f64 {
    sysconf(libc::_SC_NPROCESSORS_ONLN).unwrap_or(1) as f64
}

/// Names the victim of an OOM kill from the kernel log: the `oom-kill:` line that Linux
/// writes for each kill names the cgroup, the process and its pid. Reading /dev/kmsg needs
/// privileges; without them the marker says only how many were killed.
struct OomWatch {
    kmsg: Option<File>,
    /// The cgroup's path as the kernel writes it (inside its hierarchy).
    kernel_path: Option<String>,
}

impl OomWatch {
    fn start(path: &Path) -> OomWatch {
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

    fn marker(&mut self, now: f64, kills: u64, path: &Path) -> Marker {
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
    fn mountinfo_names_the_v1_memory_and_v2_hierarchies() {
        let v1 = parse_mount(
            "36 25 0:30 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory",
        )
        .unwrap();
        assert_eq!(
            (v1.hierarchy, v1.point.to_str(), v1.root.as_str()),
            (Hierarchy::V1Memory, Some("/sys/fs/cgroup/memory"), "/")
        );
        let v2 =
            parse_mount("40 25 0:35 /ci /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw").unwrap();
        assert_eq!((v2.hierarchy, v2.root.as_str()), (Hierarchy::V2, "/ci"));
        assert!(parse_mount("37 25 0:31 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu").is_none());
        assert!(parse_mount("22 1 8:1 / / rw - ext4 /dev/sda1 rw").is_none());
    }

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

    #[test]
    fn io_stat_counts_whole_disks_only() {
        let text = "8:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0\n253:0 rbytes=100 wbytes=200 rios=1 wios=2\n";
        let counters = parse_io_stat(text, &["8:0".to_owned()]);
        assert_eq!(
            (
                counters.read_bytes,
                counters.write_bytes,
                counters.write_count
            ),
            (100, 200, 2)
        );
    }

    #[test]
    fn only_cgroups_named_as_ours_are_removed() {
        let error = remove_created_cgroup(Path::new("/sys/fs/cgroup/memory/system.slice"));
        assert!(
            matches!(error, Err(CgroupError::NotOurs { .. })),
            "{error:?}"
        );
        assert!(remove_created_cgroup(Path::new("/nonexistent/tc-profile-1")).is_ok());
        let plain = tempfile::tempdir().unwrap();
        let named_like_ours = plain.path().join("tc-profile-1");
        fs::create_dir(&named_like_ours).unwrap();
        let error = remove_created_cgroup(&named_like_ours);
        assert!(
            matches!(error, Err(CgroupError::NotOurs { .. })),
            "{error:?}"
        );
        assert!(named_like_ours.exists(), "a plain directory is left alone");
    }
}
