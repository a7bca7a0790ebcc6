//! The task's process tree against everything else on the machine: "Task CPU" and "Other
//! CPU" (fractions of all cores), "Task Memory" (the tree's RSS) and "Other Memory" (what
//! the machine uses beyond it), and a "Process" marker for each process of the tree,
//! written when the process ends.
//!
//! Cost is the point of most choices here. Each tick reads /proc/<pid>/stat of the tree's
//! processes only, through files kept open (a re-read is cheaper than an open, and an open
//! file stays bound to its process, so a reused pid is never mistaken for it); other
//! processes are read once, when first listed, to learn their parent. A process that lived
//! between two ticks is never seen, but its CPU time is not lost: its parent's stat counts
//! it among the reaped children's time (cutime, cstime) once it has been waited for.

use crate::command_line;
use crate::procfs::{sysconf, ReadBuffer};
use crate::sampler::Machine;
use crate::sampler::{fraction, Lines, Percent, Source};
use crate::system::CpuTimes;
use crate::Clock;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tc_profile_format::schema::{category, data_type, source, track};
use tc_profile_format::Marker;

/// Which processes are the task's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Follow {
    /// The processes the recorder's own process starts, and their descendants (`run`).
    /// The recorder's own threads are not counted.
    Children,
    /// A process and its descendants.
    Pid(u32),
    /// The processes listed in a cgroup's `cgroup.procs`.
    Cgroup(PathBuf),
}

/// Half the soft open-file limit at most goes to stat files kept open; the rest is left to
/// the recorder's other files.
const OPEN_FILES_SHARE: u64 = 2;
const OPEN_FILES_MAX: u64 = 4096;

/// `data` of "Task CPU" and "Other CPU".
#[derive(Serialize)]
struct CpuShare {
    #[serde(rename = "type")]
    kind: &'static str,
    cpu: f64,
    #[serde(rename = "cpuPercent")]
    cpu_percent: Percent,
    #[serde(skip_serializing_if = "Option::is_none")]
    processes: Option<u64>,
}

#[derive(Serialize)]
struct TaskMemory {
    #[serde(rename = "type")]
    kind: &'static str,
    rss: u64,
    processes: u64,
}

#[derive(Serialize)]
struct OtherMemory {
    #[serde(rename = "type")]
    kind: &'static str,
    used: u64,
}

/// The fields of /proc/<pid>/stat that are used.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Stat {
    state: u8,
    ppid: u32,
    /// utime + stime, clock ticks.
    own_ticks: u64,
    /// cutime + cstime: the time of children it has waited for.
    reaped_ticks: u64,
    /// Clock ticks after boot: with the pid, it names a process for good.
    start_ticks: u64,
    rss_pages: u64,
    /// The wait status, readable while the process is a zombie (Linux 3.5 and later).
    exit_status: Option<i32>,
}

impl Stat {
    fn total_ticks(&self) -> u64 {
        self.own_ticks + self.reaped_ticks
    }

    fn is_zombie(&self) -> bool {
        self.state == b'Z' || self.state == b'X'
    }
}

/// A process of the tree.
struct Process {
    /// Kept open while the open-file budget allows; else reopened at each tick.
    file: Option<File>,
    stat: Stat,
    /// Its ticks (own and reaped) already counted in "Task CPU".
    counted_ticks: u64,
    /// How much its reaped-children ticks grew at the last refresh.
    reaped_increase: u64,
    peak_rss_pages: u64,
    /// The last tick that found it alive.
    last_seen: f64,
    comm: Vec<u8>,
    name: String,
    command: String,
    /// Whether `name` and `command` come from its command line, not from `comm` alone: a
    /// process caught in the middle of exec has an empty one for a moment.
    command_known: bool,
    /// Its marker has been written (it is a zombie, or the recording ended).
    ended: bool,
}

