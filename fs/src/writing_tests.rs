//! The writing half of [`Dir`], on every OS (Windows' under Wine: scripts/cross). Modes and
//! symbolic links are tested on unix alone (`tests.rs`).

use super::*;
use std::ffi::OsStr;
use std::fs;
use std::io::{ErrorKind, Write};

fn name(text: &str) -> &OsStr {
    OsStr::new(text)
}

#[test]
fn a_file_s_identity_is_that_of_its_name_until_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let open = Dir::open(dir.path()).unwrap();
    let file = open.create_new(name("f"), PRIVATE_FILE).unwrap();
    assert_eq!(
        identity(&file).unwrap(),
        open.entry(name("f")).unwrap().identity
    );
    assert_eq!(
        identity_of_path(&dir.path().join("f")).unwrap(),
        identity(&file).unwrap()
    );
    open.rename(name("f"), name("g")).unwrap();
    open.create_new(name("f"), PRIVATE_FILE).unwrap();
    assert_ne!(
        identity(&file).unwrap(),
        open.entry(name("f")).unwrap().identity
    );
    open.sync().unwrap();
}

#[test]
fn a_file_is_created_once_appended_to_renamed_over_another_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let open = Dir::open(dir.path()).unwrap();
    let mut file = open.create_new(name("new"), PRIVATE_FILE).unwrap();
    file.write_all(b"one\n").unwrap();
    file.sync_all().unwrap();
    let again = open.create_new(name("new"), PRIVATE_FILE).unwrap_err();
    assert_eq!(again.kind(), ErrorKind::AlreadyExists);
    for line in ["two\n", "three\n"] {
        let mut appended = open.open_append(name("new"), PRIVATE_FILE).unwrap();
        appended.write_all(line.as_bytes()).unwrap();
    }
    fs::write(dir.path().join("old"), "replaced").unwrap();
    open.rename(name("new"), name("old")).unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join("old")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        open.entry(name("new")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    drop(file);
    open.remove_file(name("old")).unwrap();
    open.sync().unwrap();
    assert!(!dir.path().join("old").exists());
    // A name is created anew at once after its removal.
    drop(open.create_new(name("old"), PRIVATE_FILE).unwrap());
    let missing = open.remove_file(name("missing")).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    for outside in ["..", "a/b", ""] {
        assert!(open.remove_file(name(outside)).is_err(), "{outside:?}");
    }
}

#[test]
fn a_directory_is_not_removed_as_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let open = Dir::open(dir.path()).unwrap();
    open.create_dir(name("d"), PRIVATE_DIR).unwrap();
    let error = open.remove_file(name("d")).unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::IsADirectory | ErrorKind::PermissionDenied
        ),
        "{error}"
    );
    assert!(dir.path().join("d").is_dir());
}

#[test]
fn the_missing_directories_of_a_path_are_created_and_its_parent_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a").join("b");
    let (created, was_created) = Dir::create_all(&path, PRIVATE_DIR).unwrap();
    assert!(was_created);
    assert!(path.is_dir());
    let (again, was_created) = Dir::create_all(&path, PRIVATE_DIR).unwrap();
    assert!(!was_created);
    assert_eq!(again.identity().unwrap(), created.identity().unwrap());
    let profile = path.join("p.json");
    let (parent, file) = Dir::open_parent(&profile).unwrap();
    assert_eq!(file, "p.json");
    assert_eq!(parent.identity().unwrap(), created.identity().unwrap());
    assert!(Dir::open_parent(&path.join("..")).is_err());
    let error = created
        .create_dir(name("c"), PRIVATE_DIR)
        .and_then(|_| created.create_dir(name("c"), PRIVATE_DIR));
    assert_eq!(error.unwrap_err().kind(), ErrorKind::AlreadyExists);
}

#[test]
fn a_tree_is_removed_while_it_is_the_one_created_and_left_alone_once_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let created = dir.path().join("a").join("tree");
    let (tree, _) = Dir::create_all(&created, PRIVATE_DIR).unwrap();
    let identity = tree.identity().unwrap();
    drop(tree);
    fs::create_dir_all(created.join("b").join("c")).unwrap();
    fs::write(created.join("b").join("c").join("file"), "x").unwrap();
    fs::write(created.join("file"), "x").unwrap();
    // Another directory in its place: left alone.
    fs::rename(&created, dir.path().join("a").join("moved")).unwrap();
    fs::create_dir(&created).unwrap();
    fs::write(created.join("kept"), "kept").unwrap();
    let error = remove_created_tree(&created, identity).unwrap_err();
    assert!(error.to_string().contains("left alone"), "{error}");
    assert!(created.join("kept").exists());
    fs::remove_dir_all(&created).unwrap();
    fs::rename(dir.path().join("a").join("moved"), &created).unwrap();
    remove_created_tree(&created, identity).unwrap();
    assert!(!created.exists());
    assert!(dir.path().join("a").is_dir());
}
