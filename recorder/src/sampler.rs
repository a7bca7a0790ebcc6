//! The sampler: every source of resource samples, probed once at start, because the meta
//! line (written first) lists the sources that are on and declares only their schemas; then
//! ticked by the sampler thread. A source the machine lacks is simply not there.

use crate::cgroup::{self, CgroupSampler};
use crate::load::{parse_loadavg, CpuFrequency, LoadAverage, Loadavg, Swap};
use crate::pressure::Pressure;
use crate::process_tree::ProcessTree;
use crate::procfs::ReadBuffer;
use crate::system::{parse_cpu, parse_meminfo, CpuTimes, MemInfo, SystemSampler};
use crate::{Clock, RecorderConfig};
use serde::{Serialize, Serializer};
use std::fmt;
use std::fs::File;
use std::path::Path;
use tc_profile_format::schema::category;
use tc_profile_format::{encode_line_into, encode_marker_line_into, CgroupInfo, Line, Marker};

/// One kind of samples.
pub(crate) trait Source: Send {
    /// Its names in `meta.tcProfile.sources`.
    fn names(&self) -> Vec<&'static str>;
    /// Samples now and appends the markers of the interval since the previous tick (none
    /// on the first tick, which sets the baseline).
    fn tick(&mut self, now: f64, out: &mut Lines);
    /// The recording's last tick: a source with something still open writes it out.
    fn last_tick(&mut self, now: f64, out: &mut Lines) {
        self.tick(now, out);
    }
}

/// What several sources need of the machine, read once a tick: /proc/stat and
/// /proc/meminfo (the system tracks and the task's process tree; among the costliest files
/// of a tick) and /proc/loadavg (the load track, and the process tree's new-pid check).
#[derive(Default)]
pub(crate) struct Machine {
    pub(crate) cpu: Option<CpuTimes>,
    pub(crate) memory: Option<MemInfo>,
    pub(crate) load: Option<Loadavg>,
}

/// /proc/stat, /proc/meminfo and /proc/loadavg, kept open.
struct MachineFiles {
    stat: Option<File>,
    meminfo: Option<File>,
    loadavg: Option<File>,
    buffer: ReadBuffer,
}

impl MachineFiles {
    fn open(proc_root: &Path) -> MachineFiles {
        let open = |name: &str| File::open(proc_root.join(name)).ok();
        MachineFiles {
            stat: open("stat"),
            meminfo: open("meminfo"),
            loadavg: open("loadavg"),
            buffer: ReadBuffer::new(),
        }
    }

    fn read(&mut self) -> Machine {
        Machine {
            cpu: self.buffer.head_text(&self.stat).and_then(parse_cpu),
            memory: self.buffer.head_text(&self.meminfo).and_then(parse_meminfo),
            load: self.buffer.head_text(&self.loadavg).and_then(parse_loadavg),
        }
    }
}

/// The lines of one tick, encoded as they are made, for one write; and the machine as
/// read at this tick.
pub(crate) struct Lines<'a> {
    bytes: &'a mut Vec<u8>,
    count: u64,
    pub(crate) machine: &'a Machine,
}

impl Lines<'_> {
    /// A resource track's sample: an interval marker (category Other) from the previous
    /// tick to this one. Typed `data` is encoded without building a JSON map.
    pub(crate) fn track(&mut self, name: &str, start: f64, end: f64, data: &impl Serialize) {
        encode_marker_line_into(self.bytes, name, start, Some(end), category::OTHER, data);
        self.count += 1;
    }

    pub(crate) fn marker(&mut self, marker: Marker) {
        encode_line_into(self.bytes, &Line::Marker(marker));
        self.count += 1;
    }
}

/// The resource sources this machine offers, as decided at start.
///
/// Public so that benchmarks can time one tick; a recording drives it on its own thread.
pub struct Sampler {
    sources: Vec<Box<dyn Source>>,
    cgroup: Option<CgroupInfo>,
    machine: Option<MachineFiles>,
}

