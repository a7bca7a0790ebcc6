//! A task's profile directory, when the daemon creates it (SPEC.md, "Hostile
//! directories"): created without following a symbolic link, 0700 and the task's user's,
//! its identity kept in the state; removed at the end only while it is still that directory.

use crate::error::DaemonError;
use crate::state::{DirId, OpenTask};
use std::path::Path;
use tc_profile_fs::{remove_created_tree, Dir, Owner, PRIVATE_DIR};

/// The user a task's profile directory is given to: `--user UID[:GID]`.
pub fn task_owner(uid: Option<u32>, gid: Option<u32>) -> Result<Option<Owner>, DaemonError> {
    match (uid, gid) {
        (None, Some(_)) => Err(DaemonError::Request(
            "a gid was given without a uid: give both, as --user UID:GID".to_owned(),
        )),
        (uid, gid) => Ok(uid.map(|uid| Owner { uid, gid })),
    }
}

/// Creates the task's profile directory when missing, never through a symbolic link: `path`
/// under `base` (the state directory's `profiles`), or from the root without one. It is
/// 0700 and `owner`'s: the task's alone. Returns its identity; None when it was there.
pub fn create_profile_dir(
    base: Option<&Path>,
    path: &Path,
    owner: Option<Owner>,
) -> Result<Option<DirId>, DaemonError> {
    let full = base.map_or_else(|| path.to_owned(), |base| base.join(path));
    let error = |source| DaemonError::ProfileDir {
        path: full.clone(),
        source,
    };
    if full.is_dir() {
        return Ok(None);
    }
    let (dir, created) = match base {
        Some(base) => Dir::open(base).and_then(|base| base.create_path(path, PRIVATE_DIR)),
        None => Dir::create_all(path, PRIVATE_DIR),
    }
    .map_err(error)?;
    if !created {
        return Ok(None);
    }
    let identity = dir.identity().map_err(error)?;
    if let Some(owner) = owner {
        if let Err(source) = dir.give_to(owner) {
            let _ = remove_created_tree(&full, identity);
            return Err(error(source));
        }
    }
    Ok(Some(identity.into()))
}

/// Removes the task's profile directory if the daemon created it, and only that one: a
/// directory a task put in its place, or reached through a symbolic link it swapped in for
/// a parent, is left, with a warning.
pub fn remove_profile_dir(open: &OpenTask) {
    if !open.created_dir {
        return;
    }
    let removed = match open.created_dir_id {
        Some(id) => remove_created_tree(&open.profile_dir, id.into()),
        None => Err(std::io::Error::other(
            "an older daemon created it without noting which directory it was",
        )),
    };
    if let Err(error) = removed {
        eprintln!(
            "tc-profile daemon: warning: {}: the task's profile directory is left: {error}",
            open.profile_dir.display()
        );
    }
}
