//! The machine, recorded by one ordinary [`Recorder`] at a time into a chain of logs
//! (`segments/machine-<epoch ms>-<pid>.jsonl`): rotation starts the next segment's
//! recorder before it finishes the old one, so each segment is valid and crash-safe on
//! its own and no gap opens between two; retention deletes the oldest finished ones. A
//! finished segment no longer changes: the directory is listed and each stated once, at
//! start, and only the segment being written is stated after that.

use crate::config::Retain;
use crate::error::DaemonError;
use crate::logs::epoch_ms;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tc_profile_format::{EndReason, TaskInfo};
use tc_profile_recorder::{Recorder, RecorderConfig, SampleTaken, SharedMachine, SyncPolicy};

/// A segment lasts until it is this large, or [`crate::DaemonConfig::segment_age`] old.
const SEGMENT_BYTES: u64 = 64 << 20;

/// How every recorder of the daemon samples, the segment's and the tasks': every
/// `interval`, on one grid, the machine's files (/proc/stat, meminfo, loadavg) read once a
/// tick for all of them.
#[derive(Clone)]
pub struct Sampling {
    pub interval: Duration,
    pub machine: Arc<SharedMachine>,
}

impl Sampling {
    pub fn new(interval: Duration) -> Sampling {
        Sampling {
            interval,
            machine: Arc::new(SharedMachine::new(interval)),
        }
    }

    /// Sets `config` to sample this way, its sync once an interval.
    pub fn apply(&self, config: &mut RecorderConfig) {
        config.interval = self.interval;
        config.sync = SyncPolicy::interval(self.interval);
        config.shared_machine = Some(Arc::clone(&self.machine));
    }
}

/// A segment log in the directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub path: PathBuf,
    /// Epoch ms, from its name.
    pub start: f64,
}

/// A finished segment and its size.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub segment: Segment,
    pub bytes: u64,
}

/// The segment being written, and the finished ones.
pub struct Segments {
    dir: PathBuf,
    sampling: Sampling,
    age: Duration,
    recorder: Recorder,
    current: Segment,
    started: Instant,
    /// Oldest first.
    finished: Vec<Finished>,
}

impl Segments {
    /// Starts a segment in `dir`; the next one follows it once it is `age` old.
    pub fn start(dir: &Path, sampling: Sampling, age: Duration) -> Result<Segments, DaemonError> {
        std::fs::create_dir_all(dir).map_err(DaemonError::state(dir))?;
        let finished = list(dir)?.into_iter().map(Finished::of).collect();
        let (recorder, current) = start_segment(dir, &sampling)?;
        Ok(Segments {
            dir: dir.to_owned(),
            sampling,
            age,
            recorder,
            current,
            started: Instant::now(),
            finished,
        })
    }

    /// Starts the next segment once this one is old or large enough.
    pub fn rotate_if_due(&mut self) -> Result<(), DaemonError> {
        let size = std::fs::metadata(&self.current.path).map_or(0, |m| m.len());
        if self.started.elapsed() < self.age && size < SEGMENT_BYTES {
            return Ok(());
        }
        let (recorder, current) = start_segment(&self.dir, &self.sampling)?;
        let old = std::mem::replace(&mut self.recorder, recorder);
        let old_segment = std::mem::replace(&mut self.current, current);
        self.started = Instant::now();
        let result = old.finish(EndReason::Stopped);
        self.finished.push(Finished::of(old_segment));
        drop(result?);
        Ok(())
    }

    /// Asks for a machine sample now: see [`Recorder::sample_now`].
    pub fn sample_now(&self) -> SampleTaken {
        self.recorder.sample_now()
    }

    /// Deletes the oldest finished segments beyond `retain` (see [`apply_retention`]).
    pub fn apply_retention(&mut self, retain: Retain, needed_from: f64, now: f64) -> usize {
        let current_start = self.current.start;
        apply_retention(&mut self.finished, current_start, retain, needed_from, now)
    }

