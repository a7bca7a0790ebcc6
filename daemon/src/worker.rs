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
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tc_profile_finalizer::{compact_span, uncovered, Profile, SpanLogs};
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::Marker;

/// The span when `--since` is not given and no segment is left: the last hour.
const DEFAULT_SPAN_MS: f64 = 3_600_000.0;

/// The span asked for (epoch ms), and the longest one may be (HTTP's; none on the socket).
pub struct Span {
    pub since: Option<f64>,
    pub until: Option<f64>,
    pub max: Option<Duration>,
}

pub fn worker_profile(
    segments_dir: &Path,
    history: &[EndedTask],
    open: &[OpenTask],
    span: Span,
    segment_bytes_read: &AtomicU64,
) -> Result<Profile, DaemonError> {
    let end = span.until.unwrap_or_else(epoch_ms);
    let max_ms = span.max.map(|max| max.as_secs_f64() * 1000.0);
    let start = match span.since {
        Some(since) => since,
        None => {
            let oldest = segments::list(segments_dir)?
                .first()
                .map_or(end - DEFAULT_SPAN_MS, |s| s.start);
            max_ms.map_or(oldest, |max| oldest.max(end - max))
        }
    };
    if start >= end {
        return Err(DaemonError::Request(
            "--since must be before --until".to_owned(),
        ));
    }
    if let (Some(max), Some(max_ms)) = (span.max, max_ms) {
        if end - start > max_ms {
            return Err(DaemonError::Request(format!(
                "the span asked for is over {} s, the most one request may ask for: ask for \
                 less (since= and until=), or start the daemon with a longer --http-max-span",
                max.as_secs()
            )));
        }
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
    let span = tc_profile_finalizer::Span { start, end };
    let logs = SpanLogs {
        own: Vec::new(),
        extra,
        tc_profile: Map::from_iter([
            ("idleMs".to_owned(), json!(idle_ms)),
            ("tasks".to_owned(), json!(task_count)),
        ]),
    };
    let machine = machine_logs(segments_dir, span, segment_bytes_read)?;
    compact_span(logs, machine, span)
}
