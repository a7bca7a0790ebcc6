//! The daemon at a worker's scale: a task's end reads of the machine's segments only the
//! bytes its span needs, however long the segments are; the machine's files are read once
//! a tick for the segment and every task; a task's marker files are scanned a second
//! apart while they grow, whatever the interval; the trees of all tasks keep their /proc
//! files open within one budget.

use crate::daemon::{ask, mark, task_process, wait_in_task_log, Daemon};
use crate::util::{
    assert_processed_profile, count_named, epoch_ms, profile_markers, read_json, Sandbox,
};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Duration;

/// A finished machine segment of an hour, a sample a second from `start` (epoch ms, a
/// whole number), as a daemon that ran an hour before this one left it; its size.
fn hour_segment(sandbox: &Sandbox, start: f64) -> u64 {
    let mut text = format!(
        "{{\"type\":\"meta\",\"startTime\":{start},\"interval\":1000}}\n\
         {{\"type\":\"thread\",\"name\":\"machine\"}}\n"
    );
    for tick in 0..3600_u32 {
        let (from, to) = (f64::from(tick) * 1000.0, f64::from(tick + 1) * 1000.0);
        for name in ["Earlier sample", "Earlier padding"] {
            text.push_str(&format!(
                "{{\"type\":\"marker\",\"name\":\"{name}\",\"startTime\":{from},\"endTime\":{to},\
                 \"data\":{{\"type\":\"Text\",\"text\":\"tick {tick} of the daemon before\"}}}}\n"
            ));
        }
    }
    let path = sandbox.path(&format!("state/segments/machine-{start}-1.jsonl"));
    std::fs::write(&path, &text).unwrap();
    text.len() as u64
}

fn segment_bytes_read(sandbox: &Sandbox) -> u64 {
    let status: serde_json::Value =
        serde_json::from_str(&ask(sandbox, &["daemon", "status"])).unwrap();
    status["segmentBytesRead"]
        .as_u64()
        .expect("segmentBytesRead")
}

#[test]
fn a_task_end_reads_only_the_segment_bytes_of_its_span() {
    let sandbox = Sandbox::new();
    let daemon = Daemon::start(&sandbox, &[]);
    // An hour's segment that ended a minute after the task's start.
    let since = (epoch_ms() - 3_660_000.0).round();
    let segment = hour_segment(&sandbox, since - 3_540_000.0);
    ask(
        &sandbox,
        &["task", "start", "t", "--since", &since.to_string()],
    );
    let before = segment_bytes_read(&sandbox);
    ask(&sandbox, &["task", "end", "t", "-o", "t.json"]);
    let read = segment_bytes_read(&sandbox) - before;
    let profile = read_json(&sandbox.path("t.json"));
    assert_processed_profile(&profile);
    // The segment's last minute is in the span: its 60 samples, and the one that ends
    // at the span's start.
    let earlier = profile_markers(&profile)
        .into_iter()
        .filter(|m| m.name == "Earlier sample")
        .count();
    assert!((60..=61).contains(&earlier), "{earlier} samples");
    // A minute of the hour, and the daemon's own segment (seconds at 0.1 s), read.
    assert!(
        read * 10 < segment,
        "{read} bytes read, the segment {segment}"
    );
    daemon.stop();
}

/// The machine's files read so far for the daemon's recorders, and the daemon's uptime (ms).
fn machine_reads(sandbox: &Sandbox) -> (u64, f64) {
    let status: serde_json::Value =
        serde_json::from_str(&ask(sandbox, &["daemon", "status"])).unwrap();
    let reads = status["machineReads"].as_u64().expect("machineReads");
    (reads, status["uptimeMs"].as_f64().expect("uptimeMs"))
}

