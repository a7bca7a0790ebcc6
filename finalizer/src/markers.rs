//! Merges what a recorder had not yet taken from the marker files of its profile directory
//! (SPEC.md, "Exactly once"): each file from its last checkpointed offset.

use crate::reader::Recording;
use crate::task_log::task_log_of;
use serde_json::Value;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use tc_profile_format::marker_file::{Limits, Problem};
use tc_profile_format::profile_dir::DirReader;
use tc_profile_format::scope::MetricScopes;
use tc_profile_format::{Merger, MetricLimits};

/// The profile directory named in the log's meta.
pub fn profile_dir_of(recording: &Recording) -> Option<PathBuf> {
    let dir = recording
        .meta
        .get("tcProfile")?
        .get("profileDir")?
        .as_str()?;
    Some(PathBuf::from(dir))
}

/// Reads every marker file of `dir` past its checkpoint into the recording. The batch
/// the recorder did not finish is dropped once the directory could be read: it is read
/// again from the files.
pub fn merge_profile_dir(recording: &mut Recording, dir: &Path, limits: &Limits) -> io::Result<()> {
    let mut reader = DirReader::open(dir, limits.clone())?;
    // The task's log file is checkpointed by its path, which no marker file's name is.
    let task_log = task_log_of(recording).map(|path| path.to_string_lossy().into_owned());
    for progress in recording.progress.values() {
        if Some(&progress.name) != task_log.as_ref() {
            reader.resume(progress);
        }
    }
    reader.resume_excess(recording.problems.count(Problem::TooManyFiles));
    let start = recording
        .meta
        .get("startTime")
        .and_then(Value::as_f64)
        .unwrap_or_default();
    let interval_ms = recording
        .meta
        .get("interval")
        .and_then(Value::as_f64)
        .unwrap_or(100.0);
    let mut next_id = recording.max_open_id;
    let mut merger = Merger::new(
        start,
        limits.clone(),
        recording
            .meta
            .get("markerSchema")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
        Box::new(move || {
            next_id += 1;
            next_id
        }),
    )
    .with_metrics(metric_limits(recording), interval_ms);
    for schema in &recording.schemas {
        merger.adopt_schema(schema);
    }
    for open in recording.open.values() {
        merger.adopt(open.clone());
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1000.0;
    let mut unfinished = recording.unfinished_batch.take();
    loop {
        let batch = match merger.read_batch(&mut reader, true, now) {
            Ok(batch) => batch,
            Err(error) => {
                recording.unfinished_batch = unfinished;
                return Err(error);
            }
        };
        unfinished = None;
        for line in batch.lines {
            // Marker-file lines are never headers: apply refuses nothing here.
            let _ = recording.apply(line);
        }
        for dropped in &batch.dropped {
            recording.problems.add(dropped);
        }
        if !batch.scan.more {
            return Ok(());
        }
    }
}

/// The scopes granted to the task's metrics (`meta.tcProfile.metricScopes`).
fn metric_scopes(recording: &Recording) -> MetricScopes {
    let granted = recording.meta["tcProfile"]["metricScopes"].as_array();
    let granted = granted.into_iter().flatten().filter_map(Value::as_str);
    MetricScopes::new(granted.map(str::to_owned).collect())
}

/// The prefix and series cap the recorder used (`meta.tcProfile.statsd`), else the
/// defaults, as the recorder does without a statsd listener; a prefix the recorder would
/// have refused is not used.
fn metric_limits(recording: &Recording) -> MetricLimits {
    let statsd = recording
        .meta
        .get("tcProfile")
        .and_then(|t| t.get("statsd"));
    let defaults = MetricLimits {
        scopes: metric_scopes(recording),
        ..MetricLimits::default()
    };
    let Some(statsd) = statsd else {
        return defaults;
    };
    MetricLimits {
        prefix: statsd["prefix"]
            .as_str()
            .filter(|prefix| MetricLimits::is_valid_prefix(prefix))
            .map_or(defaults.prefix, str::to_owned),
        max_series: statsd["maxSeries"]
            .as_u64()
            .map_or(defaults.max_series, |n| n as usize),
        scopes: defaults.scopes,
    }
}
