//! What [`Dir`] does with a path or a tree, the same on every OS: a path is taken apart
//! here, each component opened or created by the OS's calls relative to the directory
//! before it; a tree is removed a level at a time, each opened by handle.

use crate::{Dir, Identity, Kind, SHARED_DIR};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

/// How deep [`Dir::remove_tree`] goes: a directory is held open at each level.
const MAX_DEPTH: usize = 64;

/// How many times [`Dir::remove_tree`] empties a directory that a task fills as it goes.
const EMPTYING_ROUNDS: usize = 3;

impl Dir {
    /// The directory that holds the file at `path`, and the file's name in it.
    pub fn open_parent(path: &Path) -> io::Result<(Dir, &OsStr)> {
        let Some(Component::Normal(name)) = path.components().next_back() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not the path of a file (it ends in a separator, '.' or '..')",
            ));
        };
        let parent = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        Ok((Dir::open(parent)?, name))
    }

    /// Opens the directory at `path`, created with what is missing of it: every component,
    /// from the root, opened without following a symbolic link (one is refused), each
    /// missing one created ([`SHARED_DIR`], the last one `mode`). Returns the directory
    /// and whether it was created.
    pub fn create_all(path: &Path, mode: u32) -> io::Result<(Dir, bool)> {
        let path = std::path::absolute(path)?;
        // The root: `/`, or a drive's or a share's (`C:\`, `\\server\share\`).
        let root: PathBuf = path
            .components()
            .take_while(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
            .collect();
        let root_dir = Dir::open(&root)?;
        root_dir.create_path(path.strip_prefix(&root).unwrap_or(&path), mode)
    }

    /// [`Dir::create_all`] from this directory: `path` is relative to it.
    pub fn create_path(&self, path: &Path, mode: u32) -> io::Result<(Dir, bool)> {
        let mut names = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(name) => names.push(name),
                Component::CurDir => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "give the path without '..'",
                    ))
                }
            }
        }
        let mut dir = self.reopen()?;
        let mut created = false;
        let mut reached = PathBuf::new();
        for (index, name) in names.iter().enumerate() {
            reached.push(name);
            let mode = if index + 1 == names.len() {
                mode
            } else {
                SHARED_DIR
            };
            (dir, created) = match dir.open_dir(name) {
                Ok(next) => (next, false),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    (dir.create_dir(name, mode)?, true)
                }
                Err(error) => {
                    return Err(io::Error::new(
                        error.kind(),
                        format!("{}: {error}", reached.display()),
                    ))
                }
            };
        }
        Ok((dir, created))
    }

    /// Removes the directory `name` and everything in it, provided it is still `expected`
    /// (the directory that was created there, not one put in its place): each level opened
    /// by handle, never through a symbolic link; a symbolic link inside is removed itself,
    /// never followed.
    pub fn remove_tree(&self, name: &OsStr, expected: Identity) -> io::Result<()> {
        let dir = self.open_dir(name)?;
        if dir.identity()? != expected {
            return Err(io::Error::other(
                "another directory took the place of the one created there; left alone",
            ));
        }
        for _ in 0..EMPTYING_ROUNDS {
            dir.empty(0)?;
            match self.remove_empty_dir(name) {
                Err(error) if error.kind() == io::ErrorKind::DirectoryNotEmpty => continue,
                result => return result,
            }
        }
        Err(io::Error::other(
            "files kept appearing in it as it was removed",
        ))
    }

    /// Removes everything in this directory.
    fn empty(&self, depth: usize) -> io::Result<()> {
        if depth == MAX_DEPTH {
            return Err(io::Error::other(format!(
                "directories nested deeper than {MAX_DEPTH}; the deepest left"
            )));
        }
        let mut names: Vec<OsString> = Vec::new();
        self.list(&mut |name| names.push(name.to_owned()))?;
        for name in names {
            self.remove_entry(&name, depth)?;
        }
        Ok(())
    }

    fn remove_entry(&self, name: &OsStr, depth: usize) -> io::Result<()> {
        let removed = match self.entry(name) {
            Ok(entry) if entry.kind == Kind::Directory => {
                // Opened without following: a directory swapped for a link since is refused.
                self.open_dir(name)?.empty(depth + 1)?;
                self.remove_empty_dir(name)
            }
            Ok(_) => self.remove_file(name),
            Err(error) => Err(error),
        };
        match removed {
            // Removed by someone else meanwhile.
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            result => result,
        }
    }
}

/// Removes the directory at `path` and everything in it, provided it is still the one
/// created there (`created`, its identity then): see [`Dir::remove_tree`]. Its parent is
/// opened without following a symbolic link at its last component; one swapped in higher up
/// leads elsewhere, where `created` is not found.
pub fn remove_created_tree(path: &Path, created: Identity) -> io::Result<()> {
    let (parent, name) = Dir::open_parent(path)?;
    parent.remove_tree(name, created)
}
