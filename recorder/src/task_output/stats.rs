//! `[taskcluster-task:stat]` lines of a task's log (SPEC.md, "Log lines"), whichever source
//! read them (CMD's output or a followed log file): aggregated into metric tracks as the
//! statsd listener's packets are.

use crate::statsd::record_packet;
use tc_profile_format::task_log::{stat_line, Captured};
use tc_profile_format::{Aggregator, Marker, MetricLimits};

pub(crate) struct StatLines {
    metrics: Aggregator,
    /// Log time of the start of the metric interval being taken, when it holds a line.
    since: Option<f64>,
}

impl StatLines {
    pub(crate) fn new(limits: MetricLimits) -> StatLines {
        StatLines {
            metrics: Aggregator::new(limits),
            since: None,
        }
    }

    /// Takes `line` when it is a stat line (whole, under the cap), written at `since` at
    /// the earliest (log time); whether it was.
    pub(crate) fn take(&mut self, line: &Captured, since: f64) -> bool {
        let Some(statsd) = stat_line(&line.text).filter(|_| !line.cut) else {
            return false;
        };
        self.since.get_or_insert(since);
        record_packet(&mut self.metrics, statsd.as_bytes());
        true
    }

    /// The metric markers of the lines taken since the last flush, up to `end`.
    pub(crate) fn flush(&mut self, end: f64) -> Vec<Marker> {
        match self.since.take() {
            Some(start) => self.metrics.flush(start, end),
            None => Vec::new(),
        }
    }
}