#[test]
fn two_tasks_share_one_read_of_the_machine_a_tick_and_both_get_its_tracks() {
    let sandbox = Sandbox::new();
    // Every 0.1 s.
    let daemon = Daemon::start(&sandbox, &[]);
    let mut processes = Vec::new();
    for task in ["a", "b"] {
        ask(&sandbox, &["task", "start", task]);
        let process = task_process("30");
        let pid = process.id().to_string();
        ask(&sandbox, &["task", "start", task, "--pid", &pid]);
        processes.push(process);
    }
    let (reads, uptime) = machine_reads(&sandbox);
    std::thread::sleep(Duration::from_secs(2));
    let (reads_now, uptime_now) = machine_reads(&sandbox);
    // Three samplers read the machine (the segment's and the two trees'): three reads a
    // tick if each read its own. A tick late by more than an interval (a loaded machine)
    // takes the next slot's read, so there are no more reads than slots.
    let slots = (uptime_now - uptime) / 100.0;
    let reads = reads_now - reads;
    assert!(
        reads as f64 <= slots + 2.0,
        "{reads} reads of the machine in {slots:.0} ticks"
    );
    assert!(reads > 0, "the segment reads it");
    for task in ["a", "b"] {
        let output = format!("{task}.json");
        ask(&sandbox, &["task", "end", task, "-o", &output]);
        let profile = read_json(&sandbox.path(&output));
        assert_processed_profile(&profile);
        let rows = profile_markers(&profile);
        for track in [
            "CPU Use",
            "Memory",
            "Task CPU",
            "Other CPU",
            "Task Memory",
            "Other Memory",
        ] {
            assert!(count_named(&rows, track) > 0, "{task}: no {track}");
        }
    }
    for mut process in processes {
        process.kill().unwrap();
        process.wait().unwrap();
    }
    daemon.stop();
}

/// A shell of `children` sleeping processes: its tree has `children + 1`.
fn task_tree(children: usize) -> Child {
    let script = format!("for i in $(seq {children}); do sleep 30 & done; wait");
    Command::new("sh").args(["-c", &script]).spawn().unwrap()
}

#[test]
fn the_trees_of_all_tasks_keep_files_open_within_one_budget() {
    const OPEN_FILES: u64 = 128;
    let sandbox = Sandbox::new();
    let mut command = Daemon::command(&sandbox, &[]);
    let limit = libc::rlimit {
        rlim_cur: OPEN_FILES,
        rlim_max: OPEN_FILES,
    };
    // SAFETY: setrlimit(2) between fork and exec touches nothing but the limit it is given.
    unsafe {
        command.pre_exec(move || match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
    let daemon = Daemon::spawn(&sandbox, command);
    // Three trees of 40 processes, a stat and a schedstat file each: given half the limit
    // each, they would hold more files than the whole limit.
    let tasks = ["a", "b", "c"];
    let mut trees = Vec::new();
    for task in tasks {
        let tree = task_tree(40);
        let pid = tree.id().to_string();
        ask(&sandbox, &["task", "start", task, "--pid", &pid]);
        trees.push(tree);
    }
    std::thread::sleep(Duration::from_secs(2));
    for task in tasks {
        let output = format!("{task}.json");
        ask(&sandbox, &["task", "end", task, "-o", &output]);
        let profile = read_json(&sandbox.path(&output));
        assert_processed_profile(&profile);
        let rows = profile_markers(&profile);
        assert!(count_named(&rows, "Task CPU") > 0, "{task}: no Task CPU");
    }
    for mut tree in trees {
        // SIGKILL to the shell alone leaves its sleeps: the tree's processes get theirs.
        let _ = Command::new("pkill")
            .args(["-P", &tree.id().to_string()])
            .status();
        tree.kill().unwrap();
        tree.wait().unwrap();
    }
    let stderr = std::fs::read_to_string(&daemon.stderr).unwrap();
    assert!(!stderr.contains("Too many open files"), "{stderr}");
    daemon.stop();
}

#[test]
fn a_tasks_growing_marker_file_is_scanned_a_second_apart_at_0_1_s_and_loses_no_line() {
    let sandbox = Sandbox::new();
    // Every 0.1 s.
    let daemon = Daemon::start(&sandbox, &[]);
    let profile_dir = ask(&sandbox, &["task", "start", "a"]).trim().to_owned();
    let began = std::time::Instant::now();
    for n in 0..30 {
        mark(&profile_dir, "1.jsonl", &format!("m{n:02}"));
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_in_task_log(&sandbox, "\"m29\"");
    let seconds = began.elapsed().as_secs_f64();
    let logs = std::fs::read_dir(sandbox.path("state/tasks")).unwrap();
    let text: String = logs
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    for n in 0..30 {
        assert_eq!(text.matches(&format!("\"m{n:02}\"")).count(), 1, "m{n:02}");
    }
    // The first write's scan at once, then one a second: a scan a tick would make 15.
    let scans = text.matches("{\"type\":\"checkpoint\"").count();
    assert!(
        scans as f64 <= seconds.ceil() + 1.0,
        "{scans} scans in {seconds:.1} s"
    );
    ask(&sandbox, &["task", "end", "a", "-o", "a.json"]);
    daemon.stop();
}
