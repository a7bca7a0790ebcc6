//! What several sources need of the machine, read once a tick: /proc/stat and
//! /proc/meminfo (the system tracks and the task's process tree; among the costliest files
//! of a tick), and the pid last given out (the process tree's new-pid check), from
//! /proc/loadavg, read again only after /proc/stat has counted a fork.

use crate::sources::procfs::ReadBuffer;
use std::fs::File;
use std::path::Path;

/// The machine as read at one tick; None where a file could not be read.
#[derive(Default)]
pub(crate) struct Machine {
    pub(crate) cpu: Option<CpuTimes>,
    pub(crate) memory: Option<MemInfo>,
    /// The pid most recently given out on the machine.
    pub(crate) last_pid: Option<u32>,
}

/// /proc/stat, /proc/meminfo and /proc/loadavg, kept open.
pub(crate) struct MachineFiles {
    stat: Option<File>,
    meminfo: Option<File>,
    loadavg: Option<File>,
    buffer: ReadBuffer,
    /// The forks counted and the last pid as last read: without a fork since, no pid was
    /// given out, and /proc/loadavg (a system call of the six of a tick) is not read.
    forked: Option<(u64, Option<u32>)>,
}

impl MachineFiles {
    pub(crate) fn open(proc_root: &Path) -> MachineFiles {
        let open = |name: &str| File::open(proc_root.join(name)).ok();
        MachineFiles {
            stat: open("stat"),
            meminfo: open("meminfo"),
            loadavg: open("loadavg"),
            buffer: ReadBuffer::new(),
            forked: None,
        }
    }

    pub(crate) fn read(&mut self) -> Machine {
        let stat = self.buffer.head_text(&self.stat);
        let forks = stat.and_then(parse_forks);
        let cpu = stat.and_then(parse_cpu);
        Machine {
            cpu,
            memory: self.buffer.head_text(&self.meminfo).and_then(parse_meminfo),
            last_pid: self.last_pid(forks),
        }
    }

    fn last_pid(&mut self, forks: Option<u64>) -> Option<u32> {
        match self.forked {
            Some((counted, last_pid)) if forks == Some(counted) => last_pid,
            _ => {
                let load = self.buffer.head_text(&self.loadavg).and_then(parse_loadavg);
                let last_pid = load.map(|load| load.last_pid);
                self.forked = forks.map(|forks| (forks, last_pid));
                last_pid
            }
        }
    }
}

/// The machine as read under `proc_root` now: for unit tests.
#[cfg(test)]
pub(crate) fn machine_of(proc_root: &Path) -> Machine {
    MachineFiles::open(proc_root).read()
}

/// The `processes` line of /proc/stat: the forks (threads too) since boot.
fn parse_forks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("processes "))?;
    line["processes ".len()..].trim().parse().ok()
}

/// Jiffies since boot, in /proc/stat's order: user nice system idle iowait irq softirq steal.
#[derive(Clone, Copy, Default)]
pub(crate) struct CpuTimes(pub(crate) [u64; 8]);

fn parse_cpu(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let mut times = CpuTimes::default();
    let mut fields = line.split_ascii_whitespace().skip(1);
    for slot in times.0.iter_mut() {
        // Kernels before 2.6.11 lack steal: a missing field stays 0.
        *slot = fields.next().map_or(Ok(0), str::parse).ok()?;
    }
    Some(times)
}

pub(crate) struct MemInfo {
    total: u64,
    pub(crate) available: u64,
    pub(crate) cached: u64,
    pub(crate) buffers: u64,
    pub(crate) swap_total: u64,
    pub(crate) swap_free: u64,
}

impl MemInfo {
    /// What Mozilla's monitor draws as used: total minus available.
    pub(crate) fn used(&self) -> u64 {
        self.total.saturating_sub(self.available)
    }
}

fn parse_meminfo(text: &str) -> Option<MemInfo> {
    const KEYS: [&str; 7] = [
        "MemTotal",
        "MemFree",
        "MemAvailable",
        "Buffers",
        "Cached",
        "SwapTotal",
        "SwapFree",
    ];
    let mut bytes = [None; KEYS.len()];
    let mut found = 0;
    // The keys are near the top: stop once all are found.
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        if let Some(slot) = KEYS.iter().position(|k| *k == key) {
            let kib = rest.split_ascii_whitespace().next().map(str::parse::<u64>);
            bytes[slot] = kib.and_then(Result::ok).map(|kib| kib * 1024);
            found += 1;
            if found == KEYS.len() {
                break;
            }
        }
    }
    let [total, free, available, buffers, cached, swap_total, swap_free] = bytes;
    let (buffers, cached) = (buffers.unwrap_or(0), cached.unwrap_or(0));
    Some(MemInfo {
        total: total?,
        // Kernels before 3.14 lack MemAvailable: estimate it as psutil does.
        available: available.unwrap_or(free? + buffers + cached),
        cached,
        buffers,
        swap_total: swap_total.unwrap_or(0),
        swap_free: swap_free.unwrap_or(0),
    })
}

/// /proc/loadavg: `0.77 0.85 0.53 3/108 12481`.
#[derive(Clone, Copy)]
pub(crate) struct Loadavg {
    pub(crate) averages: [f64; 3],
    pub(crate) runnable: u64,
    /// The pid most recently given out on the machine.
    pub(crate) last_pid: u32,
}

pub(crate) fn parse_loadavg(text: &str) -> Option<Loadavg> {
    let mut fields = text.split_ascii_whitespace();
    let mut average = || fields.next()?.parse::<f64>().ok();
    let averages = [average()?, average()?, average()?];
    let runnable = fields.next()?.split_once('/')?.0.parse().ok()?;
    let last_pid = fields.next()?.parse().ok()?;
    Some(Loadavg {
        averages,
        runnable,
        last_pid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let text = "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\nBuffers: 10 kB\nCached: 200 kB\nSwapCached: 7 kB\nSwapTotal: 50 kB\nSwapFree: 20 kB\n";
        let info = parse_meminfo(text).unwrap();
        assert_eq!(info.used(), 400 * 1024);
        assert_eq!(info.cached, 200 * 1024, "SwapCached is not Cached");
        assert_eq!(info.swap_total - info.swap_free, 30 * 1024);
    }

    #[test]
    fn loadavg_is_read_again_only_after_a_fork() {
        let stat = |forks: u64| format!("cpu  1 2 3 4 5 6 7 8\nctxt 9\nprocesses {forks}\n");
        let loadavg = |pid: u32| format!("0.50 0.40 0.30 1/99 {pid}\n");
        let root = crate::sources::fake_root(&[("stat", &stat(70)), ("loadavg", &loadavg(700))]);
        let write = |name: &str, text: String| std::fs::write(root.path().join(name), text);
        let mut files = MachineFiles::open(root.path());
        assert_eq!(files.read().last_pid, Some(700));
        write("loadavg", loadavg(701)).unwrap();
        assert_eq!(files.read().last_pid, Some(700), "no fork: not read");
        write("stat", stat(71)).unwrap();
        assert_eq!(files.read().last_pid, Some(701));
        write("stat", "cpu  1 2 3 4 5 6 7 8\n".to_owned()).unwrap();
        write("loadavg", loadavg(702)).unwrap();
        assert_eq!(
            files.read().last_pid,
            Some(702),
            "forks unknown: read every tick"
        );
    }
}
