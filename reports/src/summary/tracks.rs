//! The figures a summary is made of, gathered in one pass over the markers: the samples
//! of the resource tracks, the disk and network totals, and the task's processes.

use crate::summary::model::{CommandUse, DiskUse, NetworkUse, ProcessUse, Window};
use serde_json::Value;
use tc_profile_finalizer::{busy_share, CommandRuns, MarkerRef, Markers};
use tc_profile_format::schema::{data_type, track};

// Schemas of the task's process tree against the rest (SPEC.md, "Categories and schemas"):
// `data.cpu` (a fraction of all cores) of the task's processes and of everything else,
// `data.rss` of the task's processes, and one interval per process of the task.
use data_type::{COMMANDS, OTHER_CPU, PROCESS, TASK_CPU, TASK_MEMORY};
/// The payload types a summary reads figures of.
const SUMMARIZED: [&str; 9] = [
    data_type::CPU,
    data_type::MEMORY,
    data_type::IO,
    data_type::NET_IO,
    TASK_CPU,
    OTHER_CPU,
    TASK_MEMORY,
    PROCESS,
    COMMANDS,
];
/// Processes listed, the busiest first; commands too.
const TOP_PROCESSES: usize = 10;

/// One sample of a resource track: its interval and value.
#[derive(Clone, Copy)]
pub(super) struct Sample {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) value: f64,
    /// The highest value inside the sample, where it stands for several (a coarsened
    /// profile keeps it in `data.peak`).
    pub(super) peak: f64,
}

impl Sample {
    pub(super) fn duration(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }
}

/// The samples of one track (in time order) that overlap `[from, to]`, each with how much
/// of it they cover; for an instant, the samples around it, each counting the same.
pub(super) fn overlapping(
    samples: &[Sample],
    from: f64,
    to: f64,
) -> impl Iterator<Item = (Sample, f64)> + '_ {
    let instant = to <= from;
    let first = samples.partition_point(|s| s.end < from || (!instant && s.end == from));
    samples[first..]
        .iter()
        .take_while(move |s| s.start < to || (instant && s.start == to))
        .map(move |s| {
            let covered = if instant {
                1.0
            } else {
                s.end.min(to) - s.start.max(from)
            };
            (*s, covered)
        })
}

#[derive(Default)]
pub(super) struct Tracks {
    pub(super) cpu: Vec<Sample>,
    pub(super) task_cpu: Vec<Sample>,
    pub(super) other_cpu: Vec<Sample>,
    pub(super) memory: Vec<Sample>,
    pub(super) task_memory: Vec<Sample>,
    pub(super) swap: Vec<Sample>,
    pub(super) disk: Option<DiskUse>,
    pub(super) network: Option<NetworkUse>,
    pub(super) processes: Vec<ProcessUse>,
    /// The task's `Commands` markers: a command's exits in an interval (a second at most).
    pub(super) commands: CommandRuns,
}

impl Tracks {
    /// The system-wide tracks by name and schema (a per-disk `IO sda` is not counted
    /// twice), the task's tree against the rest by schema, and the process markers; as much
    /// of them as lies in `window`: samples cut at its edges, byte counts in proportion,
    /// the processes and commands that ran in it.
    pub(super) fn collect(markers: &Markers, window: Window) -> Tracks {
        let mut tracks = Tracks::default();
        for marker in markers {
            let (Some(end), Some(_)) = (marker.end_time, &marker.data) else {
                continue;
            };
            let Some(share) = window.share(marker.start_time, end) else {
                continue;
            };
            match marker.leading_type() {
                // Most markers of a busy task say first that they are none of these.
                Some(kind) if !SUMMARIZED.contains(&kind) => continue,
                // Its text is wanted too: parsed whole, once.
                Some(PROCESS) => {
                    tracks.processes.push(process_use(marker, end));
                    continue;
                }
                _ => {}
            }
            let figures = marker.figures();
            let number = |key: &str| figures.get(key);
            let sample = |value: f64| Sample {
                start: marker.start_time.max(window.from_ms),
                end: end.min(window.to_ms),
                value,
                peak: number("peak").unwrap_or(value),
            };
            let kind = figures.kind.as_deref().unwrap_or("");
            match (marker.name, kind) {
                (track::CPU, data_type::CPU) => {
                    if let Some(busy) = busy_share(number) {
                        tracks.cpu.push(sample(busy));
                    }
                }
                (track::MEMORY, data_type::MEMORY) => {
                    if let Some(used) = number("used") {
                        tracks.memory.push(sample(used));
                        tracks.swap.push(sample(number("swap").unwrap_or(0.0)));
                    }
                }
                (track::IO, data_type::IO) => {
                    let disk = tracks.disk.get_or_insert(DiskUse {
                        read_bytes: 0,
                        written_bytes: 0,
                    });
                    disk.read_bytes += count(number("read_bytes"), share);
                    disk.written_bytes += count(number("write_bytes"), share);
                }
                (track::NET_IO, data_type::NET_IO) => {
                    let network = tracks.network.get_or_insert(NetworkUse {
                        received_bytes: 0,
                        sent_bytes: 0,
                    });
                    network.received_bytes += count(number("recv_bytes"), share);
                    network.sent_bytes += count(number("sent_bytes"), share);
                }
                (_, TASK_CPU) => tracks.task_cpu.extend(number("cpu").map(sample)),
                (_, OTHER_CPU) => tracks.other_cpu.extend(number("cpu").map(sample)),
                (_, TASK_MEMORY) => tracks.task_memory.extend(number("rss").map(sample)),
                (_, PROCESS) => tracks.processes.push(process_use(marker, end)),
                (_, COMMANDS) => tracks.commands.add(marker),
                _ => {}
            }
        }
        tracks
            .processes
            .sort_by(|a, b| b.cpu_ms.total_cmp(&a.cpu_ms));
        tracks.processes.truncate(TOP_PROCESSES);
        tracks
    }
}

impl Tracks {
    /// The commands that used the most CPU over the whole recording, the most runs first
    /// among equals.
    pub(super) fn top_commands(&self) -> Vec<CommandUse> {
        self.top_commands_within(f64::NEG_INFINITY, f64::INFINITY, TOP_PROCESSES)
    }

    /// The `count` commands that used the most CPU from `start` to `end` (see
    /// [`CommandRuns::within`]).
    pub(super) fn top_commands_within(
        &self,
        start: f64,
        end: f64,
        count: usize,
    ) -> Vec<CommandUse> {
        let mut commands = self.commands.within(start, end);
        commands.truncate(count);
        commands
    }
}

/// A process of the task, from its marker's payload.
fn process_use(marker: MarkerRef, end: f64) -> ProcessUse {
    let data = marker.data_value().unwrap_or_default();
    ProcessUse {
        name: marker.name.to_owned(),
        command: data
            .get("command")
            .and_then(Value::as_str)
            .map(str::to_owned),
        pid: data.get("pid").and_then(Value::as_u64),
        cpu_ms: data.get("cpuTime").and_then(Value::as_f64).unwrap_or(0.0),
        peak_rss_bytes: data.get("peakRss").and_then(Value::as_u64),
        start_ms: marker.start_time,
        duration_ms: end - marker.start_time,
    }
}

/// `share` of a byte count: a whole, non-negative number, else nothing.
fn count(number: Option<f64>, share: f64) -> u64 {
    number
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .map_or(0, |n| (n * share).round() as u64)
}
