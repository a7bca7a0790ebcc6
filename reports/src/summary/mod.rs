//! The summary of a profile: how long, how busy, how close to the machine's limits, what
//! each step cost, and whether a smaller or bigger machine would fit the task better.
//! [`summarize`] computes it from a [`Profile`]; each output format is one file with a
//! `serialize` function that does no I/O.

mod json;
mod text;

use serde::Serialize;
use serde_json::{Map, Value};
use tc_profile_finalizer::{
    busy_share, Profile, ProfileMarker, DATA_MISSING, ENDED_EARLY, LOG_DAMAGE, MARKER_FILES,
};
use tc_profile_format::schema::{data_type, track};

/// `summaryVersion` of the JSON form; raised only for changes that old readers would
/// misread (keys are added, never renamed or removed).
pub const SUMMARY_VERSION: u32 = 1;

/// Categories whose intervals are steps: ours, and Mozilla's resource monitor's phases.
const STEP_CATEGORIES: [&str; 3] = ["Worker", "Task", "Phases"];
/// Markers that say what was lost or dropped, and why.
const DROP_NOTES: [&str; 3] = [DATA_MISSING, LOG_DAMAGE, MARKER_FILES];
// Schemas of the task's process tree against the rest (SPEC.md, "Categories and schemas"):
// `data.cpu` (a fraction of all cores) of the task's processes and of everything else,
// `data.rss` of the task's processes, and one interval per process of the task.
use data_type::{OTHER_CPU, PROCESS, TASK_CPU, TASK_MEMORY};
/// The payload types a summary reads figures of.
const SUMMARIZED: [&str; 8] = [
    data_type::CPU,
    data_type::MEMORY,
    data_type::IO,
    data_type::NET_IO,
    TASK_CPU,
    OTHER_CPU,
    TASK_MEMORY,
    PROCESS,
];
/// Processes listed, the busiest first.
const TOP_PROCESSES: usize = 10;
/// Characters in a sparkline.
const SPARKLINE_WIDTH: usize = 48;
const SPARK_LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
const GIB: f64 = (1u64 << 30) as f64;

/// A right-sized machine keeps the CPU p95 and the memory peak under this share of it.
const HEADROOM: f64 = 0.75;
/// At or above this share of the machine, the task is bound by that resource.
const BOUND: f64 = 0.9;

/// Everything `tc-profile summary` says, in the units of its JSON form: times in
/// milliseconds since the recording's start, CPU as fractions of all cores (0 to 1).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub summary_version: u32,
    pub product: Option<String>,
    /// Unix epoch milliseconds of time 0.
    pub start_time: Option<f64>,
    pub duration_ms: f64,
    /// Whether the recording ended on purpose (it has its clean-end footer).
    pub complete: bool,
    /// Where a recording that did not end on purpose stops.
    pub ended_early_at_ms: Option<f64>,
    pub machine: MachineSize,
    pub steps: Vec<Step>,
    pub cpu: Option<CpuUse>,
    pub memory: Option<MemoryUse>,
    pub disk: Option<DiskUse>,
    pub network: Option<NetworkUse>,
    /// The task's processes that used the most CPU, when the profile has process markers.
    pub top_processes: Vec<ProcessUse>,
    pub dropped: Vec<Dropped>,
    pub hint: Option<Hint>,
    pub sparklines: Sparklines,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSize {
    pub logical_cpus: Option<u32>,
    pub main_memory_bytes: Option<u64>,
    pub cpu_name: Option<String>,
}

/// An interval of the Worker or Task category: a lifecycle step or a phase of the task.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub name: String,
    /// The command, text or phase the marker carries.
    pub detail: Option<String>,
    pub category: String,
    pub start_ms: f64,
    pub duration_ms: f64,
    /// Still open when the recording ended: closed there.
    pub cut_off: bool,
    pub cpu_average: Option<f64>,
    pub cpu_peak: Option<f64>,
    pub peak_memory_bytes: Option<u64>,
}

/// CPU of all cores, as fractions of all cores, weighted by each sample's duration; and
/// the task's process tree against the rest, when the profile has their tracks.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuUse {
    pub average: f64,
    pub p95: f64,
    pub peak: f64,
    pub task: Option<CpuFigures>,
    pub other: Option<CpuFigures>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuFigures {
    pub average: f64,
    pub p95: f64,
    pub peak: f64,
}

