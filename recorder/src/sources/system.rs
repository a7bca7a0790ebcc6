//! System-wide resource samples from Linux's /proc: CPU time by kind, memory, disk and
//! network. Each tick turns the difference from the previous tick into one interval marker
//! per track ("CPU Use", "Memory", "IO", "NetIO"), as Mozilla's resource monitor draws them.

use crate::sources::io::{whole_disks, Counters, IoData};
use crate::sources::machine::{CpuTimes, Machine, MemInfo};
use crate::sources::procfs::{lines, numbers, ReadBuffer};
use crate::sources::{Lines, Percent, Source};
use std::fs::File;
use std::path::Path;
use tc_profile_format::schema::{data_type, source, track};
use tc_profile_format::{DataFields, TrackData};

/// Bytes per sector in a disk's `stat`, whatever the device's real sector size.
const DISKSTATS_SECTOR: u64 = 512;

#[derive(Clone, Copy, Default)]
struct Snapshot {
    time: f64,
    cpu: Option<CpuTimes>,
    /// Whether every disk's `stat` was read (into its [`Disk::current`]).
    disks: bool,
    /// Network: "read" is received, "write" is sent.
    net: Option<Counters>,
}

/// A whole disk (not a partition, loop or device-mapper device): counting only these never
/// counts a partition and its disk twice, and reading them costs less than /proc/diskstats,
/// which lists every block device.
struct Disk {
    /// Its own track's name, for a machine of several disks.
    track: String,
    stat: File,
    /// Its counters at the snapshot before the last, and at the last: kept here, so that a
    /// snapshot allocates nothing.
    previous: Counters,
    current: Counters,
}

// The `data` of each track (SPEC.md, "Categories and schemas"), typed so that a tick
// encodes its lines without building JSON maps.

#[derive(Debug, PartialEq)]
struct CpuData {
    kind: &'static str,
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

impl TrackData for CpuData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        self.cpu_percent.write("cpuPercent", fields);
        fields.f64("nice", self.nice);
        fields.f64("user", self.user);
        fields.f64("system", self.system);
        fields.f64("iowait", self.iowait);
        fields.f64("softirq", self.softirq);
        fields.f64("steal", self.steal);
        self.nice_pct.write("nice_pct", fields);
        self.user_pct.write("user_pct", fields);
        self.system_pct.write("system_pct", fields);
        self.iowait_pct.write("iowait_pct", fields);
        self.irq_pct.write("irq_pct", fields);
        self.steal_pct.write("steal_pct", fields);
        self.idle_pct.write("idle_pct", fields);
    }
}

struct MemoryData {
    kind: &'static str,
    used: u64,
    available: u64,
    cached: u64,
    buffers: u64,
    swap: u64,
}

impl TrackData for MemoryData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("used", self.used);
        fields.u64("available", self.available);
        fields.u64("cached", self.cached);
        fields.u64("buffers", self.buffers);
        fields.u64("swap", self.swap);
    }
}

struct NetData {
    kind: &'static str,
    recv_bytes: u64,
    recv_count: u64,
    sent_bytes: u64,
    sent_count: u64,
}

impl TrackData for NetData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("recv_bytes", self.recv_bytes);
        fields.u64("recv_count", self.recv_count);
        fields.u64("sent_bytes", self.sent_bytes);
        fields.u64("sent_count", self.sent_count);
    }
}

/// CPU, memory, disk and network of the whole machine, from /proc files kept open (see
/// [`ReadBuffer`]: two preads a tick each, where opening took six system calls).
pub(crate) struct SystemSampler {
    net_dev: Option<File>,
    disks: Vec<Disk>,
    buffer: ReadBuffer,
    previous: Option<Snapshot>,
    names: Vec<&'static str>,
}

impl SystemSampler {
    /// The sampler of what this machine offers; None where it offers none of it.
    pub(crate) fn probe(
        proc_root: &Path,
        sys_root: &Path,
        machine: &Machine,
    ) -> Option<SystemSampler> {
        let open = |name: &str| File::open(proc_root.join(name)).ok();
        let disks = whole_disks(&sys_root.join("block"))
            .iter()
            .filter_map(|disk| {
                let name = disk.file_name()?.to_string_lossy();
                Some(Disk {
                    track: format!("{}{name}", track::DISK_PREFIX),
                    stat: File::open(disk.join("stat")).ok()?,
                    previous: Counters::default(),
                    current: Counters::default(),
                })
            })
            .collect();
        let mut sampler = SystemSampler {
            net_dev: open("net/dev"),
            disks,
            buffer: ReadBuffer::new(),
            previous: None,
            names: Vec::new(),
        };
        let snapshot = sampler.snapshot(0.0, machine);
        let found = [
            (source::CPU, snapshot.cpu.is_some()),
            (source::MEMORY, machine.memory.is_some()),
            (source::IO, snapshot.disks),
            (source::NET, snapshot.net.is_some()),
        ];
        sampler.names = found
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        (!sampler.names.is_empty()).then_some(sampler)
    }

