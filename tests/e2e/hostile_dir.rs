use crate::util::*;
use serde_json::Value;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A valid marker line, now.
fn marker_line(name: &str) -> String {
    format!(
        r#"{{"type":"marker","name":"{name}","startTime":{}}}"#,
        epoch_ms()
    ) + "\n"
}

/// Records while `hostile` does its worst to the profile directory, between two good
/// markers of a well-behaved file; checks that the recording survived with both.
fn record_through(args: &[&str], hostile: impl FnOnce(&Recording)) -> (Value, String) {
    let sandbox = Sandbox::new();
    let recording = Recording::start(&sandbox, args);
    let good = recording.file("good.jsonl");
    append(&good, marker_line("good before").as_bytes());
    recording.wait_logged("good before");
    hostile(&recording);
    append(&good, marker_line("good after").as_bytes());
    recording.wait_logged("good after");
    // A recording shorter than a tick of the kernel's CPU clock has no CPU sample.
    recording.wait_logged(r#""name":"CPU Use""#);
    let stderr = recording.stop();
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let markers = profile_markers(&profile);
    for name in ["good before", "good after"] {
        assert_eq!(count_named(&markers, name), 1, "{name} survived: {stderr}");
    }
    assert!(
        count_named(&markers, "CPU Use") > 0,
        "the recording went on"
    );
    (profile, stderr)
}

/// The warning is in the profile's note and on stderr.
fn assert_warned(profile: &Value, stderr: &str, warning: &str) {
    let note = marker_files_note(profile);
    assert!(note.contains(warning), "note lacks '{warning}': {note}");
    assert!(
        stderr.contains(warning),
        "stderr lacks '{warning}': {stderr}"
    );
}

fn assert_absent(profile: &Value, name: &str) {
    assert_eq!(
        count_named(&profile_markers(profile), name),
        0,
        "{name} must not be read"
    );
}

/// A file outside the directory, readable by root only, holding a marker.
fn secret_file(dir: &Path) -> std::path::PathBuf {
    let secret = dir.parent().unwrap().join("secret.txt");
    std::fs::write(&secret, marker_line("SECRET")).unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    secret
}

#[test]
fn a_symbolic_link_is_never_followed() {
    let (profile, stderr) = record_through(&[], |r| {
        std::os::unix::fs::symlink(secret_file(&r.profile_dir), r.file("evil.jsonl")).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        "symbolic link (not followed): 1 file (evil.jsonl)",
    );
    assert_absent(&profile, "SECRET");
}

#[test]
fn a_file_name_cannot_forge_or_hide_lines_on_stderr() {
    let name = "a\x1b]0;t\x07\ntc-profile: forged\u{202e}.jsonl";
    let (profile, stderr) = record_through(&[], |r| {
        std::os::unix::fs::symlink(secret_file(&r.profile_dir), r.file(name)).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        r"symbolic link (not followed): 1 file (a\u{1b}]0;t\u{7}\ntc-profile: forged\u{202e}.jsonl)",
    );
    assert!(
        !stderr.contains(['\x1b', '\x07', '\u{202e}']),
        "raw control characters on stderr: {stderr:?}"
    );
    assert!(
        !stderr
            .lines()
            .any(|line| line.starts_with("tc-profile: forged")),
        "a forged line on stderr: {stderr}"
    );
}

#[test]
fn a_hard_link_to_another_file_is_refused() {
    let (profile, stderr) = record_through(&[], |r| {
        std::fs::hard_link(secret_file(&r.profile_dir), r.file("linked.jsonl")).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        "hard link (more than one name): 1 file (linked.jsonl)",
    );
    assert_absent(&profile, "SECRET");
}

const NOT_REGULAR: &str = "not a regular file (FIFO, socket, device or directory)";

#[test]
fn a_fifo_never_blocks_the_recorder() {
    let (profile, stderr) = record_through(&[], |r| {
        let path = CString::new(r.file("fifo.jsonl").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o666) }, 0);
    });
    assert_warned(
        &profile,
        &stderr,
        &format!("{NOT_REGULAR}: 1 file (fifo.jsonl)"),
    );
}

#[test]
fn a_socket_is_refused() {
    let (profile, stderr) = record_through(&[], |r| {
        // The socket file stays when the listener is dropped.
        std::os::unix::net::UnixListener::bind(r.file("sock.jsonl")).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        &format!("{NOT_REGULAR}: 1 file (sock.jsonl)"),
    );
}

#[test]
fn a_device_is_never_opened() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: making a device node needs root (CI runs as root)");
        return;
    }
    let (profile, stderr) = record_through(&[], |r| {
        let path = CString::new(r.file("zero.jsonl").as_os_str().as_bytes()).unwrap();
        // SAFETY: mknod with a NUL-terminated path; 1:5 is /dev/zero, endless if read.
        let made =
            unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) };
        assert_eq!(made, 0, "mknod: {}", std::io::Error::last_os_error());
    });
    assert_warned(
        &profile,
        &stderr,
        &format!("{NOT_REGULAR}: 1 file (zero.jsonl)"),
    );
}

