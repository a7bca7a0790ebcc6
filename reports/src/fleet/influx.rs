//! The tasks of a fleet from InfluxDB: the `tc_profile_task` rows `export` wrote over a
//! span, read a chunk at a time, each row a [`FleetTask`] by the same names.

use crate::export::report::Figure;
use crate::export::TASK_MEASUREMENT;
use crate::fleet::task::FleetTask;
use serde_json::Value;
use std::time::Duration;
use tc_profile_influx::{query_influx, InfluxTarget, QueryError};

/// How long the query may take, its answer read whole.
const QUERY_TIMEOUT: Duration = Duration::from_secs(600);

/// Calls `each_task` with every task exported in the last `since` (an InfluxQL duration
/// literal: `30d`, `12h`; checked by the caller); returns how many.
pub fn read_influx(
    target: &InfluxTarget,
    since: &str,
    mut each_task: impl FnMut(FleetTask),
) -> Result<u64, QueryError> {
    let statement = format!("SELECT * FROM \"{TASK_MEASUREMENT}\" WHERE time > now() - {since}");
    query_influx(target, &statement, QUERY_TIMEOUT, |columns, values| {
        each_task(task_of_row(columns, values));
    })
}

/// Strings are tags, numbers and booleans figures; `time` is neither.
fn task_of_row(columns: &[String], values: &[Value]) -> FleetTask {
    let pairs = || columns.iter().zip(values).filter(|(c, _)| *c != "time");
    let tags = pairs()
        .filter_map(|(c, v)| Some((c.clone(), v.as_str()?.to_owned())))
        .collect();
    FleetTask::from_figures(tags, |key| {
        let (_, value) = pairs().find(|(c, _)| *c == key)?;
        match value {
            Value::Bool(flag) => Some(Figure::Flag(*flag)),
            value => value.as_f64().map(Figure::Number),
        }
    })
}