pub(crate) struct ProcessTree {
    proc_root: PathBuf,
    follow: Follow,
    own_pid: u32,
    ticks_per_second: f64,
    page_size: u64,
    /// Log time of the boot, in ms (negative): converts start times to the log's time base.
    boot_ms: f64,
    interval_ms: f64,
    processes: HashMap<u32, Process>,
    /// Processes found not to be the task's, by pid, with the inode of their /proc entry
    /// (a reused pid gets a new one) and the tick that last listed them.
    others: HashMap<u32, (u64, u64)>,
    tick: u64,
    /// The pid most recently given out on the machine (/proc/loadavg) at the last listing
    /// of /proc: while it stays the same, no process has been created, and listing /proc
    /// (the costliest read of a tick) finds nothing new.
    listed_at_pid: Option<u32>,
    open_files: u64,
    open_files_max: u64,
    /// The recorder's own /proc/<pid>/stat, kept open.
    own_stat: File,
    buffer: ReadBuffer,
    candidates: Vec<(u32, u64)>,
    previous: Option<Previous>,
    /// What ended processes' reapers owe the tree's ticks, and what they reaped that no ended
    /// process accounted for, from the tick before: a reap that falls between two reads of
    /// a tick shows one tick late.
    reapers: HashMap<u32, Reaped>,
    /// Ticks taken back beyond what a tick counted, taken from the next ticks.
    owed_ticks: i64,
}

/// One reaper's side of the ledger, carried for one tick.
#[derive(Clone, Copy, Default)]
struct Reaped {
    /// Ticks of its ended children counted already, not yet found in its reaped time.
    pending: u64,
    /// Growth of its reaped time not yet matched by an ended child.
    unmatched: u64,
}

struct Previous {
    time: f64,
    cpu: CpuTimes,
    /// Children mode: the recorder's reaped-children ticks.
    own_reaped_ticks: u64,
}

impl ProcessTree {
    pub(crate) fn probe(
        proc_root: &Path,
        follow: &Follow,
        interval: Duration,
        clock: Clock,
        machine: &Machine,
    ) -> Option<ProcessTree> {
        machine_now(machine)?;
        let mut tree = ProcessTree {
            proc_root: proc_root.to_owned(),
            own_stat: File::open(stat_path(proc_root, std::process::id())).ok()?,
            follow: follow.clone(),
            own_pid: std::process::id(),
            ticks_per_second: sysconf(libc::_SC_CLK_TCK)? as f64,
            page_size: sysconf(libc::_SC_PAGESIZE)?,
            boot_ms: clock.now_ms() - boot_time_ms()?,
            interval_ms: interval.as_secs_f64() * 1000.0,
            processes: HashMap::new(),
            others: HashMap::new(),
            tick: 0,
            listed_at_pid: None,
            open_files: 0,
            open_files_max: open_files_max(),
            buffer: ReadBuffer::new(),
            candidates: Vec::new(),
            previous: None,
            reapers: HashMap::new(),
            owed_ticks: 0,
        };
        tree.read_own_reaped_ticks()?;
        if let Follow::Pid(root) = *follow {
            tree.candidates.push((root, 0));
            tree.admit_candidates(clock.now_ms(), |_| true);
        }
        Some(tree)
    }

    fn read_own_reaped_ticks(&mut self) -> Option<u64> {
        let (stat, _) = parse_stat(self.buffer.head_of(&self.own_stat)?)?;
        Some(stat.reaped_ticks)
    }

