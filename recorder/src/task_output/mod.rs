//! The command's stdout and stderr as a source (SPEC.md, "Log lines"): a relay thread per
//! stream passes the bytes through unchanged and cuts them into lines, and one consumer
//! thread turns the lines into `Log` markers and `[taskcluster-task:stat]` lines into
//! metric tracks. The relays never wait for the recording; the recording waits for the
//! relays only while they still pass bytes through.

mod consumer;
mod relay;
pub(crate) mod stats;

use crate::channel::MarkerSink;
use crate::error::{spawn, RecorderError};
use consumer::Consumer;
use crossbeam_channel::{bounded, Sender};
use relay::{relay, Message, RelayCounters};
use std::fs::File;
use std::io::Read;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tc_profile_format::task_log::Stream;
use tc_profile_format::MetricLimits;

/// Reads whose lines wait for the consumer at most (a read of 64 KiB holds at most that
/// much text, and a line's overhead); past this, the relays drop lines, counted, rather
/// than wait.
const QUEUE_READS: usize = 16;
/// How long the end of the recording waits for a relay that passes nothing through: a
/// process the command left behind may hold its pipe open for ever.
const IDLE_RELAY_WAIT: Duration = Duration::from_secs(1);

/// The running source.
pub(crate) struct TaskOutput {
    lines: Sender<Message>,
    counters: RelayCounters,
    markers: MarkerSink,
    relays: Vec<JoinHandle<()>>,
    consumer: JoinHandle<()>,
}

impl TaskOutput {
    pub(crate) fn start(
        markers: &MarkerSink,
        limits: MetricLimits,
        interval: Duration,
    ) -> Result<TaskOutput, RecorderError> {
        let (lines, messages) = bounded(QUEUE_READS);
        let counters = RelayCounters::default();
        let consumer = Consumer::new(
            markers.clone(),
            limits,
            interval,
            counters.queue_full.clone(),
        );
        let consumer = spawn("tc-profile-output", move || consumer.run(messages))?;
        Ok(TaskOutput {
            lines,
            counters,
            markers: markers.clone(),
            relays: Vec::new(),
            consumer,
        })
    }

    /// Passes `from` through to `to` on a thread of its own, recording its lines.
    pub(crate) fn relay(
        &mut self,
        from: impl Read + Send + 'static,
        to: File,
        stream: Stream,
    ) -> Result<(), RecorderError> {
        let lines = self.lines.clone();
        let clock = self.markers.clock();
        let counters = self.counters.clone();
        let thread = match stream {
            Stream::Stdout => "tc-profile-stdout",
            Stream::Stderr | Stream::File => "tc-profile-stderr",
        };
        let handle = spawn(thread, move || {
            relay(from, to, stream, lines, clock, counters)
        })?;
        self.relays.push(handle);
        Ok(())
    }

    /// Waits for the relays to reach the end of their streams, as long as they pass
    /// bytes through and `deadline` has not passed; then stops the consumer. A relay still
    /// blocked goes on passing bytes through, unrecorded, until the process exits.
    pub(crate) fn stop(self, deadline: Instant) {
        let mut last_progress = (Instant::now(), self.counters.bytes.load(Ordering::Relaxed));
        while !self.relays.iter().all(JoinHandle::is_finished) && Instant::now() < deadline {
            let bytes = self.counters.bytes.load(Ordering::Relaxed);
            if bytes != last_progress.1 {
                last_progress = (Instant::now(), bytes);
            } else if last_progress.0.elapsed() >= IDLE_RELAY_WAIT {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // A blocking send: the consumer blocks only on its receive, so it takes Stop once it
        // has drained the queue; a Stop given up at the deadline would leave the join
        // waiting for relays that a process left holding the pipes keeps alive.
        let _ = self.lines.send(Message::Stop);
        let _ = self.consumer.join();
    }
}
