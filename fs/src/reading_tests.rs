//! The reading half of [`Dir`], on every OS (Windows' under Wine: scripts/cross).

use super::*;
use std::ffi::{OsStr, OsString};

fn names(dir: &Dir) -> Vec<OsString> {
    let mut names = Vec::new();
    dir.list(&mut |name| names.push(name.to_owned())).unwrap();
    names.sort();
    names
}

#[test]
fn entries_are_listed_looked_at_and_read_by_name_in_the_open_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.jsonl"), "one\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let open = Dir::open(dir.path()).unwrap();
    assert_eq!(names(&open), ["a.jsonl", "sub"]);
    // Each listing sees the entries come since (Wine lists a handle's directory once).
    std::fs::write(dir.path().join("b.jsonl"), "").unwrap();
    assert_eq!(names(&open), ["a.jsonl", "b.jsonl", "sub"]);
    let entry = open.entry(OsStr::new("a.jsonl")).unwrap();
    assert_eq!((entry.kind, entry.size, entry.links), (Kind::File, 4, 1));
    let file = open.open_file(OsStr::new("a.jsonl")).unwrap();
    assert_eq!(entry_of(&file).unwrap(), entry);
    let mut buffer = [0; 3];
    assert_eq!(read_at(&file, &mut buffer, 1).unwrap(), 3);
    assert_eq!(&buffer, b"ne\n");
    let sub = open.entry(OsStr::new("sub")).unwrap();
    assert_eq!(sub.kind, Kind::Directory);
    let opened = open.open_dir(OsStr::new("sub")).unwrap();
    assert_eq!(opened.identity().unwrap(), sub.identity);
    let missing = open.open_file(OsStr::new("missing")).unwrap_err();
    assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
}