    /// Re-reads every process of the tree; returns those that are gone.
    fn refresh(&mut self, now: f64) -> Vec<(u32, Process)> {
        let proc_root = &self.proc_root;
        let buffer = &mut self.buffer;
        let gone: Vec<(u32, Process)> = self
            .processes
            .extract_if(|&pid, process| {
                let reopened;
                let file = match &process.file {
                    Some(file) => file,
                    None => match File::open(stat_path(proc_root, pid)) {
                        Ok(file) => {
                            reopened = file;
                            &reopened
                        }
                        Err(_) => return true,
                    },
                };
                let Some((stat, comm)) = buffer.head_of(file).and_then(parse_stat) else {
                    return true;
                };
                if stat.start_ticks != process.stat.start_ticks {
                    return true; // the pid was reused (only possible without a kept file)
                }
                if comm != process.comm || (!process.command_known && !stat.is_zombie()) {
                    process.comm = comm.to_owned();
                    process.describe(buffer, &proc_root.join(pid.to_string()));
                }
                process.reaped_increase =
                    stat.reaped_ticks.saturating_sub(process.stat.reaped_ticks);
                process.stat = stat;
                process.peak_rss_pages = process.peak_rss_pages.max(stat.rss_pages);
                if !stat.is_zombie() {
                    process.last_seen = now;
                }
                false
            })
            .collect();
        for (_, process) in &gone {
            if process.file.is_some() {
                self.open_files -= 1;
            }
        }
        gone
    }

    /// Finds the processes that joined the tree since the previous tick.
    fn discover(&mut self, now: f64, last_pid: Option<u32>) {
        match &self.follow {
            Follow::Cgroup(path) => {
                let procs = path.join("cgroup.procs");
                if let Some(text) = self.buffer.read_text(&procs) {
                    let listed = text.lines().filter_map(|l| l.trim().parse().ok());
                    let known = &self.processes;
                    let new = listed.filter(|pid| !known.contains_key(pid));
                    self.candidates.extend(new.map(|pid| (pid, 0)));
                }
                self.admit_candidates(now, |_| true);
            }
            Follow::Children | Follow::Pid(_) => {
                self.list_unknown_processes(last_pid);
                let own_pid = self.own_pid;
                let children = self.follow == Follow::Children;
                self.admit_candidates(now, |parent| children && parent == own_pid);
            }
        }
    }

    /// Puts into `candidates` the listed processes that are neither in the tree nor known
    /// to be outside it.
    fn list_unknown_processes(&mut self, last_pid: Option<u32>) {
        if last_pid.is_some() && last_pid == self.listed_at_pid {
            return;
        }
        self.listed_at_pid = last_pid;
        self.tick += 1;
        let Ok(entries) = fs::read_dir(&self.proc_root) else {
            return;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let inode = entry.ino();
            if self.processes.contains_key(&pid) {
                continue;
            }
            match self.others.get_mut(&pid) {
                Some((known, listed)) if *known == inode => *listed = self.tick,
                _ => self.candidates.push((pid, inode)),
            }
        }
        let tick = self.tick;
        self.others.retain(|_, (_, listed)| *listed == tick);
    }

    /// Reads the candidates and admits those whose parent is in the tree (or, by
    /// `is_root_parent`, is the tree's root), until no more join; the rest are others.
    fn admit_candidates(&mut self, now: f64, is_root_parent: impl Fn(u32) -> bool) {
        // A v1 cgroup.procs may list a pid twice.
        self.candidates.sort_unstable();
        self.candidates.dedup_by_key(|&mut (pid, _)| pid);
        // Files are closed once read: the first listing reads every process of the machine.
        let mut read: Vec<(u32, u64, Stat, Vec<u8>)> = Vec::new();
        for (pid, inode) in std::mem::take(&mut self.candidates) {
            let Ok(file) = File::open(stat_path(&self.proc_root, pid)) else {
                continue;
            };
            if let Some((stat, comm)) = self.buffer.head_of(&file).and_then(parse_stat) {
                read.push((pid, inode, stat, comm.to_owned()));
            }
        }
        let whole_list = !matches!(self.follow, Follow::Children | Follow::Pid(_));
        loop {
            let joining: Vec<usize> = (0..read.len())
                .filter(|&i| {
                    let ppid = read[i].2.ppid;
                    whole_list || is_root_parent(ppid) || self.processes.contains_key(&ppid)
                })
                .collect();
            if joining.is_empty() {
                break;
            }
            for i in joining.into_iter().rev() {
                let (pid, _, stat, comm) = read.swap_remove(i);
                self.admit(pid, stat, comm, now);
            }
        }
        for (pid, inode, ..) in read {
            self.others.insert(pid, (inode, self.tick));
        }
    }

