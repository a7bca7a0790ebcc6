//! Capability tokens: what a live profile's URL must carry to be served (SPEC.md, "Live
//! profiles over HTTP"), 128 bits from the OS's random source, compared in constant time.

use crate::error::DaemonError;
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Random bytes of a token (shown as twice as many hex digits).
const TOKEN_BYTES: usize = 16;

/// A task's or the daemon's token; empty in a state file written before tokens were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    pub fn new() -> Result<Token, DaemonError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| DaemonError::Random(error.to_string()))?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
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
        let (ours, given) = (self.0.as_bytes(), given.as_bytes());
        if ours.is_empty() || ours.len() != given.len() {
            return false;
        }
        let differences = ours
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(differences) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_itself_only_and_an_empty_one_nothing() {
        let token = Token::new().unwrap();
        assert_eq!(token.as_str().len(), 2 * TOKEN_BYTES);
        assert!(token.matches(token.as_str()));
        let mut other = token.as_str().to_owned();
        let last = if other.ends_with('0') { "1" } else { "0" };
        other.replace_range(other.len() - 1.., last);
        assert!(!token.matches(&other));
        assert!(!token.matches(&token.as_str()[1..]));
        assert!(!token.matches(""));
        assert!(!Token::default().matches(""));
        assert_ne!(Token::new().unwrap(), token);
    }

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
