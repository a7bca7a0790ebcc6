//! Small machine-wide tracks: the load average, swap traffic and the CPUs' frequency. Each
//! reads files kept open.

use crate::procfs::{keyed_number, sysconf, ReadBuffer};
use crate::sampler::{Lines, Machine, Source};
use serde::Serialize;
use std::fs::{self, File};
use std::path::Path;
use tc_profile_format::schema::{data_type, source, track};

#[derive(Serialize)]
struct LoadData {
    #[serde(rename = "type")]
    kind: &'static str,
    load1: f64,
    load5: f64,
    load15: f64,
    runnable: u64,
}

#[derive(Serialize)]
struct SwapData {
    #[serde(rename = "type")]
    kind: &'static str,
    swap_in: u64,
    swap_out: u64,
}

#[derive(Serialize)]
struct FrequencyData {
    #[serde(rename = "type")]
    kind: &'static str,
    mhz: u64,
    min_mhz: u64,
    max_mhz: u64,
}

/// /proc/loadavg: `0.77 0.85 0.53 3/108 12481`.
#[derive(Clone, Copy)]
pub(crate) struct Loadavg {
    averages: [f64; 3],
    runnable: u64,
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

/// "Load": the 1, 5 and 15 minute load averages and the runnable threads, from the
/// machine's /proc/loadavg as read at each tick.
pub(crate) struct LoadAverage {
    previous: Option<f64>,
}

impl LoadAverage {
    pub(crate) fn probe(machine: &Machine) -> Option<LoadAverage> {
        machine.load?;
        Some(LoadAverage { previous: None })
    }
}

impl Source for LoadAverage {
    fn names(&self) -> Vec<&'static str> {
        vec![source::LOAD]
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let data = out.machine.load.map(|load| LoadData {
            kind: data_type::LOAD,
            load1: load.averages[0],
            load5: load.averages[1],
            load15: load.averages[2],
            runnable: load.runnable,
        });
        if let (Some(start), Some(data)) = (self.previous.replace(now), data) {
            out.track(track::LOAD, start, now, &data);
        }
    }
}

/// "Swap": bytes swapped in and out per interval, from /proc/vmstat. On only where swap is
/// configured: without it these are not zeros but nothing.
pub(crate) struct Swap {
    vmstat: Option<File>,
    page_size: u64,
    buffer: ReadBuffer,
    previous: Option<(f64, [u64; 2])>,
}

impl Swap {
    pub(crate) fn probe(proc_root: &Path, machine: &Machine) -> Option<Swap> {
        if machine.memory.as_ref()?.swap_total == 0 {
            return None;
        }
        let mut swap = Swap {
            vmstat: File::open(proc_root.join("vmstat")).ok(),
            page_size: sysconf(libc::_SC_PAGESIZE)?,
            buffer: ReadBuffer::new(),
            previous: None,
        };
        swap.read()?;
        Some(swap)
    }

    /// Pages swapped in and out since boot.
    fn read(&mut self) -> Option<[u64; 2]> {
        let text = self.buffer.text_of(&self.vmstat)?;
        Some([
            keyed_number(text, "pswpin")?,
            keyed_number(text, "pswpout")?,
        ])
    }
}

impl Source for Swap {
    fn names(&self) -> Vec<&'static str> {
        vec![source::SWAP]
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let Some(pages) = self.read() else {
            return;
        };
        if let Some((start, before)) = self.previous.replace((now, pages)) {
            let bytes = |i: usize| pages[i].saturating_sub(before[i]) * self.page_size;
            let data = SwapData {
                kind: data_type::SWAP,
                swap_in: bytes(0),
                swap_out: bytes(1),
            };
            out.track(track::SWAP, start, now, &data);
        }
    }
}

/// "CPU Frequency": mean, lowest and highest current frequency of the CPUs, from cpufreq
/// in /sys (one small read per CPU). Virtual machines often have none.
pub(crate) struct CpuFrequency {
    files: Vec<File>,
    buffer: ReadBuffer,
    previous: Option<f64>,
}

