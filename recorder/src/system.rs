//! System-wide resource samples from Linux's /proc: CPU time by kind, memory, disk and
//! network. Each tick turns the difference from the previous tick into one interval marker
//! per track ("CPU Use", "Memory", "IO", "NetIO"), as Mozilla's resource monitor draws them.

use serde::{Serialize, Serializer};
use std::fmt;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tc_profile_format::encode_marker_line_into;
use tc_profile_format::schema::{category, data_type, track};

/// Bytes per sector in a disk's `stat`, whatever the device's real sector size.
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

// The `data` of each track (SPEC.md, "Categories and schemas"), typed so that a tick
// encodes its lines without building JSON maps.

#[derive(Serialize, Debug, PartialEq)]
struct CpuData {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "cpuPercent")]
    cpu_percent: Percent,
    nice: f64,
    user: f64,
    system: f64,
    iowait: f64,
    softirq: f64,
    steal: f64,
    nice_pct: Percent,
    user_pct: Percent,
    system_pct: Percent,
    iowait_pct: Percent,
    irq_pct: Percent,
    steal_pct: Percent,
    idle_pct: Percent,
}

#[derive(Serialize)]
struct MemoryData {
    #[serde(rename = "type")]
    kind: &'static str,
    used: u64,
    available: u64,
    cached: u64,
    buffers: u64,
    swap: u64,
}

#[derive(Serialize)]
struct IoData {
    #[serde(rename = "type")]
    kind: &'static str,
    read_bytes: u64,
    read_count: u64,
    write_bytes: u64,
    write_count: u64,
}

#[derive(Serialize)]
struct NetData {
    #[serde(rename = "type")]
    kind: &'static str,
    recv_bytes: u64,
    recv_count: u64,
    sent_bytes: u64,
    sent_count: u64,
}

/// A fraction shown as a percentage with one decimal, "45.0%".
#[derive(Clone, Copy, Debug, PartialEq)]
struct Percent(f64);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        // Integer tenths: exact-decimal float formatting costs more than the rest of a tick.
        let tenths = (self.0.clamp(0.0, 1.0) * 1000.0).round() as u32;
        write!(f, "{}.{}%", tenths / 10, tenths % 10)
    }
}

impl Serialize for Percent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

pub(crate) struct SystemSampler {
    stat: Option<KernelFile>,
    meminfo: Option<KernelFile>,
    net_dev: Option<KernelFile>,
    /// The `stat` of each whole disk (not partitions, loop or device-mapper devices):
    /// counting only these never counts a partition and its disk twice, and reading them
    /// costs less than /proc/diskstats, which lists every block device.
    disks: Vec<KernelFile>,
    buffer: Vec<u8>,
    previous: Option<Snapshot>,
}

