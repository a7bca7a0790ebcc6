//! [`TaskReport`], what every export format renders: the task's identity, its summary's
//! figures and steps, and its metric series, made from a profile and its summary.

use crate::summary::Summary;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use tc_profile_finalizer::Profile;
use tc_profile_format::metric::{self, MetricKind};
use tc_profile_format::schema::track;
use tc_profile_format::{TaskInfo, TASK_TAGS};

/// A figure of the task summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    Number(f64),
    Flag(bool),
}

/// Everything an export says about one task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskReport {
    /// The task's identity, those of [`TASK_TAGS`] that are known, in that order.
    pub tags: Vec<(String, String)>,
    /// Unix epoch milliseconds of the recording's start.
    pub start_time: f64,
    /// The task summary, by field name (`duration_s`, `cpu_average`, ...).
    pub figures: Vec<(&'static str, Figure)>,
    pub steps: Vec<StepReport>,
    pub series: Vec<SeriesReport>,
}

/// A lifecycle step of the worker or a phase of the task.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    pub name: String,
    /// The marker category: `Worker` or `Task`.
    pub category: String,
    /// Unix epoch milliseconds.
    pub start_time: f64,
    pub duration_s: f64,
    /// Still open when the recording ended.
    pub cut_off: bool,
}

/// One metric series: its name, tags and one point per interval in which it changed.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesReport {
    pub metric: String,
    pub kind: MetricKind,
    pub tags: Vec<(String, String)>,
    pub points: Vec<MetricPoint>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MetricPoint {
    /// Unix epoch milliseconds of the interval's end.
    pub time: f64,
    /// The kind's value keys ([`MetricKind::value_keys`]) with their values.
    pub values: Vec<(&'static str, f64)>,
}

impl MetricPoint {
    pub fn value(&self, key: &str) -> Option<f64> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

impl TaskReport {
    /// The report of a profile: its identity, its summary's figures and steps, and its
    /// metric series.
    pub fn new(profile: &Profile, summary: &Summary) -> TaskReport {
        let meta = profile.meta();
        let start_time = meta.get("startTime").and_then(Value::as_f64).unwrap_or(0.0);
        let steps = summary
            .steps
            .iter()
            .map(|step| StepReport {
                name: step.name.clone(),
                category: step.category.clone(),
                start_time: start_time + step.start_ms,
                duration_s: step.duration_ms / 1000.0,
                cut_off: step.cut_off,
            })
            .collect();
        TaskReport {
            tags: task_tags(meta),
            start_time,
            figures: figures(summary, &task_end(profile)),
            steps,
            series: metric_series(profile, start_time),
        }
    }
}

/// How a task ended, beyond its summary: what `fleet` counts against a smaller machine.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct TaskEnd {
    /// The kills of the `OOM kill` markers (the task's cgroup's counter).
    pub oom_kills: u64,
    /// The daemon's `--task-timeout` ended it (`meta.tcProfile.timedOut`).
    pub timed_out: bool,
}

pub(crate) fn task_end(profile: &Profile) -> TaskEnd {
    let oom_kills = profile
        .markers()
        .iter()
        .filter(|marker| marker.name == track::OOM_KILL)
        .map(|marker| {
            let data = marker.data_value();
            data.and_then(|d| d["kills"].as_u64()).unwrap_or(1)
        })
        .sum();
    let timed_out = profile
        .meta()
        .get("tcProfile")
        .and_then(|t| t.get("timedOut"));
    TaskEnd {
        oom_kills,
        timed_out: timed_out.and_then(Value::as_bool).unwrap_or(false),
    }
}

/// The task summary's figures, those that are known: CPU as fractions of all cores (the
/// task's own where the profile has its processes' track), the machine's size, and how
/// the task ended.
pub(crate) fn figures(summary: &Summary, end: &TaskEnd) -> Vec<(&'static str, Figure)> {
    let duration_s = summary.duration_ms / 1000.0;
    let cores = summary.machine.logical_cpus.map(f64::from);
    let number = |key, value: Option<f64>| value.map(|v| (key, Figure::Number(v)));
    let cpu = summary.cpu.as_ref().map(|cpu| &cpu.all);
    let task_cpu = summary.cpu.as_ref().and_then(|cpu| cpu.task.as_ref());
    let memory = summary.memory.as_ref();
    let disk = summary.disk.as_ref();
    let network = summary.network.as_ref();
    [
        number("duration_s", Some(duration_s)),
        number(
            "cpu_time_s",
            cpu.zip(cores).map(|(c, n)| c.average * n * duration_s),
        ),
        number("cpu_average", cpu.map(|c| c.average)),
        number("cpu_peak", cpu.map(|c| c.peak)),
        number("cpu_p95", cpu.map(|c| c.p95)),
        number("task_cpu_average", task_cpu.map(|c| c.average)),
        number("task_cpu_p95", task_cpu.map(|c| c.p95)),
        number("logical_cpus", cores),
        number(
            "main_memory_bytes",
            summary.machine.main_memory_bytes.map(|b| b as f64),
        ),
        number("memory_peak_bytes", memory.map(|m| m.peak_bytes as f64)),
        number("disk_read_bytes", disk.map(|d| d.read_bytes as f64)),
        number("disk_written_bytes", disk.map(|d| d.written_bytes as f64)),
        number(
            "net_received_bytes",
            network.map(|n| n.received_bytes as f64),
        ),
        number("net_sent_bytes", network.map(|n| n.sent_bytes as f64)),
        Some(("ended_early", Figure::Flag(!summary.complete))),
        number("oom_kills", Some(end.oom_kills as f64)),
        Some(("timed_out", Figure::Flag(end.timed_out))),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The tag of the task definition's name (`metadata.name`), beside [`TASK_TAGS`]: what
/// `fleet --by task-name` groups by.
pub const TASK_NAME_TAG: &str = "task_name";

/// The task's identity from `meta.tcProfile.task`, as the recorder wrote it, and its name.
pub(crate) fn task_tags(meta: &Map<String, Value>) -> Vec<(String, String)> {
    let task = meta
        .get("tcProfile")
        .and_then(|tc_profile| tc_profile.get("task"))
        .and_then(|task| TaskInfo::deserialize(task).ok())
        .unwrap_or_default();
    let mut tags = task.tags();
    if let Some(name) = task.name.filter(|name| !name.is_empty()) {
        tags.push((TASK_NAME_TAG.to_owned(), name));
    }
    tags
}

/// The metric markers of a profile, grouped by series in order of first appearance.
fn metric_series(profile: &Profile, start_time: f64) -> Vec<SeriesReport> {
    let mut series: Vec<SeriesReport> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for marker in profile.markers() {
        // Most markers say first that they are no metric: their payload is not parsed.
        if marker
            .leading_type()
            .is_some_and(|kind| MetricKind::from_data_type(kind).is_none())
        {
            continue;
        }
        let Some(data) = marker.data_value() else {
            continue;
        };
        let Some(kind) = data["type"].as_str().and_then(MetricKind::from_data_type) else {
            continue;
        };
        let Some(name) = data[metric::key::METRIC].as_str() else {
            continue;
        };
        let values: Option<Vec<(&'static str, f64)>> = kind
            .value_keys()
            .iter()
            .map(|key| Some((*key, data[*key].as_f64()?)))
            .collect();
        let Some(values) = values else { continue };
        let at = *index.entry(marker.name).or_insert_with(|| {
            series.push(SeriesReport {
                metric: name.to_owned(),
                kind,
                tags: metric_tags(data[metric::key::TAGS].as_str().unwrap_or_default()),
                points: Vec::new(),
            });
            series.len() - 1
        });
        series[at].points.push(MetricPoint {
            time: start_time + marker.end_time.unwrap_or(marker.start_time),
            values,
        });
    }
    series
}

/// A metric's own tags, without those whose keys name the task.
fn metric_tags(joined: &str) -> Vec<(String, String)> {
    metric::split_tags(joined)
        .filter(|(key, _)| !TASK_TAGS.contains(key) && *key != TASK_NAME_TAG)
        .map(|(key, value)| (key.to_owned(), value.into_owned()))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report with one of everything, for the formats' tests.
    pub(crate) fn sample_report() -> TaskReport {
        TaskReport {
            tags: vec![
                ("task_id".into(), "fUAKaIdkSF6K1NlOgx7-LA".into()),
                ("worker_type".into(), "b linux,large".into()),
            ],
            start_time: 1_700_000_000_000.0,
            figures: vec![
                ("duration_s", Figure::Number(12.5)),
                ("ended_early", Figure::Flag(false)),
            ],
            steps: vec![StepReport {
                name: "pull image".into(),
                category: "Worker".into(),
                start_time: 1_700_000_000_100.0,
                duration_s: 2.25,
                cut_off: false,
            }],
            series: vec![
                SeriesReport {
                    metric: "task.tests.passed".into(),
                    kind: MetricKind::Counter,
                    tags: vec![
                        ("suite".into(), "unit".into()),
                        ("fast".into(), String::new()),
                    ],
                    points: vec![
                        MetricPoint {
                            time: 1_700_000_000_200.0,
                            values: vec![("value", 3.0)],
                        },
                        MetricPoint {
                            time: 1_700_000_000_300.0,
                            values: vec![("value", 4.0)],
                        },
                    ],
                },
                SeriesReport {
                    metric: "task.compile".into(),
                    kind: MetricKind::Timer,
                    tags: Vec::new(),
                    points: vec![MetricPoint {
                        time: 1_700_000_000_300.0,
                        values: vec![("count", 2.0), ("min", 1.0), ("mean", 2.0), ("max", 3.0)],
                    }],
                },
            ],
        }
    }

    #[test]
    fn a_marker_s_escaped_comma_is_a_comma_of_the_tag_value_and_task_tags_are_left_out() {
        assert_eq!(
            metric_tags("host:a\\,b,region:café,task_id:x"),
            [
                ("host".to_owned(), "a,b".to_owned()),
                ("region".to_owned(), "café".to_owned())
            ]
        );
    }

    #[test]
    fn tags_that_name_the_task_cannot_come_from_the_task() {
        assert_eq!(
            metric_tags("task_id:forged,route:/a,fast,run_id:9"),
            [
                ("route".to_owned(), "/a".to_owned()),
                ("fast".to_owned(), String::new())
            ]
        );
    }
}
