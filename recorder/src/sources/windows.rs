//! Windows' sources: the machine's CPU (`GetSystemTimes`) and memory
//! (`GlobalMemoryStatusEx`), and the task's process tree (a Toolhelp32 listing of the
//! processes and their parents; each process of the tree held open, its CPU time from
//! `GetProcessTimes` and its working set from `GetProcessMemoryInfo`). sysinfo is not used:
//! its second global CPU refresh aborts under Wine (no PDH).
//!
//! Left out, never drawn as zeros: disk and network (no per-disk or per-interface
//! counters read yet), pressure, load, swap, CPU frequency, cgroups, and per-process
//! markers. A process that starts and ends between two ticks is never seen, and its CPU
//! time is lost (a process seen once is held open, so its whole time is counted).

use crate::clock::Clock;
use crate::sources::task_tracks::TaskSample;
use crate::sources::{Follow, Lines, Percent, Source};
use std::collections::HashMap;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use tc_profile_format::schema::{data_type, source, track};
use tc_profile_format::{DataFields, TrackData};
use windows_sys::Win32::Foundation::{FILETIME, INVALID_HANDLE_VALUE, STILL_ACTIVE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetExitCodeProcess, GetProcessTimes, GetSystemTimes, OpenProcess,
    PROCESS_QUERY_LIMITED_INFORMATION,
};

/// The machine's CPU times since boot, in 100 ns units, all cores together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SystemTimes {
    idle: u64,
    /// Kernel time, idle included (as `GetSystemTimes` counts it).
    kernel: u64,
    user: u64,
}

impl SystemTimes {
    fn now() -> Option<SystemTimes> {
        let (mut idle, mut kernel, mut user) = (zero_time(), zero_time(), zero_time());
        // SAFETY: three valid FILETIMEs, written by the call.
        let done = unsafe { GetSystemTimes(&mut idle, &mut kernel, &mut user) };
        (done != 0).then(|| SystemTimes {
            idle: ticks(idle),
            kernel: ticks(kernel),
            user: ticks(user),
        })
    }

    /// The times of the interval from `before` to `self`: (all, busy, user, system).
    fn since(self, before: SystemTimes) -> (f64, f64, f64, f64) {
        let idle = self.idle.saturating_sub(before.idle) as f64;
        let kernel = self.kernel.saturating_sub(before.kernel) as f64;
        let user = self.user.saturating_sub(before.user) as f64;
        let system = (kernel - idle).max(0.0);
        (kernel + user, system + user, user, system)
    }
}

/// The machine's memory: (used, available) bytes.
fn memory() -> Option<(u64, u64)> {
    // SAFETY: all-zero is a valid MEMORYSTATUSEX.
    let mut status: MEMORYSTATUSEX = unsafe { std::mem::zeroed() };
    status.dwLength = std::mem::size_of::<MEMORYSTATUSEX>() as u32;
    // SAFETY: a valid MEMORYSTATUSEX with its length set, for the call.
    let done = unsafe { GlobalMemoryStatusEx(&mut status) };
    let used = status.ullTotalPhys.saturating_sub(status.ullAvailPhys);
    (done != 0).then_some((used, status.ullAvailPhys))
}

fn zero_time() -> FILETIME {
    FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    }
}

fn ticks(time: FILETIME) -> u64 {
    (u64::from(time.dwHighDateTime) << 32) | u64::from(time.dwLowDateTime)
}

/// `data` of "CPU Use": the fractions Windows counts, stacked (user, then + system) as
/// Linux's are. Windows counts no nice, iowait, irq or steal apart: their stack tops are
/// written all the same, each the one below it (bands of no height), because the front-end
/// leaves a sample without every graph key of its schema out of the graph.
#[derive(Debug, PartialEq)]
struct CpuData {
    cpu_percent: Percent,
    user: f64,
    system: f64,
    user_pct: Percent,
    system_pct: Percent,
    idle_pct: Percent,
}

impl CpuData {
    /// None when no time passed in between.
    fn of(before: SystemTimes, after: SystemTimes) -> Option<CpuData> {
        let (all, busy, user, system) = after.since(before);
        if all <= 0.0 {
            return None;
        }
        let round = |v: f64| (v / all * 10000.0).round() / 10000.0;
        Some(CpuData {
            cpu_percent: Percent(busy / all),
            user: round(user),
            system: round(user + system),
            user_pct: Percent(user / all),
            system_pct: Percent(system / all),
            idle_pct: Percent(1.0 - busy / all),
        })
    }
}

impl TrackData for CpuData {
    fn data_type(&self) -> &'static str {
        data_type::CPU
    }

    fn write_fields(&self, fields: &mut DataFields) {
        self.cpu_percent.write("cpuPercent", fields);
        fields.f64("nice", 0.0);
        fields.f64("user", self.user);
        fields.f64("system", self.system);
        for stacked_on_system in ["iowait", "softirq", "steal"] {
            fields.f64(stacked_on_system, self.system);
        }
        self.user_pct.write("user_pct", fields);
        self.system_pct.write("system_pct", fields);
        self.idle_pct.write("idle_pct", fields);
    }
}

