//! The task's log file as a source (`record --task-log`, the daemon's `task start
//! --task-log`; SPEC.md, "Following a task's log"): read every sampling interval as `tail
//! -F` reads it, its new whole lines sent as `Log` markers, and its stat lines as metric
//! markers, in one batch that ends in a checkpoint, as marker-file lines are, so that a
//! finalizer after a kill, or the next recording, takes the rest from there, each line once.

use crate::channel::MarkerSink;
use crate::error::{spawn, RecorderError};
use crate::task_output::stats::StatLines;
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use std::path::Path;
use std::time::{Duration, Instant};
use tc_profile_format::task_log::{LogFollower, Placement};
use tc_profile_format::{encode_line_into, Checkpoint, FileProgress, Ingest, Line, MetricLimits};

/// The running source; [`LogFileSource::stop`] takes the last lines and ends it.
pub(crate) struct LogFileSource {
    stop: Sender<Stop>,
    /// Disconnected when the source's thread ends.
    ended: Receiver<()>,
}

/// How the source ends.
struct Stop {
    deadline: Instant,
    /// The file is done with: its last line without a newline taken, its checkpoint
    /// `done`. Else it goes on (a later recording resumes it) and only whole lines count.
    last: bool,
}

impl LogFileSource {
    /// Follows `path` from the checkpoint in `resume` of the file now there, if any.
    pub(crate) fn start(
        path: &Path,
        resume: &[FileProgress],
        sink: MarkerSink,
        limits: MetricLimits,
        interval: Duration,
    ) -> Result<LogFileSource, RecorderError> {
        let mut follower = LogFollower::new(path);
        follower.resume(resume);
        let (stop, stopped) = bounded(1);
        let (end, ended) = bounded::<()>(0);
        spawn("tc-profile-task-log", move || {
            let _end = end;
            run(follower, &sink, StatLines::new(limits), interval, &stopped);
        })?;
        Ok(LogFileSource { stop, ended })
    }

    /// Takes every line written so far (with `last`, a last one without its newline too,
    /// and the file is done), then stops; by `deadline` at most (what is left stays in the
    /// file for the finalizer or the next recording).
    pub(crate) fn stop(self, deadline: Instant, last: bool) {
        let _ = self.stop.send(Stop { deadline, last });
        let _ = self.ended.recv_deadline(deadline);
    }
}

/// What one read of the file is taken with.
struct Reading {
    follower: LogFollower,
    placement: Placement,
    stats: StatLines,
    /// When the previous read was (log time): a stat line read now was written since.
    previous: f64,
}

fn run(
    follower: LogFollower,
    sink: &MarkerSink,
    stats: StatLines,
    interval: Duration,
    stopped: &Receiver<Stop>,
) {
    let now = sink.now();
    let mut reading = Reading {
        follower,
        placement: Placement {
            start_epoch_ms: sink.clock().start_epoch_ms(),
            latest: 0.0,
            // Before the first line with a time: when the file was first read.
            fallback: now,
        },
        stats,
        previous: now,
    };
    loop {
        let stop = match stopped.recv_timeout(interval) {
            Ok(stop) => Some(stop),
            Err(RecvTimeoutError::Disconnected) => Some(Stop {
                deadline: Instant::now(),
                last: true,
            }),
            Err(RecvTimeoutError::Timeout) => None,
        };
        let last = stop.as_ref().is_some_and(|stop| stop.last);
        while reading.take(sink, last) {
            if stop.as_ref().is_some_and(|s| Instant::now() >= s.deadline) {
                return;
            }
        }
        if stop.is_some() {
            return;
        }
    }
}

impl Reading {
    /// Sends one batch of new lines; whether there is more to read at once.
    fn take(&mut self, sink: &MarkerSink, last: bool) -> bool {
        let now = sink.now();
        self.placement.latest = now;
        let mut bytes = Vec::new();
        encode_line_into(&mut bytes, &Line::Ingest(Ingest { task_log: true }));
        let mut count = 2;
        let (placement, stats, previous) = (&mut self.placement, &mut self.stats, self.previous);
        let read = self.follower.read(last, &mut |line| {
            if !stats.take(&line, previous) {
                encode_line_into(&mut bytes, &Line::Marker(placement.file_marker(&line)));
                count += 1;
            }
        });
        for metric in stats.flush(now) {
            encode_line_into(&mut bytes, &Line::Marker(metric));
            count += 1;
        }
        self.previous = now;
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
}
