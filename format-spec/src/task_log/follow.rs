//! A task's log file followed as `tail -F` follows it (SPEC.md, "Following a task's log"):
//! appended lines are read as they come, a file truncated is read again from its start, a
//! file replaced under the path is read to its end and the new one from its start. Only
//! whole lines are taken, so that a checkpoint ([`FileProgress`], the one marker files
//! have) says exactly where the next reader resumes.

use super::line::Captured;
use super::splitter::LineSplitter;
use crate::profile_dir::handle_of;
use crate::FileProgress;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Bytes read at a time.
const CHUNK_BYTES: usize = 256 << 10;
/// Bytes read in one read at most, so that a batch stays small; the rest is taken by the
/// next read.
const READ_BYTES: u64 = 4 << 20;

/// The file being read.
struct Current {
    file: File,
    dev: u64,
    ino: u64,
    handle: Option<String>,
    /// Where its next whole line starts: the checkpoint's offset.
    offset: u64,
    /// Where its next unread byte is; the bytes from `offset` to here are in `splitter`
    /// (a line's head at most), so a line growing without its newline (a progress bar
    /// drawn with `\r`) is read once, not again from its start at every read.
    scanned: u64,
    splitter: LineSplitter,
}

/// Follows the log file at one path.
pub struct LogFollower {
    path: PathBuf,
    current: Option<Current>,
    /// Checkpoints to resume from: that of the file at the path, if any, is used.
    resume: Vec<FileProgress>,
    buffer: Vec<u8>,
}

/// What a read took.
#[derive(Debug, Default, PartialEq)]
pub struct FollowRead {
    /// Where to resume, when it moved: for the batch's checkpoint.
    pub progress: Option<FileProgress>,
    /// The read stopped at its byte budget: read again at once.
    pub more: bool,
}

impl LogFollower {
    pub fn new(path: &Path) -> LogFollower {
        LogFollower {
            path: path.to_owned(),
            current: None,
            resume: Vec::new(),
            buffer: vec![0; CHUNK_BYTES],
        }
    }

    /// The checkpoint name of the file: its path.
    pub fn name(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Continues after an earlier reader's checkpoint. Given several (files that were at
    /// the path in turn), the one of the file at the path when it is first read is used.
    pub fn resume(&mut self, progress: &FileProgress) {
        self.resume.push(progress.clone());
    }

    /// Reads the whole lines written since the last read, handing each to `emit`; with
    /// `take_unterminated`, a last line without its newline too (the writer is done).
    pub fn read(&mut self, take_unterminated: bool, emit: &mut dyn FnMut(Captured)) -> FollowRead {
        let mut read = FollowRead::default();
        let at_path = File::open(&self.path).ok();
        let replaced = match (&self.current, &at_path) {
            (Some(current), Some(file)) => !current.is_file(file),
            _ => false,
        };
        if replaced {
            // The rest of the old file first, as tail -F does: it was written before.
            self.take_lines(true, emit, &mut read);
            if read.more {
                return read;
            }
            self.current = None;
        }
        if self.current.is_none() {
            let Some(file) = at_path else {
                return read;
            };
            self.current = self.open(file);
            read.progress = self.progress();
        }
        self.take_lines(take_unterminated, emit, &mut read);
        read
    }

    /// Starts following `file`: from the checkpoint when it is the file it names.
    fn open(&mut self, file: File) -> Option<Current> {
        let metadata = file.metadata().ok()?;
        let handle = handle_of(&file);
        let mut current = Current {
            file,
            dev: metadata.dev(),
            ino: metadata.ino(),
            handle,
            offset: 0,
            scanned: 0,
            splitter: LineSplitter::default(),
        };
        let checkpoints = std::mem::take(&mut self.resume);
        if let Some(checkpoint) = checkpoints
            .iter()
            .find(|c| current.is((c.dev, c.ino, c.handle.as_deref())))
        {
            current.offset = checkpoint.offset;
            current.scanned = checkpoint.offset;
        }
        Some(current)
    }

    fn progress(&self) -> Option<FileProgress> {
        let current = self.current.as_ref()?;
        Some(FileProgress {
            name: self.name(),
            dev: current.dev,
            ino: current.ino,
            handle: current.handle.clone(),
            offset: current.offset,
            done: false,
        })
    }

    /// Reads the current file's new bytes, within the byte budget, handing on the lines
    /// they end.
    fn take_lines(
        &mut self,
        take_unterminated: bool,
        emit: &mut dyn FnMut(Captured),
        read: &mut FollowRead,
    ) {
        let Some(current) = &mut self.current else {
            return;
        };
        let Ok(size) = current.file.metadata().map(|m| m.len()) else {
            return;
        };
        if size < current.scanned {
            // Truncated: what it holds now was written since.
            current.offset = 0;
            current.scanned = 0;
            current.splitter.discard();
        }
        let start = current.offset;
        let first_unread = current.scanned;
        let mut emit_line = |line: Captured, _| emit(line);
        while current.scanned < size {
            if current.scanned - first_unread >= READ_BYTES {
                read.more = true;
                break;
            }
            let position = current.scanned;
            let want = self.buffer.len().min((size - position) as usize);
            let Ok(got) = current.file.read_at(&mut self.buffer[..want], position) else {
                break;
            };
            if got == 0 {
                break;
            }
            let chunk = &self.buffer[..got];
            if let Some(end) = current.splitter.take(chunk, 0.0, &mut emit_line) {
                current.offset = position + end as u64;
            }
            current.scanned += got as u64;
        }
        if take_unterminated && !read.more && current.scanned >= size {
            current.splitter.finish(&mut emit_line);
            current.offset = current.scanned;
        }
        if current.offset != start {
            read.progress = self.progress();
        }
    }
}

impl Current {
    /// Whether `file` (open at the path now) is the one being read.
    fn is_file(&self, file: &File) -> bool {
        let Ok(metadata) = file.metadata() else {
            return true;
        };
        self.is((metadata.dev(), metadata.ino(), handle_of(file).as_deref()))
    }

