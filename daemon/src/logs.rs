//! Reading the daemon's logs while they may still be written: complete lines only, never
//! through a lock, never changing them.

use crate::error::DaemonError;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};
use tc_profile_finalizer::{read_log, Recording};

/// Now, in epoch milliseconds.
pub fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1000.0
}

/// The log's bytes up to its last newline: what a live writer has finished.
pub fn complete_lines(path: &Path) -> Result<Vec<u8>, DaemonError> {
    let mut bytes = std::fs::read(path).map_err(|source| DaemonError::Log {
        path: path.to_owned(),
        source,
    })?;
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(whole);
    Ok(bytes)
}

/// The recording of a log's complete lines.
pub fn read_complete(path: &Path) -> Result<Recording, DaemonError> {
    let bytes = complete_lines(path)?;
    read_log(&bytes[..]).map_err(|error| DaemonError::Log {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string()),
    })
}