    fn snapshot(&mut self, time: f64, machine: &Machine) -> Snapshot {
        let buffer = &mut self.buffer;
        let mut disks = !self.disks.is_empty();
        for disk in &mut self.disks {
            disk.previous = disk.current;
            let read = buffer.head_of(&disk.stat).map(parse_disk_stat);
            disks &= read.is_some();
            disk.current = read.unwrap_or_default();
        }
        let net_dev = self
            .net_dev
            .as_ref()
            .and_then(|file| buffer.read_file(file).ok());
        Snapshot {
            time,
            cpu: machine.cpu,
            disks,
            net: net_dev.map(parse_net_dev),
        }
    }

    fn memory_data(info: &MemInfo) -> MemoryData {
        MemoryData {
            kind: data_type::MEMORY,
            used: info.used(),
            available: info.available,
            cached: info.cached,
            buffers: info.buffers,
            swap: info.swap_total.saturating_sub(info.swap_free),
        }
    }
}

impl Source for SystemSampler {
    fn names(&self) -> Vec<&'static str> {
        self.names.clone()
    }

    /// One marker line per track for the interval since the previous tick.
    fn tick(&mut self, now: f64, out: &mut Lines) {
        let current = self.snapshot(now, out.machine);
        let memory = out.machine.memory.as_ref().map(SystemSampler::memory_data);
        let Some(previous) = self.previous.replace(current) else {
            return;
        };
        let start = previous.time;
        if let Some(cpu) = previous
            .cpu
            .zip(current.cpu)
            .and_then(|(b, a)| cpu_data(b, a))
        {
            out.track(track::CPU, start, now, &cpu);
        }
        if let Some(memory) = memory {
            out.track(track::MEMORY, start, now, &memory);
        }
        if previous.disks && current.disks {
            let (mut before, mut after) = (Counters::default(), Counters::default());
            for disk in &self.disks {
                before = before.plus(&disk.previous);
                after = after.plus(&disk.current);
            }
            out.track(track::IO, start, now, &IoData::from(after.since(before)));
            // One disk is the IO track already; several get a track each as well.
            if self.disks.len() > 1 {
                for disk in &self.disks {
                    let d = disk.current.since(disk.previous);
                    out.track(&disk.track, start, now, &IoData::from(d));
                }
            }
        }
        if let (Some(before), Some(after)) = (previous.net, current.net) {
            let d = after.since(before);
            let data = NetData {
                kind: data_type::NET_IO,
                recv_bytes: d.read_bytes,
                recv_count: d.read_count,
                sent_bytes: d.write_bytes,
                sent_count: d.write_count,
            };
            out.track(track::NET_IO, start, now, &data);
        }
    }
}

