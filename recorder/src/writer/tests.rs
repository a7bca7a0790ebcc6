//! Unit tests of the writer: group commit, sync policies, and lines kept whole and counted
//! through every kind of failure.

use super::memory_disk::MemoryDisk;
use super::*;
use std::sync::atomic::AtomicU64;
use tc_profile_format::{decode_line, encode_line, Line};

fn line(text: &str, urgent: bool) -> Message {
    Message::Line {
        bytes: format!("{text}\n").into_bytes(),
        count: 1,
        urgent,
        acks: Vec::new(),
        checkpointed: false,
    }
}

/// A marker line named `name`, checkpointed (a batch of marker-file lines) or not, and
/// what wakes once the writer has taken it.
fn named(name: &str, checkpointed: bool) -> (Message, crossbeam_channel::Receiver<()>) {
    let (ack, taken) = crossbeam_channel::bounded(1);
    let marker = tc_profile_format::Marker::instant(name, 0.0);
    let message = Message::Line {
        bytes: encode_line(&Line::Marker(marker)),
        count: 1,
        urgent: false,
        acks: vec![ack],
        checkpointed,
    };
    (message, taken)
}

fn writer(disk: &MemoryDisk, policy: SyncPolicy) -> Writer<MemoryDisk> {
    Writer::new(
        disk.clone(),
        "memory".into(),
        0,
        policy,
        Clock::start(),
        Arc::new(AtomicU64::new(0)),
    )
}

/// Sends `count` numbered marker lines and a shutdown; returns the writer's stats.
fn write_markers(disk: &MemoryDisk, count: u32, policy: SyncPolicy) -> WriterStats {
    let (tx, rx) = inbox();
    for i in 0..count {
        let marker = tc_profile_format::Marker::instant(i.to_string(), f64::from(i));
        let bytes = encode_line(&Line::Marker(marker));
        assert!(tx.send(Message::Line {
            bytes,
            count: 1,
            urgent: false,
            acks: Vec::new(),
            checkpointed: false,
        }));
    }
    assert!(tx.send(Message::Shutdown));
    writer(disk, policy).run(rx).0
}

/// Decodes every line; fails on a partial or garbled one.
fn decoded(bytes: &[u8]) -> Vec<Line> {
    assert!(
        bytes.is_empty() || bytes.ends_with(b"\n"),
        "ends in a whole line"
    );
    decoded_whole_lines(bytes)
}

/// Decodes every whole line, ignoring a partial last one.
fn decoded_whole_lines(bytes: &[u8]) -> Vec<Line> {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes[..end]
        .split_inclusive(|&b| b == b'\n')
        .map(|l| decode_line(&l[..l.len() - 1]).expect("every line is whole JSON"))
        .collect()
}

fn marker_numbers(lines: &[Line]) -> Vec<u32> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Marker(m) => Some(m.name.parse().unwrap()),
            _ => None,
        })
        .collect()
}

fn marker_names(lines: &[Line]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Marker(m) => Some(m.name.as_str()),
            _ => None,
        })
        .collect()
}

fn gaps(lines: &[Line]) -> Vec<&Gap> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Gap(gap) => Some(gap),
            _ => None,
        })
        .collect()
}

#[test]
fn the_interval_policy_syncs_at_most_once_a_second() {
    let policy = SyncPolicy::interval(Duration::from_millis(100));
    assert_eq!(policy, SyncPolicy::Interval(Duration::from_secs(1)));
    assert_eq!(policy.name(), "interval:1000ms");
    let slow = SyncPolicy::interval(Duration::from_secs(5));
    assert_eq!(slow, SyncPolicy::Interval(Duration::from_secs(5)));
}

