//! Capability tokens: what a live profile's URL must carry to be served (SPEC.md, "Live
//! profiles over HTTP"), 128 bits from the OS's random source, compared in constant time.

use crate::error::DaemonError;
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use tc_profile_recorder::token::{new_token, tokens_match};

/// A task's or the daemon's token; empty in a state file written before tokens were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    pub fn new() -> Result<Token, DaemonError> {
        new_token()
            .map(Token)
            .map_err(|error| DaemonError::Random(error.to_string()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Writes the token to `path`, readable by its owner only, whatever the umask: a new
    /// file of mode 0600 (in the state directory, which only root may write), renamed over
    /// the old one.
    pub fn write_private(&self, path: &Path) -> io::Result<()> {
        let temporary = path.with_extension("tmp");
        let _ = fs::remove_file(&temporary);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(self.0.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    }

    /// Whether `given` is this token, in a time that does not depend on where they differ
    /// (an empty token matches nothing).
    pub fn matches(&self, given: &str) -> bool {
        tokens_match(&self.0, given)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_is_its_owners_only_whatever_was_there() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("http-token");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let token = Token::new().unwrap();
        token.write_private(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), token.as_str());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
