//! System-wide resource samples from Linux's /proc: CPU time by kind, memory, disk and
//! network. Each tick turns the difference from the previous tick into one interval marker
//! per track ("CPU Use", "Memory", "IO", "NetIO"), as Mozilla's resource monitor draws them.

use serde_json::json;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use tc_profile_format::schema::{category, data_type, track};
use tc_profile_format::Marker;

/// Bytes per sector in /proc/diskstats, whatever the device's real sector size.
const DISKSTATS_SECTOR: u64 = 512;

/// Jiffies since boot, in /proc/stat's order: user nice system idle iowait irq softirq steal.
#[derive(Clone, Copy, Default)]
struct CpuTimes([u64; 8]);

#[derive(Clone, Copy, Default)]
struct Counters {
    read_count: u64,
    read_bytes: u64,
    write_count: u64,
    write_bytes: u64,
}

#[derive(Clone, Copy, Default)]
struct Snapshot {
    time: f64,
    cpu: Option<CpuTimes>,
    disk: Option<Counters>,
    /// Network: "read" is received, "write" is sent.
    net: Option<Counters>,
}

pub(crate) struct SystemSampler {
    proc_root: PathBuf,
    /// Whole disks (not partitions, loop or device-mapper devices): counting only these
    /// never counts a partition and its disk twice.
    disks: Vec<String>,
    buffer: String,
    previous: Option<Snapshot>,
}

impl SystemSampler {
    pub(crate) fn new() -> SystemSampler {
        SystemSampler {
            proc_root: PathBuf::from("/proc"),
            disks: whole_disks(Path::new("/sys/block")),
            buffer: String::with_capacity(8192),
            previous: None,
        }
    }

    /// The sources this machine offers, for `meta.tcProfile.sources`.
    pub(crate) fn sources(&mut self) -> Vec<String> {
        let snapshot = self.snapshot(0.0);
        let mut sources = Vec::new();
        let found = [
            ("cpu", snapshot.cpu.is_some()),
            ("memory", self.memory_data().is_some()),
            ("io", snapshot.disk.is_some()),
            ("net", snapshot.net.is_some()),
        ];
        for (name, on) in found {
            if on {
                sources.push(name.to_owned());
            }
        }
        sources
    }

    /// Samples now; returns the markers for the interval since the previous tick (none on
    /// the first tick, which only sets the baseline).
    pub(crate) fn tick(&mut self, now: f64) -> Vec<Marker> {
        let current = self.snapshot(now);
        let Some(previous) = self.previous.replace(current) else {
            return Vec::new();
        };
        let (start, end) = (previous.time, now);
        let interval = |name: &str, data| {
            Marker::interval(name, start, end)
                .with_category(category::OTHER)
                .with_data(data)
        };
        let mut markers = Vec::with_capacity(4);
        if let (Some(before), Some(after)) = (previous.cpu, current.cpu) {
            markers.push(interval(track::CPU, cpu_data(before, after)));
        }
        if let Some(memory) = self.memory_data() {
            markers.push(interval(track::MEMORY, memory));
        }
        if let (Some(before), Some(after)) = (previous.disk, current.disk) {
            let d = after.since(before);
            markers.push(interval(
                track::IO,
                json!({"type": data_type::IO, "read_bytes": d.read_bytes, "read_count": d.read_count,
                       "write_bytes": d.write_bytes, "write_count": d.write_count}),
            ));
        }
        if let (Some(before), Some(after)) = (previous.net, current.net) {
            let d = after.since(before);
            markers.push(interval(
                track::NET_IO,
                json!({"type": data_type::NET_IO, "recv_bytes": d.read_bytes, "recv_count": d.read_count,
                       "sent_bytes": d.write_bytes, "sent_count": d.write_count}),
            ));
        }
        markers
    }

