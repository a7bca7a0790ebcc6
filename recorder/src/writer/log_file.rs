//! Where the writer appends: [`LogSink`], and the real one, [`LogFile`], which also finds
//! the log deleted and creates it again; and the writer's watch on the log's place, which
//! says so once.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tc_profile_fs::{Dir, PRIVATE_FILE};

/// How often the writer checks that the log is still at its path.
const PLACE_CHECK_PERIOD: Duration = Duration::from_secs(1);

/// Where the writer appends. A trait so that tests can keep a "written" and a "durable"
/// image and fail at the Nth operation.
pub trait LogSink: Send {
    /// Appends whole lines (newlines included) in a single write.
    fn append(&mut self, lines: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the log back to its first `length` bytes: drops the partial line that a failed
    /// append can leave, so that the next line starts on a line of its own.
    fn cut(&mut self, length: u64) -> io::Result<()>;
    /// Checks that the log is still reachable at its path, and creates it there again,
    /// with its first `length` bytes, if it was deleted.
    fn check_place(&mut self, length: u64) -> io::Result<Place>;
}

/// Where the log stands, as [`LogSink::check_place`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On a disk: at its path, or moved elsewhere by someone.
    Linked,
    /// It had been deleted; it is at its path again, with everything written so far.
    Recreated,
    /// It and its directory are gone: lines go on into the deleted file, which lives only
    /// as long as the recorder.
    Orphaned,
}

/// The log file and its path: the sink of a real recording.
pub(crate) struct LogFile {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
}

impl LogSink for LogFile {
    fn append(&mut self, line: &[u8]) -> io::Result<()> {
        self.file.write_all(line)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn cut(&mut self, length: u64) -> io::Result<()> {
        self.file.set_len(length)
    }

    fn check_place(&mut self, length: u64) -> io::Result<Place> {
        // Asked of the open log, never of its path: the inode of an open file is not given
        // to another one, so no file at the path (not even one given a freed inode number)
        // is taken for the log.
        if tc_profile_fs::entry_of(&self.file)?.links > 0 {
            return Ok(Place::Linked);
        }
        // Deleted. Created again only where nothing else is, and only in a directory that
        // exists: tc-profile never creates a directory that someone removed.
        let copy = |new: &mut File| {
            let mut old = &self.file;
            old.seek(SeekFrom::Start(0))?;
            io::copy(&mut old.take(length), new)?;
            Ok(())
        };
        match create_log(&self.path, copy) {
            Ok(file) => {
                self.file = file;
                Ok(Place::Recreated)
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Place::Orphaned),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(Place::Orphaned),
            // Its directory swapped for a symbolic link: never followed.
            Err(error) if error.kind() == io::ErrorKind::InvalidInput => Ok(Place::Orphaned),
            Err(error) => Err(error),
        }
    }
}

/// Creates a log that `fill` starts, durable, with its directory entry durable too, and
/// locked. The lock is taken before the first byte: a recoverer that wins the race to it
/// finds an empty file, which it leaves alone (SPEC.md, "Locking and recovery"). The log is
/// its owner's alone (it holds the tasks' command lines), created never through a symbolic
/// link.
pub(crate) fn create_log(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<File> {
    let (dir, name) = Dir::open_parent(path)?;
    let mut file = dir.create_new(name, PRIVATE_FILE)?;
    let made_durable = file
        .lock()
        .and_then(|()| fill(&mut file))
        .and_then(|()| file.sync_all())
        .and_then(|()| dir.sync());
    if let Err(error) = made_durable {
        // Ours alone (created exclusively): a log without its headers would only be
        // something for a recoverer to clear away.
        let _ = dir.remove_file(name);
        return Err(error);
    }
    Ok(file)
}

/// Where the writer last found the log, and when it looks again.
pub(super) struct PlaceWatch {
    /// How warnings name the log.
    name: String,
    place: Place,
    next_check: Instant,
}

impl PlaceWatch {
    pub(super) fn new(name: String) -> PlaceWatch {
        PlaceWatch {
            name,
            place: Place::Linked,
            next_check: Instant::now() + PLACE_CHECK_PERIOD,
        }
    }

    pub(super) fn next_check(&self) -> Instant {
        self.next_check
    }

    /// Checks the log's place once it is due by `soon`, warning when the log was deleted.
    pub(super) fn check_if_due(
        &mut self,
        sink: &mut impl LogSink,
        length: u64,
        soon: Instant,
    ) -> io::Result<()> {
        if soon < self.next_check {
            return Ok(());
        }
        self.next_check = Instant::now() + PLACE_CHECK_PERIOD;
        let place = sink.check_place(length)?;
        match (self.place, place) {
            (_, Place::Recreated) => eprintln!(
                "tc-profile: warning: {} was deleted; created again with everything recorded",
                self.name
            ),
            (Place::Linked, Place::Orphaned) => eprintln!(
                "tc-profile: warning: {} was deleted and cannot be created again (its \
                 directory is gone, or another file took its name); recording goes on into \
                 the deleted file, lost if tc-profile is killed, until the log can be created",
                self.name
            ),
            _ => {}
        }
        self.place = if place == Place::Recreated {
            Place::Linked
        } else {
            place
        };
        Ok(())
    }
}