    /// How many segments there are, the one being written included, and their bytes.
    pub fn usage(&self) -> (usize, u64) {
        let current = std::fs::metadata(&self.current.path).map_or(0, |m| m.len());
        let finished: u64 = self.finished.iter().map(|f| f.bytes).sum();
        (self.finished.len() + 1, finished + current)
    }

    pub fn finish(self) -> Result<(), DaemonError> {
        drop(self.recorder.finish(EndReason::Stopped)?);
        Ok(())
    }
}

impl Finished {
    fn of(segment: Segment) -> Finished {
        let bytes = std::fs::metadata(&segment.path).map_or(0, |m| m.len());
        Finished { segment, bytes }
    }
}

fn start_segment(dir: &Path, sampling: &Sampling) -> Result<(Recorder, Segment), DaemonError> {
    let start = epoch_ms() as u64;
    let path = dir.join(format!("machine-{start}-{}.jsonl", std::process::id()));
    let mut config = RecorderConfig::new(path.clone());
    sampling.apply(&mut config);
    config.task = TaskInfo::default();
    config.statsd = None;
    config.influx = false;
    let segment = Segment {
        path,
        start: start as f64,
    };
    Ok((Recorder::start(config)?, segment))
}

/// The segments in `dir`, oldest first.
pub fn list(dir: &Path) -> Result<Vec<Segment>, DaemonError> {
    let entries = std::fs::read_dir(dir).map_err(DaemonError::state(dir))?;
    let mut segments: Vec<Segment> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let stem = name.strip_prefix("machine-")?.strip_suffix(".jsonl")?;
            let start = stem.split('-').next()?.parse::<u64>().ok()?;
            Some(Segment {
                path: entry.path(),
                start: start as f64,
            })
        })
        .collect();
    segments.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok(segments)
}

/// The segments that may hold samples of `start..end`: each reaches until the next starts.
pub fn overlapping(segments: &[Segment], start: f64, end: f64) -> Vec<PathBuf> {
    let ends = segments
        .iter()
        .skip(1)
        .map(|s| s.start)
        .chain([f64::INFINITY]);
    segments
        .iter()
        .zip(ends)
        .filter(|(segment, until)| segment.start <= end && *until >= start)
        .map(|(segment, _)| segment.path.clone())
        .collect()
}

/// Deletes the oldest of `finished` beyond `retain`, each reaching until the next starts
/// (the last until `current_start`), never one that reaches past `needed_from` (epoch ms:
/// the start of the oldest open task), and forgets them; returns how many were deleted.
pub fn apply_retention(
    finished: &mut Vec<Finished>,
    current_start: f64,
    retain: Retain,
    needed_from: f64,
    now: f64,
) -> usize {
    // As many ends as segments: none when none has finished yet.
    let ends: Vec<f64> = finished
        .iter()
        .skip(1)
        .map(|f| f.segment.start)
        .chain([current_start])
        .take(finished.len())
        .collect();
    let mut kept_bytes = 0_u64;
    let mut gone = vec![false; finished.len()];
    // Newest first, so that a size budget keeps the most recent.
    for (index, end) in ends.into_iter().enumerate().rev() {
        let Finished { segment, bytes } = &finished[index];
        kept_bytes += bytes;
        let beyond = match retain {
            Retain::Age(age) => now - end > age.as_secs_f64() * 1000.0,
            Retain::Size(bytes) => kept_bytes > bytes,
        };
        gone[index] = beyond && end < needed_from && remove(&segment.path);
    }
    let deleted = gone.iter().filter(|&&gone| gone).count();
    let mut gone = gone.into_iter();
    finished.retain(|_| !gone.next().unwrap_or(false));
    deleted
}