#[test]
fn urgent_line_is_durable_before_the_next_is_taken() {
    let disk = MemoryDisk::default();
    let (tx, rx) = inbox();
    let writer = writer(&disk, SyncPolicy::Interval(Duration::from_secs(3600)));
    let handle = std::thread::spawn(move || writer.run(rx));
    assert!(tx.send(line("a", true)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while disk.durable() != b"a\n" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(disk.durable(), b"a\n");
    assert!(tx.send(Message::Shutdown));
    let (stats, _) = handle.join().unwrap();
    assert_eq!(stats.lines, 1);
}

#[test]
fn interval_policy_syncs_within_the_period() {
    let disk = MemoryDisk::default();
    let (tx, rx) = inbox();
    let writer = writer(&disk, SyncPolicy::Interval(Duration::from_millis(20)));
    let handle = std::thread::spawn(move || writer.run(rx));
    for i in 0..100 {
        assert!(tx.send(line(&i.to_string(), false)));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while disk.durable().len() < 290 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        disk.durable().len(),
        290,
        "all 100 lines durable without a shutdown"
    );
    drop(tx);
    let (stats, _) = handle.join().unwrap();
    assert_eq!(stats.lines, 100);
    assert!(stats.syncs < 100, "group commit: {} syncs", stats.syncs);
}

// Its errors are Unix errno values, and their messages Unix's.
#[cfg(unix)]
#[test]
fn a_full_disk_loses_lines_but_leaves_no_partial_one_and_a_gap_says_how_many() {
    // Operations 4 to 9 fail: the append of line 3, its cut, and so on.
    let disk = MemoryDisk::failing(4..10, libc::ENOSPC);
    let stats = write_markers(&disk, 10, SyncPolicy::Never);
    let lines = decoded(&disk.written());
    let kept = marker_numbers(&lines);
    let gaps = gaps(&lines);
    assert_eq!(gaps.len(), 1, "{lines:?}");
    assert_eq!(kept.len() as u64 + gaps[0].lines, 10, "{kept:?}");
    assert_eq!(stats.lines_lost, gaps[0].lines);
    assert!(
        gaps[0].reason.contains("No space left"),
        "{}",
        gaps[0].reason
    );
    assert!(gaps[0].start_time <= gaps[0].end_time);
    assert!(kept.windows(2).all(|w| w[0] < w[1]), "in order: {kept:?}");
    assert_eq!(kept.last(), Some(&9), "writing resumed");
}

#[test]
fn a_failed_sync_is_marked_as_a_span_that_may_not_be_durable() {
    // Operation 4 is the sync after the first batch of three lines.
    let disk = MemoryDisk::failing(4..5, libc::EIO);
    let (tx, rx) = inbox();
    for i in 0..3 {
        assert!(tx.send(line(&format!("{{\"type\":\"x{i}\"}}"), false)));
    }
    assert!(tx.send(Message::Shutdown));
    let (stats, _) = writer(&disk, SyncPolicy::Always).run(rx);
    let lines = decoded(&disk.written());
    let gaps = gaps(&lines);
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0].lines, 0);
    assert!(
        gaps[0].reason.contains("fdatasync failed"),
        "{}",
        gaps[0].reason
    );
    assert_eq!(stats.syncs, 1, "the final sync makes the gap line durable");
    assert_eq!(disk.durable(), disk.written());
}

/// Like redb's crash tests: fail every operation from the Nth on for a while, for every
/// N, and check what was written against what was sent.
#[test]
fn any_run_of_failed_operations_leaves_whole_lines_in_order_with_losses_counted() {
    for policy in [SyncPolicy::Always, SyncPolicy::Never] {
        for first in 1..60 {
            for length in [1, 2, 3, 7, 1000] {
                let disk = MemoryDisk::failing(first..first + length, libc::EIO);
                let stats = write_markers(&disk, 20, policy);
                let operations = disk.state.lock().unwrap().operations;
                let written = disk.written();
                let case = format!("{policy:?}, fail {first}+{length} of {operations}");
                if !written.ends_with(b"\n") {
                    assert!(first + length >= operations, "torn tail: {case}");
                }
                let lines = decoded_whole_lines(&written);
                let kept = marker_numbers(&lines);
                let in_gaps: u64 = gaps(&lines).iter().map(|g| g.lines).sum();
                let case = format!("{case}: {kept:?}");
                assert!(kept.windows(2).all(|w| w[0] < w[1]), "{case}");
                assert_eq!(kept.len() as u64 + stats.lines_lost, 20, "{case}");
                // Lines lost at the end, with no line after them, have no gap line.
                assert!(in_gaps <= stats.lines_lost, "{case}");
                let unwritten = stats.unwritten_gap.map_or(0, |gap| gap.lines);
                assert_eq!(in_gaps + unwritten, stats.lines_lost, "{case}");
            }
        }
    }
}