    fn snapshot(&mut self, time: f64) -> Snapshot {
        Snapshot {
            time,
            cpu: self.read("stat").and_then(parse_cpu),
            disk: self.read_diskstats(),
            net: self.read("net/dev").map(parse_net_dev),
        }
    }

    fn memory_data(&mut self) -> Option<serde_json::Value> {
        let info = parse_meminfo(self.read("meminfo")?)?;
        Some(json!({
            "type": data_type::MEMORY,
            "used": info.total.saturating_sub(info.available),
            "available": info.available,
            "cached": info.cached,
            "buffers": info.buffers,
            "swap": info.swap_total.saturating_sub(info.swap_free),
        }))
    }

    fn read_diskstats(&mut self) -> Option<Counters> {
        let disks = std::mem::take(&mut self.disks);
        let counters = self
            .read("diskstats")
            .map(|text| parse_diskstats(text, &disks));
        self.disks = disks;
        counters
    }

    /// Reads a /proc file into the reused buffer.
    fn read(&mut self, name: &str) -> Option<&str> {
        self.buffer.clear();
        let mut file = fs::File::open(self.proc_root.join(name)).ok()?;
        file.read_to_string(&mut self.buffer).ok()?;
        Some(&self.buffer)
    }
}

impl Counters {
    fn since(self, before: Counters) -> Counters {
        Counters {
            read_count: self.read_count.saturating_sub(before.read_count),
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_count: self.write_count.saturating_sub(before.write_count),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
        }
    }
}

/// Cumulative fractions of all cores, in Mozilla's stacking order: nice, then +user,
/// +system, +iowait, +irq and softirq, +steal; so that bars drawn over each other stack.
fn cpu_data(before: CpuTimes, after: CpuTimes) -> serde_json::Value {
    let d: Vec<f64> = (0..8)
        .map(|i| after.0[i].saturating_sub(before.0[i]) as f64)
        .collect();
    let total: f64 = d.iter().sum::<f64>().max(1.0);
    let [user, nice, system, idle, iowait, irq, softirq, steal] =
        [d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]].map(|v| v / total);
    let irqs = irq + softirq;
    let busy = 1.0 - idle - iowait;
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let round = |v: f64| (v * 10000.0).round() / 10000.0;
    json!({
        "type": data_type::CPU,
        "cpuPercent": pct(busy),
        "nice": round(nice),
        "user": round(nice + user),
        "system": round(nice + user + system),
        "iowait": round(nice + user + system + iowait),
        "softirq": round(nice + user + system + iowait + irqs),
        "steal": round(nice + user + system + iowait + irqs + steal),
        "nice_pct": pct(nice),
        "user_pct": pct(user),
        "system_pct": pct(system),
        "iowait_pct": pct(iowait),
        "irq_pct": pct(irqs),
        "steal_pct": pct(steal),
        "idle_pct": pct(idle),
    })
}

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

struct MemInfo {
    total: u64,
    available: u64,
    cached: u64,
    buffers: u64,
    swap_total: u64,
    swap_free: u64,
}

fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let value = |key: &str| -> Option<u64> {
        let line = text.lines().find(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.starts_with(':'))
        })?;
        let kib: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    };
    let total = value("MemTotal")?;
    let free = value("MemFree")?;
    let buffers = value("Buffers").unwrap_or(0);
    let cached = value("Cached").unwrap_or(0);
    Some(MemInfo {
        total,
        // Kernels before 3.14 lack MemAvailable: estimate it as psutil does.
        available: value("MemAvailable").unwrap_or(free + buffers + cached),
        cached,
        buffers,
        swap_total: value("SwapTotal").unwrap_or(0),
        swap_free: value("SwapFree").unwrap_or(0),
    })
}

fn parse_diskstats(text: &str, disks: &[String]) -> Counters {
    let mut sum = Counters::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        if fields.len() < 10 || !disks.iter().any(|d| d == fields[2]) {
            continue;
        }
        let number = |i: usize| fields[i].parse::<u64>().unwrap_or(0);
        sum.read_count += number(3);
        sum.read_bytes += number(5) * DISKSTATS_SECTOR;
        sum.write_count += number(7);
        sum.write_bytes += number(9) * DISKSTATS_SECTOR;
    }
    sum
}

