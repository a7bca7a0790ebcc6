//! Reads the marker files of a profile directory, which task code writes and nobody
//! should trust (SPEC.md, "Reading a profile directory"). Only `*.jsonl` entries that are
//! regular files with one link are read, opened relative to the directory without
//! following symbolic links and without blocking; as root, with the file-system identity
//! of the directory's owner. Each file is followed by (device, inode) and, where the file
//! system gives one, its file handle (a deleted file's inode number is given out again; the
//! handle tells the two files apart), from where it was taken up to, in whole lines, within
//! the caps of [`Limits`]. Nothing here fails on what
//! the directory holds: every problem is handed to the caller as an [`Item::Problem`].

mod followed;

pub use followed::Item;

use crate::marker_file::{Limits, Problem};
use crate::FileProgress;
use followed::{finish, Followed, Reading, SCAN_BYTES};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use tc_profile_fs::{Dir, DirStatus, Identity as FileId, Kind, ReadingAs};

/// The read buffer, unless the line cap needs a larger one.
const CHUNK_BYTES: usize = 256 << 10;
/// How long before a listing the directory must have last changed for the listing to be
/// trusted while its change time stays the same: a change within the file system's
/// timestamp granularity of the last one would not change it.
const SETTLED: Duration = Duration::from_secs(2);
/// The longest a listing is trusted, whatever the change time says: some file systems
/// (FUSE ones, NFS with attribute caching) do not move a directory's change time as entries
/// come, and a clock behind the file server's makes a listing look settled early.
const LISTING_TRUSTED: Duration = Duration::from_secs(5);

/// The result of one scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Bytes taken from files (lines and dropped bytes).
    pub bytes: u64,
    /// The scan stopped at its byte budget: scan again at once.
    pub more: bool,
}

/// Follows the marker files of one directory.
pub struct DirReader {
    path: PathBuf,
    dir: Dir,
    limits: Limits,
    files: HashMap<FileId, Followed>,
    names: HashMap<OsString, FileId>,
    buffer: Vec<u8>,
    cursor: usize,
    excess_reported: u64,
    listing: Option<Listing>,
}

/// The last listing of the directory ([`DirReader::read_names`]), and the directory's
/// change time then. Adding, removing or renaming an entry changes it (and no call sets
/// it back), so while it stays the same, once settled, the names hold and each names the
/// file it named: a scan costs a stat a file, no listing and no file handle. Where the OS
/// gives no change time to trust (Windows), every scan lists the directory.
struct Listing {
    names: Vec<OsString>,
    excess: u64,
    changed: Option<(i64, i64)>,
    settled: bool,
    listed_at: Instant,
}