impl CpuFrequency {
    pub(crate) fn probe(sys_root: &Path) -> Option<CpuFrequency> {
        let cpus = fs::read_dir(sys_root.join("devices/system/cpu")).ok()?;
        let files = cpus
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.strip_prefix("cpu")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .filter_map(|e| File::open(e.path().join("cpufreq/scaling_cur_freq")).ok())
            .collect();
        let mut frequency = CpuFrequency {
            files,
            buffer: ReadBuffer::new(),
            previous: None,
        };
        frequency.read()?;
        Some(frequency)
    }

    fn read(&mut self) -> Option<FrequencyData> {
        let (mut sum, mut min, mut max) = (0, u64::MAX, 0);
        for file in &self.files {
            let text = std::str::from_utf8(self.buffer.read_file(file).ok()?).ok()?;
            let mhz = text.trim().parse::<u64>().ok()? / 1000;
            (sum, min, max) = (sum + mhz, min.min(mhz), max.max(mhz));
        }
        let cpus = u64::try_from(self.files.len()).ok().filter(|n| *n > 0)?;
        Some(FrequencyData {
            kind: data_type::CPU_FREQUENCY,
            mhz: sum / cpus,
            min_mhz: min,
            max_mhz: max,
        })
    }
}

impl Source for CpuFrequency {
    fn names(&self) -> Vec<&'static str> {
        vec![source::CPU_FREQUENCY]
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let data = self.read();
        if let (Some(start), Some(data)) = (self.previous.replace(now), data) {
            out.track(track::CPU_FREQUENCY, start, now, &data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{machine_of, tick_markers, tick_markers_under};

    fn fake_root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = root.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        root
    }

    #[test]
    fn load_average_reads_the_three_averages_and_runnable_threads() {
        let root = fake_root(&[("loadavg", "0.77 0.85 0.53 3/108 12481\n")]);
        let mut load = LoadAverage::probe(&machine_of(root.path())).unwrap();
        tick_markers_under(&mut load, 0.0, root.path());
        let out = tick_markers_under(&mut load, 100.0, root.path());
        let data = out[0].data.as_ref().unwrap();
        assert_eq!(
            (data["load1"].as_f64(), data["runnable"].as_u64()),
            (Some(0.77), Some(3))
        );
    }

    #[test]
    fn swap_is_off_without_swap_and_counts_bytes_with_it() {
        let vmstat = "pgpgin 1\npswpin 10\npswpout 20\n";
        let none = fake_root(&[
            (
                "meminfo",
                "MemTotal: 10 kB\nMemFree: 5 kB\nSwapTotal: 0 kB\n",
            ),
            ("vmstat", vmstat),
        ]);
        assert!(
            Swap::probe(none.path(), &machine_of(none.path())).is_none(),
            "no swap is no source, not zeros"
        );

        let root = fake_root(&[
            (
                "meminfo",
                "MemTotal: 10 kB\nMemFree: 5 kB\nSwapTotal: 8 kB\n",
            ),
            ("vmstat", vmstat),
        ]);
        let mut swap = Swap::probe(root.path(), &machine_of(root.path())).unwrap();
        tick_markers(&mut swap, 0.0);
        fs::write(root.path().join("vmstat"), "pswpin 12\npswpout 20\n").unwrap();
        let out = tick_markers(&mut swap, 100.0);
        let data = out[0].data.as_ref().unwrap();
        assert_eq!(data["swap_in"].as_u64(), Some(2 * swap.page_size));
        assert_eq!(data["swap_out"].as_u64(), Some(0));
    }

    #[test]
    fn cpu_frequency_is_off_without_cpufreq() {
        let root = fake_root(&[("devices/system/cpu/cpu0/online", "1\n")]);
        assert!(CpuFrequency::probe(root.path()).is_none());
        let root = fake_root(&[
            (
                "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
                "2100000\n",
            ),
            (
                "devices/system/cpu/cpu1/cpufreq/scaling_cur_freq",
                "900000\n",
            ),
            ("devices/system/cpu/cpufreq/policy0", ""),
        ]);
        let mut frequency = CpuFrequency::probe(root.path()).unwrap();
        tick_markers(&mut frequency, 0.0);
        let out = tick_markers(&mut frequency, 100.0);
        let data = out[0].data.as_ref().unwrap();
        assert_eq!(
            (
                data["mhz"].as_u64(),
                data["min_mhz"].as_u64(),
                data["max_mhz"].as_u64()
            ),
            (Some(1500), Some(900), Some(2100))
        );
    }
}
