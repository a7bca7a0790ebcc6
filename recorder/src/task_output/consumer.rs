//! The consumer of both streams' lines: the rate cap, the `Log` markers, and the
//! `[taskcluster-task:stat]` lines, aggregated into metric tracks as statsd packets are.

use super::relay::Message;
use super::stats::StatLines;
use crate::channel::MarkerSink;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::task_log::{Captured, Placement, Stream};
use tc_profile_format::{Marker, MetricLimits};

/// Lines a second kept on average, over both streams.
pub(crate) const LINES_PER_SECOND: f64 = 1000.0;
/// Lines kept in a burst above the rate.
pub(crate) const BURST_LINES: f64 = 20_000.0;

pub(crate) struct Consumer {
    markers: MarkerSink,
    start_epoch_ms: f64,
    bucket: Bucket,
    stats: StatLines,
    interval: Duration,
    /// When to flush the metric interval being taken.
    flush_at: Option<Instant>,
    /// Lines dropped by the relays, their queue full.
    queue_full: Arc<AtomicU64>,
    over_rate: u64,
    /// The first and last time a line was dropped.
    drop_span: Option<(f64, f64)>,
}

impl Consumer {
    pub(crate) fn new(
        markers: MarkerSink,
        limits: MetricLimits,
        interval: Duration,
        queue_full: Arc<AtomicU64>,
    ) -> Consumer {
        Consumer {
            start_epoch_ms: markers.clock().start_epoch_ms(),
            markers,
            bucket: Bucket::new(),
            stats: StatLines::new(limits),
            interval,
            flush_at: None,
            queue_full,
            over_rate: 0,
            drop_span: None,
        }
    }

    /// Takes lines until [`Message::Stop`], then flushes the metrics and says what was
    /// dropped.
    pub(crate) fn run(mut self, messages: Receiver<Message>) {
        loop {
            // Without a metric interval due there is nothing to wake for: Stop is a message.
            let message = match self.flush_at {
                Some(flush_at) => {
                    messages.recv_timeout(flush_at.saturating_duration_since(Instant::now()))
                }
                None => messages.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match message {
                Ok(Message::Lines { stream, lines }) => {
                    for (line, arrival) in lines {
                        self.take(&line, stream, arrival);
                    }
                }
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self
                .flush_at
                .is_some_and(|flush_at| Instant::now() >= flush_at)
            {
                self.flush_metrics();
            }
        }
        self.flush_metrics();
        self.note_drops();
    }

    fn take(&mut self, line: &Captured, stream: Stream, arrival: f64) {
        if self.stats.take(line, self.markers.now()) {
            let interval = self.interval;
            self.flush_at
                .get_or_insert_with(|| Instant::now() + interval);
            return;
        }
        if !self.bucket.take(arrival) {
            self.over_rate += 1;
            self.saw_drop(arrival);
            return;
        }
        let placement = Placement {
            start_epoch_ms: self.start_epoch_ms,
            latest: arrival,
            fallback: arrival,
        };
        self.markers.marker(&line.marker(stream, &placement));
    }

    fn flush_metrics(&mut self) {
        for marker in self.stats.flush(self.markers.now()) {
            self.markers.marker(&marker);
        }
        self.flush_at = None;
    }

    fn saw_drop(&mut self, time: f64) {
        let (first, _) = self.drop_span.unwrap_or((time, time));
        self.drop_span = Some((first, time));
    }

    /// One `Log lines dropped` interval, from the first line dropped to the last.
    fn note_drops(&mut self) {
        let queue_full = self.queue_full.load(Ordering::Relaxed);
        if queue_full > 0 {
            self.saw_drop(self.markers.now());
        }
        let Some((first, last)) = self.drop_span else {
            return;
        };
        let text = format!(
            "{} lines over the rate cap ({LINES_PER_SECOND} a second, bursts of \
             {BURST_LINES}), {queue_full} while the recorder was behind",
            self.over_rate
        );
        let marker = Marker::interval("Log lines dropped", first, last)
            .with_category(category::RECORDER)
            .with_data(json!({"type": data_type::TEXT, "text": text}));
        self.markers.marker(&marker);
    }
}

/// A token bucket: [`BURST_LINES`] at once, refilled at [`LINES_PER_SECOND`].
struct Bucket {
    tokens: f64,
    /// Log time of the last refill.
    last: Option<f64>,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket {
            tokens: BURST_LINES,
            last: None,
        }
    }

    /// Whether a line arriving at `time` (ms) is kept.
    fn take(&mut self, time: f64) -> bool {
        let elapsed = self.last.map_or(0.0, |last| (time - last).max(0.0));
        self.last = Some(time);
        self.tokens = (self.tokens + elapsed / 1000.0 * LINES_PER_SECOND).min(BURST_LINES);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_keeps_a_burst_then_the_rate() {
        let mut bucket = Bucket::new();
        let burst = (0..30_000).filter(|_| bucket.take(0.0)).count();
        assert_eq!(burst, BURST_LINES as usize);
        let next_second = (0..5_000).filter(|i| bucket.take(*i as f64 / 5.0)).count();
        assert!(
            (999..=1001).contains(&next_second),
            "{next_second} lines in the next second"
        );
    }
}
