//! What [`Dir`] does with a path, the same on every OS: it is taken apart here, and each
//! component opened or created by the OS's calls relative to the directory before it.

use crate::{Dir, SHARED_DIR};
use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

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
}

/// Removes the directory at `path` and everything in it, provided it is still the one
/// created there (`created`, its identity then): see [`Dir::remove_tree`]. Its parent is
/// opened without following a symbolic link at its last component; one swapped in higher up
/// leads elsewhere, where `created` is not found.
#[cfg(unix)]
pub fn remove_created_tree(path: &Path, created: crate::Identity) -> io::Result<()> {
    let (parent, name) = Dir::open_parent(path)?;
    parent.remove_tree(name, created)
}
