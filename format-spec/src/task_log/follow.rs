//! A task's log file followed as `tail -F` follows it (SPEC.md, "Following a task's log"):
//! appended lines are read as they come, a file truncated is read again from its start, a
//! file replaced under the path is read to its end and the new one from its start. Only
//! whole lines are taken, so that a checkpoint ([`FileProgress`], the one marker files
//! have) says exactly where the next reader resumes.

use super::line::Captured;
use super::splitter::LineSplitter;
use crate::FileProgress;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Bytes read at a time.
const CHUNK_BYTES: usize = 256 << 10;
/// Bytes read in one read at most, so that a batch stays small; the rest is taken by the
/// next read.
const READ_BYTES: u64 = 4 << 20;

/// The file being read.
struct Current {
    file: File,
    identity: Identity,
    /// Where its next whole line starts: the checkpoint's offset.
    offset: u64,
    /// Where its next unread byte is; the bytes from `offset` to here are in `splitter`
    /// (a line's head at most), so a line growing without its newline (a progress bar
    /// drawn with `\r`) is read once, not again from its start at every read.
    scanned: u64,
    splitter: LineSplitter,
    /// Nothing more is read from it: read to its end by a recorder that ended.
    done: bool,
}

/// Follows the log file at one path.
pub struct LogFollower {
    path: PathBuf,
    current: Option<Current>,
    /// The checkpoint to resume from, when it is that of the file at the path.
    resume: Option<FileProgress>,
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
            resume: None,
            buffer: vec![0; CHUNK_BYTES],
        }
    }

    /// The checkpoint name of the file: its path.
    pub fn name(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Continues after an earlier reader's checkpoint: of `checkpoints` (files that were at
    /// the path in turn), that of the file now at the path, known by its device, inode and
    /// handle whatever the path's spelling. Returns whether one is; a checkpoint `done`
    /// leaves nothing to read.
    pub fn resume(&mut self, checkpoints: &[FileProgress]) -> bool {
        let identity = open_log(&self.path).and_then(|file| Identity::of(&file));
        self.resume = identity.and_then(|identity| {
            checkpoints
                .iter()
                .find(|c| identity.is(&Identity::from(*c)))
                .cloned()
        });
        self.resume.is_some()
    }

    /// Reads the whole lines written since the last read, handing each to `emit`; with
    /// `take_unterminated`, a last line without its newline too (the writer is done).
    pub fn read(&mut self, take_unterminated: bool, emit: &mut dyn FnMut(Captured)) -> FollowRead {
        let mut read = FollowRead::default();
        let at_path = open_log(&self.path);
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
        let identity = Identity::of(&file)?;
        let mut current = Current {
            file,
            identity,
            offset: 0,
            scanned: 0,
            splitter: LineSplitter::default(),
            done: false,
        };
        let checkpoint = self.resume.take();
        if let Some(checkpoint) = checkpoint.filter(|c| current.identity.is(&Identity::from(c))) {
            current.offset = checkpoint.offset;
            current.scanned = checkpoint.offset;
            current.done = checkpoint.done;
        }
        Some(current)
    }

    fn progress(&self) -> Option<FileProgress> {
        let current = self.current.as_ref()?;
        Some(FileProgress {
            name: self.name(),
            dev: current.identity.dev,
            ino: current.identity.ino,
            handle: current.identity.handle.clone(),
            offset: current.offset,
            done: current.done,
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
        let Some(current) = self.current.as_mut().filter(|c| !c.done) else {
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
            let Ok(got) = tc_profile_fs::read_at(&current.file, &mut self.buffer[..want], position)
            else {
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
            current.done = true;
        }
        if current.offset != start || current.done {
            read.progress = self.progress();
        }
    }
}

/// The regular file at `path`, opened never through a symbolic link at its last component
/// (whoever can write its directory cannot point it at another file), never blocking on a
/// FIFO, never becoming a controlling terminal.
fn open_log(path: &Path) -> Option<File> {
    let file = tc_profile_fs::open_file(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// A file as checkpoints know it.
#[derive(Debug, PartialEq)]
struct Identity {
    dev: u64,
    ino: u64,
    handle: Option<String>,
}

impl Identity {
    fn of(file: &File) -> Option<Identity> {
        let identity = tc_profile_fs::identity(file).ok()?;
        Some(Identity {
            dev: identity.device,
            ino: identity.inode,
            handle: tc_profile_fs::handle(file),
        })
    }

    /// Whether `other` is the same file: only two handles tell files apart (a file system
    /// may give none), as for marker files.
    fn is(&self, other: &Identity) -> bool {
        let handles_differ = matches!((&self.handle, &other.handle), (Some(a), Some(b)) if a != b);
        (self.dev, self.ino) == (other.dev, other.ino) && !handles_differ
    }
}

impl From<&FileProgress> for Identity {
    fn from(progress: &FileProgress) -> Identity {
        Identity {
            dev: progress.dev,
            ino: progress.ino,
            handle: progress.handle.clone(),
        }
    }
}

impl Current {
    /// Whether `file` (open at the path now) is the one being read.
    fn is_file(&self, file: &File) -> bool {
        Identity::of(file).is_none_or(|identity| self.identity.is(&identity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task_log::MAX_LINE_BYTES;
    use std::io::{Seek, SeekFrom, Write};

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
        assert!(second.resume(&[taken.progress.clone().unwrap()]));
        assert_eq!(read(&mut second, true).0, ["three"]);
        // Closed first: Windows removes a file's name only once no one has it open.
        drop((first, second));
        std::fs::remove_file(&path).unwrap();
        append(&path, "new file\n");
        let mut third = LogFollower::new(&path);
        let mut gone = taken.progress.unwrap();
        gone.ino += 1; // another file than the checkpoint's
        assert!(!third.resume(&[gone]));
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
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.seek(SeekFrom::Start(5)).unwrap();
        file.write_all(b"P").unwrap();
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

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_or_a_fifo_at_the_path_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        append(&secret, "root only\n");
        let path = dir.path().join("live.log");
        std::os::unix::fs::symlink(&secret, &path).unwrap();
        let mut follower = LogFollower::new(&path);
        assert_eq!(read(&mut follower, true).0, Vec::<String>::new());
        std::fs::remove_file(&path).unwrap();
        let fifo = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(read(&mut follower, true).0, Vec::<String>::new(), "no wait");
    }

    #[test]
    fn the_last_read_marks_the_file_done_and_a_done_checkpoint_leaves_nothing_to_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.log");
        append(&path, "one\n");
        let mut recorder = LogFollower::new(&path);
        let (_, taken) = read(&mut recorder, false);
        assert!(!taken.progress.unwrap().done);
        append(&path, "two");
        let (lines, taken) = read(&mut recorder, true);
        assert_eq!(lines, ["two"]);
        let last = taken.progress.unwrap();
        assert!(last.done && last.offset == 7, "{last:?}");
        append(&path, "\nafter the end\n");
        let mut finalizer = LogFollower::new(&path);
        assert!(finalizer.resume(&[last]));
        assert_eq!(read(&mut finalizer, true).0, Vec::<String>::new());
    }
}
