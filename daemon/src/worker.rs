//! The worker's profile over a span: the machine's segments, one `Task` interval per task
//! (its id, run and exit status), and one `Idle` interval per stretch with no task open,
//! summed in `meta.tcProfile.idleMs`.

use crate::error::DaemonError;
use crate::logs::epoch_ms;
use crate::segments;
use crate::state::{EndedTask, OpenTask};
use crate::tasks::machine_logs;
use serde_json::{json, Map};
use std::path::Path;
use tc_profile_finalizer::{compact_span, uncovered, Profile, Span, SpanLogs};
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::Marker;

/// The span when `--since` is not given and no segment is left: the last hour.
const DEFAULT_SPAN_MS: f64 = 3_600_000.0;

pub fn worker_profile(
    segments_dir: &Path,
    history: &[EndedTask],
    open: &[OpenTask],
    since: Option<f64>,
    until: Option<f64>,
) -> Result<Profile, DaemonError> {
    let end = until.unwrap_or_else(epoch_ms);
    let start = match since {
        Some(since) => since,
        None => segments::list(segments_dir)?
            .first()
            .map_or(end - DEFAULT_SPAN_MS, |s| s.start),
    };
    if start >= end {
        return Err(DaemonError::Request(
            "--since must be before --until".to_owned(),
        ));
    }
    let now = epoch_ms();
    let ended = history.iter().map(|t| {
        let status = match (t.timed_out, t.exit_status) {
            (true, _) => "timed out".to_owned(),
            (false, Some(status)) => format!("exit status {status}"),
            (false, None) => "no exit status given".to_owned(),
        };
        (t.task.as_str(), t.run, t.start_time, t.end_time, status)
    });
    let running = open.iter().map(|t| {
        (
            t.task.as_str(),
            t.run,
            t.start_time,
            now,
            "running".to_owned(),
        )
    });
    let mut extra = Vec::new();
    let mut busy = Vec::new();
    for (task, run, task_start, task_end, status) in ended.chain(running) {
        if task_end < start || task_start > end {
            continue;
        }
        busy.push((task_start - start, task_end - start));
        let text = format!("task {task} run {run}: {status}");
        extra.push(
            Marker::interval("Task", task_start, task_end)
                .with_category(category::TASK)
                .with_data(json!({"type": data_type::TEXT, "text": text})),
        );
    }
    let task_count = extra.len();
    let mut idle_ms = 0.0;
    for (idle_start, idle_end) in uncovered(busy, end - start) {
        idle_ms += idle_end - idle_start;
        extra.push(
            Marker::interval("Idle", start + idle_start, start + idle_end)
                .with_category(category::WORKER)
                .with_data(json!({"type": data_type::TEXT, "text": "no task open"})),
        );
    }
    let logs = SpanLogs {
        own: Vec::new(),
        machine: machine_logs(segments_dir, start, end)?,
        extra,
        tc_profile: Map::from_iter([
            ("idleMs".to_owned(), json!(idle_ms)),
            ("tasks".to_owned(), json!(task_count)),
        ]),
    };
    Ok(compact_span(logs, Span { start, end }))
}
