//! The load track, from /proc/loadavg, kept open and read at the track's own pace.

use crate::sources::machine::{parse_loadavg, Loadavg};
use crate::sources::procfs::ReadBuffer;
use crate::sources::{Lines, Source};
use std::fs::File;
use std::path::Path;
use tc_profile_format::schema::{data_type, source, track};
use tc_profile_format::{DataFields, TrackData};

/// The kernel updates the averages every 5 s: sampling them more often repeats them.
const LOAD_PACE_MS: f64 = 5000.0;

struct LoadData {
    kind: &'static str,
    load1: f64,
    load5: f64,
    load15: f64,
    runnable: u64,
}

impl TrackData for LoadData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.f64("load1", self.load1);
        fields.f64("load5", self.load5);
        fields.f64("load15", self.load15);
        fields.u64("runnable", self.runnable);
    }
}

/// "Load": the 1, 5 and 15 minute load averages and the runnable threads, from the
/// machine's /proc/loadavg.
pub(crate) struct LoadAverage {
    loadavg: Option<File>,
    buffer: ReadBuffer,
    previous: Option<f64>,
}

impl LoadAverage {
    pub(crate) fn probe(proc_root: &Path) -> Option<LoadAverage> {
        let mut load = LoadAverage {
            loadavg: File::open(proc_root.join("loadavg")).ok(),
            buffer: ReadBuffer::new(),
            previous: None,
        };
        load.read()?;
        Some(load)
    }

    fn read(&mut self) -> Option<Loadavg> {
        let text = self.buffer.head_of(self.loadavg.as_ref()?)?;
        parse_loadavg(text)
    }
}

impl Source for LoadAverage {
    fn names(&self) -> Vec<&'static str> {
        vec![source::LOAD]
    }

    fn pace_ms(&self) -> f64 {
        LOAD_PACE_MS
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let data = self.read().map(|load| LoadData {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fake_root;
    use crate::sources::tick_markers_under;

    #[test]
    fn load_average_reads_the_three_averages_and_runnable_threads() {
        let root = fake_root(&[("loadavg", "0.77 0.85 0.53 3/108 12481\n")]);
        let mut load = LoadAverage::probe(root.path()).unwrap();
        tick_markers_under(&mut load, 0.0, root.path());
        let out = tick_markers_under(&mut load, 100.0, root.path());
        let data = out[0].data.as_ref().unwrap();
        assert_eq!(
            (data["load1"].as_f64(), data["runnable"].as_u64()),
            (Some(0.77), Some(3))
        );
    }
}