    fn admit(&mut self, pid: u32, stat: Stat, comm: Vec<u8>, now: f64) {
        let file = (self.open_files < self.open_files_max)
            .then(|| File::open(stat_path(&self.proc_root, pid)).ok())
            .flatten();
        self.open_files += u64::from(file.is_some());
        // Time used before the first tick is before the recording: not counted.
        let counted_ticks = if self.previous.is_none() {
            stat.total_ticks()
        } else {
            0
        };
        let process = Process {
            file,
            stat,
            counted_ticks,
            reaped_increase: 0,
            peak_rss_pages: stat.rss_pages,
            last_seen: now,
            comm,
            name: String::new(),
            command: String::new(),
            command_known: false,
            ended: false,
        };
        let process = self.processes.entry(pid).insert_entry(process).into_mut();
        process.describe(&mut self.buffer, &self.proc_root.join(pid.to_string()));
    }

    /// The tree's CPU ticks since the previous tick. A process that ended was counted up
    /// to the previous tick; the reaped time of the tree's process that reaped it (or of
    /// the recorder, for the command) now holds all of it, so what was counted is taken
    /// back out, as far as that reaped time grew: a child reaped by nobody in the tree (its
    /// parent ignored SIGCHLD, or died first) is not taken out.
    fn tree_ticks(&mut self, gone: &[(u32, Process)], own_reaped: u64, previous: &Previous) -> u64 {
        let mut ticks: i64 = 0;
        for process in self.processes.values_mut() {
            let total = process.stat.total_ticks();
            ticks += total.saturating_sub(process.counted_ticks) as i64;
            process.counted_ticks = total;
        }
        let children = self.follow == Follow::Children;
        let own_increase = own_reaped.saturating_sub(previous.own_reaped_ticks);
        if children {
            ticks += own_increase as i64;
        }
        let mut due: HashMap<u32, u64> = HashMap::new();
        for (_, process) in gone {
            if let Some(reaper) = self.reaper_of(process.stat.ppid, gone) {
                *due.entry(reaper).or_default() += process.counted_ticks;
            }
        }
        let increase = |pid: u32| match self.processes.get(&pid) {
            Some(process) => process.reaped_increase,
            None if children && pid == self.own_pid => own_increase,
            None => 0,
        };
        let mut reapers: Vec<u32> = due.keys().chain(self.reapers.keys()).copied().collect();
        reapers.extend(
            self.processes
                .iter()
                .filter(|(_, p)| p.reaped_increase > 0)
                .map(|(&pid, _)| pid),
        );
        if children && own_increase > 0 {
            reapers.push(self.own_pid);
        }
        reapers.sort_unstable();
        reapers.dedup();
        let mut ledger = HashMap::new();
        for pid in reapers {
            let before = self.reapers.get(&pid).copied().unwrap_or_default();
            let (due_now, increase_now) = (due.get(&pid).copied().unwrap_or(0), increase(pid));
            let available = increase_now + before.unmatched;
            let needed = due_now + before.pending;
            let taken = available.min(needed);
            ticks -= taken as i64;
            let after = Reaped {
                pending: due_now.min(needed - taken),
                unmatched: increase_now.min(available - taken),
            };
            if after.pending > 0 || after.unmatched > 0 {
                ledger.insert(pid, after);
            }
        }
        self.reapers = ledger;
        ticks += self.owed_ticks;
        self.owed_ticks = ticks.min(0);
        ticks.max(0) as u64
    }

    /// The process that reaps a child of `ppid` among those still here: `ppid` itself, or
    /// the nearest ancestor past those that ended with it; None outside the tree.
    fn reaper_of(&self, mut ppid: u32, gone: &[(u32, Process)]) -> Option<u32> {
        // Each step goes one generation up among the ended: at most that many steps.
        for _ in 0..=gone.len() {
            if self.processes.contains_key(&ppid)
                || (self.follow == Follow::Children && ppid == self.own_pid)
            {
                return Some(ppid);
            }
            ppid = gone.iter().find(|(pid, _)| *pid == ppid)?.1.stat.ppid;
        }
        None
    }

