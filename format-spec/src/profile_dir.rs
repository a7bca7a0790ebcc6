//! Reads the marker files of a profile directory, which task code writes and nobody
//! should trust (SPEC.md, "Reading a profile directory"). Only `*.jsonl` entries that are
//! regular files with one link are read, opened relative to the directory without
//! following symbolic links and without blocking; as root, with the file-system identity
//! of the directory's owner. Each file is followed by (device, inode) from where it was
//! taken up to, in whole lines, within the caps of [`Limits`]. Nothing here fails on what
//! the directory holds: every problem is handed to the caller as an [`Item::Problem`].

use crate::marker_file::{Limits, Problem};
use crate::FileProgress;
use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Bytes read from all files in one scan at most, so that one busy file cannot hold up
/// the batch (and the memory behind it) for long.
const SCAN_BYTES: u64 = 4 << 20;
/// The read buffer, unless the line cap needs a larger one.
const CHUNK_BYTES: usize = 256 << 10;

/// What a scan hands to its caller, in file order.
#[derive(Debug, PartialEq)]
pub enum Item<'a> {
    /// One whole line, without its newline.
    Line { file: &'a str, bytes: &'a [u8] },
    /// `count` lines (or files) of `file` dropped, `bytes` long in all.
    Problem {
        file: &'a str,
        problem: Problem,
        count: u64,
        bytes: u64,
    },
}

/// The result of one scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Bytes taken from files (lines and dropped bytes).
    pub bytes: u64,
    /// The scan stopped at its byte budget: scan again at once.
    pub more: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FileId {
    dev: u64,
    ino: u64,
}

struct Followed {
    name: String,
    offset: u64,
    done: bool,
    /// Inside a line over the cap: drop bytes up to the next newline.
    skipping: bool,
    changed: bool,
}

/// Follows the marker files of one directory.
pub struct DirReader {
    path: PathBuf,
    dir: File,
    limits: Limits,
    files: HashMap<FileId, Followed>,
    names: HashMap<OsString, FileId>,
    buffer: Vec<u8>,
    cursor: usize,
    excess_reported: u64,
}

