//! Of the unix calls alone: modes, symbolic links (Wine makes none), removing a tree.

use super::*;
use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

fn name(text: &str) -> &OsStr {
    OsStr::new(text)
}

#[test]
fn a_symbolic_link_at_a_new_file_s_name_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("root-only");
    fs::write(&target, "secret").unwrap();
    symlink(&target, dir.path().join("new")).unwrap();
    let open = Dir::open(dir.path()).unwrap();
    let error = open.create_new(name("new"), PRIVATE_FILE).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
    assert!(open.open_file(name("new")).is_err());
    assert_eq!(open.entry(name("new")).unwrap().kind, Kind::SymbolicLink);
    assert_eq!(fs::read_to_string(&target).unwrap(), "secret");
    open.remove_file(name("new")).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "secret");
}

#[test]
fn modes_are_exactly_those_asked_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let open = Dir::open(dir.path()).unwrap();
    // 0o666 and 0o777: what a umask of 022 would change.
    let mut file = open.create_new(name("f"), 0o666).unwrap();
    file.write_all(b"x").unwrap();
    assert_eq!(mode(&dir.path().join("f")), 0o666);
    open.create_dir(name("d"), 0o777).unwrap();
    assert_eq!(mode(&dir.path().join("d")), 0o777);
    let (_, created) = Dir::create_all(&dir.path().join("a/b"), PRIVATE_DIR).unwrap();
    assert!(created);
    assert_eq!(mode(&dir.path().join("a")), SHARED_DIR);
    assert_eq!(mode(&dir.path().join("a/b")), PRIVATE_DIR);
    let (_, created) = Dir::create_all(&dir.path().join("a/b"), PRIVATE_DIR).unwrap();
    assert!(!created);
}

#[test]
fn a_directory_is_never_opened_or_created_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    symlink(&outside, dir.path().join("link")).unwrap();
    assert!(Dir::open(&dir.path().join("link")).is_err());
    let error = Dir::create_all(&dir.path().join("link/new"), PRIVATE_DIR).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert!(!outside.join("new").exists());
}

#[test]
fn a_tree_is_removed_and_a_symbolic_link_in_it_removed_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir_all(outside.join("kept")).unwrap();
    fs::write(outside.join("kept/file"), "kept").unwrap();
    let open = Dir::open(dir.path()).unwrap();
    let tree = open.create_dir(name("tree"), PRIVATE_DIR).unwrap();
    let identity = tree.identity().unwrap();
    fs::create_dir_all(dir.path().join("tree/a/b/c")).unwrap();
    fs::write(dir.path().join("tree/a/b/c/file"), "x").unwrap();
    fs::write(dir.path().join("tree/file"), "x").unwrap();
    symlink(&outside, dir.path().join("tree/a/to-outside")).unwrap();
    symlink(outside.join("kept/file"), dir.path().join("tree/to-file")).unwrap();
    open.remove_tree(name("tree"), identity).unwrap();
    assert!(!dir.path().join("tree").exists());
    assert_eq!(
        fs::read_to_string(outside.join("kept/file")).unwrap(),
        "kept"
    );
}

#[test]
fn a_directory_put_in_the_place_of_the_created_one_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let open = Dir::open(dir.path()).unwrap();
    let identity = open
        .create_dir(name("tree"), PRIVATE_DIR)
        .unwrap()
        .identity()
        .unwrap();
    fs::rename(dir.path().join("tree"), dir.path().join("moved")).unwrap();
    fs::create_dir(dir.path().join("tree")).unwrap();
    fs::write(dir.path().join("tree/file"), "kept").unwrap();
    let error = open.remove_tree(name("tree"), identity).unwrap_err();
    assert!(error.to_string().contains("left alone"), "{error}");
    assert!(dir.path().join("tree/file").exists());
    // A symbolic link in its place is not followed either.
    fs::remove_dir_all(dir.path().join("tree")).unwrap();
    symlink(dir.path().join("moved"), dir.path().join("tree")).unwrap();
    assert!(open.remove_tree(name("tree"), identity).is_err());
    assert!(dir.path().join("moved").exists());
}

#[test]
fn a_parent_swapped_for_a_symbolic_link_leads_nowhere_created_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let created = dir.path().join("a/parent/tree");
    let (tree, _) = Dir::create_all(&created, PRIVATE_DIR).unwrap();
    let identity = tree.identity().unwrap();
    // Elsewhere, a tree of the same name, and the path's parents swapped to lead to it.
    let outside = dir.path().join("outside");
    fs::create_dir_all(outside.join("parent/tree")).unwrap();
    fs::write(outside.join("parent/tree/file"), "kept").unwrap();
    for swapped in ["a/parent", "a"] {
        fs::rename(dir.path().join(swapped), dir.path().join("moved")).unwrap();
        let target = if swapped == "a" {
            outside.clone()
        } else {
            outside.join("parent")
        };
        symlink(&target, dir.path().join(swapped)).unwrap();
        assert!(
            remove_created_tree(&created, identity).is_err(),
            "{swapped}"
        );
        assert!(outside.join("parent/tree/file").exists(), "{swapped}");
        fs::remove_file(dir.path().join(swapped)).unwrap();
        fs::rename(dir.path().join("moved"), dir.path().join(swapped)).unwrap();
    }
    remove_created_tree(&created, identity).unwrap();
    assert!(!created.exists());
    assert!(dir.path().join("a/parent").exists());
}

#[test]
fn a_file_opened_for_appending_gets_its_exact_mode_and_never_follows_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let open = Dir::open(dir.path()).unwrap();
    open.open_append(name("history"), PRIVATE_FILE).unwrap();
    assert_eq!(mode(&dir.path().join("history")), PRIVATE_FILE);
    fs::write(dir.path().join("secret"), "root only").unwrap();
    symlink(dir.path().join("secret"), dir.path().join("link")).unwrap();
    assert!(open.open_append(name("link"), PRIVATE_FILE).is_err());
    assert_eq!(
        fs::read_to_string(dir.path().join("secret")).unwrap(),
        "root only"
    );
}