    fn process_marker(&self, pid: u32, process: &Process, now: f64, status: String) -> Marker {
        let start = self.boot_ms + process.stat.start_ticks as f64 * 1000.0 / self.ticks_per_second;
        // Rounded to the microsecond, as every time in the log.
        let start = ((start * 1000.0).round() / 1000.0).clamp(0.0, now);
        let cpu_ms = process.stat.own_ticks as f64 * 1000.0 / self.ticks_per_second;
        Marker::interval(process.name.clone(), start, now)
            .with_category(category::TASK)
            .with_data(json!({
                "type": data_type::PROCESS,
                "command": process.command,
                "pid": pid,
                "ppid": process.stat.ppid,
                "cpuTime": cpu_ms,
                "peakRss": process.peak_rss_pages * self.page_size,
                "status": status,
            }))
    }

    /// A marker for a process that has ended, if it was seen alive an interval after it
    /// started or used CPU. It ends at `now`: at most one interval after the process did.
    fn end(&self, pid: u32, process: &Process, now: f64, status: String, out: &mut Lines) {
        let marker = self.process_marker(pid, process, now, status);
        let lived = process.last_seen - marker.start_time;
        if lived >= self.interval_ms || process.stat.own_ticks > 0 {
            out.marker(marker);
        }
    }
}

impl Source for ProcessTree {
    fn names(&self) -> Vec<&'static str> {
        vec![source::PROCESSES]
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let gone = self.refresh(now);
        self.discover(now, out.machine.load.map(|load| load.last_pid));
        for (pid, process) in &gone {
            if !process.ended {
                self.end(*pid, process, now, "unknown".to_owned(), out);
            }
        }
        let mut newly_ended = Vec::new();
        for (&pid, process) in &self.processes {
            if process.stat.is_zombie() && !process.ended {
                let status = describe_status(process.stat.exit_status);
                self.end(pid, process, now, status, out);
                newly_ended.push(pid);
            }
        }
        for pid in newly_ended {
            if let Some(process) = self.processes.get_mut(&pid) {
                process.ended = true;
            }
        }
        let (Some((cpu, used)), Some(own_reaped)) =
            (machine_now(out.machine), self.read_own_reaped_ticks())
        else {
            self.previous = None;
            return;
        };
        let current = Previous {
            time: now,
            cpu,
            own_reaped_ticks: own_reaped,
        };
        let Some(previous) = self.previous.replace(current) else {
            for process in self.processes.values_mut() {
                process.counted_ticks = process.stat.total_ticks();
            }
            return;
        };
        let tree = self.tree_ticks(&gone, own_reaped, &previous) as f64;
        let delta = |i: usize| cpu.0[i].saturating_sub(previous.cpu.0[i]) as f64;
        let all: f64 = (0..8).map(delta).sum();
        // Busy: user (guest included), nice, system, irq, softirq.
        let busy = delta(0) + delta(1) + delta(2) + delta(5) + delta(6);
        let live = self.processes.values().filter(|p| !p.stat.is_zombie());
        let (count, rss_pages) = live.fold((0, 0), |(n, rss), p| (n + 1, rss + p.stat.rss_pages));
        let rss = rss_pages * self.page_size;
        let start = previous.time;
        let share = |kind: &'static str, cpu: f64, processes: Option<u64>| CpuShare {
            kind,
            cpu,
            cpu_percent: Percent(cpu),
            processes,
        };
        let task_cpu = share(data_type::TASK_CPU, fraction(tree, all), Some(count));
        let other_cpu = share(data_type::OTHER_CPU, fraction(busy - tree, all), None);
        out.track(track::TASK_CPU, start, now, &task_cpu);
        out.track(track::OTHER_CPU, start, now, &other_cpu);
        let task_memory = TaskMemory {
            kind: data_type::TASK_MEMORY,
            rss,
            processes: count,
        };
        out.track(track::TASK_MEMORY, start, now, &task_memory);
        let other_memory = OtherMemory {
            kind: data_type::OTHER_MEMORY,
            used: used.saturating_sub(rss),
        };
        out.track(track::OTHER_MEMORY, start, now, &other_memory);
    }

    fn last_tick(&mut self, now: f64, out: &mut Lines) {
        self.tick(now, out);
        for (&pid, process) in &self.processes {
            if !process.ended {
                self.end(pid, process, now, "still running".to_owned(), out);
            }
        }
    }
}

