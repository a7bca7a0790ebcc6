//! [`FleetReport`]: each group's figures, recommendation and the spread of its tasks for
//! the charts, what every output format renders.

use crate::fleet::aggregate::{Fleet, GroupFigures};
use crate::fleet::catalog::Catalog;
use crate::fleet::recommend::{recommend, Recommendation};
use serde::Serialize;

/// Bars of a chart's distribution.
const BINS: usize = 24;

/// What `fleet` says.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FleetReport {
    pub fleet_version: u32,
    /// `worker-type`, `task-name`, a tag.
    pub by: String,
    pub tasks: u64,
    /// Inputs that could not be read, each with why (the first [`UNREADABLE_NAMED`]).
    pub unreadable: u64,
    pub unreadable_named: Vec<String>,
    pub groups: Vec<GroupReport>,
}

/// `fleetVersion` of the JSON form; raised only for changes that old readers would misread
/// (keys are added, never renamed or removed).
pub const FLEET_VERSION: u32 = 1;

/// The unreadable inputs a report names; the rest are counted.
pub const UNREADABLE_NAMED: usize = 20;

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GroupReport {
    pub key: String,
    #[serde(flatten)]
    pub figures: GroupFigures,
    pub recommendation: Recommendation,
    /// How the tasks' CPU p95 (cores) and memory peaks (bytes) spread: for the charts.
    #[serde(skip)]
    pub charts: [Distribution; 2],
}

/// A histogram of a group's values, from 0 to `upper`.
#[derive(Clone, Debug, PartialEq)]
pub struct Distribution {
    pub upper: f64,
    pub counts: Vec<u32>,
}

impl FleetReport {
    /// Each group's figures and recommendation; `unreadable`, the inputs skipped.
    pub fn new(
        mut fleet: Fleet,
        catalog: &Catalog,
        unreadable: &[String],
        count: u64,
    ) -> FleetReport {
        let by = fleet.by().label();
        let tasks = fleet.tasks();
        let groups = fleet
            .groups()
            .map(|(key, figures, samples)| {
                let recommendation = recommend(&figures, catalog);
                let chosen = recommendation.instance_type.as_ref();
                let cores_upper = upper(
                    &samples.cores_p95,
                    [figures.offered_cores, chosen.map(|t| t.cores)],
                );
                let memory_upper = upper(
                    &samples.memory_peaks,
                    [figures.offered_memory_bytes, chosen.map(|t| t.memory_bytes)],
                );
                GroupReport {
                    key: key.clone(),
                    charts: [
                        distribution(&samples.cores_p95, cores_upper),
                        distribution(&samples.memory_peaks, memory_upper),
                    ],
                    figures,
                    recommendation,
                }
            })
            .collect();
        FleetReport {
            fleet_version: FLEET_VERSION,
            by,
            tasks,
            unreadable: count,
            unreadable_named: unreadable.iter().take(UNREADABLE_NAMED).cloned().collect(),
            groups,
        }
    }
}

/// A chart's right end: past the highest value and the marks drawn on it.
fn upper(sorted: &[f64], marks: [Option<f64>; 2]) -> f64 {
    let highest = marks
        .into_iter()
        .flatten()
        .chain(sorted.last().copied())
        .fold(0.0, f64::max);
    if highest > 0.0 {
        highest * 1.05
    } else {
        1.0
    }
}

fn distribution(values: &[f64], upper: f64) -> Distribution {
    let mut counts = vec![0u32; BINS];
    for value in values {
        let bin = (value / upper * BINS as f64) as usize;
        counts[bin.min(BINS - 1)] += 1;
    }
    Distribution { upper, counts }
}
