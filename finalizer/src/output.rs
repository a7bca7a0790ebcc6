//! Atomic output: a temporary file in the same directory, fsync, rename over the final
//! name, fsync of the directory. A kill at any moment leaves either the old file or the
//! whole new one under the final name, never a part. The temporary file has one name per
//! output and is locked while written: a killed writer's leftover is taken over by the
//! next, so leftovers never pile up, and two writers of one output never mix their bytes.
//! The output's directory may be a task's (SPEC.md, "Hostile directories"): it is opened
//! once, and the temporary created there exclusively, never through a symbolic link; what
//! a task put at its name is removed, never followed nor written.
//! Its writeback starts as it is written, so that the fsync waits for the last MiB only.
//! A profile goes through [`write_profile`]: JSON (numbers through `number_text.rs`),
//! compressed by the name's extension.

use crate::compression::Compression;
use crate::number_text::ProfileFormatter;
use serde::Serialize;
use std::ffi::{OsStr, OsString};
use std::fs::{File, TryLockError};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use tc_profile_fs::{identity, identity_of_path, Dir, Kind, SHARED_FILE};

/// Writes `path` atomically with what `fill` writes, with exactly `mode` (a profile:
/// [`SHARED_FILE`]); returns the bytes written.
pub fn write_atomically(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<u64> {
    let (dir, name) = Dir::open_parent(path)?;
    let temporary = temporary_name(name);
    let file = lock_temporary(&dir, &temporary, mode)?;
    let ours = identity(&file)?;
    let result = (|| {
        let early = EarlyWriteback {
            file,
            written: 0,
            started: 0,
        };
        let mut buffered = BufWriter::with_capacity(1 << 16, early);
        fill(&mut buffered)?;
        let output = buffered.into_inner().map_err(|e| e.into_error())?;
        output.file.sync_all()?;
        dir.rename(&temporary, name)?;
        dir.sync()?;
        Ok(output.written)
    })();
    // Only while the name is still ours: another writer may have taken it since.
    if result.is_err() && dir.entry(&temporary).is_ok_and(|e| e.identity == ours) {
        let _ = dir.remove_file(&temporary);
    }
    result
}

/// Writes `profile` as JSON to `path` atomically, compressed by the name (`.gz`, `.zst`);
/// returns the bytes written.
pub fn write_profile(path: &Path, profile: &impl Serialize) -> io::Result<u64> {
    let compression = Compression::for_output(path);
    write_atomically(path, SHARED_FILE, |out| {
        compression.encode(out, |out| write_profile_json(out, profile))
    })
}

/// Writes `profile` to `out` as JSON, as a profile's file is written (a live profile
/// streamed over HTTP too): numbers through `number_text.rs`, which writes serde_json's
/// own bytes in half its work.
pub fn write_profile_json(out: &mut dyn Write, profile: &impl Serialize) -> io::Result<()> {
    // Buffered before the `dyn Write`: serde_json writes a few bytes at a time, and a call
    // through it each time was a tenth of writing a profile. A buffer this size or more is
    // written on past the file's smaller one, without a copy.
    let mut buffered = BufWriter::with_capacity(PROFILE_BUFFER, out);
    let mut json = serde_json::Serializer::with_formatter(&mut buffered, ProfileFormatter);
    profile.serialize(&mut json).map_err(io::Error::other)?;
    buffered.flush()
}

/// The profile writer's buffer: writes of 128 KiB at a time (twice the file's buffer).
const PROFILE_BUFFER: usize = 1 << 17;

/// Creates and locks the temporary file. One already there is a killed writer's leftover
/// (taken over), another writer's (refused), or what a task put there (removed): it is
/// removed, never followed, and the creation tried once more.
fn lock_temporary(dir: &Dir, temporary: &OsStr, mode: u32) -> io::Result<File> {
    match create_locked(dir, temporary, mode) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        created => return created,
    }
    remove_leftover(dir, temporary)?;
    create_locked(dir, temporary, mode).map_err(|error| match error.kind() {
        io::ErrorKind::AlreadyExists => io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} came back as soon as it was removed: something else is writing in this \
                 directory",
                temporary.display()
            ),
        ),
        _ => error,
    })
}

/// Creates the temporary exclusively and locks it, while its name is still its own: a
/// writer that took it for a leftover, between the creation and the lock, has the output.
fn create_locked(dir: &Dir, temporary: &OsStr, mode: u32) -> io::Result<File> {
    let file = dir.create_new(temporary, mode)?;
    lock_named(dir, temporary, file)
}

/// Locks `file`, while `name` in `dir` still names it.
fn lock_named(dir: &Dir, name: &OsStr, file: File) -> io::Result<File> {
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(busy()),
        Err(TryLockError::Error(error)) => return Err(error),
    }
    if dir.entry(name)?.identity != identity(&file)? {
        return Err(busy());
    }
    Ok(file)
}

/// Removes what is at the temporary's name: a file nobody holds locked, a symbolic link
/// (itself), a FIFO or a socket. A directory there is refused.
fn remove_leftover(dir: &Dir, temporary: &OsStr) -> io::Result<()> {
    let entry = match dir.entry(temporary) {
        Ok(entry) => entry,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    // A file is held locked while it is removed: no other writer takes it over meanwhile.
    let _held = match entry.kind {
        Kind::Directory => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} is a directory, in the way of the temporary file: remove it",
                    temporary.display()
                ),
            ))
        }
        Kind::File => Some(lock_named(dir, temporary, dir.open_file(temporary)?)?),
        Kind::SymbolicLink | Kind::Other => None,
    };
    match dir.remove_file(temporary) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        removed => removed,
    }
}

fn busy() -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        "another tc-profile is writing this file at the same time",
    )
}