/// A process of the task, from its process marker.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProcessUse {
    pub name: String,
    pub command: Option<String>,
    pub pid: Option<u64>,
    pub cpu_ms: f64,
    pub peak_rss_bytes: Option<u64>,
    pub start_ms: f64,
    pub duration_ms: f64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryUse {
    /// The highest `used` (total minus available) of any sample.
    pub peak_bytes: u64,
    pub peak_at_ms: f64,
    pub peak_swap_bytes: u64,
    /// The highest RSS of the task's processes, when the profile has their track.
    pub task_peak_bytes: Option<u64>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DiskUse {
    pub read_bytes: u64,
    pub written_bytes: u64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkUse {
    pub received_bytes: u64,
    pub sent_bytes: u64,
}

/// A note about data lost while recording or input dropped while reading.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Dropped {
    /// The note's marker name: "Data missing" (a span the recorder could not write), "Log
    /// damage" (lines the reader dropped) or "Marker files" (what was dropped from the
    /// profile directory's marker files).
    pub what: String,
    pub text: String,
    pub start_ms: f64,
    /// The end of a span; `null` for a note at one time.
    pub end_ms: Option<f64>,
}

/// Whether the machine fits the task, from the CPU p95 and the memory peak.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Hint {
    pub verdict: Verdict,
    /// The smallest power of two of cores that keeps the CPU p95 under 75 % of them.
    pub cores: u32,
    /// The smallest power of two of GiB that keeps the memory peak under 75 % of it.
    pub memory_bytes: u64,
    pub text: String,
}

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A machine with fewer cores or less memory would have done.
    Smaller,
    /// The machine fits.
    Fits,
    /// CPU p95 at 90 % of the cores or more.
    CpuBound,
    /// Memory peak at 90 % of the machine's or more.
    MemoryBound,
    /// Both.
    CpuAndMemoryBound,
}

/// One character per stretch of the recording: CPU of all cores, and memory used against
/// the machine's memory.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Sparklines {
    pub cpu: Option<String>,
    pub memory: Option<String>,
}

/// The output formats of a summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFormat {
    /// Everything, for a terminal; bold labels as ANSI escapes (strip them where colour is
    /// not wanted).
    Text,
    /// The first lines of `Text`: duration, CPU, memory, dropped input, hint.
    Short,
    /// The stable JSON form.
    Json,
}

impl SummaryFormat {
    pub fn serialize(self, summary: &Summary) -> Vec<u8> {
        match self {
            SummaryFormat::Text => text::serialize(summary, text::Form::Full),
            SummaryFormat::Short => text::serialize(summary, text::Form::Short),
            SummaryFormat::Json => json::serialize(summary),
        }
    }
}

/// One sample of a resource track: its interval and value.
#[derive(Clone, Copy)]
struct Sample {
    start: f64,
    end: f64,
    value: f64,
    /// The highest value inside the sample, where it stands for several (a coarsened
    /// profile keeps it in `data.peak`).
    peak: f64,
}

impl Sample {
    fn duration(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }
}

/// The samples of one track (in time order) that overlap `[from, to]`, each with how much
/// of it they cover; for an instant, the samples around it, each counting the same.
fn overlapping(samples: &[Sample], from: f64, to: f64) -> impl Iterator<Item = (Sample, f64)> + '_ {
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
struct Tracks {
    cpu: Vec<Sample>,
    task_cpu: Vec<Sample>,
    other_cpu: Vec<Sample>,
    memory: Vec<Sample>,
    task_memory: Vec<Sample>,
    swap: Vec<Sample>,
    disk: Option<DiskUse>,
    network: Option<NetworkUse>,
    processes: Vec<ProcessUse>,
}

