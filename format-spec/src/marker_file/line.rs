//! The lines of a marker file as they decode: markers, begins and ends, schemas and
//! metrics, with the key that pairs a begin with its end.

use crate::metric::MetricKind;
use crate::schema::category;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One line of a marker file. Times are Unix epoch milliseconds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum FileLine {
    /// An instant (no `endTime`) or a complete interval.
    Marker(FileMarker),
    /// The start of an interval that an `end` with the same key closes.
    Begin(Begin),
    /// The end of the latest open `begin` with the same key.
    End(End),
    /// A marker schema for `meta.markerSchema`, as the profiler reads it at version 47.
    Schema(Map<String, Value>),
    /// A metric sample (reserved for the metrics source; validated, not yet recorded).
    Metric(Metric),
    /// A `type` this version does not know.
    #[serde(other)]
    Unknown,
}

/// The `category` of a marker-file line, by name; `user` when absent.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Worker,
    Task,
    User,
}

impl Category {
    /// The index into `meta.categories`.
    pub fn index(category: Option<Category>) -> u32 {
        match category.unwrap_or(Category::User) {
            Category::Worker => category::WORKER,
            Category::Task => category::TASK,
            Category::User => category::USER,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FileMarker {
    pub name: String,
    #[serde(rename = "startTime")]
    pub start_time: f64,
    #[serde(rename = "endTime", default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Begin {
    pub name: String,
    /// Matches the `end` with the same id in any file; without it, the `end` with the same
    /// name in the same file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub time: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct End {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub time: f64,
    /// Replaces the begin's data when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub kind: MetricKind,
    /// A number; for a set, a number or a string.
    pub value: Value,
    pub time: f64,
    /// Tags, as a DogStatsD metric's: `{"key": "value"}` (a value that is not a string is
    /// taken as its JSON text).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub tags: Map<String, Value>,
    /// Keys this version does not know: the metric is taken without them, and they are
    /// counted (`unknownFields` of "Metrics dropped").
    #[serde(flatten, skip_serializing)]
    pub unknown: Map<String, Value>,
}

impl FileLine {
    /// The time a line happened at, to order lines of several files; a schema has none.
    pub fn time(&self) -> f64 {
        match self {
            FileLine::Marker(marker) => marker.start_time,
            FileLine::Begin(begin) => begin.time,
            FileLine::End(end) => end.time,
            FileLine::Metric(metric) => metric.time,
            FileLine::Schema(_) | FileLine::Unknown => f64::NEG_INFINITY,
        }
    }
}

/// The match key of a begin or end: `id:ID` across files, else `file:FILE:NAME`.
pub fn interval_key(file: &str, name: &str, id: Option<&str>) -> String {
    match id {
        Some(id) => format!("id:{id}"),
        None => format!("file:{file}:{name}"),
    }
}
