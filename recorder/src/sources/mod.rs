//! The sampler's sources, one file a source, and what they all share: the [`Source`]
//! trait, the [`Lines`] a tick appends to, the CPU track's rounding ([`fraction`],
//! [`Percent`]), and which processes and cgroup are the task's ([`Follow`],
//! [`TaskCgroup`]). This module imports no source; [`crate::sampler`] composes them.
//!
//! Linux's sources read /proc, /sys and the cgroup files, one file a source; those of the
//! other systems are one file an OS (`windows.rs`; macOS has none yet, and records
//! markers alone). `machine` and `procfs` build everywhere (elsewhere, /proc is not there
//! and the machine reads as unknown).

#[cfg(target_os = "linux")]
pub(crate) mod cgroup;
#[cfg(target_os = "linux")]
pub(crate) mod cpu_frequency;
#[cfg(target_os = "linux")]
pub(crate) mod io;
#[cfg(target_os = "linux")]
pub(crate) mod load;
pub(crate) mod machine;
#[cfg(target_os = "linux")]
mod netlink;
#[cfg(target_os = "linux")]
pub(crate) mod pressure;
#[cfg(target_os = "linux")]
pub(crate) mod proc_connector;
#[cfg(target_os = "linux")]
pub(crate) mod process_tree;
/// The command summaries (secrets masked) of `run`'s markers, on every OS, and its wait
/// statuses in words, on every Unix; the rest of process_tree reads /proc.
#[cfg(not(target_os = "linux"))]
#[path = "process_tree"]
pub(crate) mod command_summary {
    pub(crate) mod command_line;
    mod tokens;
    #[cfg(unix)]
    pub(crate) mod wait_status;
}
pub(crate) mod procfs;
#[cfg(target_os = "linux")]
pub(crate) mod shared_exits;
#[cfg(target_os = "linux")]
pub(crate) mod swap;
#[cfg(target_os = "linux")]
pub(crate) mod system;
#[cfg(any(target_os = "linux", windows))]
pub(crate) mod task_tracks;
#[cfg(target_os = "linux")]
pub(crate) mod taskstats;
#[cfg(windows)]
pub(crate) mod windows;

use machine::Machine;
use std::path::PathBuf;
use tc_profile_format::schema::category;
use tc_profile_format::TrackData;
use tc_profile_format::{encode_line_into, encode_track_line_into, DataFields, Line, Marker};

/// Which processes are the task's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Follow {
    /// The processes the recorder's own process starts, and their descendants (`run`).
    /// The recorder's own threads are not counted.
    Children,
    /// A process and its descendants.
    Pid(u32),
    /// The processes listed in a cgroup's `cgroup.procs` (Linux).
    Cgroup(PathBuf),
}

/// The task's cgroup, whose counters are recorded (Linux).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCgroup {
    pub path: PathBuf,
    /// The recorder's caller created it for the task (`run --own-cgroup`).
    pub created: bool,
}

/// How the task's processes are seen as they end (`meta.tcProfile.processExits`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProcessExits {
    /// Taskstats, else the proc connector, else sampling.
    #[default]
    Auto,
    /// Taskstats, else sampling.
    Taskstats,
    /// The proc connector, else sampling.
    ProcConnector,
    /// Sampling alone: only the processes a sample finds alive.
    Sampling,
}

impl ProcessExits {
    /// The environment variable that chooses one for every recording of a process (the
    /// daemon's tasks included): `auto`, `taskstats`, `proc-connector` or `sampling`.
    pub const VARIABLE: &'static str = "TC_PROFILE_PROCESS_EXITS";
    pub const NAMES: [&'static str; 4] = ["auto", "taskstats", "proc-connector", "sampling"];

    /// Its name, as the option, the variable and the meta line spell it.
    pub fn name(self) -> &'static str {
        match self {
            ProcessExits::Auto => "auto",
            ProcessExits::Taskstats => "taskstats",
            ProcessExits::ProcConnector => "proc-connector",
            ProcessExits::Sampling => "sampling",
        }
    }

    pub fn parse(name: &str) -> Option<ProcessExits> {
        [
            ProcessExits::Auto,
            ProcessExits::Taskstats,
            ProcessExits::ProcConnector,
            ProcessExits::Sampling,
        ]
        .into_iter()
        .find(|way| way.name() == name)
    }

