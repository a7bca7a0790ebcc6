//! Tests of the directory reader on real files: whole lines once, checkpoints, caps, and
//! every kind of entry it refuses.

use super::*;
#[cfg(unix)]
use std::ffi::CString;
use std::fs::OpenOptions;
use std::io::Write;

/// Scans and returns the lines and problems as text (the bytes of a line over the cap
/// counted after its first chunk left out: they are no other line).
fn scan(reader: &mut DirReader, take_unterminated: bool) -> Vec<String> {
    let mut seen = Vec::new();
    reader
        .scan(take_unterminated, &mut |item| {
            if matches!(item, Item::Problem { count: 0, .. }) {
                return;
            }
            seen.push(match item {
                Item::Line { file, bytes } => {
                    format!("{file}: {}", String::from_utf8_lossy(bytes))
                }
                Item::Problem {
                    file,
                    problem,
                    count,
                    ..
                } => format!("{file}: {problem:?} x{count}"),
            });
        })
        .unwrap();
    seen
}

fn append(path: &Path, text: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text).unwrap();
}

#[test]
fn whole_lines_are_taken_once_and_a_partial_line_waits_for_its_newline() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    append(&dir.path().join("1.jsonl"), b"a\nb");
    assert_eq!(scan(&mut reader, false), ["1.jsonl: a"]);
    assert_eq!(scan(&mut reader, false), Vec::<String>::new());
    append(&dir.path().join("1.jsonl"), b"c\n\n");
    assert_eq!(scan(&mut reader, false), ["1.jsonl: bc"]);
    let progress = reader.take_progress();
    assert_eq!(progress.len(), 1);
    assert_eq!(progress[0].offset, 6);
    assert!(reader.take_progress().is_empty());
}

#[test]
fn a_resumed_reader_starts_at_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("7.jsonl");
    append(&path, b"one\ntwo\nthree");
    let mut first = DirReader::open(dir.path(), Limits::default()).unwrap();
    scan(&mut first, false);
    let mut second = DirReader::open(dir.path(), Limits::default()).unwrap();
    for progress in first.take_progress() {
        second.resume(&progress);
    }
    assert_eq!(scan(&mut second, true), ["7.jsonl: three"]);
}

#[test]
fn long_lines_are_dropped_up_to_their_newline() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        line_bytes: 10,
        ..Limits::default()
    };
    let mut reader = DirReader::open(dir.path(), limits).unwrap();
    let path = dir.path().join("1.jsonl");
    append(&path, b"short\n0123456789");
    assert_eq!(scan(&mut reader, false), ["1.jsonl: short"]);
    reader.buffer.truncate(11);
    append(&path, &[b'x'; 100]);
    append(&path, b"\nafter\n");
    assert_eq!(
        scan(&mut reader, false),
        ["1.jsonl: LineTooLong x1", "1.jsonl: after"]
    );
}

#[test]
fn a_long_line_counts_every_byte_it_drops() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        line_bytes: 10,
        ..Limits::default()
    };
    let mut reader = DirReader::open(dir.path(), limits).unwrap();
    reader.buffer = vec![0; 16];
    let long = [b'x'; 100];
    append(&dir.path().join("1.jsonl"), &long);
    append(&dir.path().join("1.jsonl"), b"\nafter\n");
    let mut dropped = (0, 0);
    reader
        .scan(false, &mut |item| {
            if let Item::Problem { count, bytes, .. } = item {
                dropped = (dropped.0 + count, dropped.1 + bytes);
            }
        })
        .unwrap();
    assert_eq!(
        dropped,
        (1, long.len() as u64 + 1),
        "one line, newline included"
    );
}

#[test]
fn hard_links_and_directories_are_refused_once() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::write(&outside, "secret\n").unwrap();
    std::fs::hard_link(&outside, dir.path().join("h.jsonl")).unwrap();
    std::fs::create_dir(dir.path().join("d.jsonl")).unwrap();
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    let mut seen = scan(&mut reader, true);
    seen.sort();
    assert_eq!(seen, ["d.jsonl: NotRegular x1", "h.jsonl: HardLink x1"]);
    assert!(scan(&mut reader, true).is_empty());
}

#[cfg(unix)]
#[test]
fn symbolic_links_and_fifos_are_refused_once() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::write(&outside, "secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("s.jsonl")).unwrap();
    let fifo = CString::new(dir.path().join("f.jsonl").as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    let mut seen = scan(&mut reader, true);
    seen.sort();
    assert_eq!(seen, ["f.jsonl: NotRegular x1", "s.jsonl: Symlink x1"]);
    assert!(scan(&mut reader, true).is_empty());
}

#[test]
fn truncation_and_replacement_stop_reading_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    append(&dir.path().join("t.jsonl"), b"one\n");
    append(&dir.path().join("r.jsonl"), b"one\n");
    scan(&mut reader, false);
    std::fs::write(dir.path().join("t.jsonl"), b"").unwrap();
    // Moved away rather than removed, so that the new file cannot be given its inode
    // number: under Wine, where an identity is the inode number alone, the new file now
    // and then got the freed number back while other tests created files (scripts/cross).
    std::fs::rename(dir.path().join("r.jsonl"), dir.path().join("r.old")).unwrap();
    append(&dir.path().join("r.jsonl"), b"again\n");
    let mut seen = scan(&mut reader, false);
    seen.sort();
    assert_eq!(seen, ["r.jsonl: Replaced x1", "t.jsonl: Truncated x1"]);
}