/// Removes a segment; whether it is gone (removed by someone else included).
fn remove(path: &Path) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        Err(error) => error.kind() == std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments_at(dir: &Path, starts: &[u64]) -> Vec<Segment> {
        for start in starts {
            let path = dir.join(format!("machine-{start}-1.jsonl"));
            std::fs::write(path, vec![b'x'; 100]).unwrap();
        }
        std::fs::write(dir.join("other.jsonl"), "").unwrap();
        list(dir).unwrap()
    }

    #[test]
    fn segments_are_listed_in_time_order_and_picked_by_span() {
        let dir = tempfile::tempdir().unwrap();
        let segments = segments_at(dir.path(), &[3000, 1000, 2000]);
        let starts: Vec<f64> = segments.iter().map(|s| s.start).collect();
        assert_eq!(starts, [1000.0, 2000.0, 3000.0]);
        let picked = overlapping(&segments, 2100.0, 2200.0);
        assert_eq!(picked, [segments[1].path.clone()]);
        let picked = overlapping(&segments, 1500.0, 9000.0);
        assert_eq!(picked.len(), 3);
    }

    fn finished_at(dir: &Path, starts: &[u64]) -> Vec<Finished> {
        segments_at(dir, starts)
            .into_iter()
            .map(Finished::of)
            .collect()
    }

    fn starts(finished: &[Finished]) -> Vec<f64> {
        finished.iter().map(|f| f.segment.start).collect()
    }

    #[test]
    fn retention_keeps_the_current_segment_and_what_an_open_task_needs() {
        let dir = tempfile::tempdir().unwrap();
        let mut finished = finished_at(dir.path(), &[1000, 2000, 3000]);
        // 150 bytes: only the newest finished segment fits; the current (from 4000) is
        // not counted. An open task began at 2500: the segment 2000..3000 stays.
        let deleted = apply_retention(&mut finished, 4000.0, Retain::Size(150), 2500.0, 5000.0);
        assert_eq!(deleted, 1);
        assert_eq!(starts(&finished), [2000.0, 3000.0]);
        let left: Vec<f64> = list(dir.path()).unwrap().iter().map(|s| s.start).collect();
        assert_eq!(left, [2000.0, 3000.0]);
        let age = Retain::Age(Duration::from_secs(1));
        let deleted = apply_retention(&mut finished, 4000.0, age, f64::INFINITY, 5000.0);
        // Ended at 3000 and 4000: only the first is over a second old at 5000.
        assert_eq!(deleted, 1);
        assert_eq!(starts(&finished), [3000.0]);
    }

    #[test]
    fn retention_with_no_finished_segment_deletes_nothing() {
        let mut finished = Vec::new();
        let age = Retain::Age(Duration::from_secs(1));
        assert_eq!(
            apply_retention(&mut finished, 4000.0, age, f64::INFINITY, 9e9),
            0
        );
        let size = Retain::Size(0);
        assert_eq!(
            apply_retention(&mut finished, 4000.0, size, f64::INFINITY, 9e9),
            0
        );
    }

    #[test]
    fn retention_counts_the_sizes_known_and_forgets_a_segment_removed_by_someone_else() {
        let dir = tempfile::tempdir().unwrap();
        let mut finished = finished_at(dir.path(), &[1000, 2000, 3000]);
        // Finished segments do not change: their sizes are not read again.
        std::fs::write(&finished[2].segment.path, vec![b'x'; 1000]).unwrap();
        std::fs::remove_file(&finished[0].segment.path).unwrap();
        let deleted = apply_retention(&mut finished, 4000.0, Retain::Size(250), 0.0, 5000.0);
        assert_eq!(
            (deleted, starts(&finished)),
            (0, vec![1000.0, 2000.0, 3000.0])
        );
        let needed_from = f64::INFINITY;
        let deleted = apply_retention(
            &mut finished,
            4000.0,
            Retain::Size(250),
            needed_from,
            5000.0,
        );
        assert_eq!((deleted, starts(&finished)), (1, vec![2000.0, 3000.0]));
    }
}
