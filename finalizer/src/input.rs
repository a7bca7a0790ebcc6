//! Opening what a user names on the command line: a log or a processed profile, plain,
//! gzip or zstd, told apart by their first bytes.

use crate::compression::{decompressed_within, InputCaps, OverCap};
use crate::profile::{compact, Profile, ProfileError};
use crate::reader::{read_log, ReadError, Recording};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use tc_profile_format::META_PREFIX;

/// Told how many bytes of the input file have been read so far, and its size; called
/// about every mebibyte.
pub type ProgressFn = dyn Fn(u64, u64) + Send + Sync;

/// What a file holds.
pub enum Input {
    /// Boxed: a recording is large, a profile's bytes are a pointer.
    Log(Box<Recording>),
    /// A processed profile's JSON, decompressed, as it was written.
    Profile(Vec<u8>),
}

impl Input {
    /// The processed profile's JSON: a log compacted and serialized, a profile checked and
    /// passed on as it was written.
    pub fn into_profile_json(self, path: &Path) -> Result<Vec<u8>, InputError> {
        match self {
            Input::Log(recording) => Ok(serde_json::to_vec(&compact(*recording).0)
                .unwrap_or_else(|e| unreachable!("serialize a profile: {e}"))),
            Input::Profile(bytes) => match Profile::from_processed(&bytes) {
                Ok(_) => Ok(bytes),
                Err(source) => Err(InputError::NotAProfile {
                    path: path.to_owned(),
                    source,
                }),
            },
        }
    }

    /// The profile: a log is compacted in memory, a processed profile parsed.
    pub fn into_profile(self, path: &Path) -> Result<Profile, InputError> {
        match self {
            Input::Log(recording) => Ok(compact(*recording).0),
            Input::Profile(bytes) => {
                Profile::from_processed(&bytes).map_err(|source| InputError::NotAProfile {
                    path: path.to_owned(),
                    source,
                })
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    #[error("cannot read {path}: {source}; check the path")]
    Open { path: PathBuf, source: io::Error },
    #[error("{path} is not a tc-profile log: {source}")]
    NotALog { path: PathBuf, source: ReadError },
    #[error("{path} is neither a tc-profile log nor a profile: {source}")]
    NotAProfile { path: PathBuf, source: ProfileError },
    #[error("{path} {source}")]
    OverCap { path: PathBuf, source: OverCap },
}

/// Reads a log or a processed profile, decompressed within `caps`.
pub fn read_input(
    path: &Path,
    caps: InputCaps,
    progress: Option<&ProgressFn>,
) -> Result<Input, InputError> {
    let mut input = open(path, caps, progress)?;
    let is_log = input
        .fill_buf()
        .map_err(|source| open_error(path, source))?
        .starts_with(META_PREFIX);
    if is_log {
        return parse_log(path, input).map(|log| Input::Log(Box::new(log)));
    }
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|source| open_error(path, source))?;
    Ok(Input::Profile(bytes))
}

fn parse_log(path: &Path, input: impl BufRead) -> Result<Recording, InputError> {
    read_log(input).map_err(|source| match source {
        ReadError::Io(source) => open_error(path, source),
        source => InputError::NotALog {
            path: path.to_owned(),
            source,
        },
    })
}

fn open<'a>(
    path: &Path,
    caps: InputCaps,
    progress: Option<&'a ProgressFn>,
) -> Result<Box<dyn BufRead + 'a>, InputError> {
    let file = File::open(path).map_err(|source| open_error(path, source))?;
    let size = file.metadata().map_or(0, |m| m.len());
    decoded(file, size, caps, progress).map_err(|source| open_error(path, source))
}

/// `file` of `size` bytes, buffered, decompressed within `caps` if it is compressed,
/// reporting progress.
pub(crate) fn decoded<'a>(
    file: impl Read + 'a,
    size: u64,
    caps: InputCaps,
    progress: Option<&'a ProgressFn>,
) -> io::Result<Box<dyn BufRead + 'a>> {
    let counted = CountingReader {
        inner: file,
        read: 0,
        reported: 0,
        size,
        progress,
    };
    // A BufReader zeroes its whole buffer at the first read: no more than the file needs
    // (a short recording's log is a few kB; `run` finalizes it in-process at its peak
    // RSS), and no more than a chunk of the log reader's (which copies out of it). A size
    // of 0 is unknown.
    let capacity = match size {
        0 => 1 << 16,
        size => size.clamp(8 << 10, 1 << 16) as usize,
    };
    decompressed_within(BufReader::with_capacity(capacity, counted), caps)
}

fn open_error(path: &Path, source: io::Error) -> InputError {
    let path = path.to_owned();
    match OverCap::of(&source) {
        Some(source) => InputError::OverCap { path, source },
        None => InputError::Open { path, source },
    }
}

/// Reports the bytes read from the file, before decompression, to a progress function.
struct CountingReader<'a, R> {
    inner: R,
    read: u64,
    reported: u64,
    size: u64,
    progress: Option<&'a ProgressFn>,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if let Some(progress) = self.progress {
            if self.read - self.reported >= 1 << 20 || n == 0 {
                self.reported = self.read;
                progress(self.read, self.size);
            }
        }
        Ok(n)
    }
}