/// `data` of "Memory": physical memory used and available.
struct MemoryData {
    used: u64,
    available: u64,
}

impl TrackData for MemoryData {
    fn data_type(&self) -> &'static str {
        data_type::MEMORY
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("used", self.used);
        fields.u64("available", self.available);
    }
}

/// The machine's CPU and memory tracks.
pub(crate) struct SystemSampler {
    previous: Option<(f64, SystemTimes)>,
    names: Vec<&'static str>,
}

impl SystemSampler {
    /// None when neither can be read.
    pub(crate) fn probe() -> Option<SystemSampler> {
        let found = [
            (source::CPU, SystemTimes::now().is_some()),
            (source::MEMORY, memory().is_some()),
        ];
        let names: Vec<&'static str> = found
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        (!names.is_empty()).then_some(SystemSampler {
            previous: None,
            names,
        })
    }
}

impl Source for SystemSampler {
    fn names(&self) -> Vec<&'static str> {
        self.names.clone()
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let times = SystemTimes::now();
        let memory = memory();
        let previous = std::mem::replace(&mut self.previous, times.map(|times| (now, times)));
        let Some((start, before)) = previous else {
            return;
        };
        if let Some(cpu) = times.and_then(|after| CpuData::of(before, after)) {
            out.track(track::CPU, start, now, &cpu);
        }
        if let Some((used, available)) = memory {
            out.track(track::MEMORY, start, now, &MemoryData { used, available });
        }
    }
}

/// A process of the task's tree, held open: its pid cannot be given to another process
/// while the handle lives, and its times stay readable after it ends.
struct Process {
    handle: OwnedHandle,
    /// Its CPU time (kernel and user, 100 ns) counted so far.
    counted: u64,
}

/// What one read of a process gives.
struct ProcessNow {
    created: u64,
    cpu: u64,
    working_set: u64,
    running: bool,
}

impl Process {
    fn open(pid: u32) -> Option<Process> {
        // SAFETY: OpenProcess takes no memory; a null handle is its failure.
        let raw = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
        if raw.is_null() {
            return None;
        }
        // SAFETY: a handle just opened, owned by nothing else.
        let handle = unsafe { OwnedHandle::from_raw_handle(raw) };
        Some(Process { handle, counted: 0 })
    }

    fn read(&self) -> Option<ProcessNow> {
        read_process(self.handle.as_raw_handle())
    }
}

/// Times and working set of the process of `handle`.
fn read_process(handle: std::os::windows::io::RawHandle) -> Option<ProcessNow> {
    let (mut created, mut exited) = (zero_time(), zero_time());
    let (mut kernel, mut user) = (zero_time(), zero_time());
    // SAFETY: a process handle, and four valid FILETIMEs written by the call.
    let timed =
        unsafe { GetProcessTimes(handle, &mut created, &mut exited, &mut kernel, &mut user) };
    if timed == 0 {
        return None;
    }
    let mut code = 0;
    // SAFETY: a process handle and a valid u32.
    let running =
        unsafe { GetExitCodeProcess(handle, &mut code) } != 0 && code == STILL_ACTIVE as u32;
    // SAFETY: all-zero is a valid PROCESS_MEMORY_COUNTERS.
    let mut counters: PROCESS_MEMORY_COUNTERS = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
    // SAFETY: a process handle and a valid PROCESS_MEMORY_COUNTERS of the size passed.
    let measured = unsafe { K32GetProcessMemoryInfo(handle, &mut counters, size) } != 0;
    Some(ProcessNow {
        created: ticks(created),
        cpu: ticks(kernel) + ticks(user),
        working_set: if measured && running {
            counters.WorkingSetSize as u64
        } else {
            0
        },
        running,
    })
}