/// CPU times of the machine and the memory it uses.
fn machine_now(machine: &Machine) -> Option<(CpuTimes, u64)> {
    Some((machine.cpu?, machine.memory.as_ref()?.used()))
}

fn stat_path(proc_root: &Path, pid: u32) -> PathBuf {
    proc_root.join(pid.to_string()).join("stat")
}

/// Parses `pid (comm) state ppid ...`; the command name may hold spaces and parentheses,
/// so the fields start after the last `)`. Field numbers are proc(5)'s.
fn parse_stat(bytes: &[u8]) -> Option<(Stat, &[u8])> {
    let open = bytes.iter().position(|&b| b == b'(')?;
    let close = bytes.iter().rposition(|&b| b == b')')?;
    let comm = bytes.get(open + 1..close)?;
    let mut stat = Stat::default();
    let mut last = 0;
    for (i, field) in bytes.get(close + 2..)?.split(|&b| b == b' ').enumerate() {
        let number = || parse_number(field);
        match i + 3 {
            3 => stat.state = *field.first()?,
            4 => stat.ppid = number()? as u32,
            14 | 15 => stat.own_ticks += number()?,
            16 | 17 => stat.reaped_ticks += number()?,
            22 => stat.start_ticks = number()?,
            24 => stat.rss_pages = number()?,
            52 => {
                stat.exit_status = Some(number()? as i32);
                break;
            }
            _ => {}
        }
        last = i + 3;
    }
    (last >= 24).then_some((stat, comm))
}

/// A decimal field, with the line's newline after the last one.
fn parse_number(field: &[u8]) -> Option<u64> {
    let digits = field.strip_suffix(b"\n").unwrap_or(field);
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

impl Process {
    /// Names it from its command line (`dir` is its /proc directory), or from `comm` while
    /// that is empty.
    fn describe(&mut self, buffer: &mut ReadBuffer, dir: &Path) {
        let described = match buffer.read_path(&dir.join("cmdline")) {
            Ok(bytes) => command_line::describe(bytes),
            Err(_) => None,
        };
        self.command_known = described.is_some();
        (self.name, self.command) =
            described.unwrap_or_else(|| (lossy(&self.comm), lossy(&self.comm)));
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A wait status as `run` describes its command's.
fn describe_status(status: Option<i32>) -> String {
    match status {
        Some(s) if libc::WIFEXITED(s) => format!("exit code {}", libc::WEXITSTATUS(s)),
        Some(s) if libc::WIFSIGNALED(s) => format!("killed by signal {}", libc::WTERMSIG(s)),
        _ => "unknown".to_owned(),
    }
}

/// Milliseconds since boot, on the clock that /proc/<pid>/stat start times use.
fn boot_time_ms() -> Option<f64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) writes only into the timespec it is given.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut now) };
    (status == 0).then(|| now.tv_sec as f64 * 1000.0 + now.tv_nsec as f64 / 1e6)
}

