//! The task's tracks against the rest of the machine, as every OS's process tree writes
//! them: "Task CPU" and "Other CPU" (fractions of all cores), "Task Memory" (the tree's
//! resident memory) and "Other Memory" (what the machine uses beyond it).

use crate::sources::{fraction, Lines, Percent};
use tc_profile_format::schema::{data_type, track};
use tc_profile_format::{DataFields, TrackData};

/// One interval of the task's tree and of the machine.
pub(crate) struct TaskSample {
    /// CPU time of the tree in the interval, in the machine's unit.
    pub(crate) tree: f64,
    /// CPU time of every core in the interval, idle included, in the same unit.
    pub(crate) all: f64,
    /// The busy part of `all`.
    pub(crate) busy: f64,
    /// The tree's live processes.
    pub(crate) processes: u64,
    /// The tree's resident memory, in bytes.
    pub(crate) rss: u64,
    /// The memory the machine uses, in bytes.
    pub(crate) used: u64,
}

impl TaskSample {
    /// The four tracks' samples, from `start` to `now`.
    pub(crate) fn write(&self, start: f64, now: f64, out: &mut Lines) {
        let share = |kind: &'static str, cpu: f64, processes: Option<u64>| CpuShare {
            kind,
            cpu,
            cpu_percent: Percent(cpu),
            processes,
        };
        let task_cpu = fraction(self.tree, self.all);
        let other_cpu = fraction(self.busy - self.tree, self.all);
        let task_cpu = share(data_type::TASK_CPU, task_cpu, Some(self.processes));
        let other_cpu = share(data_type::OTHER_CPU, other_cpu, None);
        out.track(track::TASK_CPU, start, now, &task_cpu);
        out.track(track::OTHER_CPU, start, now, &other_cpu);
        let task_memory = TaskMemory {
            kind: data_type::TASK_MEMORY,
            rss: self.rss,
            processes: self.processes,
        };
        out.track(track::TASK_MEMORY, start, now, &task_memory);
        let other_memory = OtherMemory {
            kind: data_type::OTHER_MEMORY,
            used: self.used.saturating_sub(self.rss),
        };
        out.track(track::OTHER_MEMORY, start, now, &other_memory);
    }
}

/// `data` of "Task CPU" and "Other CPU".
struct CpuShare {
    kind: &'static str,
    cpu: f64,
    cpu_percent: Percent,
    processes: Option<u64>,
}

impl TrackData for CpuShare {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.f64("cpu", self.cpu);
        self.cpu_percent.write("cpuPercent", fields);
        if let Some(processes) = self.processes {
            fields.u64("processes", processes);
        }
    }
}

struct TaskMemory {
    kind: &'static str,
    rss: u64,
    processes: u64,
}

impl TrackData for TaskMemory {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("rss", self.rss);
        fields.u64("processes", self.processes);
    }
}

struct OtherMemory {
    kind: &'static str,
    used: u64,
}

impl TrackData for OtherMemory {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("used", self.used);
    }
}