/// Computes the summary of a profile.
pub fn summarize(profile: &Profile) -> Summary {
    let meta = profile.meta();
    let markers = profile.markers();
    let tracks = Tracks::collect(markers);
    let machine = MachineSize {
        logical_cpus: meta
            .get("logicalCPUs")
            .and_then(Value::as_u64)
            .map(|n| n as u32),
        main_memory_bytes: meta.get("mainMemory").and_then(Value::as_u64),
        cpu_name: meta
            .get("CPUName")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let start = meta
        .get("profilingStartTime")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let end = meta
        .get("profilingEndTime")
        .and_then(Value::as_f64)
        .unwrap_or_else(|| last_time(markers));
    let ended_early_at_ms = markers
        .iter()
        .find(|m| m.name == ENDED_EARLY)
        .map(|m| m.start_time);
    let cpu = cpu_use(&tracks);
    let memory = memory_use(&tracks);
    let hint = hint(&machine, cpu.as_ref(), memory.as_ref());
    let memory_scale = machine
        .main_memory_bytes
        .map(|b| b as f64)
        .or(memory.as_ref().map(|m| m.peak_bytes as f64));
    Summary {
        summary_version: SUMMARY_VERSION,
        product: meta
            .get("product")
            .and_then(Value::as_str)
            .map(str::to_owned),
        start_time: meta.get("startTime").and_then(Value::as_f64),
        duration_ms: end - start,
        complete: ended_early_at_ms.is_none(),
        ended_early_at_ms,
        steps: steps(meta, markers, &tracks),
        disk: tracks.disk.clone(),
        network: tracks.network.clone(),
        top_processes: tracks.processes.clone(),
        dropped: dropped(markers),
        sparklines: Sparklines {
            cpu: sparkline(&tracks.cpu, start, end, Some(1.0), Aggregate::Mean),
            memory: sparkline(&tracks.memory, start, end, memory_scale, Aggregate::Max),
        },
        machine,
        cpu,
        memory,
        hint,
    }
}

impl Tracks {
    /// The system-wide tracks by name and schema (a per-disk `IO sda` is not counted
    /// twice), the task's tree against the rest by schema, and the process markers.
    fn collect(markers: &[ProfileMarker]) -> Tracks {
        let mut tracks = Tracks::default();
        for marker in markers {
            let (Some(end), Some(_)) = (marker.end_time, &marker.data) else {
                continue;
            };
            // Most markers of a busy task say first that they are none of these.
            if marker
                .leading_type()
                .is_some_and(|kind| !SUMMARIZED.contains(&kind))
            {
                continue;
            }
            let figures = marker.figures();
            let number = |key: &str| figures.get(key);
            let sample = |value: f64| Sample {
                start: marker.start_time,
                end,
                value,
                peak: number("peak").unwrap_or(value),
            };
            let kind = figures.kind.as_deref().unwrap_or("");
            match (marker.name.as_str(), kind) {
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
                    disk.read_bytes += count(number("read_bytes"));
                    disk.written_bytes += count(number("write_bytes"));
                }
                (track::NET_IO, data_type::NET_IO) => {
                    let network = tracks.network.get_or_insert(NetworkUse {
                        received_bytes: 0,
                        sent_bytes: 0,
                    });
                    network.received_bytes += count(number("recv_bytes"));
                    network.sent_bytes += count(number("sent_bytes"));
                }
                (_, TASK_CPU) => tracks.task_cpu.extend(number("cpu").map(sample)),
                (_, OTHER_CPU) => tracks.other_cpu.extend(number("cpu").map(sample)),
                (_, TASK_MEMORY) => tracks.task_memory.extend(number("rss").map(sample)),
                (_, PROCESS) => {
                    let data = marker.data_value().unwrap_or_default();
                    tracks.processes.push(ProcessUse {
                        name: marker.name.clone(),
                        command: data
                            .get("command")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        pid: data.get("pid").and_then(Value::as_u64),
                        cpu_ms: number("cpuTime").unwrap_or(0.0),
                        peak_rss_bytes: data.get("peakRss").and_then(Value::as_u64),
                        start_ms: marker.start_time,
                        duration_ms: end - marker.start_time,
                    })
                }
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

/// A byte count: a whole, non-negative number, else nothing.
fn count(number: Option<f64>) -> u64 {
    number
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .map_or(0, |n| n as u64)
}

fn last_time(markers: &[ProfileMarker]) -> f64 {
    markers
        .iter()
        .map(|m| m.end_time.unwrap_or(m.start_time))
        .fold(0.0, f64::max)
}

fn cpu_use(tracks: &Tracks) -> Option<CpuUse> {
    let all = cpu_figures(&tracks.cpu)?;
    Some(CpuUse {
        average: all.average,
        p95: all.p95,
        peak: all.peak,
        task: cpu_figures(&tracks.task_cpu),
        other: cpu_figures(&tracks.other_cpu),
    })
}

fn cpu_figures(samples: &[Sample]) -> Option<CpuFigures> {
    let total: f64 = samples.iter().map(Sample::duration).sum();
    if samples.is_empty() || total <= 0.0 {
        return None;
    }
    let average = samples.iter().map(|s| s.value * s.duration()).sum::<f64>() / total;
    Some(CpuFigures {
        average,
        p95: weighted_percentile(samples, 0.95),
        peak: samples.iter().map(|s| s.peak).fold(0.0, f64::max),
    })
}

/// The smallest value at or under which `share` of the samples' time lies.
fn weighted_percentile(samples: &[Sample], share: f64) -> f64 {
    let mut sorted: Vec<(f64, f64)> = samples.iter().map(|s| (s.value, s.duration())).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = sorted.iter().map(|(_, weight)| weight).sum();
    let target = share * total * (1.0 - 1e-9);
    let mut covered = 0.0;
    for (value, weight) in &sorted {
        covered += weight;
        if covered >= target {
            return *value;
        }
    }
    sorted.last().map_or(0.0, |(value, _)| *value)
}

fn memory_use(tracks: &Tracks) -> Option<MemoryUse> {
    let highest = |samples: &[Sample]| samples.iter().map(|s| s.peak).reduce(f64::max);
    let peak = tracks
        .memory
        .iter()
        .max_by(|a, b| a.peak.total_cmp(&b.peak))?;
    Some(MemoryUse {
        peak_bytes: peak.peak as u64,
        peak_at_ms: peak.start,
        peak_swap_bytes: highest(&tracks.swap).unwrap_or(0.0) as u64,
        task_peak_bytes: highest(&tracks.task_memory).map(|bytes| bytes as u64),
    })
}

fn steps(meta: &Map<String, Value>, markers: &[ProfileMarker], tracks: &Tracks) -> Vec<Step> {
    let categories: Vec<&str> = meta
        .get("categories")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
                .collect()
        })
        .unwrap_or_default();
    markers
        .iter()
        .filter_map(|marker| {
            let end = marker.end_time?;
            let category = *categories.get(marker.category.unwrap_or(0) as usize)?;
            if !STEP_CATEGORIES.contains(&category) {
                return None;
            }
            let data = marker.data_value();
            let data = data.as_ref();
            if data.and_then(|d| d.get("type")).and_then(Value::as_str) == Some(PROCESS) {
                return None;
            }
            let text = |key: &str| data?.get(key)?.as_str().map(str::to_owned);
            let cpu: Vec<(Sample, f64)> =
                overlapping(&tracks.cpu, marker.start_time, end).collect();
            let weight: f64 = cpu.iter().map(|(_, w)| w).sum();
            Some(Step {
                name: marker.name.clone(),
                detail: text("command")
                    .or_else(|| text("phase"))
                    .or_else(|| text("text")),
                category: category.to_owned(),
                start_ms: marker.start_time,
                duration_ms: end - marker.start_time,
                cut_off: data.and_then(|d| d.get("cutOff")).is_some(),
                cpu_average: (weight > 0.0)
                    .then(|| cpu.iter().map(|(s, w)| s.value * w).sum::<f64>() / weight),
                cpu_peak: cpu.iter().map(|(s, _)| s.peak).reduce(f64::max),
                peak_memory_bytes: overlapping(&tracks.memory, marker.start_time, end)
                    .map(|(s, _)| s.peak)
                    .reduce(f64::max)
                    .map(|bytes| bytes as u64),
            })
        })
        .collect()
}

fn dropped(markers: &[ProfileMarker]) -> Vec<Dropped> {
    markers
        .iter()
        .filter(|m| DROP_NOTES.contains(&m.name.as_str()))
        .map(|m| Dropped {
            what: m.name.clone(),
            text: m
                .data_value()
                .as_ref()
                .and_then(|d| d.get("text"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            start_ms: m.start_time,
            end_ms: m.end_time,
        })
        .collect()
}

fn hint(machine: &MachineSize, cpu: Option<&CpuUse>, memory: Option<&MemoryUse>) -> Option<Hint> {
    let cores = f64::from(machine.logical_cpus?);
    let total_gib = machine.main_memory_bytes? as f64 / GIB;
    let p95_cores = cpu?.p95 * cores;
    let peak_gib = memory?.peak_bytes as f64 / GIB;

    let cores_needed = smallest_power_of_two_above(p95_cores / HEADROOM);
    let gib_needed = smallest_power_of_two_above(peak_gib / HEADROOM);
    let cpu_bound = p95_cores >= BOUND * cores;
    let memory_bound = peak_gib >= BOUND * total_gib;
    let smaller = f64::from(cores_needed) < cores || f64::from(gib_needed) < total_gib;
    let suggested_cores = f64::from(cores_needed).min(cores) as u32;
    let suggested_gib = f64::from(gib_needed).min(total_gib);

    let reason = format!(
        "peak {peak_gib:.1} of {} GiB and CPU p95 at {p95_cores:.1} of {cores} cores",
        text::short_number(total_gib)
    );
    let (verdict, conclusion) = match (cpu_bound, memory_bound) {
        (true, true) => (
            Verdict::CpuAndMemoryBound,
            "the task is CPU-bound and close to the memory limit, a bigger machine would help"
                .to_owned(),
        ),
        (true, false) => (
            Verdict::CpuBound,
            "the task is CPU-bound, more cores would likely make it faster".to_owned(),
        ),
        (false, true) => (
            Verdict::MemoryBound,
            "the task is close to the memory limit, more memory would be safer".to_owned(),
        ),
        (false, false) if smaller => (
            Verdict::Smaller,
            format!(
                "a machine with {suggested_cores} cores and {} GiB would have done",
                text::short_number(suggested_gib)
            ),
        ),
        (false, false) => (Verdict::Fits, "this machine fits the task".to_owned()),
    };
    Some(Hint {
        verdict,
        cores: suggested_cores,
        memory_bytes: (suggested_gib * GIB) as u64,
        text: format!("{reason}: {conclusion}"),
    })
}

/// 1, 2, 4, ...: the first at or above `need`.
fn smallest_power_of_two_above(need: f64) -> u32 {
    let mut n = 1u32;
    while f64::from(n) < need && n < 1 << 20 {
        n *= 2;
    }
    n
}

#[derive(Clone, Copy)]
enum Aggregate {
    Mean,
    Max,
}

/// The samples in [`SPARKLINE_WIDTH`] equal stretches of `[start, end]`, each drawn against
/// `scale` (the top block); a stretch without samples is a space.
fn sparkline(
    samples: &[Sample],
    start: f64,
    end: f64,
    scale: Option<f64>,
    aggregate: Aggregate,
) -> Option<String> {
    let scale = scale.filter(|s| *s > 0.0)?;
    if samples.is_empty() || end <= start {
        return None;
    }
    let width = (end - start) / SPARKLINE_WIDTH as f64;
    let line = (0..SPARKLINE_WIDTH)
        .map(|i| {
            let (from, to) = (start + i as f64 * width, start + (i + 1) as f64 * width);
            let inside: Vec<(Sample, f64)> = overlapping(samples, from, to).collect();
            let weight: f64 = inside.iter().map(|(_, w)| w).sum();
            if inside.is_empty() {
                return ' ';
            }
            let value = match aggregate {
                Aggregate::Mean => inside.iter().map(|(s, w)| s.value * w).sum::<f64>() / weight,
                Aggregate::Max => inside.iter().map(|(s, _)| s.peak).fold(0.0, f64::max),
            };
            let level = ((value / scale) * SPARK_LEVELS.len() as f64).floor() as usize;
            SPARK_LEVELS[level.min(SPARK_LEVELS.len() - 1)]
        })
        .collect();
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB_BYTES: u64 = 1 << 30;

    fn hint_for(cores: u32, memory_gib: u64, p95_cores: f64, peak_gib: f64) -> Hint {
        let machine = MachineSize {
            logical_cpus: Some(cores),
            main_memory_bytes: Some(memory_gib * GIB_BYTES),
            cpu_name: None,
        };
        let p95 = p95_cores / f64::from(cores);
        let cpu = CpuUse {
            average: p95,
            p95,
            peak: p95,
            task: None,
            other: None,
        };
        let memory = MemoryUse {
            peak_bytes: (peak_gib * GIB) as u64,
            peak_at_ms: 0.0,
            peak_swap_bytes: 0,
            task_peak_bytes: None,
        };
        hint(&machine, Some(&cpu), Some(&memory)).expect("a hint")
    }

    #[test]
    fn a_machine_twice_too_big_is_halved() {
        let hint = hint_for(16, 16, 3.2, 3.1);
        assert_eq!(hint.verdict, Verdict::Smaller);
        assert_eq!((hint.cores, hint.memory_bytes), (8, 8 * GIB_BYTES));
    }

    #[test]
    fn a_saturated_cpu_or_memory_asks_for_more() {
        let cpu = hint_for(8, 32, 7.6, 4.0);
        assert_eq!(cpu.verdict, Verdict::CpuBound);
        assert!(
            cpu.text.ends_with("more cores would likely make it faster"),
            "{}",
            cpu.text
        );
        assert_eq!(hint_for(8, 16, 2.0, 15.0).verdict, Verdict::MemoryBound);
        assert_eq!(
            hint_for(8, 16, 7.5, 15.0).verdict,
            Verdict::CpuAndMemoryBound
        );
    }

    #[test]
    fn a_machine_used_past_three_quarters_fits() {
        let hint = hint_for(4, 8, 3.1, 5.9);
        assert_eq!(hint.verdict, Verdict::Fits);
        assert_eq!(
            hint.text,
            "peak 5.9 of 8 GiB and CPU p95 at 3.1 of 4 cores: this machine fits the task"
        );
    }

    #[test]
    fn no_hint_without_the_machine_size() {
        let machine = MachineSize {
            logical_cpus: None,
            main_memory_bytes: Some(GIB_BYTES),
            cpu_name: None,
        };
        assert_eq!(hint(&machine, None, None), None);
    }
}
