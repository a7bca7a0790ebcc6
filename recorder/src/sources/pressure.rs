//! Pressure stall information (/proc/pressure/cpu, memory, io): the share of each interval
//! in which some tasks (`some`), or all non-idle tasks (`full`), were stalled waiting for
//! the resource. Memory stalls say "needs more memory"; CPU stalls say "needs more cores".

use crate::sources::procfs::ReadBuffer;
use crate::sources::{fraction, Lines, Source};
use std::fs::File;
use std::path::Path;
use tc_profile_format::schema::{data_type, source, track};
use tc_profile_format::{DataFields, TrackData};

/// Three files a read: at every 0.1 s tick they cost more than their shares tell.
const PRESSURE_PACE_MS: f64 = 1000.0;

const RESOURCES: [(&str, &str); 3] = [
    ("cpu", track::CPU_PRESSURE),
    ("memory", track::MEMORY_PRESSURE),
    ("io", track::IO_PRESSURE),
];

struct PressureData {
    kind: &'static str,
    some: f64,
    full: f64,
}

impl TrackData for PressureData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.f64("some", self.some);
        fields.f64("full", self.full);
    }
}

/// Microseconds stalled since boot: (some, full).
type Stalled = (u64, u64);

pub(crate) struct Pressure {
    /// The resources whose file reads (a kernel without PSI, or booted with psi=0, has none).
    files: Vec<(&'static str, File)>,
    buffer: ReadBuffer,
    previous: Option<(f64, Vec<Stalled>)>,
}

impl Pressure {
    pub(crate) fn probe(proc_root: &Path) -> Option<Pressure> {
        let mut buffer = ReadBuffer::new();
        let mut files = Vec::new();
        for (resource, name) in RESOURCES {
            let Ok(file) = File::open(proc_root.join("pressure").join(resource)) else {
                continue;
            };
            if read_stalled(&mut buffer, &file).is_some() {
                files.push((name, file));
            }
        }
        (!files.is_empty()).then_some(Pressure {
            files,
            buffer,
            previous: None,
        })
    }
}

impl Source for Pressure {
    fn names(&self) -> Vec<&'static str> {
        vec![source::PRESSURE]
    }

    fn pace_ms(&self) -> f64 {
        PRESSURE_PACE_MS
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let buffer = &mut self.buffer;
        let current: Option<Vec<Stalled>> = self
            .files
            .iter()
            .map(|(_, f)| read_stalled(buffer, f))
            .collect();
        let Some(current) = current else {
            self.previous = None;
            return;
        };
        let Some((start, before)) = self.previous.replace((now, current.clone())) else {
            return;
        };
        let interval_us = (now - start) * 1000.0;
        for (((name, _), after), before) in self.files.iter().zip(&current).zip(&before) {
            let share = |a: u64, b: u64| fraction(a.saturating_sub(b) as f64, interval_us);
            let data = PressureData {
                kind: data_type::PRESSURE,
                some: share(after.0, before.0),
                full: share(after.1, before.1),
            };
            out.track(name, start, now, &data);
        }
    }
}

/// `some avg10=0.00 avg60=0.00 avg300=0.00 total=N` and the same for `full`. The CPU file
/// of kernels before 5.13 has no `full` line; later ones report it as 0 for the whole
/// machine, so 0 is what it is.
fn read_stalled(buffer: &mut ReadBuffer, file: &File) -> Option<Stalled> {
    let text = std::str::from_utf8(buffer.read_file(file).ok()?).ok()?;
    let total = |kind: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_ascii_whitespace()
            .find_map(|f| f.strip_prefix("total="))?
            .parse()
            .ok()
    };
    Some((total("some ")?, total("full ").unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::tick_markers;
    use std::fs;

    #[test]
    fn stalled_time_becomes_a_share_of_the_interval_per_resource() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("pressure");
        fs::create_dir(&dir).unwrap();
        let write = |resource: &str, some: u64, full: u64| {
            let text = format!(
                "some avg10=0.00 avg60=0.00 avg300=0.00 total={some}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total={full}\n"
            );
            fs::write(dir.join(resource), text).unwrap();
        };
        write("memory", 1_000, 0);
        // No cpu or io file: only the memory track.
        let mut pressure = Pressure::probe(root.path()).unwrap();
        tick_markers(&mut pressure, 0.0);
        write("memory", 26_000, 11_000);
        let out = tick_markers(&mut pressure, 100.0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "Memory Pressure");
        let data = out[0].data.as_ref().unwrap();
        assert_eq!(
            (data["some"].as_f64(), data["full"].as_f64()),
            (Some(0.25), Some(0.11))
        );
    }

    #[test]
    fn no_pressure_files_is_no_source() {
        let root = tempfile::tempdir().unwrap();
        assert!(Pressure::probe(root.path()).is_none());
    }
}
