//! Forwarding to the InfluxDB of `--export-influx` while the task runs (SPEC.md,
//! "Forwarding"): the endpoint queues each point it answered 204 for, named as in the
//! profile, stamped, and tagged with the task; one thread sends them in batches, retries
//! with backoff while the server is down, and at the end sends what is left until a
//! deadline. Best effort: the log is the record, and the queue is capped.

use crate::error::{spawn, RecorderError};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tc_profile_format::line_protocol::{FieldValue, Point, Precision};
use tc_profile_format::{sanitize_name, sanitize_tag, sorted_tags, TASK_TAGS};
use tc_profile_influx::{
    write_influx, InfluxTarget, Precision as WritePrecision, Retry, WriteError,
};

/// Points a batch holds at most (what the InfluxDB clients send at once).
const BATCH_POINTS: usize = 5_000;
/// A batch that is not full leaves this long after the previous one.
const BATCH_PERIOD: Duration = Duration::from_secs(1);
/// Bytes of unsent lines kept at most: past them, new points are counted, not queued.
pub const MAX_UNSENT_BYTES: usize = 32 << 20;
/// The wait after a failed try, doubled after each failure up to the longest.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const LONGEST_BACKOFF: Duration = Duration::from_secs(4);
/// The longest wait for one try, connection included.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// What forwarding did, once it has ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardStats {
    /// The InfluxDB's base URL.
    pub url: String,
    /// Points the InfluxDB took.
    pub forwarded: u64,
    /// Points still unsent when the wait at the end was over.
    pub unsent: u64,
    /// Points left out because the unsent ones held [`MAX_UNSENT_BYTES`].
    pub over_cap: u64,
    /// Points the InfluxDB refused for good (bad credentials, no such database, bad data).
    pub refused: u64,
    /// The last error, as the client words it.
    pub last_error: Option<String>,
}

impl ForwardStats {
    /// Points the task wrote that did not reach the InfluxDB.
    pub fn undelivered(&self) -> u64 {
        self.unsent + self.over_cap + self.refused
    }
}

/// How the endpoint names, stamps and tags a point it forwards.
#[derive(Clone)]
pub(crate) struct Forwarding {
    pub queue: ForwardQueue,
    /// The metric prefix: a point's measurement is named as its tracks are.
    pub prefix: String,
    /// The task's identity ([`TASK_TAGS`]), which replaces the point's own tags of those keys.
    pub task_tags: Vec<(String, String)>,
}

impl Forwarding {
    /// The line forwarded for `point` of a write of `precision` that arrived at
    /// `arrival_ns` (epoch ns, the time of a point without one, as InfluxDB stamps it).
    /// Every line carries its timestamp, so that a batch sent twice (its answer lost)
    /// overwrites itself in InfluxDB instead of doubling.
    pub fn line(&self, point: &Point, precision: Precision, arrival_ns: i64) -> Option<String> {
        let timestamp = match point.timestamp {
            Some(timestamp) => precision.epoch_ns(timestamp)?,
            None => arrival_ns,
        };
        let own = point
            .tags
            .iter()
            .map(|(key, value)| sanitize_tag(key, value))
            .filter(|(key, _)| !TASK_TAGS.contains(&key.as_str()));
        // Named as in the profile: a key given twice keeps its last value.
        let tags = sorted_tags(own.chain(self.task_tags.iter().cloned()));
        let fields = point
            .fields
            .iter()
            .map(|(key, value)| Some((sanitize_name(key)?, influx_1_value(value))))
            .collect::<Option<_>>()?;
        let named = Point {
            measurement: format!("{}{}", self.prefix, sanitize_name(&point.measurement)?),
            tags,
            fields,
            timestamp: Some(timestamp),
        };
        let mut line = String::new();
        named.encode_into(&mut line);
        Some(line)
    }
}

/// A value as InfluxDB 1.x takes it: without unsigned integers (`12u` is refused unless
/// it was built with them), so those become integers, or floats past `i64::MAX`.
fn influx_1_value(value: &FieldValue) -> FieldValue {
    match value {
        FieldValue::Unsigned(unsigned) => match i64::try_from(*unsigned) {
            Ok(integer) => FieldValue::Integer(integer),
            Err(_) => FieldValue::Float(*unsigned as f64),
        },
        other => other.clone(),
    }
}

