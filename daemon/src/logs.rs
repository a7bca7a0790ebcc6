//! Reading the daemon's logs while they may still be written: complete lines only, never
//! through a lock, never changing them, never held whole.

use crate::error::DaemonError;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};
use tc_profile_finalizer::{read_log, read_log_within, Recording, Span, SpanRead};

/// Now, in epoch milliseconds.
pub fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1000.0
}

/// Bytes read back from a log's end at a time, looking for its last newline.
const TAIL_BYTES: u64 = 64 << 10;

/// The log opened, and its length up to its last newline: what a live writer has finished.
pub fn open_complete(path: &Path) -> Result<(File, u64), DaemonError> {
    let error = |source| DaemonError::Log {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(error)?;
    let length = complete_length(&mut file).map_err(error)?;
    file.rewind().map_err(error)?;
    Ok((file, length))
}

/// The length of `file` up to its last newline, found reading back from its end.
fn complete_length(file: &mut File) -> io::Result<u64> {
    let mut end = file.metadata()?.len();
    let mut tail = vec![0; TAIL_BYTES as usize];
    while end > 0 {
        let start = end.saturating_sub(TAIL_BYTES);
        let tail = &mut tail[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(tail)?;
        if let Some(newline) = tail.iter().rposition(|&b| b == b'\n') {
            return Ok(start + newline as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// The recording of a log's complete lines, read as a stream.
pub fn read_complete(path: &Path) -> Result<Recording, DaemonError> {
    let (file, length) = open_complete(path)?;
    read_log(BufReader::new(file.take(length))).map_err(unreadable(path))
}

/// A machine segment's complete lines over `span` only (see [`read_log_within`]).
pub fn read_complete_within(path: &Path, span: Span) -> Result<SpanRead, DaemonError> {
    let (file, length) = open_complete(path)?;
    read_log_within(file, length, span).map_err(unreadable(path))
}

fn unreadable(path: &Path) -> impl Fn(tc_profile_finalizer::ReadError) -> DaemonError + '_ {
    move |error| DaemonError::Log {
        path: path.to_owned(),
        source: io::Error::new(io::ErrorKind::InvalidData, error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_complete_up_to_its_last_newline_however_far_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let mut bytes = b"{\"a\":1}\n".to_vec();
        bytes.resize(bytes.len() + 3 * TAIL_BYTES as usize, b'x');
        for (content, complete) in [
            (&bytes[..], 8),
            (&bytes[..8], 8),
            (&bytes[..7], 0),
            (&b""[..], 0),
        ] {
            std::fs::write(&path, content).unwrap();
            let (mut file, length) = open_complete(&path).unwrap();
            assert_eq!(length, complete);
            let mut read = Vec::new();
            (&mut file).take(length).read_to_end(&mut read).unwrap();
            assert_eq!(read, &content[..complete as usize]);
        }
    }
}
