//! [`FleetTask`]: the few numbers `fleet` keeps of a task, read by the names `export`
//! gives its figures, whether they come from a profile or from InfluxDB's
//! `tc_profile_task` rows.

use crate::export::report::{figures, task_end, task_tags, Figure};
use crate::summary::summarize;
use tc_profile_finalizer::Profile;

/// One task, reduced to what a worker pool's right-sizing needs.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetTask {
    /// The task's identity and name (`export`'s tags).
    pub tags: Vec<(String, String)>,
    pub duration_s: f64,
    /// The p95 of the task's own CPU (its processes' track; the machine's without it), in
    /// cores.
    pub cores_p95: Option<f64>,
    /// The share of the machine's CPU time the task left unused: 1 minus its average.
    pub idle_share: Option<f64>,
    /// The machine's highest memory used: what a smaller machine must still hold.
    pub memory_peak_bytes: Option<f64>,
    pub oom_kills: u64,
    pub timed_out: bool,
    /// What the machine offered.
    pub cores: Option<f64>,
    pub memory_bytes: Option<f64>,
}

impl FleetTask {
    /// The task of a profile (or a log finalized in memory).
    pub fn of_profile(profile: &Profile) -> FleetTask {
        let figures = figures(&summarize(profile), &task_end(profile));
        FleetTask::from_figures(task_tags(profile.meta()), |key| {
            figures.iter().find(|(k, _)| *k == key).map(|(_, f)| *f)
        })
    }

    /// The task of `export`'s figures, looked up by name.
    pub fn from_figures(
        tags: Vec<(String, String)>,
        figure: impl Fn(&str) -> Option<Figure>,
    ) -> FleetTask {
        let number = |key| match figure(key) {
            Some(Figure::Number(value)) if value.is_finite() => Some(value),
            _ => None,
        };
        let cores = number("logical_cpus");
        let task_or_all = |task, all| number(task).or_else(|| number(all));
        FleetTask {
            tags,
            duration_s: number("duration_s").unwrap_or(0.0),
            cores_p95: task_or_all("task_cpu_p95", "cpu_p95")
                .zip(cores)
                .map(|(share, cores)| share * cores),
            idle_share: task_or_all("task_cpu_average", "cpu_average")
                .map(|average| (1.0 - average).clamp(0.0, 1.0)),
            memory_peak_bytes: number("memory_peak_bytes"),
            oom_kills: number("oom_kills").unwrap_or(0.0) as u64,
            timed_out: matches!(figure("timed_out"), Some(Figure::Flag(true))),
            cores,
            memory_bytes: number("main_memory_bytes"),
        }
    }

    pub fn tag(&self, key: &str) -> Option<&str> {
        let value = self.tags.iter().find(|(k, _)| k == key);
        value.map(|(_, v)| v.as_str())
    }
}
