//! The task cgroup's tracks: its counters, from its files kept open, as "Cgroup Memory",
//! "Cgroup CPU" and "Cgroup IO", and its OOM kills as markers (see [`OomWatch`]).

use crate::sources::cgroup::cpu_total::usage_usec;
use crate::sources::cgroup::mount::Hierarchy;
use crate::sources::cgroup::oom::OomWatch;
use crate::sources::cgroup::TaskCgroup;
use crate::sources::io::{self, whole_disks, IoData};
use crate::sources::procfs::{keyed_number, sysconf, ReadBuffer};
use crate::sources::{fraction, Lines, Percent, Source};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use tc_profile_format::schema::{data_type, source, track};
use tc_profile_format::CgroupInfo;
use tc_profile_format::{DataFields, TrackData};

/// A v1 limit at or above this is "no limit" (the kernel shows its page counter's maximum).
const V1_UNLIMITED: u64 = 1 << 62;

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
    io: Option<io::Counters>,
    oom_kills: Option<u64>,
}

/// What a tick takes from memory.events (v2) or memory.oom_control (v1), read once: how
/// often the memory limit was hit (v2 only) and the OOM kills.
#[derive(Clone, Copy, Default)]
struct MemoryEvents {
    limit_hits: Option<u64>,
    oom_kills: Option<u64>,
}

#[derive(Clone, Copy)]
struct CpuCounters {
    usage_usec: u64,
    throttled_usec: u64,
    throttled_count: u64,
}

struct MemoryData {
    kind: &'static str,
    current: u64,
    peak: Option<u64>,
    limit: Option<u64>,
    failcnt: Option<u64>,
}

impl TrackData for MemoryData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("current", self.current);
        if let Some(peak) = self.peak {
            fields.u64("peak", peak);
        }
        if let Some(limit) = self.limit {
            fields.u64("limit", limit);
        }
        if let Some(failcnt) = self.failcnt {
            fields.u64("failcnt", failcnt);
        }
    }
}

struct CpuData {
    kind: &'static str,
    cpu: f64,
    cpu_percent: Percent,
    throttled: f64,
    throttled_count: u64,
}

impl TrackData for CpuData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.f64("cpu", self.cpu);
        self.cpu_percent.write("cpuPercent", fields);
        fields.f64("throttled", self.throttled);
        fields.u64("throttledCount", self.throttled_count);
    }
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
        if sampler.memory_events().oom_kills.is_some() {
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

    fn memory_events(&mut self) -> MemoryEvents {
        let file = match self.hierarchy {
            Hierarchy::V2 => "memory.events",
            Hierarchy::V1Memory => "memory.oom_control",
        };
        let text = self.read(file);
        MemoryEvents {
            limit_hits: text.and_then(|t| keyed_number(t, "max")),
            oom_kills: text.and_then(|t| keyed_number(t, "oom_kill")),
        }
    }

    /// Whether a tick reads [`MemoryEvents`]: for the OOM kills, or v2's limit hits.
    fn needs_memory_events(&self) -> bool {
        self.oom.is_some() || (self.memory && self.hierarchy == Hierarchy::V2)
    }

    fn memory_data(&mut self, events: MemoryEvents) -> Option<MemoryData> {
        let (current, peak, limit, failcnt) = match self.hierarchy {
            Hierarchy::V2 => (
                self.number("memory.current")?,
                self.number("memory.peak"),
                // "max", no limit, is not a number.
                self.number("memory.max"),
                events.limit_hits,
            ),
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

    fn counters(&mut self, events: MemoryEvents) -> Counters {
        let mut counters = Counters::default();
        if self.cpu {
            counters.cpu = self.read("cpu.stat").and_then(|text| {
                Some(CpuCounters {
                    usage_usec: usage_usec(text)?,
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
            counters.oom_kills = events.oom_kills;
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
        let events = if self.needs_memory_events() {
            self.memory_events()
        } else {
            MemoryEvents::default()
        };
        let memory = if self.memory {
            self.memory_data(events)
        } else {
            None
        };
        let mut after = self.counters(events);
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
fn parse_io_stat(text: &str, disks: &[String]) -> io::Counters {
    let mut counters = io::Counters::default();
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

/// `major:minor` of the whole disks, which the IO track counts.
fn disk_numbers(sys_block: &Path) -> Vec<String> {
    whole_disks(sys_block)
        .iter()
        .filter_map(|disk| fs::read_to_string(disk.join("dev")).ok())
        .map(|dev| dev.trim().to_owned())
        .collect()
}

fn online_cpus() -> f64 {
    sysconf(libc::_SC_NPROCESSORS_ONLN).unwrap_or(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
