//! What the daemon must find again after a restart, in its state directory: the open tasks
//! (`state.json`, replaced atomically on every change) and the ended ones
//! (`history.jsonl`, one line appended per task, for worker profiles).

use crate::token::Token;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tc_profile_finalizer::write_atomically;
use tc_profile_fs::{Dir, Identity, PASSAGE_DIR, PRIVATE_DIR, PRIVATE_FILE};

/// The processes a task's log follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Followed {
    Pid(u32),
    Cgroup(PathBuf),
}

/// A task begun and not yet ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenTask {
    pub task: String,
    pub run: u32,
    pub profile_dir: PathBuf,
    /// Whether the daemon created the profile directory (and so removes it at the end).
    pub created_dir: bool,
    /// The created directory's identity: only that directory is removed at the end, not
    /// one a task put in its place (absent in the state of a daemon before 0.1: left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_dir_id: Option<DirId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow: Option<Followed>,
    /// The worker's live log of the task, followed by the parts that follow the profile
    /// directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_log: Option<PathBuf>,
    /// The task's logs, oldest first; the last one is being written.
    pub parts: Vec<PathBuf>,
    /// Epoch ms.
    pub start_time: f64,
    /// What the URLs of its live profile and log carry; empty in a state file of a daemon
    /// before tokens (a new one is drawn when the task is resumed).
    #[serde(default, skip_serializing_if = "Token::is_empty")]
    pub token: Token,
}

/// A directory's identity (SPEC.md, "Hostile directories"), as the state file keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DirId {
    pub dev: u64,
    pub ino: u64,
}

impl From<Identity> for DirId {
    fn from(identity: Identity) -> DirId {
        DirId {
            dev: identity.device,
            ino: identity.inode,
        }
    }
}

impl From<DirId> for Identity {
    fn from(id: DirId) -> Identity {
        Identity {
            device: id.dev,
            inode: id.ino,
        }
    }
}

impl OpenTask {
    pub fn is(&self, task: &str, run: u32) -> bool {
        self.task == task && self.run == run
    }
}

/// A task ended, as `history.jsonl` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndedTask {
    pub task: String,
    pub run: u32,
    pub start_time: f64,
    pub end_time: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// Finalized by the timeout, its end never having come.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
}

/// The state directory's files.
pub struct StateFiles {
    state: PathBuf,
    history: PathBuf,
}

impl StateFiles {
    pub fn new(dir: &Path) -> StateFiles {
        StateFiles {
            state: dir.join("state.json"),
            history: dir.join("history.jsonl"),
        }
    }

    /// The open tasks; none when the file is absent. A file that is not ours is an error,
    /// never overwritten.
    pub fn load(&self) -> io::Result<Vec<OpenTask>> {
        match std::fs::read(&self.state) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: not a daemon state: {e}", self.state.display()),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    pub fn save(&self, tasks: &[OpenTask]) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(tasks).map_err(io::Error::other)?;
        write_atomically(&self.state, PRIVATE_FILE, |out| out.write_all(&bytes)).map(drop)
    }

    /// Appends one line, in one write, made durable.
    pub fn append_history(&self, ended: &EndedTask) -> io::Result<()> {
        let mut line = serde_json::to_vec(ended).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut file = open_private(&self.history)?;
        file.write_all(&line)?;
        file.sync_data()
    }

    /// Every ended task whose line is whole; a torn last line (a kill mid-append) is skipped.
    pub fn history(&self) -> io::Result<Vec<EndedTask>> {
        let text = match std::fs::read_to_string(&self.history) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }
}

/// Locks the state directory for this process's life: a second daemon on it is refused.
pub fn lock(dir: &Path) -> io::Result<Option<File>> {
    let file = open_private(&dir.join("lock"))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// The state directory's subdirectories and their modes: the tasks' logs, the machine's
/// segments and the timed-out tasks' profiles for the daemon alone; `profiles` (like the
/// state directory itself) passable, not readable, so that a task reaches its own
/// directory there (its user's, 0700) and sees no other.
const SUBDIRECTORIES: [(&str, u32); 4] = [
    ("tasks", PRIVATE_DIR),
    ("segments", PRIVATE_DIR),
    ("timed-out", PRIVATE_DIR),
    ("profiles", PASSAGE_DIR),
];

/// Creates the state directory if missing, and gives it and its subdirectories their
/// modes exactly, whatever the umask or the daemon that made them before.
pub fn prepare(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let state = Dir::open(dir)?;
    state.set_mode(PASSAGE_DIR)?;
    for (name, mode) in SUBDIRECTORIES {
        let name = OsStr::new(name);
        match state.create_dir(name, mode) {
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                state.open_dir(name)?.set_mode(mode)?
            }
            created => drop(created?),
        }
    }
    Ok(())
}

/// Opens a file of the state directory for appending, created if missing, its owner's alone.
fn open_private(path: &Path) -> io::Result<File> {
    let (dir, name) = Dir::open_parent(path)?;
    dir.open_append(name, PRIVATE_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_tasks_and_history_survive_a_reload_and_a_torn_history_line() {
        let dir = tempfile::tempdir().unwrap();
        let files = StateFiles::new(dir.path());
        assert_eq!(files.load().unwrap(), []);
        let task = OpenTask {
            task: "t1".into(),
            run: 0,
            profile_dir: "/p".into(),
            created_dir: true,
            created_dir_id: Some(DirId { dev: 1, ino: 2 }),
            follow: Some(Followed::Pid(42)),
            task_log: Some("/w/live.log".into()),
            parts: vec!["/s/t1-0-1.jsonl".into()],
            start_time: 5.0,
            token: Token::new().unwrap(),
        };
        files.save(std::slice::from_ref(&task)).unwrap();
        assert_eq!(files.load().unwrap(), [task]);
        let ended = EndedTask {
            task: "t1".into(),
            run: 0,
            start_time: 5.0,
            end_time: 9.0,
            exit_status: Some(0),
            timed_out: false,
        };
        files.append_history(&ended).unwrap();
        let mut history = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("history.jsonl"))
            .unwrap();
        history.write_all(b"{\"task\":\"t2\",\"ru").unwrap();
        assert_eq!(files.history().unwrap(), [ended]);
    }

    #[test]
    fn a_second_lock_on_the_state_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path()).unwrap();
        assert!(first.is_some());
        assert!(lock(dir.path()).unwrap().is_none());
        drop(first);
        assert!(lock(dir.path()).unwrap().is_some());
    }
}