/// Cumulative fractions of all cores, in Mozilla's stacking order: nice, then +user,
/// +system, +iowait, +irq and softirq, +steal; so that bars drawn over each other stack.
/// None when no jiffy passed in between (a last tick just after the one before).
fn cpu_data(before: CpuTimes, after: CpuTimes) -> Option<CpuData> {
    let mut d = [0.0; 8];
    for (slot, (after, before)) in d.iter_mut().zip(after.0.iter().zip(before.0)) {
        *slot = after.saturating_sub(before) as f64;
    }
    let total: f64 = d.iter().sum();
    if total == 0.0 {
        return None;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = d.map(|v| v / total);
    let irqs = irq + softirq;
    let round = |v: f64| (v * 10000.0).round() / 10000.0;
    Some(CpuData {
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
    })
}

/// A disk's `stat`: reads, reads merged, sectors read, ms reading, writes, writes merged,
/// sectors written, ...
fn parse_disk_stat(text: &[u8]) -> Counters {
    let mut fields = numbers(text);
    let numbers: [u64; 7] = std::array::from_fn(|_| fields.next().flatten().unwrap_or(0));
    Counters {
        read_count: numbers[0],
        read_bytes: numbers[2] * DISKSTATS_SECTOR,
        write_count: numbers[4],
        write_bytes: numbers[6] * DISKSTATS_SECTOR,
    }
}

fn parse_net_dev(text: &[u8]) -> Counters {
    let mut sum = Counters::default();
    // Two header lines, then "iface: rx_bytes rx_packets ... (8 rx fields) tx_bytes tx_packets".
    for line in lines(text).skip(2) {
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        if line[..colon].trim_ascii() == b"lo" {
            continue;
        }
        let mut fields = numbers(&line[colon + 1..]);
        let numbers: [Option<u64>; 10] =
            std::array::from_fn(|_| fields.next().map(|n| n.unwrap_or(0)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::machine::machine_of;
    use crate::sources::{fake_root, tick_markers, tick_markers_under};
    use std::fs;

    #[test]
    fn cpu_fractions_stack_to_the_busy_share() {
        let before = CpuTimes([100, 0, 50, 800, 0, 0, 0, 0]);
        let after = CpuTimes([160, 10, 70, 900, 10, 0, 0, 0]);
        assert!(
            cpu_data(before, before).is_none(),
            "no jiffy passed: no sample"
        );
        let data = cpu_data(before, after).unwrap();
        // 200 jiffies: user 60, nice 10, system 20, idle 100, iowait 10.
        assert_eq!(data.nice, 0.05);
        assert_eq!(data.user, 0.35);
        assert_eq!(data.system, 0.45);
        assert_eq!(data.iowait, 0.5);
        assert_eq!(data.steal, 0.5);
        assert_eq!(data.cpu_percent.share(), 0.45);
        assert_eq!(data.idle_pct.share(), 0.5);
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
            b"      10        0        8        0       20        0       16 0 0 0 0\n",
        );
        assert_eq!((sum.read_count, sum.read_bytes), (10, 8 * 512));
        assert_eq!((sum.write_count, sum.write_bytes), (20, 16 * 512));
    }

    #[test]
    fn several_disks_get_a_track_each_and_their_sum_on_io() {
        let disk_stat = |reads: u64, writes: u64| format!("{reads} 0 {reads} 0 {writes} 0 0\n");
        let root = fake_root(&[
            ("proc/stat", "cpu  1 2 3 4 5 6 7 8\n"),
            ("sys/block/sda/device/x", ""),
            ("sys/block/sdb/device/x", ""),
            ("sys/block/sda/stat", &disk_stat(10, 1)),
            ("sys/block/sdb/stat", &disk_stat(20, 2)),
        ]);
        let (proc_root, sys_root) = (root.path().join("proc"), root.path().join("sys"));
        let machine = machine_of(&proc_root);
        let mut sampler = SystemSampler::probe(&proc_root, &sys_root, &machine).unwrap();
        assert!(tick_markers_under(&mut sampler, 0.0, &proc_root).is_empty());
        for (tick, (a, b)) in [((13, 1), (20, 7)), ((14, 1), (20, 7))]
            .into_iter()
            .enumerate()
        {
            fs::write(sys_root.join("block/sda/stat"), disk_stat(a.0, a.1)).unwrap();
            fs::write(sys_root.join("block/sdb/stat"), disk_stat(b.0, b.1)).unwrap();
            let markers = tick_markers_under(&mut sampler, 100.0 * (tick + 1) as f64, &proc_root);
            let io = |name: &str| {
                let marker = markers.iter().find(|m| m.name == name).unwrap();
                let data = marker.data.as_ref().unwrap();
                (
                    data["read_count"].as_u64().unwrap(),
                    data["write_count"].as_u64().unwrap(),
                )
            };
            let expected = [[(3, 0), (0, 5), (3, 5)], [(1, 0), (0, 0), (1, 0)]][tick];
            assert_eq!(
                [io("IO sda"), io("IO sdb"), io("IO")],
                expected,
                "tick {tick}"
            );
        }
    }

    #[test]
    fn loopback_traffic_is_not_counted() {
        let net = b"h1\nh2\n    lo: 99 9 0 0 0 0 0 0 99 9 0 0 0 0 0 0\n  eth0: 1000 10 0 0 0 0 0 0 500 5 0 0 0 0 0 0\n";
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
    fn live_ticks_produce_all_four_tracks() {
        let mut sampler = SystemSampler::probe(
            Path::new("/proc"),
            Path::new("/sys"),
            &machine_of(Path::new("/proc")),
        )
        .unwrap();
        assert!(tick_markers(&mut sampler, 0.0).is_empty());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let markers = tick_markers(&mut sampler, 20.0);
        let names: Vec<String> = markers.into_iter().map(|m| m.name).collect();
        assert!(names.contains(&"CPU Use".to_owned()), "{names:?}");
        assert!(names.contains(&"Memory".to_owned()), "{names:?}");
    }

    #[test]
    fn track_lines_are_written_byte_for_byte_as_serde_wrote_them() {
        let before = CpuTimes([100, 0, 50, 800, 0, 0, 0, 0]);
        let after = CpuTimes([160, 10, 70, 900, 10, 0, 0, 0]);
        let cpu = cpu_data(before, after).unwrap();
        let memory = MemoryData {
            kind: data_type::MEMORY,
            used: 400,
            available: 600,
            cached: 200,
            buffers: 10,
            swap: 0,
        };
        let mut bytes = Vec::new();
        let machine = Machine::default();
        let mut lines = Lines::new(&mut bytes, &machine);
        lines.track(track::CPU, 0.0, 100.5, &cpu);
        lines.track(track::MEMORY, 100.5, 200.001, &memory);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            concat!(
                r#"{"type":"marker","name":"CPU Use","startTime":0.0,"endTime":100.5,"category":0,"data":{"type":"CPU","cpuPercent":0.45,"nice":0.05,"user":0.35,"system":0.45,"iowait":0.5,"softirq":0.5,"steal":0.5,"nice_pct":0.05,"user_pct":0.3,"system_pct":0.1,"iowait_pct":0.05,"irq_pct":0.0,"steal_pct":0.0,"idle_pct":0.5}}"#,
                "\n",
                r#"{"type":"marker","name":"Memory","startTime":100.5,"endTime":200.001,"category":0,"data":{"type":"Mem","used":400,"available":600,"cached":200,"buffers":10,"swap":0}}"#,
                "\n"
            )
        );
    }
}