impl SystemSampler {
    pub(crate) fn new() -> SystemSampler {
        let proc = Path::new("/proc");
        SystemSampler {
            stat: KernelFile::open(&proc.join("stat")),
            meminfo: KernelFile::open(&proc.join("meminfo")),
            net_dev: KernelFile::open(&proc.join("net/dev")),
            disks: whole_disks(Path::new("/sys/block"))
                .iter()
                .filter_map(|disk| KernelFile::open(&disk.join("stat")))
                .collect(),
            buffer: vec![0; 16 * 1024],
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

    /// Samples now and appends to `lines` one marker line per track for the interval since
    /// the previous tick (none on the first tick, which only sets the baseline); returns
    /// how many.
    pub(crate) fn tick(&mut self, now: f64, lines: &mut Vec<u8>) -> u64 {
        let current = self.snapshot(now);
        let Some(previous) = self.previous.replace(current) else {
            return 0;
        };
        let mut samples = Samples {
            bytes: lines,
            start: previous.time,
            end: now,
            count: 0,
        };
        if let (Some(before), Some(after)) = (previous.cpu, current.cpu) {
            samples.push(track::CPU, &cpu_data(before, after));
        }
        if let Some(memory) = self.memory_data() {
            samples.push(track::MEMORY, &memory);
        }
        if let (Some(before), Some(after)) = (previous.disk, current.disk) {
            let d = after.since(before);
            samples.push(
                track::IO,
                &IoData {
                    kind: data_type::IO,
                    read_bytes: d.read_bytes,
                    read_count: d.read_count,
                    write_bytes: d.write_bytes,
                    write_count: d.write_count,
                },
            );
        }
        if let (Some(before), Some(after)) = (previous.net, current.net) {
            let d = after.since(before);
            samples.push(
                track::NET_IO,
                &NetData {
                    kind: data_type::NET_IO,
                    recv_bytes: d.read_bytes,
                    recv_count: d.read_count,
                    sent_bytes: d.write_bytes,
                    sent_count: d.write_count,
                },
            );
        }
        samples.count
    }

    fn snapshot(&mut self, time: f64) -> Snapshot {
        let cpu = KernelFile::read_head(self.stat.as_ref(), &mut self.buffer).and_then(parse_cpu);
        let net = KernelFile::read(self.net_dev.as_ref(), &mut self.buffer).map(parse_net_dev);
        Snapshot {
            time,
            cpu,
            disk: self.disk_counters(),
            net,
        }
    }

    /// The sum over whole disks; None without any.
    fn disk_counters(&mut self) -> Option<Counters> {
        let mut sum: Option<Counters> = None;
        for disk in &self.disks {
            if let Some(counters) =
                KernelFile::read_head(Some(disk), &mut self.buffer).map(parse_disk_stat)
            {
                sum = Some(sum.unwrap_or_default().plus(counters));
            }
        }
        sum
    }

    fn memory_data(&mut self) -> Option<MemoryData> {
        let info = parse_meminfo(KernelFile::read_head(
            self.meminfo.as_ref(),
            &mut self.buffer,
        )?)?;
        Some(MemoryData {
            kind: data_type::MEMORY,
            used: info.total.saturating_sub(info.available),
            available: info.available,
            cached: info.cached,
            buffers: info.buffers,
            swap: info.swap_total.saturating_sub(info.swap_free),
        })
    }
}

/// The lines of one tick: interval markers of the Other category over the same span.
struct Samples<'a> {
    bytes: &'a mut Vec<u8>,
    start: f64,
    end: f64,
    count: u64,
}

impl Samples<'_> {
    fn push(&mut self, name: &str, data: &impl Serialize) {
        let (start, end) = (self.start, Some(self.end));
        encode_marker_line_into(self.bytes, name, start, end, category::OTHER, data);
        self.count += 1;
    }
}

/// A /proc or /sys file kept open for the whole recording. Reading it again from offset 0
/// makes the kernel generate it afresh: two preads a tick, where opening it each time took
/// six system calls (open, statx, lseek, two reads, close).
struct KernelFile(File);

impl KernelFile {
    fn open(path: &Path) -> Option<KernelFile> {
        File::open(path).ok().map(KernelFile)
    }

    /// The whole lines of the file's first `buffer`-full (16 KiB): one pread, for files
    /// whose figures are in their first lines (/proc/stat, /proc/meminfo, a disk's stat),
    /// where reading on to the end would cost one more system call per file and tick.
    fn read_head<'b>(file: Option<&KernelFile>, buffer: &'b mut [u8]) -> Option<&'b str> {
        let file = &file?.0;
        let read = loop {
            match file.read_at(buffer, 0) {
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                read => break read.ok()?,
            }
        };
        let whole_lines = buffer[..read].iter().rposition(|&b| b == b'\n')? + 1;
        std::str::from_utf8(&buffer[..whole_lines]).ok()
    }

    /// The file's text now, in `buffer` (grown to fit). A read returns at most about a
    /// page of a long file, so reading goes on until one returns nothing.
    fn read<'b>(file: Option<&KernelFile>, buffer: &'b mut Vec<u8>) -> Option<&'b str> {
        let file = &file?.0;
        let mut filled = 0;
        loop {
            if filled == buffer.len() {
                buffer.resize(buffer.len() * 2, 0);
            }
            match file.read_at(&mut buffer[filled..], filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        std::str::from_utf8(&buffer[..filled]).ok()
    }
}

