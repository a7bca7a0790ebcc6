//! What several sources need of the machine, read once a tick: /proc/stat and
//! /proc/meminfo (the system tracks and the task's process tree; among the costliest files
//! of a tick) and /proc/loadavg (the load track, and the process tree's new-pid check).

use crate::sources::procfs::ReadBuffer;
use std::fs::File;
use std::path::Path;

/// The machine as read at one tick; None where a file could not be read.
#[derive(Default)]
pub(crate) struct Machine {
    pub(crate) cpu: Option<CpuTimes>,
    pub(crate) memory: Option<MemInfo>,
    pub(crate) load: Option<Loadavg>,
}

/// /proc/stat, /proc/meminfo and /proc/loadavg, kept open.
pub(crate) struct MachineFiles {
    stat: Option<File>,
    meminfo: Option<File>,
    loadavg: Option<File>,
    buffer: ReadBuffer,
}

impl MachineFiles {
    pub(crate) fn open(proc_root: &Path) -> MachineFiles {
        let open = |name: &str| File::open(proc_root.join(name)).ok();
        MachineFiles {
            stat: open("stat"),
            meminfo: open("meminfo"),
            loadavg: open("loadavg"),
            buffer: ReadBuffer::new(),
        }
    }

    pub(crate) fn read(&mut self) -> Machine {
        Machine {
            cpu: self.buffer.head_text(&self.stat).and_then(parse_cpu),
            memory: self.buffer.head_text(&self.meminfo).and_then(parse_meminfo),
            load: self.buffer.head_text(&self.loadavg).and_then(parse_loadavg),
        }
    }
}

/// The machine as read under `proc_root` now: for unit tests.
#[cfg(test)]
pub(crate) fn machine_of(proc_root: &Path) -> Machine {
    MachineFiles::open(proc_root).read()
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

fn parse_loadavg(text: &str) -> Option<Loadavg> {
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
}
