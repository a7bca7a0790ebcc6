//! The steps of a run that a comparison matches: its lifecycle steps, task intervals and
//! wrapped command (the summary's steps, and the task's own intervals), and the span of
//! each component of its log, from its first line to its last. Steps of two runs match by
//! category, name and order: the second `build` of one run is the second of the other.

use crate::summary::{category_names, step_markers, STEP_CATEGORIES};
use serde_json::{Map, Value};
use std::collections::HashMap;
use tc_profile_finalizer::Profile;
use tc_profile_format::schema::data_type::COMMAND;

/// The categories of a task's own intervals, beside the summary's step categories.
const TASK_INTERVALS: &str = "User";
/// The categories of log lines, whose components are steps as one category.
const LOG_CATEGORIES: [&str; 3] = ["Log", "Log warning", "Log error"];
const LOG: &str = "Log";
/// The share of a step that must lie inside another for it to be held by it.
const HELD_SHARE: f64 = 0.9;

/// A step of one run.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RunStep {
    pub(super) category: String,
    pub(super) name: String,
    /// Its place among the steps of its category and name, from 0.
    pub(super) occurrence: usize,
    /// The name, with the command for the wrapped command.
    pub(super) label: String,
    pub(super) start_ms: f64,
    pub(super) end_ms: f64,
    pub(super) cut_off: bool,
}

impl RunStep {
    pub(super) fn duration_ms(&self) -> f64 {
        self.end_ms - self.start_ms
    }

    /// Whether `other`, shorter, lies inside this step: nine tenths of it at least, since a
    /// step begun by the task may be stamped a moment before the command that began it.
    pub(super) fn holds(&self, other: &RunStep) -> bool {
        let overlap = other.end_ms.min(self.end_ms) - other.start_ms.max(self.start_ms);
        let length = other.duration_ms();
        let inside = if length > 0.0 {
            overlap >= HELD_SHARE * length
        } else {
            (self.start_ms..=self.end_ms).contains(&other.start_ms)
        };
        inside && other.duration_ms() < self.duration_ms()
    }

    fn key(&self) -> (&str, &str, usize) {
        (&self.category, &self.name, self.occurrence)
    }
}

/// The steps of a run, by start: the samples of a track (a schema with graphs: a task's
/// metrics are in its category) are none.
pub(super) fn run_steps(profile: &Profile) -> Vec<RunStep> {
    let meta = profile.meta();
    let categories: Vec<&str> = STEP_CATEGORIES
        .into_iter()
        .chain([TASK_INTERVALS])
        .collect();
    let tracks = track_types(meta);
    let mut steps: Vec<RunStep> = step_markers(meta, profile.markers(), &categories)
        .filter(|step| {
            let kind = step.data.as_ref().and_then(|d| d.get("type")?.as_str());
            !kind.is_some_and(|kind| tracks.contains(&kind))
        })
        .map(|step| {
            let name = step.marker.name.to_owned();
            let label = match step.detail() {
                Some(command) if name == COMMAND => format!("{name}: {command}"),
                _ => name.clone(),
            };
            RunStep {
                category: step.category.to_owned(),
                name,
                occurrence: 0,
                label,
                start_ms: step.marker.start_time,
                end_ms: step.end,
                cut_off: step.cut_off(),
            }
        })
        .collect();
    steps.extend(log_components(profile));
    steps.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    for step in &mut steps {
        let count = seen
            .entry((step.category.clone(), step.name.clone()))
            .or_default();
        step.occurrence = *count;
        *count += 1;
    }
    steps
}

/// The names of the schemas drawn as tracks.
fn track_types(meta: &Map<String, Value>) -> Vec<&str> {
    let schemas = meta.get("markerSchema").and_then(Value::as_array);
    let tracks = schemas
        .into_iter()
        .flatten()
        .filter(|s| s.get("graphs").is_some());
    tracks.filter_map(|s| s.get("name")?.as_str()).collect()
}

/// Each component of the log as a step from its first line to its last.
fn log_components(profile: &Profile) -> Vec<RunStep> {
    let names = category_names(profile.meta());
    let mut spans: Vec<RunStep> = Vec::new();
    for marker in profile.markers() {
        let category = names.get(marker.category.unwrap_or(0) as usize);
        if !category.is_some_and(|c| LOG_CATEGORIES.contains(c)) {
            continue;
        }
        let time = marker.start_time;
        match spans.iter_mut().find(|span| span.name == marker.name) {
            Some(span) => {
                span.start_ms = span.start_ms.min(time);
                span.end_ms = span.end_ms.max(time);
            }
            None => spans.push(RunStep {
                category: LOG.to_owned(),
                name: marker.name.to_owned(),
                occurrence: 0,
                label: format!("log {}", marker.name),
                start_ms: time,
                end_ms: time,
                cut_off: false,
            }),
        }
    }
    spans
}

/// The steps of two runs, matched.
pub(super) struct Matched {
    /// In the base run's order.
    pub(super) pairs: Vec<(RunStep, RunStep)>,
    pub(super) only_in_base: Vec<RunStep>,
    pub(super) only_in_new: Vec<RunStep>,
}

pub(super) fn match_steps(base: Vec<RunStep>, new: Vec<RunStep>) -> Matched {
    let index: HashMap<(&str, &str, usize), usize> = new
        .iter()
        .enumerate()
        .map(|(at, step)| (step.key(), at))
        .collect();
    let places: Vec<Option<usize>> = base.iter().map(|s| index.get(&s.key()).copied()).collect();
    let mut new: Vec<Option<RunStep>> = new.into_iter().map(Some).collect();
    let mut pairs = Vec::new();
    let mut only_in_base = Vec::new();
    for (step, place) in base.into_iter().zip(places) {
        match place.and_then(|at| new[at].take()) {
            Some(other) => pairs.push((step, other)),
            None => only_in_base.push(step),
        }
    }
    Matched {
        pairs,
        only_in_base,
        only_in_new: new.into_iter().flatten().collect(),
    }
}
