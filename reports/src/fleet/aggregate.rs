//! [`Fleet`]: the tasks' numbers gathered per group as they come (a few numbers a task,
//! whatever the size of its profile), and each group's figures: exact quantiles (sorted,
//! nearest rank), counts, and what the pool's instances offered.

use crate::fleet::group::GroupBy;
use crate::fleet::task::FleetTask;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The tasks read so far, per group.
#[derive(Debug)]
pub struct Fleet {
    by: GroupBy,
    groups: BTreeMap<String, Samples>,
}

/// A group's tasks, a few numbers each.
#[derive(Default, Debug)]
pub(crate) struct Samples {
    pub(crate) durations_s: Vec<f64>,
    pub(crate) cores_p95: Vec<f64>,
    pub(crate) memory_peaks: Vec<f64>,
    /// Σ idle share × duration, Σ duration: the idle share weighted by time.
    idle_weighted: (f64, f64),
    oom_kills: u64,
    oom_killed_tasks: u64,
    timeouts: u64,
    /// How many tasks ran on each (cores, memory), and on each instance type.
    offered: HashMap<(u64, u64), u64>,
    instance_types: HashMap<String, u64>,
}

/// p50, p95 and the highest of a group's values, by nearest rank.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

/// A group's figures.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GroupFigures {
    pub tasks: u64,
    pub duration_s: Option<Spread>,
    pub mean_duration_s: f64,
    /// Of each task's CPU p95, in cores.
    pub cores_used: Option<Spread>,
    pub memory_peak_bytes: Option<Spread>,
    /// The share of the instances' CPU time the tasks left unused, weighted by duration.
    pub idle_share: Option<f64>,
    pub oom_kills: u64,
    pub oom_killed_tasks: u64,
    pub timeouts: u64,
    /// The most common instance type tag, and the most common cores and memory.
    pub instance_type: Option<String>,
    pub offered_cores: Option<f64>,
    pub offered_memory_bytes: Option<f64>,
}

impl Fleet {
    pub fn new(by: GroupBy) -> Fleet {
        Fleet {
            by,
            groups: BTreeMap::new(),
        }
    }

    pub fn by(&self) -> &GroupBy {
        &self.by
    }

    pub fn add(&mut self, task: FleetTask) {
        let samples = self.groups.entry(self.by.key(&task)).or_default();
        samples.durations_s.push(task.duration_s);
        samples.cores_p95.extend(task.cores_p95);
        samples.memory_peaks.extend(task.memory_peak_bytes);
        if let Some(idle) = task.idle_share {
            samples.idle_weighted.0 += idle * task.duration_s;
            samples.idle_weighted.1 += task.duration_s;
        }
        samples.oom_kills += task.oom_kills;
        samples.oom_killed_tasks += u64::from(task.oom_kills > 0);
        samples.timeouts += u64::from(task.timed_out);
        if let (Some(cores), Some(memory)) = (task.cores, task.memory_bytes) {
            *samples
                .offered
                .entry((cores as u64, memory as u64))
                .or_default() += 1;
        }
        if let Some(name) = task.tag("instance_type") {
            *samples.instance_types.entry(name.to_owned()).or_default() += 1;
        }
    }

    pub fn tasks(&self) -> u64 {
        self.groups
            .values()
            .map(|s| s.durations_s.len() as u64)
            .sum()
    }

    /// Each group's key, figures and samples, in the keys' order.
    pub(crate) fn groups(&mut self) -> impl Iterator<Item = (&String, GroupFigures, &Samples)> {
        self.groups.iter_mut().map(|(key, samples)| {
            let figures = samples.figures();
            (key, figures, &*samples)
        })
    }
}

impl Samples {
    /// Sorts the values (for the quantiles and the charts) and computes the figures.
    fn figures(&mut self) -> GroupFigures {
        for values in [
            &mut self.durations_s,
            &mut self.cores_p95,
            &mut self.memory_peaks,
        ] {
            values.sort_by(f64::total_cmp);
        }
        let tasks = self.durations_s.len() as u64;
        let (idle, weight) = self.idle_weighted;
        let offered = most_common(&self.offered).copied();
        GroupFigures {
            tasks,
            duration_s: spread(&self.durations_s),
            mean_duration_s: self.durations_s.iter().sum::<f64>() / tasks.max(1) as f64,
            cores_used: spread(&self.cores_p95),
            memory_peak_bytes: spread(&self.memory_peaks),
            idle_share: (weight > 0.0).then(|| idle / weight),
            oom_kills: self.oom_kills,
            oom_killed_tasks: self.oom_killed_tasks,
            timeouts: self.timeouts,
            instance_type: most_common(&self.instance_types).cloned(),
            offered_cores: offered.map(|(cores, _)| cores as f64),
            offered_memory_bytes: offered.map(|(_, memory)| memory as f64),
        }
    }
}

/// The key seen most often; the least key of those tied, so that the answer is the same
/// whatever the order tasks came in.
fn most_common<K: Ord>(counts: &HashMap<K, u64>) -> Option<&K> {
    counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(key, _)| key)
}

/// Of sorted values.
fn spread(sorted: &[f64]) -> Option<Spread> {
    Some(Spread {
        p50: nearest_rank(sorted, 0.5)?,
        p95: nearest_rank(sorted, 0.95)?,
        max: *sorted.last()?,
    })
}

/// The value at rank ⌈q·n⌉ (1-based) of sorted values.
pub fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    // No values: no rank 0 to subtract from.
    let index = rank.min(sorted.len()).checked_sub(1)?;
    sorted.get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::report::Figure;

    fn task(pool: &str, duration_s: f64, idle: f64, timed_out: bool, cores: f64) -> FleetTask {
        let tags = vec![("worker_type".to_owned(), pool.to_owned())];
        FleetTask::from_figures(tags, |key| match key {
            "duration_s" => Some(Figure::Number(duration_s)),
            "task_cpu_average" => Some(Figure::Number(1.0 - idle)),
            "logical_cpus" => Some(Figure::Number(cores)),
            "main_memory_bytes" => Some(Figure::Number(8.0)),
            "timed_out" => Some(Figure::Flag(timed_out)),
            _ => None,
        })
    }

    #[test]
    fn timeouts_are_counted_idle_is_weighted_by_duration_and_the_usual_machine_wins() {
        let mut fleet = Fleet::new(GroupBy::parse("worker-type"));
        fleet.add(task("a", 10.0, 0.0, true, 4.0));
        fleet.add(task("a", 30.0, 1.0, false, 8.0));
        fleet.add(task("a", 30.0, 1.0, false, 8.0));
        fleet.add(task("b", 5.0, 0.5, false, 2.0));
        let groups: Vec<(String, GroupFigures)> =
            fleet.groups().map(|(k, f, _)| (k.clone(), f)).collect();
        let (key, a) = &groups[0];
        assert_eq!((key.as_str(), a.tasks, a.timeouts), ("a", 3, 1));
        assert_eq!(a.idle_share, Some(60.0 / 70.0));
        assert_eq!(
            (a.offered_cores, a.offered_memory_bytes),
            (Some(8.0), Some(8.0))
        );
        assert_eq!(groups[1].1.timeouts, 0);
    }

    #[test]
    fn quantiles_are_by_nearest_rank() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(nearest_rank(&values, 0.95), Some(19.0));
        assert_eq!(nearest_rank(&values, 0.5), Some(10.0));
        assert_eq!(nearest_rank(&[3.0], 0.95), Some(3.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }
}
