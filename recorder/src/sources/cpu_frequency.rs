//! The CPU frequency track, from the cpufreq files in /sys kept open.

use crate::sources::procfs::ReadBuffer;
use crate::sources::{Lines, Source};
use std::fs::{self, File};
use std::path::Path;
use tc_profile_format::schema::{data_type, source, track};
use tc_profile_format::{DataFields, TrackData};

/// A file per CPU a read, for a figure that matters over seconds.
const FREQUENCY_PACE_MS: f64 = 1000.0;

struct FrequencyData {
    kind: &'static str,
    mhz: u64,
    min_mhz: u64,
    max_mhz: u64,
}

impl TrackData for FrequencyData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("mhz", self.mhz);
        fields.u64("min_mhz", self.min_mhz);
        fields.u64("max_mhz", self.max_mhz);
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

    fn pace_ms(&self) -> f64 {
        FREQUENCY_PACE_MS
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
    use crate::sources::fake_root;
    use crate::sources::tick_markers;

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