impl Sampler {
    /// Probes every source that `config` asks for (none unless `config.sample_system`).
    pub fn probe(config: &RecorderConfig, clock: Clock) -> Sampler {
        let mut sampler = Sampler {
            sources: Vec::new(),
            cgroup: None,
            machine: None,
        };
        if !config.sample_system {
            return sampler;
        }
        let (proc_root, sys_root) = (Path::new("/proc"), Path::new("/sys"));
        let mut machine_files = MachineFiles::open(proc_root);
        let machine = machine_files.read();
        sampler.machine = Some(machine_files);
        sampler.add(SystemSampler::probe(proc_root, sys_root, &machine));
        if let Some(follow) = &config.follow {
            sampler.add(ProcessTree::probe(
                proc_root,
                follow,
                config.interval,
                clock,
                &machine,
            ));
        }
        let task_cgroup = config
            .cgroup
            .clone()
            .or_else(|| config.follow.as_ref().and_then(cgroup::detect));
        if let Some(task_cgroup) = task_cgroup {
            if let Some(source) = CgroupSampler::probe(&task_cgroup, sys_root) {
                sampler.cgroup = Some(source.info());
                sampler.add(Some(source));
            }
        }
        sampler.add(Pressure::probe(proc_root));
        sampler.add(LoadAverage::probe(&machine));
        sampler.add(Swap::probe(proc_root, &machine));
        sampler.add(CpuFrequency::probe(sys_root));
        sampler
    }

    fn add(&mut self, source: Option<impl Source + 'static>) {
        if let Some(source) = source {
            self.sources.push(Box::new(source));
        }
    }

    /// The names for `meta.tcProfile.sources`.
    pub fn sources(&self) -> Vec<String> {
        let names = self.sources.iter().flat_map(|s| s.names());
        names.map(str::to_owned).collect()
    }

    /// The task's cgroup, when its counters are sampled.
    pub fn cgroup(&self) -> Option<&CgroupInfo> {
        self.cgroup.as_ref()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Samples every source now, appending to `lines` the marker lines of the interval
    /// since the previous tick; returns how many.
    pub fn tick(&mut self, now: f64, lines: &mut Vec<u8>) -> u64 {
        self.each_source(lines, |source, out| source.tick(now, out))
    }

    /// The last tick of a recording: also writes out what is still open (live processes).
    pub fn last_tick(&mut self, now: f64, lines: &mut Vec<u8>) -> u64 {
        self.each_source(lines, |source, out| source.last_tick(now, out))
    }

    fn each_source(
        &mut self,
        lines: &mut Vec<u8>,
        tick: impl Fn(&mut dyn Source, &mut Lines),
    ) -> u64 {
        let machine = self.read_machine();
        let mut out = Lines {
            bytes: lines,
            count: 0,
            machine: &machine,
        };
        for source in &mut self.sources {
            tick(source.as_mut(), &mut out);
        }
        out.count
    }

    fn read_machine(&mut self) -> Machine {
        self.machine
            .as_mut()
            .filter(|_| !self.sources.is_empty())
            .map(MachineFiles::read)
            .unwrap_or_default()
    }
}

/// The markers that one tick of `source` writes, decoded: for unit tests.
#[cfg(test)]
pub(crate) fn tick_markers(source: &mut impl Source, now: f64) -> Vec<Marker> {
    tick_markers_under(source, now, Path::new("/proc"))
}

/// [`tick_markers`] with the machine read under `proc_root`.
#[cfg(test)]
pub(crate) fn tick_markers_under(
    source: &mut impl Source,
    now: f64,
    proc_root: &Path,
) -> Vec<Marker> {
    let mut bytes = Vec::new();
    let machine = machine_of(proc_root);
    let mut out = Lines {
        bytes: &mut bytes,
        count: 0,
        machine: &machine,
    };
    source.tick(now, &mut out);
    decode_markers(&bytes)
}

/// The machine as read under `proc_root` now: for unit tests.
#[cfg(test)]
pub(crate) fn machine_of(proc_root: &Path) -> Machine {
    MachineFiles::open(proc_root).read()
}

#[cfg(test)]
pub(crate) fn decode_markers(bytes: &[u8]) -> Vec<Marker> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| match tc_profile_format::decode_line(line) {
            Ok(Line::Marker(marker)) => marker,
            other => panic!("not a marker line: {other:?}"),
        })
        .collect()
}

/// A fraction of all cores (or of an interval) rounded as the CPU track rounds it.
pub(crate) fn fraction(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        return 0.0;
    }
    ((part / whole).clamp(0.0, 1.0) * 10000.0).round() / 10000.0
}

/// A fraction shown as a percentage with one decimal, "45.0%".
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Percent(pub(crate) f64);

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