impl Counters {
    fn plus(self, other: Counters) -> Counters {
        Counters {
            read_count: self.read_count + other.read_count,
            read_bytes: self.read_bytes + other.read_bytes,
            write_count: self.write_count + other.write_count,
            write_bytes: self.write_bytes + other.write_bytes,
        }
    }

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
fn cpu_data(before: CpuTimes, after: CpuTimes) -> CpuData {
    let mut d = [0.0; 8];
    for (slot, (after, before)) in d.iter_mut().zip(after.0.iter().zip(before.0)) {
        *slot = after.saturating_sub(before) as f64;
    }
    let total: f64 = d.iter().sum::<f64>().max(1.0);
    let [user, nice, system, idle, iowait, irq, softirq, steal] = d.map(|v| v / total);
    let irqs = irq + softirq;
    let round = |v: f64| (v * 10000.0).round() / 10000.0;
    CpuData {
        kind: data_type::CPU,
        cpu_percent: Percent(1.0 - idle - iowait),
        nice: round(nice),
        user: round(nice + user),
        system: round(nice + user + system),
        iowait: round(nice + user + system + iowait),
        softirq: round(nice + user + system + iowait + irqs),
        steal: round(nice + user + system + iowait + irqs + steal),
        nice_pct: Percent(nice),
        user_pct: Percent(user),
        system_pct: Percent(system),
        iowait_pct: Percent(iowait),
        irq_pct: Percent(irqs),
        steal_pct: Percent(steal),
        idle_pct: Percent(idle),
    }
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

/// A disk's `stat`: reads, reads merged, sectors read, ms reading, writes, writes merged,
/// sectors written, ...
fn parse_disk_stat(text: &str) -> Counters {
    let mut fields = text.split_ascii_whitespace();
    let numbers: [u64; 7] =
        std::array::from_fn(|_| fields.next().and_then(|f| f.parse().ok()).unwrap_or(0));
    Counters {
        read_count: numbers[0],
        read_bytes: numbers[2] * DISKSTATS_SECTOR,
        write_count: numbers[4],
        write_bytes: numbers[6] * DISKSTATS_SECTOR,
    }
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
        let mut fields = numbers.split_ascii_whitespace();
        let numbers: [Option<u64>; 10] =
            std::array::from_fn(|_| fields.next().map(|f| f.parse().unwrap_or(0)));
        let [Some(recv_bytes), Some(recv_count), .., Some(sent_bytes), Some(sent_count)] = numbers
        else {
            continue;
        };
        sum.read_bytes += recv_bytes;
        sum.read_count += recv_count;
        sum.write_bytes += sent_bytes;
        sum.write_count += sent_count;
    }
    sum
}

/// Block devices backed by hardware (they have a `device` link): not partitions, loop,
/// ram or device-mapper devices, whose I/O is already counted on the disk below them.
fn whole_disks(sys_block: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(sys_block) else {
        return Vec::new();
    };
    let mut disks: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|path| path.join("device").exists())
        .collect();
    disks.sort();
    disks
}

#[cfg(test)]
mod tests {
    use super::*;
    use tc_profile_format::{decode_line, Line};

    #[test]
    fn cpu_fractions_stack_to_the_busy_share() {
        let before = CpuTimes([100, 0, 50, 800, 0, 0, 0, 0]);
        let after = CpuTimes([160, 10, 70, 900, 10, 0, 0, 0]);
        let data = cpu_data(before, after);
        // 200 jiffies: user 60, nice 10, system 20, idle 100, iowait 10.
        assert_eq!(data.nice, 0.05);
        assert_eq!(data.user, 0.35);
        assert_eq!(data.system, 0.45);
        assert_eq!(data.iowait, 0.5);
        assert_eq!(data.steal, 0.5);
        assert_eq!(data.cpu_percent.to_string(), "45.0%");
        assert_eq!(data.idle_pct.to_string(), "50.0%");
    }

    #[test]
    fn only_whole_disks_are_counted() {
        let sys_block = tempfile::tempdir().unwrap();
        for (name, hardware) in [("sda", true), ("sda1", false), ("loop0", false)] {
            let device = sys_block.path().join(name);
            fs::create_dir(&device).unwrap();
            if hardware {
                fs::create_dir(device.join("device")).unwrap();
            }
        }
        assert_eq!(
            whole_disks(sys_block.path()),
            [sys_block.path().join("sda")]
        );
        let sum = parse_disk_stat(
            "      10        0        8        0       20        0       16 0 0 0 0\n",
        );
        assert_eq!((sum.read_count, sum.read_bytes), (10, 8 * 512));
        assert_eq!((sum.write_count, sum.write_bytes), (20, 16 * 512));
    }

    #[test]
    fn loopback_traffic_is_not_counted() {
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
        assert_eq!(sampler.tick(0.0, &mut Vec::new()), 0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut lines = Vec::new();
        assert_eq!(sampler.tick(20.0, &mut lines), 4);
        let names: Vec<String> = lines
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| match decode_line(line) {
                Ok(Line::Marker(marker)) => marker.name,
                other => panic!("not a marker line: {other:?}"),
            })
            .collect();
        assert!(names.contains(&"CPU Use".to_owned()), "{names:?}");
        assert!(names.contains(&"Memory".to_owned()), "{names:?}");
    }
}