    /// What `VARIABLE` says; None when it is unset or names none.
    pub fn from_env() -> Option<ProcessExits> {
        ProcessExits::parse(&std::env::var(ProcessExits::VARIABLE).ok()?)
    }
}

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
    /// The shortest time between two of its ticks, in ms, for a source whose figures
    /// change slowly or tell little at every sampling interval; 0: every tick.
    fn pace_ms(&self) -> f64 {
        0.0
    }
}

/// The lines of one tick, encoded as they are made, for one write; and the machine as
/// read at this tick.
pub(crate) struct Lines<'a> {
    bytes: &'a mut Vec<u8>,
    count: u64,
    pub(crate) machine: &'a Machine,
}

impl<'a> Lines<'a> {
    /// Lines appended to `bytes`, with the machine as read at this tick.
    pub(crate) fn new(bytes: &'a mut Vec<u8>, machine: &'a Machine) -> Lines<'a> {
        Lines {
            bytes,
            count: 0,
            machine,
        }
    }

    /// How many lines were appended.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// A resource track's sample: an interval marker (category Other) from the previous
    /// tick to this one, its `data` written by hand (no JSON map, no serde).
    pub(crate) fn track(&mut self, name: &str, start: f64, end: f64, data: &impl TrackData) {
        encode_track_line_into(self.bytes, name, start, Some(end), category::OTHER, data);
        self.count += 1;
    }

    pub(crate) fn marker(&mut self, marker: Marker) {
        encode_line_into(self.bytes, &Line::Marker(marker));
        self.count += 1;
    }
}

/// A fraction of all cores (or of an interval) rounded as the CPU track rounds it.
pub(crate) fn fraction(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        return 0.0;
    }
    ((part / whole).clamp(0.0, 1.0) * 10000.0).round() / 10000.0
}

/// A share (of all cores, of an interval) for a field of format `percentage`: a number from
/// 0 to 1, which the front-end shows as "45%" and sorts as a number; rounded to a tenth of
/// a percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Percent(pub(crate) f64);

impl Percent {
    /// Writes it as the value of `key`.
    pub(crate) fn write(self, key: &'static str, fields: &mut DataFields) {
        fields.f64(key, self.share());
    }

    /// The share written: 0 to 1 (0 for NaN), to three decimals.
    pub(crate) fn share(self) -> f64 {
        if self.0.is_nan() {
            return 0.0;
        }
        (self.0.clamp(0.0, 1.0) * 1000.0).round() / 1000.0
    }
}

/// The markers that one tick of `source` writes, decoded: for unit tests.
#[cfg(test)]
pub(crate) fn tick_markers(source: &mut impl Source, now: f64) -> Vec<Marker> {
    tick_markers_under(source, now, std::path::Path::new("/proc"))
}

/// [`tick_markers`] with the machine read under `proc_root`.
#[cfg(test)]
pub(crate) fn tick_markers_under(
    source: &mut impl Source,
    now: f64,
    proc_root: &std::path::Path,
) -> Vec<Marker> {
    let mut bytes = Vec::new();
    let machine = machine::machine_of(proc_root);
    source.tick(now, &mut Lines::new(&mut bytes, &machine));
    decode_markers(&bytes)
}

#[cfg(test)]
fn decode_markers(bytes: &[u8]) -> Vec<Marker> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| match tc_profile_format::decode_line(line) {
            Ok(Line::Marker(marker)) => marker,
            other => panic!("not a marker line: {other:?}"),
        })
        .collect()
}

/// A directory holding `files` (path, text): a fake /proc or /sys for unit tests.
#[cfg(test)]
pub(crate) fn fake_root(files: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = root.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percent_is_a_share_to_a_tenth_of_a_percent() {
        for n in 0..=20_000 {
            let share = n as f64 / 20_000.0;
            let tenths = (share * 1000.0).round();
            assert_eq!(Percent(share).share(), tenths / 1000.0, "{share}");
        }
        assert_eq!(Percent(1.5).share(), 1.0);
        assert_eq!(Percent(-0.2).share(), 0.0);
        assert_eq!(Percent(f64::NAN).share(), 0.0);
    }
}
