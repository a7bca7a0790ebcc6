//! Logs with known content, written with the format crate's own encoder: a 72 s task on a
//! 16-core, 16 GiB machine whose figures the summary tests assert exactly.

use serde_json::json;
use tc_profile_format::schema::{category, data_type, track};
use tc_profile_format::{
    encode_line, meta_line, thread_line, EndReason, Footer, Line, Machine, Marker, MetaInfo,
    OpenInterval,
};

pub const GIB: u64 = 1 << 30;
/// The memory peak of the known task, at 40 s: 3.1 GiB.
pub const PEAK_MEMORY: u64 = 3_328_599_654;

/// A log being written line by line.
pub struct LogBuilder {
    bytes: Vec<u8>,
}

impl LogBuilder {
    /// Meta and thread lines of a machine with `cores` and `memory` bytes.
    pub fn new(cores: u32, memory: u64) -> LogBuilder {
        LogBuilder::with_meta(&test_meta(cores, memory))
    }

    /// Meta and thread lines of this meta.
    pub fn with_meta(meta: &MetaInfo) -> LogBuilder {
        let mut log = LogBuilder { bytes: Vec::new() };
        log.line(&meta_line(meta)).line(&thread_line("tc-profile"));
        log
    }

    pub fn line(&mut self, line: &Line) -> &mut LogBuilder {
        self.bytes.extend(encode_line(line));
        self
    }

    pub fn marker(&mut self, marker: Marker) -> &mut LogBuilder {
        self.line(&Line::Marker(marker))
    }

    /// One sample per track for `[start, end]` seconds.
    pub fn sample(&mut self, start: f64, end: f64, busy: f64, used: u64) -> &mut LogBuilder {
        let (start, end) = (start * 1000.0, end * 1000.0);
        let interval = |name: &str, data| {
            Marker::interval(name, start, end)
                .with_category(category::OTHER)
                .with_data(data)
        };
        self.marker(interval(
            track::CPU,
            json!({"type": data_type::CPU, "cpuPercent": busy,
                   "nice": 0.0, "user": busy, "system": busy, "iowait": busy,
                   "softirq": busy, "steal": busy}),
        ))
        .marker(interval(
            track::MEMORY,
            json!({"type": data_type::MEMORY, "used": used, "swap": 0}),
        ))
        .marker(interval(
            track::IO,
            json!({"type": data_type::IO, "read_bytes": 1 << 20, "read_count": 1,
                   "write_bytes": 2 << 20, "write_count": 2}),
        ))
        .marker(interval(
            track::NET_IO,
            json!({"type": data_type::NET_IO, "recv_bytes": 1000, "recv_count": 1,
                   "sent_bytes": 10, "sent_count": 1}),
        ))
    }

    pub fn footer(&mut self, end_seconds: f64) -> &mut LogBuilder {
        self.line(&Line::Footer(Footer {
            end_time: end_seconds * 1000.0,
            reason: EndReason::CommandExited,
        }))
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.bytes.clone()
    }
}

/// The meta of a machine with `cores` and `memory` bytes, sampling CPU, memory, disk and
/// network.
pub fn test_meta(cores: u32, memory: u64) -> MetaInfo {
    MetaInfo {
        start_time: 1_795_980_000_000.0,
        interval_ms: 1000.0,
        machine: Machine {
            logical_cpus: Some(cores),
            physical_cpus: Some(cores),
            main_memory: Some(memory),
            cpu_name: Some("Test CPU".to_owned()),
            os: None,
        },
        sources: vec!["cpu".into(), "memory".into(), "io".into(), "net".into()],
        sync_policy: "interval:1000ms".to_owned(),
        recorder: "tc-profile test".to_owned(),
        ..MetaInfo::default()
    }
}

fn command() -> OpenInterval {
    OpenInterval {
        id: 1,
        name: "Command".to_owned(),
        start_time: 12_000.0,
        category: Some(category::TASK),
        data: Some(json!({"type": data_type::COMMAND, "command": "make -j8", "pid": 42})),
        key: None,
    }
}

/// The known task until `until` seconds (72 for the whole task; more repeats its end): "pull image" (Worker) for 12 s at
/// 0.8 cores and 1 GiB, then "Command" (Task) at 3.2 cores, with one second at 8 cores
/// (at 30 s) and the memory peak (at 40 s). No footer: the caller ends it or cuts it.
pub fn known_task(until: u32) -> LogBuilder {
    let mut log = LogBuilder::new(16, 16 * GIB);
    log.marker(
        Marker::interval("pull image", 0.0, 12_000.0)
            .with_category(category::WORKER)
            .with_data(json!({"type": data_type::TEXT, "text": "docker pull"})),
    );
    log.line(&Line::Open(command()));
    for second in 0..until {
        let (busy, used) = match second {
            0..12 => (0.05, GIB),
            30 => (0.5, 2 * GIB),
            40 => (0.2, PEAK_MEMORY),
            _ => (0.2, 2 * GIB),
        };
        log.sample(f64::from(second), f64::from(second + 1), busy, used);
    }
    log
}

/// The known task, complete: 72 s, the command exited with 0.
pub fn complete_task() -> Vec<u8> {
    complete_known_task().bytes()
}

fn complete_known_task() -> LogBuilder {
    let mut log = known_task(72);
    log.marker(command().close(
        72_000.0,
        Some(
            json!({"type": data_type::COMMAND, "command": "make -j8", "pid": 42,
                    "status": "exit code 0"}),
        ),
    ))
    .footer(72.0);
    log
}

/// The known task cut off after `seconds`, in the middle of its last line.
pub fn cut_off_task(seconds: u32) -> Vec<u8> {
    let mut bytes = known_task(seconds).bytes();
    bytes.extend_from_slice(br#"{"type":"marker","name":"CPU Use","startTi"#);
    bytes
}

/// The complete known task with the tracks of its process tree against the rest (the task
/// at 2.4 of its 3.2 cores, 2 GiB of RSS at most), a disk of its own ("IO sda", which must
/// not count twice) and three process markers (SPEC.md, "Categories and schemas").
pub fn complete_task_with_tree() -> Vec<u8> {
    let mut log = complete_known_task();
    for second in 12..72 {
        let (start, end) = (f64::from(second) * 1000.0, f64::from(second + 1) * 1000.0);
        let track = |name: &str, data| {
            Marker::interval(name, start, end)
                .with_category(category::OTHER)
                .with_data(data)
        };
        log.marker(track("Task CPU", json!({"type": "TaskCPU", "cpu": 0.15})))
            .marker(track("Other CPU", json!({"type": "OtherCPU", "cpu": 0.05})))
            .marker(track(
                "Task Memory",
                json!({"type": "TaskMem", "rss": if second == 40 { 2 * GIB } else { GIB }}),
            ))
            .marker(track(
                "IO sda",
                json!({"type": data_type::IO, "read_bytes": 1 << 20, "write_bytes": 2 << 20}),
            ));
    }
    for (name, pid, cpu_ms) in [
        ("cc1", 101, 30_000.0),
        ("ld", 102, 5_000.0),
        ("sh", 100, 10.0),
    ] {
        log.marker(
            Marker::interval(name, 13_000.0, 70_000.0)
                .with_category(category::TASK)
                .with_data(json!({"type": "Process", "command": format!("{name} -O2"),
                                  "pid": pid, "ppid": 42, "cpuTime": cpu_ms,
                                  "peakRss": GIB, "status": "exit code 0"})),
        );
    }
    log.bytes()
}