/// Runs a writer over `disk` on a thread of its own and sends it `steps` in order: a
/// line's name (a `b` first: a checkpointed batch), waiting until it is taken, or `full`
/// and `room` to fail the disk's operations from then on or no longer.
fn write_steps(disk: &MemoryDisk, steps: &[&str]) -> WriterStats {
    let (tx, rx) = inbox();
    let writer = writer(disk, SyncPolicy::Never);
    let handle = std::thread::spawn(move || writer.run(rx));
    for step in steps {
        match *step {
            "full" => disk.fail_from_now(libc::ENOSPC),
            "room" => disk.recover(),
            name => {
                let (message, taken) = named(name, name.starts_with('b'));
                assert!(tx.send(message));
                taken.recv_timeout(Duration::from_secs(60)).unwrap();
            }
        }
    }
    assert!(tx.send(Message::Shutdown));
    handle.join().unwrap().0
}

#[test]
fn a_checkpointed_batch_is_held_through_a_full_disk_and_written_once_there_is_room() {
    let disk = MemoryDisk::default();
    let steps = ["p0", "full", "b1", "p1", "b2", "room", "p2", "b3"];
    let stats = write_steps(&disk, &steps);
    let lines = decoded(&disk.written());
    assert_eq!(marker_names(&lines), ["p0", "b1", "b2", "p2", "b3"]);
    assert_eq!(stats.lines_lost, 1, "p1 alone");
    assert_eq!(gaps(&lines).len(), 1);
    assert_eq!(gaps(&lines)[0].lines, 1);
}

#[test]
fn batches_still_held_at_the_end_are_left_out_of_the_log_and_not_counted_lost() {
    let disk = MemoryDisk::default();
    let stats = write_steps(&disk, &["p0", "full", "b1", "b2"]);
    let lines = decoded_whole_lines(&disk.written());
    assert_eq!(marker_names(&lines), ["p0"]);
    assert_eq!(stats.lines_lost, 0, "finalize takes them from their files");
    assert!(stats.unwritten_gap.is_none());
}

#[test]
fn batches_past_the_held_bound_are_lost_and_counted() {
    let disk = MemoryDisk::default();
    let (tx, rx) = inbox();
    let writer = writer(&disk, SyncPolicy::Never);
    let handle = std::thread::spawn(move || writer.run(rx));
    disk.fail_from_now(libc::ENOSPC);
    // Batches of 1 MiB: four more than the bound holds.
    let bound = (held::HELD_BYTES >> 20) as u64;
    let batches = bound + 4;
    for i in 0..batches {
        let (ack, taken) = crossbeam_channel::bounded(1);
        let mut bytes = format!("b{i}").into_bytes();
        bytes.resize(1 << 20, b' ');
        *bytes.last_mut().unwrap() = b'\n';
        assert!(tx.send(Message::Line {
            bytes,
            count: 1,
            urgent: false,
            acks: vec![ack],
            checkpointed: true,
        }));
        taken.recv_timeout(Duration::from_secs(60)).unwrap();
    }
    disk.recover();
    assert!(tx.send(line("{\"type\":\"after\"}", false)));
    assert!(tx.send(Message::Shutdown));
    let (stats, _) = handle.join().unwrap();
    let written = disk.written();
    let kept: Vec<&[u8]> = written
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| line.starts_with(b"b"))
        .map(|line| line.split(|&b| b == b' ').next().unwrap())
        .collect();
    let expected: Vec<String> = (0..bound).map(|i| format!("b{i}")).collect();
    assert_eq!(
        kept,
        expected.iter().map(String::as_bytes).collect::<Vec<_>>()
    );
    assert_eq!(stats.lines_lost, batches - bound);
    let json: Vec<u8> = written
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| line.starts_with(b"{"))
        .flatten()
        .copied()
        .collect();
    assert_eq!(gaps(&decoded(&json))[0].lines, batches - bound);
}