/// Every process of the machine as (pid, parent pid), from one Toolhelp32 snapshot.
fn list_processes() -> Vec<(u32, u32)> {
    // SAFETY: CreateToolhelp32Snapshot takes no memory.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if raw == INVALID_HANDLE_VALUE || raw.is_null() {
        return Vec::new();
    }
    // SAFETY: a handle just made, owned by nothing else.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw) };
    // SAFETY: all-zero is a valid PROCESSENTRY32W.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    let mut processes = Vec::new();
    // SAFETY: the snapshot's handle and a valid entry with its size set, for each call.
    let mut more = unsafe { Process32FirstW(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        processes.push((entry.th32ProcessID, entry.th32ParentProcessID));
        // SAFETY: as above.
        more = unsafe { Process32NextW(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    processes
}

/// The pids of `listed` (pid, parent) that descend from `root` (itself not included).
fn descendants(listed: &[(u32, u32)], root: u32) -> Vec<u32> {
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        let children = listed
            .iter()
            .filter(|&&(pid, ppid)| ppid == parent && pid != parent);
        for &(pid, _) in children {
            if !found.contains(&pid) {
                found.push(pid);
            }
        }
        next += 1;
    }
    found.remove(0);
    found
}

/// The task's process tree: a process and its descendants (`Follow::Pid`), or the
/// recorder's children and theirs (`Follow::Children`, the recorder not counted).
pub(crate) struct ProcessTree {
    root: u32,
    /// The root itself is the task's (not the recorder).
    count_root: bool,
    /// The root's creation time: a process listed under it but made before it had a parent
    /// of the same pid earlier (Windows keeps the parent's pid, however stale).
    root_created: u64,
    processes: HashMap<u32, Process>,
    previous: Option<(f64, SystemTimes)>,
}

impl ProcessTree {
    /// None for a cgroup (Linux's), or when the root cannot be read.
    pub(crate) fn probe(follow: &Follow, _clock: Clock) -> Option<ProcessTree> {
        let (root, count_root) = match *follow {
            Follow::Children => (std::process::id(), false),
            Follow::Pid(pid) => (pid, true),
            Follow::Cgroup(_) => return None,
        };
        let root_created = match count_root {
            // SAFETY: the pseudo-handle of this process needs no closing.
            false => read_process(unsafe { GetCurrentProcess() })?.created,
            true => Process::open(root)?.read()?.created,
        };
        Some(ProcessTree {
            root,
            count_root,
            root_created,
            processes: HashMap::new(),
            previous: None,
        })
    }

    /// Opens the tree's processes not held yet.
    fn discover(&mut self) {
        let listed = list_processes();
        let mut pids = descendants(&listed, self.root);
        if self.count_root {
            pids.push(self.root);
        }
        for pid in pids {
            if self.processes.contains_key(&pid) {
                continue;
            }
            let Some(process) = Process::open(pid) else {
                continue;
            };
            let is_root = pid == self.root;
            let made_after_root = process
                .read()
                .is_some_and(|now| now.created >= self.root_created);
            if is_root || made_after_root {
                self.processes.insert(pid, process);
            }
        }
    }

    /// The tree's CPU time since the last tick (100 ns) and its live processes' count and
    /// working sets; ended processes are counted a last time and let go.
    fn take(&mut self) -> (u64, u64, u64) {
        let (mut cpu, mut live, mut working_set) = (0, 0, 0);
        self.processes.retain(|_, process| {
            let Some(now) = process.read() else {
                return false;
            };
            cpu += now.cpu.saturating_sub(process.counted);
            process.counted = now.cpu;
            if now.running {
                live += 1;
                working_set += now.working_set;
            }
            now.running
        });
        (cpu, live, working_set)
    }
}

impl Source for ProcessTree {
    fn names(&self) -> Vec<&'static str> {
        vec![source::PROCESSES]
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        self.discover();
        let (tree, processes, rss) = self.take();
        let (Some(times), Some((used, _))) = (SystemTimes::now(), memory()) else {
            self.previous = None;
            return;
        };
        let Some((start, before)) = self.previous.replace((now, times)) else {
            return;
        };
        let (all, busy, _, _) = times.since(before);
        let sample = TaskSample {
            tree: tree as f64,
            all,
            busy,
            processes,
            rss,
            used,
        };
        sample.write(start, now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_stacked_user_then_system_and_idle_is_the_rest() {
        let before = SystemTimes {
            idle: 1000,
            kernel: 3000,
            user: 500,
        };
        // 400 idle, 100 system (kernel less idle), 500 user: 1000 in all.
        let after = SystemTimes {
            idle: 1400,
            kernel: 3500,
            user: 1000,
        };
        let cpu = CpuData::of(before, after).unwrap();
        assert_eq!(cpu.cpu_percent, Percent(0.6));
        assert_eq!((cpu.user, cpu.system), (0.5, 0.6));
        assert_eq!(cpu.idle_pct.share(), 0.4);
        assert_eq!(CpuData::of(after, after), None);
    }

    #[test]
    fn descendants_are_found_at_every_depth_and_a_self_parent_is_no_loop() {
        let listed = [
            (1, 0),
            (10, 1),
            (11, 10),
            (12, 11),
            (20, 2),
            (13, 10),
            (5, 5),
        ];
        assert_eq!(descendants(&listed, 1), [10, 11, 13, 12]);
        assert_eq!(descendants(&listed, 5), Vec::<u32>::new());
    }

    #[test]
    fn the_machine_and_this_process_are_read() {
        let times = SystemTimes::now().expect("GetSystemTimes");
        assert!(times.kernel >= times.idle);
        let (used, available) = memory().expect("GlobalMemoryStatusEx");
        assert!(used > 0 && available > 0);
        // SAFETY: the pseudo-handle of this process.
        let own = read_process(unsafe { GetCurrentProcess() }).expect("own times");
        assert!(own.running && own.working_set > 0);
    }

    #[test]
    fn a_child_is_followed_and_its_cpu_counted_after_it_ends() {
        let mut tree = ProcessTree::probe(&Follow::Children, Clock::start()).unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        tree.discover();
        let held = tree.processes.contains_key(&child.id());
        child.wait().unwrap();
        assert!(held, "the child is the tree's");
        tree.take();
        assert!(tree.processes.is_empty(), "an ended process is let go");
    }
}
