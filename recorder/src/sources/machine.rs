//! What several sources need of the machine, read once a tick: /proc/stat and
//! /proc/meminfo (the system tracks and the task's process tree; among the costliest files
//! of a tick), and the pid last given out (the process tree's new-pid check), from
//! /proc/loadavg, read again only after /proc/stat has counted a fork.

use crate::sources::procfs::{decimal, fields, lines, numbers, ReadBuffer};
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
        let stat = self
            .stat
            .as_ref()
            .and_then(|file| self.buffer.head_of(file));
        let forks = stat.and_then(parse_forks);
        let cpu = stat.and_then(parse_cpu);
        let meminfo = self
            .meminfo
            .as_ref()
            .and_then(|file| self.buffer.head_of(file));
        Machine {
            cpu,
            memory: meminfo.and_then(parse_meminfo),
            last_pid: self.last_pid(forks),
        }
    }

    fn last_pid(&mut self, forks: Option<u64>) -> Option<u32> {
        match self.forked {
            Some((counted, last_pid)) if forks == Some(counted) => last_pid,
            _ => {
                let loadavg = self
                    .loadavg
                    .as_ref()
                    .and_then(|file| self.buffer.head_of(file));
                let load = loadavg.and_then(parse_loadavg);
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

/// The `processes` line of /proc/stat: the forks (threads too) since boot. Looked for from
/// the end, which it is near, past the per-CPU and interrupt lines of a big machine.
fn parse_forks(stat: &[u8]) -> Option<u64> {
    let mut lines_from_end = stat.rsplit(|&b| b == b'\n');
    let forks = lines_from_end.find_map(|l| l.strip_prefix(b"processes "))?;
    numbers(forks).next()?
}

/// Jiffies since boot, in /proc/stat's order: user nice system idle iowait irq softirq steal.
#[derive(Clone, Copy, Default)]
pub(crate) struct CpuTimes(pub(crate) [u64; 8]);

/// The first line of /proc/stat, `cpu  ...`: the sum of all CPUs.
fn parse_cpu(stat: &[u8]) -> Option<CpuTimes> {
    let line = lines(stat).find_map(|l| l.strip_prefix(b"cpu "))?;
    let mut times = CpuTimes::default();
    let mut numbers = numbers(line);
    for slot in times.0.iter_mut() {
        // Kernels before 2.6.11 lack steal: a missing field stays 0.
        *slot = numbers.next().unwrap_or(Some(0))?;
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

fn parse_meminfo(text: &[u8]) -> Option<MemInfo> {
    const KEYS: [&[u8]; 7] = [
        b"MemTotal",
        b"MemFree",
        b"MemAvailable",
        b"Buffers",
        b"Cached",
        b"SwapTotal",
        b"SwapFree",
    ];
    let mut bytes = [None; KEYS.len()];
    let mut found = 0;
    // The keys are near the top: stop once all are found.
    for line in lines(text) {
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let (key, rest) = (&line[..colon], &line[colon + 1..]);
        if let Some(slot) = KEYS.iter().position(|k| *k == key) {
            let kib = numbers(rest).next().flatten();
            bytes[slot] = kib.map(|kib| kib * 1024);
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

pub(crate) fn parse_loadavg(text: &[u8]) -> Option<Loadavg> {
    let mut fields = fields(text);
    let mut average = || {
        std::str::from_utf8(fields.next()?)
            .ok()?
            .parse::<f64>()
            .ok()
    };
    let averages = [average()?, average()?, average()?];
    let running = fields.next()?;
    let slash = running.iter().position(|&b| b == b'/')?;
    let runnable = decimal(&running[..slash])?;
    let last_pid = decimal(fields.next()?)?.try_into().ok()?;
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
        let info = parse_meminfo(text.as_bytes()).unwrap();
        assert_eq!(info.used(), 400 * 1024);
        assert_eq!(info.cached, 200 * 1024, "SwapCached is not Cached");
        assert_eq!(info.swap_total - info.swap_free, 30 * 1024);
    }

    #[test]
    fn stat_gives_the_cpu_line_and_the_forks_past_long_lines() {
        let intr = format!("intr 99{}", " 0".repeat(4000));
        let stat = format!(
            "cpu  10 20 30 40 50 60 70 80 90 100\ncpu0 1 2 3 4 5 6 7 8\n{intr}\nctxt 5\nprocesses 4321\nprocs_running 2\nsoftirq 1 2 3\n"
        );
        assert_eq!(
            parse_cpu(stat.as_bytes()).unwrap().0,
            [10, 20, 30, 40, 50, 60, 70, 80]
        );
        assert_eq!(parse_forks(stat.as_bytes()), Some(4321));
        let old_kernel = parse_cpu(b"cpu  1 2 3 4 5 6 7\n").unwrap();
        assert_eq!(old_kernel.0, [1, 2, 3, 4, 5, 6, 7, 0], "no steal: 0");
        assert!(parse_cpu(b"cpu  1 2 x 4\n").is_none(), "not a number");
        assert!(parse_cpu(b"cpu0 1 2 3 4\n").is_none(), "no sum line");
        assert_eq!(parse_forks(b"cpu  1\nprocesses_x 5\n"), None);
    }

    #[test]
    fn loadavg_gives_the_averages_the_runnable_and_the_last_pid() {
        let load = parse_loadavg(b"0.77 0.85 0.53 3/108 12481\n").unwrap();
        assert_eq!(load.averages, [0.77, 0.85, 0.53]);
        assert_eq!((load.runnable, load.last_pid), (3, 12481));
        assert!(
            parse_loadavg(b"0.77 0.85 0.53 3 12481\n").is_none(),
            "no slash"
        );
        assert!(parse_loadavg(b"0.77 0.85 0.53 3/108 4294967296\n").is_none());
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
