//! The task's log file as a source (`record --task-log`; SPEC.md, "Following a task's
//! log"): read every sampling interval as `tail -F` reads it, its new whole lines sent as
//! `Log` markers in one batch that ends in a checkpoint, as marker-file lines are, so
//! that a finalizer after a kill takes the rest from there, each line once.

use crate::channel::MarkerSink;
use crate::error::{spawn, RecorderError};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use std::path::Path;
use std::time::{Duration, Instant};
use tc_profile_format::task_log::{LogFollower, Placement};
use tc_profile_format::{encode_line_into, Checkpoint, Ingest, Line};

/// The running source; [`LogFileSource::stop`] takes the last lines and ends it.
pub(crate) struct LogFileSource {
    stop: Sender<Instant>,
    /// Disconnected when the source's thread ends.
    ended: Receiver<()>,
}

impl LogFileSource {
    pub(crate) fn start(
        path: &Path,
        sink: MarkerSink,
        interval: Duration,
    ) -> Result<LogFileSource, RecorderError> {
        let follower = LogFollower::new(path);
        let (stop, stopped) = bounded(1);
        let (end, ended) = bounded::<()>(0);
        spawn("tc-profile-task-log", move || {
            let _end = end;
            run(follower, &sink, interval, &stopped);
        })?;
        Ok(LogFileSource { stop, ended })
    }

    /// Takes every line written so far, a last one without its newline included, then
    /// stops; by `deadline` at most (what is left stays in the file for the finalizer).
    pub(crate) fn stop(self, deadline: Instant) {
        let _ = self.stop.send(deadline);
        let _ = self.ended.recv_deadline(deadline);
    }
}

fn run(
    mut follower: LogFollower,
    sink: &MarkerSink,
    interval: Duration,
    stopped: &Receiver<Instant>,
) {
    let mut placement = Placement {
        start_epoch_ms: sink.clock().start_epoch_ms(),
        latest: 0.0,
        // Before the first line with a time: when the file was first read.
        fallback: sink.now(),
    };
    loop {
        let deadline = match stopped.recv_timeout(interval) {
            Ok(deadline) => Some(deadline),
            Err(RecvTimeoutError::Disconnected) => Some(Instant::now()),
            Err(RecvTimeoutError::Timeout) => None,
        };
        while take(&mut follower, sink, &mut placement, deadline.is_some()) {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
        }
        if deadline.is_some() {
            return;
        }
    }
}

/// Sends one batch of new lines; whether there is more to read at once.
fn take(
    follower: &mut LogFollower,
    sink: &MarkerSink,
    placement: &mut Placement,
    last: bool,
) -> bool {
    placement.latest = sink.now();
    let mut bytes = Vec::new();
    encode_line_into(&mut bytes, &Line::Ingest(Ingest { task_log: true }));
    let mut count = 2;
    let read = follower.read(last, &mut |line| {
        encode_line_into(&mut bytes, &Line::Marker(placement.file_marker(&line)));
        count += 1;
    });
    if let Some(progress) = read.progress {
        let checkpoint = Checkpoint {
            files: vec![progress],
        };
        encode_line_into(&mut bytes, &Line::Checkpoint(checkpoint));
        // Never dropped: a later checkpoint would claim these lines.
        sink.send_batch(bytes, count, false);
    }
    read.more
}
