//! Atomic output: a temporary file in the same directory, fsync, rename over the final
//! name, fsync of the directory. A kill at any moment leaves either the old file or the
//! whole new one under the final name, never a part. The temporary file has one name per
//! output and is locked while written: a killed writer's leftover is taken over by the
//! next, so leftovers never pile up, and two writers of one output never mix their bytes.
//! Its writeback starts as it is written, so that the fsync waits for the last MiB only.
//! A profile goes through [`write_profile`]: JSON (numbers through `number_text.rs`),
//! compressed by the name's extension.

use crate::compression::Compression;
use crate::number_text::ProfileFormatter;
use serde::Serialize;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Writes `path` atomically with what `fill` writes; returns the bytes written.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<u64> {
    let directory = parent_directory(path);
    let temporary = temporary_path(path);
    let file = lock_temporary(&temporary)?;
    let result = (|| {
        file.set_len(0)?;
        let early = EarlyWriteback {
            file,
            written: 0,
            started: 0,
        };
        let mut buffered = BufWriter::with_capacity(1 << 16, early);
        fill(&mut buffered)?;
        let output = buffered.into_inner().map_err(|e| e.into_error())?;
        output.file.sync_all()?;
        fs::rename(&temporary, path)?;
        File::open(directory)?.sync_all()?;
        Ok(output.written)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

/// Writes `profile` as JSON to `path` atomically, compressed by the name (`.gz`, `.zst`);
/// returns the bytes written.
pub fn write_profile(path: &Path, profile: &impl Serialize) -> io::Result<u64> {
    let compression = Compression::for_output(path);
    write_atomically(path, |out| {
        compression.encode(out, |out| {
            // Buffered before the `dyn Write`: serde_json writes a few bytes at a time, and
            // a call through it each time was a tenth of writing a profile. A buffer this
            // size or more is written on past the file's smaller one, without a copy.
            let mut buffered = BufWriter::with_capacity(PROFILE_BUFFER, out);
            let mut json = serde_json::Serializer::with_formatter(&mut buffered, ProfileFormatter);
            profile.serialize(&mut json).map_err(io::Error::other)?;
            buffered.flush()
        })
    })
}

/// The profile writer's buffer: writes of 128 KiB at a time (twice the file's buffer).
const PROFILE_BUFFER: usize = 1 << 17;

/// Opens and locks the temporary file, a leftover of a killed writer included.
fn lock_temporary(temporary: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(temporary)?;
    let busy = || {
        io::Error::new(
            io::ErrorKind::WouldBlock,
            "another tc-profile is writing this file at the same time",
        )
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(busy()),
        Err(TryLockError::Error(error)) => return Err(error),
    }
    // The other writer renamed it to the final name between our open and our lock.
    if !names_file(temporary, &file) {
        return Err(busy());
    }
    Ok(file)
}

/// Whether `path` still names the open `file` (it was neither removed nor replaced).
pub(crate) fn names_file(path: &Path, file: &File) -> bool {
    match (fs::metadata(path), file.metadata()) {
        (Ok(named), Ok(open)) => named.dev() == open.dev() && named.ino() == open.ino(),
        _ => false,
    }
}

/// Removes a file and makes the removal durable.
pub fn remove_durably(path: &Path) -> io::Result<()> {
    fs::remove_file(path)?;
    File::open(parent_directory(path))?.sync_all()
}

pub fn parent_directory(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// `.NAME.tmp` beside the final file: same file system, so the rename is atomic, and a
/// leading dot so that artifact uploads matching `profile_*.json` do not pick it up.
fn temporary_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_directory(path).join(format!(".{name}.tmp"))
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

    #[test]
    fn a_file_past_several_writebacks_is_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        let bytes: Vec<u8> = (0..3 * WRITEBACK_EVERY + 17)
            .map(|i| (i % 251) as u8)
            .collect();
        // Uneven pieces, so that a writeback starts inside a write's bytes.
        let written = write_atomically(&path, |out| {
            bytes
                .chunks(70_001)
                .try_for_each(|piece| out.write_all(piece))
        })
        .unwrap();
        assert_eq!(written, bytes.len() as u64);
        assert!(fs::read(&path).unwrap() == bytes);
    }
}