impl DirReader {
    /// Opens the directory itself (never through a symbolic link).
    pub fn open(path: &Path, limits: Limits) -> io::Result<DirReader> {
        let dir = Dir::open(path)?;
        Ok(DirReader {
            path: path.to_owned(),
            dir,
            buffer: Vec::new(),
            limits,
            files: HashMap::new(),
            names: HashMap::new(),
            cursor: 0,
            excess_reported: 0,
            listing: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Continues from a checkpoint of an earlier reader.
    pub fn resume(&mut self, progress: &FileProgress) {
        let id = FileId {
            device: progress.dev,
            inode: progress.ino,
        };
        self.names.insert(OsString::from(&progress.name), id);
        self.files.insert(
            id,
            Followed {
                name: progress.name.clone(),
                handle: progress.handle.clone(),
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
        let status = self.dir.status()?;
        let _identity = ReadingAs::owner_of(&status);
        let (listing, unchanged) = self.list(&status)?;
        let (names, excess) = (&listing.names, listing.excess);
        let mut scan = Scan::default();
        let count = names.len();
        for step in 0..count {
            let index = (self.cursor + step) % count;
            let name = &names[index];
            if let Some((id, size)) = self.follow(name, unchanged, visit) {
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
        self.listing = Some(listing);
        Ok(scan)
    }

    /// The files whose progress changed since the last call, for a checkpoint.
    pub fn take_progress(&mut self) -> Vec<FileProgress> {
        let mut progress = Vec::new();
        for (id, file) in &mut self.files {
            if std::mem::take(&mut file.changed) {
                progress.push(FileProgress {
                    name: file.name.clone(),
                    dev: id.device,
                    ino: id.inode,
                    handle: file.handle.clone(),
                    offset: file.offset,
                    done: file.done,
                });
            }
        }
        progress
    }

    /// The last listing, taken out while its files are followed, when it still holds (see
    /// [`Listing`]; then true); else the directory listed anew.
    fn list(&mut self, dir: &DirStatus) -> io::Result<(Listing, bool)> {
        let changed = dir.changed;
        let holds = |listing: &mut Listing| {
            listing.settled
                && listing.changed == changed
                && listing.listed_at.elapsed() < LISTING_TRUSTED
        };
        if let Some(listing) = self.listing.take_if(holds) {
            return Ok((listing, true));
        }
        let settled = changed.is_some_and(|(seconds, nanoseconds)| {
            SystemTime::UNIX_EPOCH
                + Duration::new(
                    seconds.max(0) as u64,
                    nanoseconds.clamp(0, 999_999_999) as u32,
                )
                + SETTLED
                <= SystemTime::now()
        });
        let (names, excess) = self.read_names()?;
        let listing = Listing {
            names,
            excess,
            changed,
            settled,
            listed_at: Instant::now(),
        };
        Ok((listing, false))
    }

    /// The `*.jsonl` names to look at, read through the open directory itself, and how
    /// many more new ones there are than the file cap lets in: those are not even looked at,
    /// so that a flood of files costs a directory listing and nothing more.
    fn read_names(&self) -> io::Result<(Vec<OsString>, u64)> {
        let mut room = self.limits.files.saturating_sub(self.files.len());
        let mut names = Vec::new();
        let mut excess = 0;
        self.dir.list(&mut |name| {
            if !name.as_encoded_bytes().ends_with(b".jsonl") {
                return;
            }
            if self.names.contains_key(name) {
                names.push(name.to_owned());
            } else if room > 0 {
                room -= 1;
                names.push(name.to_owned());
            } else {
                excess += 1;
            }
        })?;
        Ok((names, excess))
    }

    /// The id and size of the file now under `name`, registering (and judging) a new one;
    /// `None` when it is over the file cap or gone. In an `unchanged` directory, a name
    /// followed before names the same file still: its handle is not looked up again.
    fn follow(
        &mut self,
        name: &OsStr,
        unchanged: bool,
        visit: &mut dyn FnMut(Item<'_>),
    ) -> Option<(FileId, u64)> {
        let entry = self.dir.entry(name).ok()?;
        let id = entry.identity;
        let same_entry = unchanged && self.names.get(name) == Some(&id);
        let handle = match same_entry {
            true => None,
            false => self.dir.handle(name),
        };
        if let Some(followed) = self.files.get_mut(&id) {
            if same_entry || followed.is_same_file(handle.as_deref()) {
                if OsStr::new(&followed.name) != name {
                    followed.name = name.to_string_lossy().into_owned();
                }
                self.names.insert(name.to_owned(), id);
                return Some((id, entry.size));
            }
            // Another file got that one's inode number once it was deleted: it takes the
            // gone file's place, within the cap.
        } else if self.files.len() >= self.limits.files {
            return None;
        }
        let replaced = self.names.insert(name.to_owned(), id).is_some();
        let problem = if replaced {
            Some(Problem::Replaced)
        } else if entry.kind == Kind::SymbolicLink {
            Some(Problem::Symlink)
        } else if entry.kind != Kind::File {
            Some(Problem::NotRegular)
        } else if entry.links > 1 {
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
                handle,
                offset: 0,
                done: problem.is_some(),
                skipping: false,
                changed: true,
            },
        );
        Some((id, entry.size))
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
        let file = match self.dir.open_file(name) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return 0,
            Err(error) => {
                let problem = match tc_profile_fs::is_symbolic_link_refused(&error) {
                    true => Problem::Symlink,
                    false => Problem::Unreadable,
                };
                return finish(followed, problem, visit);
            }
        };
        let Ok(opened) = tc_profile_fs::entry_of(&file) else {
            return 0;
        };
        let same_file =
            opened.identity == id && followed.is_same_file(tc_profile_fs::handle(&file).as_deref());
        if !same_file {
            return 0; // Replaced since it was listed: judged at the next scan.
        }
        if opened.kind != Kind::File {
            return finish(followed, Problem::NotRegular, visit);
        }
        let size = opened.size;
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
        if self.buffer.is_empty() {
            // At the first file read: a directory without marker files maps no buffer.
            self.buffer = vec![0; CHUNK_BYTES.max(self.limits.line_bytes + 1)];
        }
        reading.run(followed, &mut self.buffer, visit)
    }
}

#[cfg(test)]
mod tests;