    /// Whether a file of this device, inode and handle is this one: only two handles tell
    /// files apart (a file system may give none), as for marker files.
    fn is(&self, (dev, ino, handle): (u64, u64, Option<&str>)) -> bool {
        let handles_differ =
            matches!((self.handle.as_deref(), handle), (Some(a), Some(b)) if a != b);
        (dev, ino) == (self.dev, self.ino) && !handles_differ
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task_log::MAX_LINE_BYTES;
    use std::io::Write;

    fn append(path: &Path, text: &str) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    fn read(follower: &mut LogFollower, take_unterminated: bool) -> (Vec<String>, FollowRead) {
        let mut lines = Vec::new();
        let read = follower.read(take_unterminated, &mut |line| lines.push(line.text));
        (lines, read)
    }

    #[test]
    fn appended_truncated_and_replaced_files_are_read_as_tail_follows_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.log");
        let mut follower = LogFollower::new(&path);
        assert_eq!(
            read(&mut follower, false).0,
            Vec::<String>::new(),
            "no file yet"
        );
        append(&path, "one\ntw");
        assert_eq!(read(&mut follower, false).0, ["one"]);
        append(&path, "o\n");
        assert_eq!(read(&mut follower, false).0, ["two"]);
        std::fs::write(&path, "three\n").unwrap(); // truncated, then written
        assert_eq!(read(&mut follower, false).0, ["three"]);
        let old = dir.path().join("old.log");
        std::fs::rename(&path, &old).unwrap();
        append(&old, "four, in the old file\n");
        append(&path, "five\n");
        let (lines, taken) = read(&mut follower, false);
        assert_eq!(lines, ["four, in the old file", "five"]);
        let progress = taken.progress.unwrap();
        assert_eq!((progress.name, progress.offset), (follower.name(), 5));
        append(&path, "six, unterminated");
        assert_eq!(read(&mut follower, true).0, ["six, unterminated"]);
    }

    #[test]
    fn a_reader_resumes_at_the_checkpoint_of_the_same_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.log");
        append(&path, "one\ntwo\n");
        let mut first = LogFollower::new(&path);
        let (_, taken) = read(&mut first, false);
        append(&path, "three\n");
        let mut second = LogFollower::new(&path);
        second.resume(taken.progress.as_ref().unwrap());
        assert_eq!(read(&mut second, true).0, ["three"]);
        std::fs::remove_file(&path).unwrap();
        append(&path, "new file\n");
        let mut third = LogFollower::new(&path);
        let mut gone = taken.progress.unwrap();
        gone.ino += 1; // another file than the checkpoint's
        third.resume(&gone);
        assert_eq!(read(&mut third, true).0, ["new file"]);
    }

    #[test]
    fn a_line_without_its_newline_is_not_read_again_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.log");
        append(&path, "done\nprogress 1%");
        let mut follower = LogFollower::new(&path);
        assert_eq!(read(&mut follower, false).0, ["done"]);
        // Bytes already read, changed in place: a follower that read them again would see it.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(b"P", 5).unwrap();
        append(&path, "\rprogress 100%\n");
        assert_eq!(read(&mut follower, false).0, ["progress 1%\rprogress 100%"]);
    }

    #[test]
    fn a_line_growing_over_many_reads_keeps_its_head_length_and_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.log");
        append(&path, "first\n");
        let mut follower = LogFollower::new(&path);
        let (_, taken) = read(&mut follower, false);
        assert_eq!(taken.progress.unwrap().offset, 6);
        let step = "\r".to_owned() + &"#".repeat(999);
        for _ in 0..100 {
            append(&path, &step);
            let (lines, taken) = read(&mut follower, false);
            assert!(
                lines.is_empty() && taken.progress.is_none(),
                "no whole line yet"
            );
        }
        append(&path, "\n");
        let mut lines = Vec::new();
        let taken = follower.read(false, &mut |line| lines.push(line));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].length, 100 * 1000);
        assert_eq!(lines[0].text.len(), MAX_LINE_BYTES.min(100 * 1000));
        assert_eq!(taken.progress.unwrap().offset, 6 + 100 * 1000 + 1);
    }
}
