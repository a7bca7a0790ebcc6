//! Inode numbers given out again, forced on a small ext4 mounted from a loop device: with
//! every inode in use but one, a file created after a deletion must get the deleted file's
//! number. Needs root and mount(8); skipped, saying so, where mounting is impossible.

use super::*;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::process::Command;

const ROUNDS: usize = 100;

/// A 2 MiB ext4 with 16 inodes, unmounted when dropped (a failed test included).
struct SmallExt4 {
    mount_point: PathBuf,
    _image_dir: tempfile::TempDir,
}

impl SmallExt4 {
    fn mount() -> Option<SmallExt4> {
        // SAFETY: geteuid only reads this process's credentials.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a small ext4 to force inode reuse needs root");
            return None;
        }
        let image_dir = tempfile::tempdir().unwrap();
        let image = image_dir.path().join("ext4.img");
        File::create(&image).unwrap().set_len(2 << 20).unwrap();
        let mount_point = image_dir.path().join("mnt");
        std::fs::create_dir(&mount_point).unwrap();
        let mkfs = [
            "-q",
            "-F",
            "-N",
            "16",
            "-O",
            "^has_journal",
            path_text(&image),
        ];
        let mount = ["-o", "loop", path_text(&image), path_text(&mount_point)];
        for (program, args) in [("mkfs.ext4", &mkfs[..]), ("mount", &mount[..])] {
            let ran = Command::new(program).args(args).output();
            if !ran.as_ref().is_ok_and(|output| output.status.success()) {
                eprintln!("skipped: cannot mount a small ext4 to force inode reuse: {program} {args:?}: {ran:?}");
                return None;
            }
        }
        Some(SmallExt4 {
            mount_point,
            _image_dir: image_dir,
        })
    }
}

impl Drop for SmallExt4 {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(&self.mount_point)
            .status()
            .is_ok_and(|status| status.success());
        if !unmounted {
            // Busy (a descriptor of a failed test): detached now, gone once it closes.
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&self.mount_point)
                .status();
        }
    }
}

fn path_text(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

/// Deletes `old` and writes `new` (which may be the same name): the new file must get the
/// old one's inode number, the only one free.
fn replace_on_the_same_inode(old: &Path, new: &Path, text: &[u8]) {
    let number = inode(old);
    std::fs::remove_file(old).unwrap();
    std::fs::write(new, text).unwrap();
    assert_eq!(
        inode(new),
        number,
        "the freed inode number is given out again"
    );
}

/// Uses up every free inode of the file system holding `dir`.
fn fill_inodes(dir: &Path) {
    for n in 0.. {
        if let Err(error) = File::create(dir.join(format!("fill{n}"))) {
            assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "{error}");
            return;
        }
    }
}

fn sorted(mut seen: Vec<String>) -> Vec<String> {
    seen.sort();
    seen
}

#[test]
fn a_file_given_a_freed_inode_number_is_reported_or_read_from_its_start_every_time() {
    let Some(disk) = SmallExt4::mount() else {
        return;
    };
    let dir = disk.mount_point.as_path();
    let replaced = dir.join("r.jsonl");
    append(&replaced, b"one\n");
    append(&dir.join("a0.jsonl"), b"first\n");
    fill_inodes(dir);
    let mut reader = DirReader::open(dir, Limits::default()).unwrap();
    assert_eq!(
        sorted(scan(&mut reader, false)),
        ["a0.jsonl: first", "r.jsonl: one"]
    );
    // What the log's checkpoints say, for a reader that resumes after a kill.
    let mut checkpointed = HashMap::new();
    for round in 0..ROUNDS {
        for progress in reader.take_progress() {
            checkpointed.insert((progress.dev, progress.ino), progress);
        }
        // The same name again: refused. Another name: read from its start, not from
        // the offset of the file that had its number.
        replace_on_the_same_inode(&replaced, &replaced, b"again\n");
        let renamed = format!("a{}.jsonl", round + 1);
        replace_on_the_same_inode(
            &dir.join(format!("a{round}.jsonl")),
            &dir.join(&renamed),
            format!("line {round}\n").as_bytes(),
        );
        let expected = [
            format!("{renamed}: line {round}"),
            "r.jsonl: Replaced x1".to_owned(),
        ];
        assert_eq!(sorted(scan(&mut reader, false)), expected, "round {round}");
        let mut resumed = DirReader::open(dir, Limits::default()).unwrap();
        for progress in checkpointed.values() {
            resumed.resume(progress);
        }
        assert_eq!(
            sorted(scan(&mut resumed, true)),
            expected,
            "round {round}, resumed from the checkpoints"
        );
    }
}