/// As the test above, with checkpointed batches among the lines: none is lost, none is
/// written twice, all in order, unless the disk failed to the very end.
#[test]
fn any_run_of_failed_operations_writes_every_checkpointed_batch_once_in_order() {
    for first in 1..60 {
        for length in [1, 2, 3, 7, 1000] {
            let disk = MemoryDisk::failing(first..first + length, libc::ENOSPC);
            let (tx, rx) = inbox();
            for i in 0..20 {
                let name = if i % 3 == 0 {
                    format!("b{i}")
                } else {
                    format!("p{i}")
                };
                assert!(tx.send(named(&name, i % 3 == 0).0));
            }
            assert!(tx.send(Message::Shutdown));
            let stats = writer(&disk, SyncPolicy::Never).run(rx).0;
            let operations = disk.state.lock().unwrap().operations;
            let written = disk.written();
            let lines = decoded_whole_lines(&written);
            let names = marker_names(&lines);
            let batches: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| n.starts_with('b'))
                .collect();
            let case = format!("fail {first}+{length} of {operations}: {names:?}");
            let all: Vec<String> = (0..20).step_by(3).map(|i| format!("b{i}")).collect();
            if first + length < operations {
                assert_eq!(batches, all, "{case}");
            } else {
                assert_eq!(batches, all[..batches.len()], "a prefix: {case}");
            }
            let plain = names.len() - batches.len();
            assert_eq!(plain as u64 + stats.lines_lost, 13, "{case}");
        }
    }
}

#[test]
fn lines_the_sources_dropped_become_a_gap() {
    let disk = MemoryDisk::default();
    let dropped = Arc::new(AtomicU64::new(5));
    let (tx, rx) = inbox();
    assert!(tx.send(line("{\"type\":\"x\"}", false)));
    assert!(tx.send(Message::Shutdown));
    let writer = Writer::new(
        disk.clone(),
        "memory".into(),
        0,
        SyncPolicy::Never,
        Clock::start(),
        dropped,
    );
    writer.run(rx);
    let lines = decoded(&disk.written());
    assert_eq!(gaps(&lines)[0].lines, 5);
    assert!(gaps(&lines)[0].reason.contains("too slow"));
}

// A log deleted while open: Wine keeps an open file linked until its last handle closes.
#[cfg(unix)]
#[test]
fn a_deleted_log_is_created_again_with_everything_and_an_orphan_waits_for_its_directory() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("logs");
    std::fs::create_dir(&dir).unwrap();
    let path = dir.join("a.jsonl");
    use std::io::Write;
    let file = create_log(&path, |f| f.write_all(b"one\n")).unwrap();
    let mut log = LogFile {
        path: path.clone(),
        file,
    };
    log.append(b"two\n").unwrap();
    assert_eq!(log.check_place(8).unwrap(), Place::Linked);

    std::fs::remove_file(&path).unwrap();
    assert_eq!(log.check_place(8).unwrap(), Place::Recreated);
    assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\n");
    assert!(
        std::fs::File::open(&path).unwrap().try_lock().is_err(),
        "the new log is locked"
    );

    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(log.check_place(8).unwrap(), Place::Orphaned);
    log.append(b"three\n").unwrap();
    std::fs::create_dir(&dir).unwrap();
    assert_eq!(log.check_place(14).unwrap(), Place::Recreated);
    assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\nthree\n");
}

#[cfg(unix)]
#[test]
fn a_file_that_takes_a_deleted_logs_name_is_never_taken_for_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    use std::io::Write;
    let file = create_log(&path, |f| f.write_all(b"one\n")).unwrap();
    let mut log = LogFile {
        path: path.clone(),
        file,
    };
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"someone else's\n").unwrap();
    assert_eq!(log.check_place(4).unwrap(), Place::Orphaned);
    log.append(b"two\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"someone else's\n");

    std::fs::remove_file(&path).unwrap();
    assert_eq!(log.check_place(8).unwrap(), Place::Recreated);
    assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\n");
}