#[test]
fn files_over_the_count_cap_are_reported_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        append(&dir.path().join(format!("{i}.jsonl")), b"x\n");
    }
    let limits = Limits {
        files: 3,
        ..Limits::default()
    };
    let mut reader = DirReader::open(dir.path(), limits).unwrap();
    let seen = scan(&mut reader, false);
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen.contains(&": TooManyFiles x2".to_owned()), "{seen:?}");
    assert_eq!(scan(&mut reader, false).len(), 0);
}

#[test]
fn a_scan_that_reaches_its_budget_asks_for_another_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{}\n", "x".repeat(99));
    let lines = (SCAN_BYTES as usize / line.len()) * 3 / 2;
    append(&dir.path().join("1.jsonl"), line.repeat(lines).as_bytes());
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    let mut taken = 0;
    let first = reader.scan(false, &mut |_| taken += 1).unwrap();
    assert!(first.more, "the budget was reached");
    let second = reader.scan(false, &mut |_| taken += 1).unwrap();
    assert!(!second.more);
    assert_eq!(taken, lines);
}

#[test]
fn a_file_is_read_up_to_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        file_bytes: 8,
        ..Limits::default()
    };
    let mut reader = DirReader::open(dir.path(), limits).unwrap();
    append(&dir.path().join("1.jsonl"), b"abc\ndefgh\nij\n");
    assert_eq!(
        scan(&mut reader, false),
        ["1.jsonl: abc", "1.jsonl: FileTooBig x1"]
    );
}

#[test]
fn a_checkpoint_without_a_handle_resumes_by_device_and_inode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("7.jsonl");
    append(&path, b"one\n");
    let mut first = DirReader::open(dir.path(), Limits::default()).unwrap();
    scan(&mut first, false);
    append(&path, b"two\n");
    let mut second = DirReader::open(dir.path(), Limits::default()).unwrap();
    for mut progress in first.take_progress() {
        if cfg!(target_os = "linux") {
            assert!(
                progress.handle.is_some(),
                "the temporary file system gives handles"
            );
        }
        progress.handle = None;
        second.resume(&progress);
    }
    assert_eq!(scan(&mut second, false), ["7.jsonl: two"]);
}

#[cfg(target_os = "linux")]
mod inode_reuse;

// Of the directory's change time, which Windows does not give (DirStatus).
#[cfg(unix)]
#[test]
fn a_settled_directory_is_listed_again_only_once_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    append(&dir.path().join("1.jsonl"), b"a\n");
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    assert_eq!(scan(&mut reader, false), ["1.jsonl: a"]);
    // As if the directory had last changed a while before that listing; and the listing
    // made to lack the file, to see whether the next scan lists the directory again.
    let listing = reader.listing.as_mut().unwrap();
    assert!(!listing.settled, "just changed");
    listing.settled = true;
    listing.names.clear();
    append(&dir.path().join("1.jsonl"), b"b\n");
    assert_eq!(scan(&mut reader, false), Vec::<String>::new());
    // Past the file system's timestamp granularity, a new entry changes the directory.
    std::thread::sleep(std::time::Duration::from_millis(50));
    append(&dir.path().join("2.jsonl"), b"c\n");
    let mut seen = scan(&mut reader, false);
    seen.sort();
    assert_eq!(seen, ["1.jsonl: b", "2.jsonl: c"]);
    // Settled or not, a known file's growth is seen by its stat alone.
    reader.listing.as_mut().unwrap().settled = true;
    append(&dir.path().join("2.jsonl"), b"d\n");
    assert_eq!(scan(&mut reader, false), ["2.jsonl: d"]);
}

// Of the directory's change time, which Windows does not give (DirStatus).
#[cfg(unix)]
#[test]
fn a_listing_is_trusted_for_a_few_seconds_at_most_whatever_the_change_time_says() {
    let dir = tempfile::tempdir().unwrap();
    append(&dir.path().join("1.jsonl"), b"a\n");
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    assert_eq!(scan(&mut reader, false), ["1.jsonl: a"]);
    // A file system whose directory change time did not move: the listing looks settled
    // and lacks the file.
    let listing = reader.listing.as_mut().unwrap();
    listing.settled = true;
    listing.names.clear();
    append(&dir.path().join("1.jsonl"), b"b\n");
    assert_eq!(scan(&mut reader, false), Vec::<String>::new());
    let listing = reader.listing.as_mut().unwrap();
    let old = std::time::Instant::now().checked_sub(LISTING_TRUSTED);
    listing.listed_at = old.unwrap();
    assert_eq!(scan(&mut reader, false), ["1.jsonl: b"]);
}