/// How many stat files to keep open: a share of the soft open-file limit.
fn open_files_max() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes only into the rlimit it is given.
    let status = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if status != 0 {
        return 0;
    }
    (limit.rlim_cur / OPEN_FILES_SHARE).min(OPEN_FILES_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{machine_of, tick_markers, tick_markers_under};

    const STAT: &[u8] = b"4242 (a (b) c) Z 17 4242 17 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 123456 5000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 9\n";

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let (stat, comm) = parse_stat(STAT).unwrap();
        assert_eq!(comm, b"a (b) c");
        assert_eq!(
            stat,
            Stat {
                state: b'Z',
                ppid: 17,
                own_ticks: 300,
                reaped_ticks: 10,
                start_ticks: 123456,
                rss_pages: 300,
                exit_status: Some(9),
            }
        );
        assert_eq!(describe_status(stat.exit_status), "killed by signal 9");
        assert_eq!(describe_status(Some(3 << 8)), "exit code 3");
        let old_kernel = &STAT[..STAT.len() - 40];
        assert_eq!(parse_stat(old_kernel).unwrap().0.exit_status, None);
        assert!(parse_stat(b"1 (x) S 0 1").is_none(), "too short");
    }

    /// A /proc with this machine's stat and meminfo, the test's own stat, and `loadavg`.
    fn fake_proc(loadavg: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for file in ["stat", "meminfo"] {
            fs::copy(Path::new("/proc").join(file), root.path().join(file)).unwrap();
        }
        let own = stat_path(root.path(), std::process::id());
        fs::create_dir(own.parent().unwrap()).unwrap();
        fs::copy("/proc/self/stat", own).unwrap();
        fs::write(root.path().join("loadavg"), loadavg).unwrap();
        root
    }

    /// Ticks of the tree: `live` and `gone` as (pid, ppid, own ticks, reaped ticks, reaped
    /// increase at this refresh, counted ticks); ppid 0 is the recorder.
    type Row = (u32, u32, u64, u64, u64, u64);

    fn tick_of(tree: &mut ProcessTree, live: &[Row], gone: &[Row]) -> u64 {
        let own = tree.own_pid;
        let process = |&(pid, ppid, own_ticks, reaped_ticks, increase, counted): &Row| {
            let ppid = if ppid == 0 { own } else { ppid };
            let stat = Stat {
                ppid,
                own_ticks,
                reaped_ticks,
                ..Stat::default()
            };
            let process = Process {
                file: None,
                stat,
                counted_ticks: counted,
                reaped_increase: increase,
                peak_rss_pages: 0,
                last_seen: 0.0,
                comm: Vec::new(),
                name: String::new(),
                command: String::new(),
                command_known: true,
                ended: false,
            };
            (pid, process)
        };
        tree.processes = live.iter().map(process).collect();
        let gone: Vec<(u32, Process)> = gone.iter().map(process).collect();
        let previous = Previous {
            time: 0.0,
            cpu: CpuTimes::default(),
            own_reaped_ticks: 0,
        };
        tree.tree_ticks(&gone, 0, &previous)
    }

    fn fresh_tree() -> (ProcessTree, tempfile::TempDir) {
        let root = fake_proc("0.10 0.20 0.30 1/100 5000\n");
        let interval = Duration::from_millis(100);
        let machine = machine_of(root.path());
        let tree = ProcessTree::probe(
            root.path(),
            &Follow::Children,
            interval,
            Clock::start(),
            &machine,
        );
        (tree.unwrap(), root)
    }

    /// Parent 10 (the recorder's child) and its child 11, which ends and is reaped.
    #[test]
    fn an_ended_child_is_taken_out_once_of_what_its_reaper_reaped_even_a_tick_late() {
        // Seen ended in the tick whose read of its parent holds it: 10 more ticks.
        let (mut tree, _root) = fresh_tree();
        let parent = (10, 0, 100, 60, 60, 100);
        assert_eq!(tick_of(&mut tree, &[parent], &[(11, 10, 50, 0, 0, 50)]), 10);

        // Reaped between the reads of one tick (the child read first, then the parent):
        // one tick over, the next ones under, the same in all: 5 of the child, 80 of the
        // parent.
        let (mut tree, _root) = fresh_tree();
        let ticks = [
            tick_of(
                &mut tree,
                &[(10, 0, 100, 55, 55, 100), (11, 10, 55, 0, 0, 50)],
                &[],
            ),
            tick_of(
                &mut tree,
                &[(10, 0, 100, 55, 0, 155)],
                &[(11, 10, 55, 0, 0, 55)],
            ),
            tick_of(&mut tree, &[(10, 0, 140, 55, 0, 155)], &[]),
            tick_of(&mut tree, &[(10, 0, 180, 55, 0, 195)], &[]),
        ];
        assert_eq!(ticks.iter().sum::<u64>(), 85, "{ticks:?}");
        assert_eq!(tree.owed_ticks, 0);

        // Reaped by nobody in the tree (its parent ignores SIGCHLD): nothing taken out.
        let (mut tree, _root) = fresh_tree();
        let parent = (10, 0, 100, 0, 0, 90);
        assert_eq!(tick_of(&mut tree, &[parent], &[(11, 10, 30, 0, 0, 30)]), 10);
        assert_eq!(tick_of(&mut tree, &[(10, 0, 110, 0, 0, 100)], &[]), 10);
        assert_eq!(tree.owed_ticks, 0);
    }

    #[test]
    fn proc_is_listed_again_only_once_a_new_pid_was_given_out() {
        let clock = Clock::start();
        let root = fake_proc("0.10 0.20 0.30 1/100 5000\n");
        let mut tree = ProcessTree::probe(
            root.path(),
            &Follow::Children,
            Duration::from_millis(100),
            clock,
            &machine_of(root.path()),
        )
        .unwrap();
        tick_markers_under(&mut tree, clock.now_ms(), root.path());
        let child = format!("5001 (child) S {} ", std::process::id());
        let fields =
            String::from_utf8(STAT[STAT.iter().position(|&b| b == b'Z').unwrap() + 5..].to_vec());
        let child_stat = stat_path(root.path(), 5001);
        fs::create_dir(child_stat.parent().unwrap()).unwrap();
        fs::write(&child_stat, child + &fields.unwrap()).unwrap();
        tick_markers_under(&mut tree, clock.now_ms(), root.path());
        assert!(
            tree.processes.is_empty(),
            "no pid given out: /proc is not listed"
        );
        fs::write(root.path().join("loadavg"), "0.10 0.20 0.30 1/101 5001\n").unwrap();
        tick_markers_under(&mut tree, clock.now_ms(), root.path());
        assert!(
            tree.processes.contains_key(&5001),
            "listed once pid 5001 was given out"
        );
    }

    #[test]
    fn children_are_found_and_a_finished_child_gets_a_marker() {
        let clock = Clock::start();
        let follow = Follow::Children;
        let interval = Duration::from_millis(10);
        let mut tree = ProcessTree::probe(
            Path::new("/proc"),
            &follow,
            interval,
            clock,
            &machine_of(Path::new("/proc")),
        )
        .unwrap();
        tick_markers(&mut tree, clock.now_ms());
        let mut child = std::process::Command::new("sleep")
            .arg("0.3")
            .spawn()
            .unwrap();
        tick_markers(&mut tree, clock.now_ms());
        assert!(
            tree.processes.contains_key(&child.id()),
            "the child is in the tree"
        );
        // Seen alive again more than an interval after it started: it gets a marker.
        std::thread::sleep(Duration::from_millis(50));
        tick_markers(&mut tree, clock.now_ms());
        child.wait().unwrap();
        let out = tick_markers(&mut tree, clock.now_ms());
        let marker = out
            .iter()
            .find(|m| m.data.as_ref().is_some_and(|d| d["pid"] == child.id()))
            .expect("a marker for the child");
        assert_eq!(marker.name, "sleep");
        assert_eq!(marker.data.as_ref().unwrap()["command"], "sleep 0.3");
        assert!(out.iter().any(|m| m.name == "Task CPU"));
    }
}
