//! The time base of a log: `meta.startTime` in Unix epoch milliseconds, and every other
//! time in milliseconds since then, read from a monotonic clock.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Converts monotonic instants to log times. Copyable: every source holds its own.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
    start_epoch_ms: f64,
}

impl Clock {
    pub fn start() -> Clock {
        let start = Instant::now();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Clock {
            start,
            start_epoch_ms: micros_to_ms(since_epoch.as_micros()),
        }
    }

    /// `meta.startTime`.
    pub fn start_epoch_ms(&self) -> f64 {
        self.start_epoch_ms
    }

    /// Milliseconds since the start, rounded to the microsecond.
    pub fn now_ms(&self) -> f64 {
        self.ms_at(Instant::now())
    }

    pub fn ms_at(&self, instant: Instant) -> f64 {
        micros_to_ms(instant.saturating_duration_since(self.start).as_micros())
    }

    /// The log time of a Unix epoch time in milliseconds (what marker files carry).
    pub fn ms_from_epoch(&self, epoch_ms: f64) -> f64 {
        ((epoch_ms - self.start_epoch_ms) * 1000.0).round() / 1000.0
    }
}

fn micros_to_ms(micros: u128) -> f64 {
    micros as f64 / 1000.0
}