#[test]
fn a_directory_named_jsonl_is_not_entered() {
    let (profile, stderr) = record_through(&[], |r| {
        std::fs::create_dir(r.file("dir.jsonl")).unwrap();
        std::fs::write(r.file("dir.jsonl/inner.jsonl"), marker_line("SECRET")).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        &format!("{NOT_REGULAR}: 1 file (dir.jsonl)"),
    );
    assert_absent(&profile, "SECRET");
}

#[test]
fn a_file_truncated_while_being_read_is_left_with_what_was_taken() {
    let (profile, stderr) = record_through(&[], |r| {
        let path = r.file("cut.jsonl");
        append(&path, marker_line("taken before the cut").as_bytes());
        r.wait_logged("taken before the cut");
        std::fs::write(&path, marker_line("after")).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        "truncated while being read: 1 file (cut.jsonl)",
    );
    assert_eq!(
        count_named(&profile_markers(&profile), "taken before the cut"),
        1
    );
    assert_absent(&profile, "after");
}

#[test]
fn a_file_replaced_while_being_read_is_not_read_again() {
    let (profile, stderr) = record_through(&[], |r| {
        let path = r.file("swap.jsonl");
        append(&path, marker_line("first file").as_bytes());
        r.wait_logged("first file");
        let other = r.file("swap.tmp");
        std::fs::write(
            &other,
            marker_line("first file") + &marker_line("second file"),
        )
        .unwrap();
        std::fs::rename(&other, &path).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        "replaced by another file under the same name: 1 file (swap.jsonl)",
    );
    assert_eq!(
        count_named(&profile_markers(&profile), "first file"),
        1,
        "never twice"
    );
    assert_absent(&profile, "second file");
}

#[test]
fn a_line_over_the_cap_is_dropped_and_the_next_one_kept() {
    let (profile, stderr) = record_through(&[], |r| {
        let long = format!(
            r#"{{"type":"marker","name":"long","startTime":{},"data":{{"text":"{}"}}}}"#,
            epoch_ms(),
            "x".repeat(100 << 10)
        ) + "\n";
        append(
            &r.file("long.jsonl"),
            (long + &marker_line("next line")).as_bytes(),
        );
    });
    assert_warned(&profile, &stderr, "line over the size cap: 1 line");
    assert_absent(&profile, "long");
    assert_eq!(count_named(&profile_markers(&profile), "next line"), 1);
}

#[test]
fn a_file_over_the_cap_is_read_up_to_it() {
    let lines: Vec<String> = (0..100)
        .map(|i| marker_line(&format!("line {i:03}")))
        .collect();
    let (profile, stderr) = record_through(&["--limit", "file-bytes=4096"], |r| {
        append(&r.file("big.jsonl"), lines.concat().as_bytes());
    });
    assert_warned(
        &profile,
        &stderr,
        "over the file size cap (the rest is ignored): 1 file (big.jsonl)",
    );
    let markers = profile_markers(&profile);
    let taken = markers
        .iter()
        .filter(|m| m.name.starts_with("line "))
        .count();
    let mut below_cap = 0;
    let mut bytes = 0;
    while bytes + lines[below_cap].len() <= 4096 {
        bytes += lines[below_cap].len();
        below_cap += 1;
    }
    assert_eq!(taken, below_cap, "the whole lines below the cap");
}

#[test]
fn thousands_of_files_are_capped_and_counted() {
    let (profile, stderr) = record_through(&[], |r| {
        for i in 0..3000 {
            std::fs::write(r.file(&format!("flood{i}.jsonl")), marker_line("flood")).unwrap();
        }
    });
    assert_warned(&profile, &stderr, "over the file count cap: 2001 files");
    assert_eq!(
        count_named(&profile_markers(&profile), "flood"),
        999,
        "good.jsonl and 999 flood files are followed"
    );
}

/// Writes `lines` into one file and checks that they are all dropped with `warning`.
fn assert_lines_dropped(lines: &[&[u8]], warning: &str) {
    let (profile, stderr) = record_through(&[], |r| {
        let mut bytes = Vec::new();
        for line in lines {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        append(&r.file("bad.jsonl"), &bytes);
    });
    let unit = if lines.len() == 1 { "line" } else { "lines" };
    assert_warned(
        &profile,
        &stderr,
        &format!("{warning}: {} {unit}", lines.len()),
    );
    assert_absent(&profile, "bad");
}

#[test]
fn invalid_utf8_is_dropped() {
    let now = epoch_ms();
    let line =
        format!(r#"{{"type":"marker","name":"bad","startTime":{now},"data":{{"text":"?"}}}}"#);
    let mut broken = line.into_bytes();
    let at = broken.iter().position(|&b| b == b'?').unwrap();
    broken[at] = 0xff;
    let mut overlong = broken.clone();
    overlong.splice(at..=at, [0xc0, 0xaf]);
    assert_lines_dropped(&[&broken, &overlong], "invalid UTF-8");
}

#[test]
fn json_that_is_not_an_object_is_dropped() {
    assert_lines_dropped(
        &[b"[1,2]", br#""bad""#, b"42", b"null"],
        "JSON that is not an object",
    );
}

#[test]
fn wrong_field_types_are_dropped() {
    let now = epoch_ms();
    let lines = [
        format!(r#"{{"type":"marker","name":5,"startTime":{now}}}"#),
        format!(r#"{{"type":"marker","startTime":{now}}}"#),
        format!(r#"{{"type":"marker","name":"bad","startTime":"{now}"}}"#),
        format!(r#"{{"type":"marker","name":"bad","startTime":{now},"data":[1]}}"#),
        format!(r#"{{"type":"marker","name":"bad","startTime":{now},"category":"root"}}"#),
        format!(r#"{{"type":"begin","name":"bad","time":{now},"id":7}}"#),
    ];
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    assert_lines_dropped(&lines, "wrong fields for its type");
}

#[test]
fn numbers_out_of_range_are_dropped() {
    let now = epoch_ms();
    let lines = [
        r#"{"type":"marker","name":"bad","startTime":1e999}"#.to_owned(),
        format!(r#"{{"type":"marker","name":"bad","startTime":{now},"data":{{"n":-1e400}}}}"#),
    ];
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    assert_lines_dropped(&lines, "number out of range");
}

#[test]
fn times_far_outside_the_recording_are_dropped() {
    let now = epoch_ms();
    let lines = [
        r#"{"type":"marker","name":"bad","startTime":0}"#.to_owned(),
        r#"{"type":"marker","name":"bad","startTime":1e300}"#.to_owned(),
        format!(
            r#"{{"type":"marker","name":"bad","startTime":{}}}"#,
            now + 86_400_000.0
        ),
        format!(
            r#"{{"type":"marker","name":"bad","startTime":{now},"endTime":{}}}"#,
            now - 5.0
        ),
        format!(
            r#"{{"type":"begin","name":"bad","time":{}}}"#,
            now - 86_400_000.0
        ),
    ];
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    assert_lines_dropped(
        &lines,
        "time not finite, outside the recording, or end before start",
    );
}

#[test]
fn names_with_control_characters_are_dropped() {
    let now = epoch_ms();
    let lines = [
        format!(r#"{{"type":"marker","name":"bad\u0007","startTime":{now}}}"#),
        format!(r#"{{"type":"marker","name":"\u001b[31mbad","startTime":{now}}}"#),
        format!(r#"{{"type":"marker","name":"bad\nname","startTime":{now}}}"#),
        format!(r#"{{"type":"begin","name":"bad","id":"a\tb","time":{now}}}"#),
    ];
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    assert_lines_dropped(
        &lines,
        "empty name, name too long, or control characters in it",
    );
}

#[test]
fn deep_nesting_is_dropped_before_it_is_parsed() {
    let deep = format!(
        r#"{{"type":"marker","name":"bad","startTime":{},"data":{{"x":{}{}}}}}"#,
        epoch_ms(),
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    assert_lines_dropped(&[deep.as_bytes()], "nested deeper than the cap");
}

#[test]
fn a_file_its_owner_could_not_read_is_never_copied() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: reading as the directory's owner is what a root recorder does");
        return;
    }
    let (profile, stderr) = record_through(&[], |r| {
        let nobody = 65534;
        std::os::unix::fs::chown(&r.profile_dir, Some(nobody), Some(nobody)).unwrap();
        // Root's file, readable by root only, moved in whole: a scan never sees it readable.
        let outside = r.profile_dir.with_extension("stolen");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&outside)
            .unwrap();
        std::io::Write::write_all(&mut file, marker_line("SECRET").as_bytes()).unwrap();
        std::fs::rename(&outside, r.file("stolen.jsonl")).unwrap();
    });
    assert_warned(
        &profile,
        &stderr,
        "cannot be opened by the directory's owner: 1 file (stolen.jsonl)",
    );
    assert_absent(&profile, "SECRET");
}

#[test]
fn a_huge_file_without_newlines_is_read_in_bounded_memory() {
    let mut peak_kib = 0;
    let (profile, stderr) = record_through(&[], |r| {
        let file = std::fs::File::create(r.file("huge.jsonl")).unwrap();
        file.set_len(1 << 30).unwrap(); // 1 GiB of zeros, no newline, sparse on disk
        r.wait_logged(r#""problem":"file-too-big""#);
        let status = std::fs::read_to_string(format!("/proc/{}/status", r.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        peak_kib = line
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap();
    });
    assert_warned(&profile, &stderr, "line over the size cap: 1 line");
    assert_warned(
        &profile,
        &stderr,
        "over the file size cap (the rest is ignored): 1 file",
    );
    eprintln!("the recorder's peak memory: {peak_kib} KiB");
    assert!(
        peak_kib < 32 << 10,
        "the recorder's peak memory is {peak_kib} KiB after reading 64 MiB of one line"
    );
}

#[test]
fn a_profile_directory_removed_or_replaced_by_the_task_costs_nothing_recorded() {
    for replace_with_link in [false, true] {
        let sandbox = Sandbox::new();
        let recording = Recording::start(&sandbox, &[]);
        append(
            &recording.file("good.jsonl"),
            marker_line("good before").as_bytes(),
        );
        recording.wait_logged("good before");
        std::fs::remove_dir_all(&recording.profile_dir).unwrap();
        if replace_with_link {
            std::os::unix::fs::symlink(sandbox.dir(), &recording.profile_dir).unwrap();
        }
        recording.stop();
        let profile = read_json(&sandbox.path("profile_resource-usage.json"));
        assert_processed_profile(&profile);
        assert_eq!(count_named(&profile_markers(&profile), "good before"), 1);
    }
}