/// The sending end: what the endpoint's handlers share.
#[derive(Clone)]
pub(crate) struct ForwardQueue {
    shared: Arc<Shared>,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

#[derive(Default)]
struct Queue {
    lines: VecDeque<String>,
    bytes: usize,
    over_cap: u64,
    /// Set at the end: send what is left until then.
    deadline: Option<Instant>,
}

impl ForwardQueue {
    /// Queues the lines of one request; those past the cap are counted instead.
    pub fn push(&self, lines: Vec<String>) {
        let mut queue = self.shared.lock();
        for line in lines {
            if queue.bytes + line.len() > MAX_UNSENT_BYTES {
                queue.over_cap += 1;
                continue;
            }
            queue.bytes += line.len();
            queue.lines.push_back(line);
        }
        if queue.lines.len() >= BATCH_POINTS {
            self.shared.wake.notify_one();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next batch, once it is full, a period has passed or the end has come, with the
    /// deadline if the end has come; None once there is nothing more to send.
    fn next_batch(&self) -> Option<(Vec<String>, Option<Instant>)> {
        let period_end = Instant::now() + BATCH_PERIOD;
        let mut queue = self.lock();
        loop {
            let now = Instant::now();
            match queue.deadline {
                Some(deadline) if queue.lines.is_empty() || now >= deadline => return None,
                Some(_) => break,
                None if queue.lines.len() >= BATCH_POINTS => break,
                None if now >= period_end && !queue.lines.is_empty() => break,
                None => {}
            }
            // Idle, a look a period: a point that comes leaves within about a second.
            let wait = match queue.lines.is_empty() {
                true => BATCH_PERIOD,
                false => period_end.saturating_duration_since(now),
            };
            queue = self
                .wake
                .wait_timeout(queue, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let count = queue.lines.len().min(BATCH_POINTS);
        Some((queue.lines.drain(..count).collect(), queue.deadline))
    }

    /// Puts a batch that could not be sent back in front, for the next try.
    fn put_back(&self, batch: Vec<String>) {
        let mut queue = self.lock();
        for line in batch.into_iter().rev() {
            queue.lines.push_front(line);
        }
    }

    /// A batch is done with (sent or refused): its bytes, counted until now so that the
    /// cap holds the batch in flight too, are free.
    fn settle(&self, batch: &[String]) {
        self.lock().bytes -= batch.iter().map(String::len).sum::<usize>();
    }

    /// Waits `backoff`, not past the deadline; the end cuts a wait during the task short,
    /// and nothing else does: a full queue's wake-ups would retry at every request.
    fn pause(&self, backoff: Duration) {
        let queue = self.lock();
        let ended = queue.deadline.is_some();
        let wait = match queue.deadline {
            Some(deadline) => backoff.min(deadline.saturating_duration_since(Instant::now())),
            None => backoff,
        };
        let _ = self
            .wake
            .wait_timeout_while(queue, wait, |queue| ended || queue.deadline.is_none());
    }
}

/// The forwarding thread.
pub(crate) struct Forwarder {
    queue: ForwardQueue,
    handle: JoinHandle<ForwardStats>,
}

impl Forwarder {
    pub fn start(target: InfluxTarget) -> Result<Forwarder, RecorderError> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        });
        let handle = spawn("tc-profile-forward", {
            let shared = Arc::clone(&shared);
            move || forward(&shared, &target)
        })?;
        Ok(Forwarder {
            queue: ForwardQueue { shared },
            handle,
        })
    }

    pub fn queue(&self) -> ForwardQueue {
        self.queue.clone()
    }

    /// Sends what is left, for `wait` at most (and the try under way when it is over), and
    /// says what was done. Call once nothing is pushed any more.
    pub fn finish(self, wait: Duration) -> ForwardStats {
        self.end(wait);
        self.handle.join().unwrap_or_default()
    }

    /// Ends forwarding without waiting for it (a recorder dropped without finish).
    pub fn abandon(self) {
        self.end(Duration::ZERO);
    }

    fn end(&self, wait: Duration) {
        let shared = &self.queue.shared;
        shared.lock().deadline = Some(Instant::now() + wait);
        shared.wake.notify_one();
    }
}

fn forward(shared: &Shared, target: &InfluxTarget) -> ForwardStats {
    let mut stats = ForwardStats {
        url: target.url().to_owned(),
        ..ForwardStats::default()
    };
    let mut backoff = FIRST_BACKOFF;
    while let Some((batch, deadline)) = shared.next_batch() {
        let attempt_timeout = deadline.map_or(ATTEMPT_TIMEOUT, |deadline| {
            let left = deadline.saturating_duration_since(Instant::now());
            left.clamp(Duration::from_millis(100), ATTEMPT_TIMEOUT)
        });
        let retry = Retry {
            attempts: 1,
            first_backoff: Duration::ZERO,
            attempt_timeout,
        };
        let body = batch.concat();
        match write_influx(target, body.as_bytes(), WritePrecision::Nanoseconds, retry) {
            Ok(_) => {
                shared.settle(&batch);
                stats.forwarded += batch.len() as u64;
                backoff = FIRST_BACKOFF;
            }
            Err(error) if error.is_transient() => {
                stats.last_error = Some(error.to_string());
                shared.put_back(batch);
                shared.pause(backoff);
                backoff = (backoff * 2).min(LONGEST_BACKOFF);
            }
            Err(error) => {
                shared.settle(&batch);
                let refused = match &error {
                    WriteError::Refused {
                        dropped: Some(dropped),
                        ..
                    } => (*dropped).min(batch.len() as u64),
                    _ => batch.len() as u64,
                };
                stats.forwarded += batch.len() as u64 - refused;
                stats.refused += refused;
                stats.last_error = Some(error.to_string());
            }
        }
    }
    let queue = shared.lock();
    stats.unsent = queue.lines.len() as u64;
    stats.over_cap = queue.over_cap;
    stats
}

#[cfg(test)]
mod tests;