fn parse_net_dev(text: &str) -> Counters {
    let mut sum = Counters::default();
    // Two header lines, then "iface: rx_bytes rx_packets ... (8 rx fields) tx_bytes tx_packets".
    for line in text.lines().skip(2) {
        let Some((name, numbers)) = line.split_once(':') else {
            continue;
        };
        if name.trim() == "lo" {
            continue;
        }
        let fields: Vec<u64> = numbers
            .split_ascii_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        if fields.len() < 10 {
            continue;
        }
        sum.read_bytes += fields[0];
        sum.read_count += fields[1];
        sum.write_bytes += fields[8];
        sum.write_count += fields[9];
    }
    sum
}

/// Block devices backed by hardware (they have a `device` link): not partitions, loop,
/// ram or device-mapper devices, whose I/O is already counted on the disk below them.
fn whole_disks(sys_block: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(sys_block) else {
        return Vec::new();
    };
    let mut disks: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join("device").exists())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    disks.sort();
    disks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_fractions_stack_to_the_busy_share() {
        let before = CpuTimes([100, 0, 50, 800, 0, 0, 0, 0]);
        let after = CpuTimes([160, 10, 70, 900, 10, 0, 0, 0]);
        let data = cpu_data(before, after);
        // 200 jiffies: user 60, nice 10, system 20, idle 100, iowait 10.
        assert_eq!(data["nice"], 0.05);
        assert_eq!(data["user"], 0.35);
        assert_eq!(data["system"], 0.45);
        assert_eq!(data["iowait"], 0.5);
        assert_eq!(data["steal"], 0.5);
        assert_eq!(data["cpuPercent"], "45.0%");
    }

    #[test]
    fn partitions_and_loopback_are_not_counted() {
        let diskstats = "   8       0 sda 10 0 8 0 20 0 16 0 0 0 0\n   8       1 sda1 10 0 8 0 20 0 16 0 0 0 0\n   7       0 loop0 5 0 5 0 5 0 5 0 0 0 0\n";
        let sum = parse_diskstats(diskstats, &["sda".to_owned()]);
        assert_eq!((sum.read_count, sum.read_bytes), (10, 8 * 512));
        assert_eq!((sum.write_count, sum.write_bytes), (20, 16 * 512));
        let net = "h1\nh2\n    lo: 99 9 0 0 0 0 0 0 99 9 0 0 0 0 0 0\n  eth0: 1000 10 0 0 0 0 0 0 500 5 0 0 0 0 0 0\n";
        let sum = parse_net_dev(net);
        assert_eq!(
            (
                sum.read_bytes,
                sum.read_count,
                sum.write_bytes,
                sum.write_count
            ),
            (1000, 10, 500, 5)
        );
    }

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let text = "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\nBuffers: 10 kB\nCached: 200 kB\nSwapCached: 7 kB\nSwapTotal: 50 kB\nSwapFree: 20 kB\n";
        let info = parse_meminfo(text).unwrap();
        assert_eq!(info.total - info.available, 400 * 1024);
        assert_eq!(info.cached, 200 * 1024, "SwapCached is not Cached");
        assert_eq!(info.swap_total - info.swap_free, 30 * 1024);
    }

    #[test]
    fn live_ticks_produce_all_four_tracks() {
        let mut sampler = SystemSampler::new();
        assert!(sampler.tick(0.0).is_empty());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let names: Vec<String> = sampler.tick(20.0).into_iter().map(|m| m.name).collect();
        assert!(names.contains(&"CPU Use".to_owned()), "{names:?}");
        assert!(names.contains(&"Memory".to_owned()), "{names:?}");
    }
}