impl DirReader {
    /// Opens the directory itself (never through a symbolic link).
    pub fn open(path: &Path, limits: Limits) -> io::Result<DirReader> {
        let dir = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(path)?;
        Ok(DirReader {
            path: path.to_owned(),
            dir,
            buffer: vec![0; CHUNK_BYTES.max(limits.line_bytes + 1)],
            limits,
            files: HashMap::new(),
            names: HashMap::new(),
            cursor: 0,
            excess_reported: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Continues from a checkpoint of an earlier reader.
    pub fn resume(&mut self, progress: &FileProgress) {
        let id = FileId {
            dev: progress.dev,
            ino: progress.ino,
        };
        self.names.insert(OsString::from(&progress.name), id);
        self.files.insert(
            id,
            Followed {
                name: progress.name.clone(),
                offset: progress.offset,
                done: progress.done,
                skipping: false,
                changed: false,
            },
        );
    }

    /// Continues after an earlier reader reported `files` over the file cap.
    pub fn resume_excess(&mut self, files: u64) {
        self.excess_reported = self.excess_reported.max(files);
    }

    /// Reads what is new in every file, up to the scan's byte budget. A last line without
    /// its newline is taken only with `take_unterminated` (the writer may still finish it).
    pub fn scan(
        &mut self,
        take_unterminated: bool,
        visit: &mut dyn FnMut(Item<'_>),
    ) -> io::Result<Scan> {
        // The owner of now: a worker may hand the directory to the task's user at any time.
        let owner = fstat(&self.dir)?;
        let _identity = OwnerIdentity::assume((owner.st_uid, owner.st_gid));
        let (names, excess) = self.list()?;
        let mut scan = Scan::default();
        let count = names.len();
        for step in 0..count {
            let index = (self.cursor + step) % count;
            let name = &names[index];
            if let Some((id, size)) = self.follow(name, visit) {
                scan.bytes += self.read_new(id, name, size, take_unterminated, visit);
            }
            if scan.bytes >= SCAN_BYTES {
                // The next scan, at once, starts with the files this one did not reach.
                self.cursor = index + 1;
                scan.more = true;
                break;
            }
        }
        if excess > self.excess_reported {
            visit(Item::Problem {
                file: "",
                problem: Problem::TooManyFiles,
                count: excess - self.excess_reported,
                bytes: 0,
            });
            self.excess_reported = excess;
        }
        Ok(scan)
    }

    /// The files whose progress changed since the last call, for a checkpoint.
    pub fn take_progress(&mut self) -> Vec<FileProgress> {
        let mut progress = Vec::new();
        for (id, file) in &mut self.files {
            if std::mem::take(&mut file.changed) {
                progress.push(FileProgress {
                    name: file.name.clone(),
                    dev: id.dev,
                    ino: id.ino,
                    offset: file.offset,
                    done: file.done,
                });
            }
        }
        progress
    }

    /// The `*.jsonl` names to look at, read through the open directory itself, and how
    /// many more new ones there are than the file cap lets in: those are not even looked at,
    /// so that a flood of files costs a directory listing and nothing more.
    fn list(&self) -> io::Result<(Vec<OsString>, u64)> {
        let through_fd = format!("/proc/self/fd/{}", self.dir.as_raw_fd());
        let entries = std::fs::read_dir(&through_fd).or_else(|_| std::fs::read_dir(&self.path))?;
        let mut room = self.limits.files.saturating_sub(self.files.len());
        let mut names = Vec::new();
        let mut excess = 0;
        let jsonl = entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name())
            .filter(|name| name.as_bytes().ends_with(b".jsonl"));
        for name in jsonl {
            if self.names.contains_key(&name) {
                names.push(name);
            } else if room > 0 {
                room -= 1;
                names.push(name);
            } else {
                excess += 1;
            }
        }
        Ok((names, excess))
    }

    /// The id and size of the file now under `name`, registering (and judging) a new one;
    /// `None` when it is over the file cap or gone.
    fn follow(&mut self, name: &OsStr, visit: &mut dyn FnMut(Item<'_>)) -> Option<(FileId, u64)> {
        let stat = self.stat_entry(name).ok()?;
        let id = FileId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        };
        if self.files.contains_key(&id) {
            self.names.insert(name.to_owned(), id);
            let followed = self.files.get_mut(&id)?;
            if followed.name.as_bytes() != name.as_bytes() {
                followed.name = name.to_string_lossy().into_owned();
            }
            return Some((id, stat.st_size as u64));
        }
        if self.files.len() >= self.limits.files {
            return None;
        }
        let replaced = self.names.insert(name.to_owned(), id).is_some();
        let file_type = stat.st_mode & libc::S_IFMT;
        let problem = if replaced {
            Some(Problem::Replaced)
        } else if file_type == libc::S_IFLNK {
            Some(Problem::Symlink)
        } else if file_type != libc::S_IFREG {
            Some(Problem::NotRegular)
        } else if stat.st_nlink > 1 {
            Some(Problem::HardLink)
        } else {
            None
        };
        let display = name.to_string_lossy().into_owned();
        if let Some(problem) = problem {
            visit(Item::Problem {
                file: &display,
                problem,
                count: 1,
                bytes: 0,
            });
        }
        self.files.insert(
            id,
            Followed {
                name: display,
                offset: 0,
                done: problem.is_some(),
                skipping: false,
                changed: true,
            },
        );
        Some((id, stat.st_size as u64))
    }

    /// Reads the new whole lines of one followed file; returns the bytes taken.
    fn read_new(
        &mut self,
        id: FileId,
        name: &OsStr,
        listed_size: u64,
        take_unterminated: bool,
        visit: &mut dyn FnMut(Item<'_>),
    ) -> u64 {
        let Some(followed) = self.files.get_mut(&id) else {
            return 0;
        };
        // A file that has not grown is not even opened.
        if followed.done || listed_size == followed.offset {
            return 0;
        }
        let file = match open_entry(&self.dir, name) {
            Ok(file) => file,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => return 0,
            Err(error) => {
                let problem = match error.raw_os_error() {
                    Some(libc::ELOOP) => Problem::Symlink,
                    _ => Problem::Unreadable,
                };
                return finish(followed, problem, visit);
            }
        };
        let Ok(stat) = fstat(&file) else {
            return 0;
        };
        if (stat.st_dev, stat.st_ino) != (id.dev, id.ino) {
            return 0; // Replaced since it was listed: judged at the next scan.
        }
        if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
            return finish(followed, Problem::NotRegular, visit);
        }
        let size = stat.st_size as u64;
        if size < followed.offset {
            return finish(followed, Problem::Truncated, visit);
        }
        let mut reading = Reading {
            file: &file,
            size,
            limits: &self.limits,
            take_unterminated,
            display: followed.name.clone(),
        };
        reading.run(followed, &mut self.buffer, visit)
    }

    fn stat_entry(&self, name: &OsStr) -> io::Result<libc::stat> {
        let name = CString::new(name.as_bytes()).map_err(io::Error::other)?;
        // SAFETY: a zeroed stat is a valid out-parameter; the name is NUL-terminated.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            let result = libc::fstatat(
                self.dir.as_raw_fd(),
                name.as_ptr(),
                &mut stat,
                libc::AT_SYMLINK_NOFOLLOW,
            );
            if result == 0 {
                Ok(stat)
            } else {
                Err(io::Error::last_os_error())
            }
        }
    }
}

/// Marks a file done because of `problem`, reported once.
fn finish(followed: &mut Followed, problem: Problem, visit: &mut dyn FnMut(Item<'_>)) -> u64 {
    followed.done = true;
    followed.changed = true;
    visit(Item::Problem {
        file: &followed.name,
        problem,
        count: 1,
        bytes: 0,
    });
    0
}

/// One file's reading within a scan.
struct Reading<'a> {
    file: &'a File,
    size: u64,
    limits: &'a Limits,
    take_unterminated: bool,
    display: String,
}

impl Reading<'_> {
    fn run(
        &mut self,
        followed: &mut Followed,
        buffer: &mut [u8],
        visit: &mut dyn FnMut(Item<'_>),
    ) -> u64 {
        let mut taken = 0u64;
        while followed.offset < self.size && taken < SCAN_BYTES {
            let cap_left = self.limits.file_bytes.saturating_sub(followed.offset);
            let want = (buffer.len() as u64)
                .min(cap_left)
                .min(self.size - followed.offset);
            if want == 0 {
                return taken + finish(followed, Problem::FileTooBig, visit);
            }
            let chunk = &mut buffer[..want as usize];
            let Ok(read) = self.file.read_at(chunk, followed.offset) else {
                return taken;
            };
            if read == 0 {
                break;
            }
            let at_end = followed.offset + read as u64 >= self.size;
            let consumed = self.split(followed, &chunk[..read], at_end, visit);
            followed.offset += consumed;
            taken += consumed;
            if consumed > 0 {
                followed.changed = true;
            } else {
                if followed.offset + read as u64 >= self.limits.file_bytes {
                    return taken + finish(followed, Problem::FileTooBig, visit);
                }
                break; // A line still being written.
            }
        }
        taken
    }

    /// Hands over the whole lines of `chunk`; returns the bytes consumed.
    fn split(
        &self,
        followed: &mut Followed,
        chunk: &[u8],
        at_end: bool,
        visit: &mut dyn FnMut(Item<'_>),
    ) -> u64 {
        let mut position = 0;
        if followed.skipping {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(newline) => {
                    followed.skipping = false;
                    position = newline + 1;
                }
                None => return chunk.len() as u64,
            }
        }
        while let Some(length) = chunk[position..].iter().position(|&b| b == b'\n') {
            self.line(&chunk[position..position + length], visit);
            position += length + 1;
        }
        let rest = &chunk[position..];
        if rest.len() > self.limits.line_bytes {
            self.too_long(rest.len(), visit);
            followed.skipping = true;
            position = chunk.len();
        } else if at_end && self.take_unterminated && !rest.is_empty() {
            self.line(rest, visit);
            position = chunk.len();
        }
        position as u64
    }

    fn line(&self, bytes: &[u8], visit: &mut dyn FnMut(Item<'_>)) {
        if bytes.len() > self.limits.line_bytes {
            self.too_long(bytes.len() + 1, visit);
        } else if !bytes.iter().all(u8::is_ascii_whitespace) {
            visit(Item::Line {
                file: &self.display,
                bytes,
            });
        }
    }

    fn too_long(&self, bytes: usize, visit: &mut dyn FnMut(Item<'_>)) {
        visit(Item::Problem {
            file: &self.display,
            problem: Problem::LineTooLong,
            count: 1,
            bytes: bytes as u64,
        });
    }
}

/// Opens a directory entry for reading: never through a symbolic link, never blocking on
/// a FIFO, never becoming a controlling terminal.
fn open_entry(dir: &File, name: &OsStr) -> io::Result<File> {
    let name = CString::new(name.as_bytes()).map_err(io::Error::other)?;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    // SAFETY: the name is NUL-terminated; the descriptor returned is owned by the File.
    unsafe {
        let fd = libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC);
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(File::from_raw_fd(fd))
        }
    }
}

fn fstat(file: &File) -> io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-parameter.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(file.as_raw_fd(), &mut stat) == 0 {
            Ok(stat)
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// While alive, this thread opens files with the directory owner's uid and gid, so that
/// a recorder running as root reads only what the task could read itself. A no-op when
/// not root or when root owns the directory.
struct OwnerIdentity {
    previous: Option<(u32, u32)>,
}

impl OwnerIdentity {
    fn assume((uid, gid): (u32, u32)) -> OwnerIdentity {
        // SAFETY: geteuid, setfsgid and setfsuid only change this thread's credentials.
        let previous = unsafe {
            if libc::geteuid() != 0 || uid == 0 {
                None
            } else {
                let old_gid = libc::setfsgid(gid) as u32;
                let old_uid = libc::setfsuid(uid) as u32;
                Some((old_uid, old_gid))
            }
        };
        OwnerIdentity { previous }
    }
}

impl Drop for OwnerIdentity {
    fn drop(&mut self) {
        if let Some((uid, gid)) = self.previous {
            // SAFETY: restores this thread's own earlier credentials.
            unsafe {
                libc::setfsuid(uid);
                libc::setfsgid(gid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Scans and returns the lines and problems as text.
    fn scan(reader: &mut DirReader, take_unterminated: bool) -> Vec<String> {
        let mut seen = Vec::new();
        reader
            .scan(take_unterminated, &mut |item| {
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
    fn links_fifos_and_directories_are_refused_once() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "secret\n").unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join("s.jsonl")).unwrap();
        std::fs::hard_link(&outside, dir.path().join("h.jsonl")).unwrap();
        std::fs::create_dir(dir.path().join("d.jsonl")).unwrap();
        let fifo = CString::new(dir.path().join("f.jsonl").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
        let mut seen = scan(&mut reader, true);
        seen.sort();
        assert_eq!(
            seen,
            [
                "d.jsonl: NotRegular x1",
                "f.jsonl: NotRegular x1",
                "h.jsonl: HardLink x1",
                "s.jsonl: Symlink x1"
            ]
        );
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
        std::fs::remove_file(dir.path().join("r.jsonl")).unwrap();
        append(&dir.path().join("keep"), b"");
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
}