/// Whether `path` still names the open `file` (it was neither removed nor replaced).
pub(crate) fn names_file(path: &Path, file: &File) -> bool {
    match (identity_of_path(path), identity(file)) {
        (Ok(named), Ok(open)) => named == open,
        _ => false,
    }
}

/// Removes the file at `path` and makes the removal durable; a symbolic link there is
/// removed itself.
pub fn remove_durably(path: &Path) -> io::Result<()> {
    let (dir, name) = Dir::open_parent(path)?;
    dir.remove_file(name)?;
    dir.sync()
}

/// Removes the file at `path`, durably, if it is still the open `file` (not replaced since,
/// not a symbolic link to it); whether it was.
pub(crate) fn remove_if_named(path: &Path, file: &File) -> io::Result<bool> {
    let (dir, name) = Dir::open_parent(path)?;
    match dir.entry(name) {
        Ok(entry) if entry.identity == identity(file)? => {}
        Ok(_) => return Ok(false),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    }
    dir.remove_file(name)?;
    dir.sync()?;
    Ok(true)
}

/// `.NAME.tmp` beside the final file: same file system, so the rename is atomic, and a
/// leading dot so that artifact uploads matching `profile_*.json` do not pick it up.
fn temporary_name(name: &OsStr) -> OsString {
    let mut temporary = OsString::from(".");
    temporary.push(name);
    temporary.push(".tmp");
    temporary
}

/// The output file, whose writeback is started every [`WRITEBACK_EVERY`] bytes as it is
/// written (`sync_file_range`, not waited for): the disk takes the bytes while the rest is
/// made, and the fsync at the end waits for the last stretch only (a 12.6 MB profile's
/// fsync 4.8 -> 0.9 ms, its finalize 29.6 -> 25.2 ms, the CPU the same).
struct EarlyWriteback {
    file: File,
    /// Bytes written to the file: what [`write_atomically`] returns.
    written: u64,
    /// Bytes whose writeback has been started.
    started: u64,
}

/// How many bytes are written between two starts of writeback.
const WRITEBACK_EVERY: u64 = 1 << 20;

impl Write for EarlyWriteback {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_EVERY {
            start_writeback(&self.file, self.started, self.written - self.started);
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Asks the kernel to start writing `length` bytes from `offset` back. Only a hint: where
/// it fails or does nothing, the fsync at the end writes them all the same, and says so
/// if that fails.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, length: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(length)) = (i64::try_from(offset), i64::try_from(length)) else {
        return;
    };
    // SAFETY: a plain system call on an open descriptor; no memory is passed.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset,
            length,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &File, _: u64, _: u64) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::decompressed;
    use std::fs;
    use std::io::{BufReader, Read};

    #[test]
    fn a_profile_is_compressed_by_its_name_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let profile = serde_json::json!({"meta": {"version": 1}});
        for name in ["p.json", "p.json.gz", "p.json.zst"] {
            let path = dir.path().join(name);
            let written = write_profile(&path, &profile).unwrap();
            let bytes = fs::read(&path).unwrap();
            assert_eq!(written, bytes.len() as u64, "{name}");
            assert_eq!(bytes.starts_with(b"{"), name == "p.json", "{name}");
            let mut text = String::new();
            decompressed(BufReader::new(bytes.as_slice()))
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, profile.to_string(), "{name}");
        }
    }

    // Wine makes no symbolic links; the modes are unix's.
    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_at_the_temporary_name_is_removed_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        fs::write(&secret, "root only").unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join(".p.json.tmp")).unwrap();
        let path = dir.path().join("p.json");
        write_atomically(&path, SHARED_FILE, |out| out.write_all(b"{}")).unwrap();
        assert_eq!(fs::read_to_string(&secret).unwrap(), "root only");
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            SHARED_FILE
        );
        assert!(!dir.path().join(".p.json.tmp").exists());
    }

    #[test]
    fn a_killed_writer_s_leftover_is_taken_over_and_a_held_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        let temporary = dir.path().join(".p.json.tmp");
        fs::write(&temporary, "a killed writer's half").unwrap();
        write_atomically(&path, SHARED_FILE, |out| out.write_all(b"whole")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "whole");
        let held = File::create(&temporary).unwrap();
        held.lock().unwrap();
        let error =
            write_atomically(&path, SHARED_FILE, |out| out.write_all(b"mixed")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::WouldBlock, "{error}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "whole");
        assert!(temporary.exists(), "the other writer's file is left to it");
    }

    #[test]
    fn a_directory_at_the_temporary_name_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".p.json.tmp")).unwrap();
        let path = dir.path().join("p.json");
        let error = write_atomically(&path, SHARED_FILE, |out| out.write_all(b"{}")).unwrap_err();
        assert!(error.to_string().contains("is a directory"), "{error}");
        assert!(!path.exists());
    }

    #[cfg(unix)]
    #[test]
    fn an_output_directory_that_is_a_symbolic_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let path = dir.path().join("link/p.json");
        let error = write_atomically(&path, SHARED_FILE, |out| out.write_all(b"{}")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(!dir.path().join("real/p.json").exists());
    }

    #[test]
    fn a_file_past_several_writebacks_is_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        let bytes: Vec<u8> = (0..3 * WRITEBACK_EVERY + 17)
            .map(|i| (i % 251) as u8)
            .collect();
        // Uneven pieces, so that a writeback starts inside a write's bytes.
        let written = write_atomically(&path, SHARED_FILE, |out| {
            bytes
                .chunks(70_001)
                .try_for_each(|piece| out.write_all(piece))
        })
        .unwrap();
        assert_eq!(written, bytes.len() as u64);
        assert!(fs::read(&path).unwrap() == bytes);
    }
}
