//! Unit tests of the process tree: its stat parsing, its CPU ledger and its discovery.

use super::*;
use crate::sources::machine::machine_of;
use crate::sources::procfs::ReadBuffer;
use crate::sources::{tick_markers, tick_markers_under};
use process::{Due, Stat};
use std::fs;

const STAT: &[u8] = b"4242 (a (b) c) Z 17 4242 17 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 123456 5000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 9\n";

#[test]
fn stat_fields_are_read_after_the_last_parenthesis() {
    let (stat, comm) = parse_stat(STAT).unwrap();
    assert_eq!(comm, b"a (b) c");
    assert_eq!(
        stat,
        Stat {
            state: b'Z',
            ppid: 17,
            own_ticks: 300,
            reaped_ticks: 10,
            start_ticks: 123456,
            rss_pages: 300,
            threads: 1,
            exit_status: Some(9),
            thread: false,
        }
    );
    assert_eq!(describe_status(stat.exit_status), "killed by signal 9");
    assert_eq!(describe_status(Some(3 << 8)), "exit code 3");
    let old_kernel = &STAT[..STAT.len() - 40];
    assert_eq!(parse_stat(old_kernel).unwrap().0.exit_status, None);
    assert!(parse_stat(b"1 (x) S 0 1").is_none(), "too short");
}

#[test]
fn a_still_process_has_its_statm_read_once_in_ten_ticks_and_its_stat_once_its_parent_ends() {
    let root = crate::sources::fake_root(&[
        ("7/schedstat", "500 20 3\n"),
        ("7/statm", "100 40 10 1 0 20 0\n"),
        ("8/schedstat", "500 20 3\n"),
    ]);
    let (_, mut process) = row_process(1, &(7, 1, 0, 0, 0, 0));
    process.stat.threads = 1;
    process.run_time = process::RunTime::open(root.path(), 7);
    let mut buffer = ReadBuffer::new();
    // The first tick learns its time on CPU; then nine still ticks and its statm.
    let due: Vec<Due> = (0..21).map(|_| process.due(&mut buffer)).collect();
    let at = |kind: Due| -> Vec<usize> { (0..21).filter(|&i| due[i] == kind).collect() };
    assert_eq!(at(Due::Stat), [0]);
    assert_eq!(at(Due::Rss), [10, 20]);
    assert!(process.read_rss(&mut buffer));
    assert_eq!((process.stat.rss_pages, process.peak_rss_pages), (40, 40));
    fs::write(root.path().join("7/statm"), "100 30 10 1 0 20 0\n").unwrap();
    assert!(process.read_rss(&mut buffer), "reclaimed");
    assert_eq!((process.stat.rss_pages, process.peak_rss_pages), (30, 40));

    fs::write(root.path().join("7/schedstat"), "501 20 4\n").unwrap();
    assert_eq!(process.due(&mut buffer), Due::Stat, "it ran");
    assert_eq!(process.due(&mut buffer), Due::Nothing);
    process.parent_ended();
    assert_eq!(process.due(&mut buffer), Due::Stat, "its new parent");
    assert_eq!(process.due(&mut buffer), Due::Nothing);
    process.stat.threads = 2;
    let main_thread_alone = "its schedstat is its main thread's: another may have run";
    assert_eq!(process.due(&mut buffer), Due::Stat, "{main_thread_alone}");
    process.stat.threads = 1;
    process.run_time = None;
    assert_eq!(
        process.due(&mut buffer),
        Due::Stat,
        "no clock: its stat every tick"
    );

    process.run_time = process::RunTime::open(root.path(), 8);
    (0..10).for_each(|_| drop(process.due(&mut buffer)));
    assert!(!process.read_rss(&mut buffer), "no statm: its stat instead");
}

/// A fake /proc's process `pid`, as the tree keeps it once listed.
fn fake_process(root: &Path, pid: u32) -> Process {
    let (_, mut process) = row_process(1, &(pid, 1, 0, 0, 0, 0));
    process.stat = parse_stat(&fs::read(stat_path(root, pid)).unwrap())
        .unwrap()
        .0;
    process.run_time = process::RunTime::open(root, pid);
    process
}

#[test]
fn a_still_process_whose_parent_ended_has_its_stat_read_at_the_next_tick() {
    let (mut tree, root) = fresh_tree();
    let child = |ppid: u32, own_ticks: u64| {
        write_sleeper(root.path(), 8, own_ticks, 6_000_000);
        let stat = sleeper_stat(8, own_ticks).replacen(" S 1 ", &format!(" S {ppid} "), 1);
        fs::write(stat_path(root.path(), 8), stat).unwrap();
    };
    write_sleeper(root.path(), 7, 1, 5_000_000);
    child(7, 1);
    for pid in [7, 8] {
        let process = fake_process(root.path(), pid);
        tree.processes.insert(pid, process);
    }
    let mut now = 0.0;
    let mut refresh = |tree: &mut ProcessTree| {
        now += 100.0;
        tree.refresh(now)
    };
    (0..2).for_each(|_| drop(refresh(&mut tree)));
    // 7 runs to its end; 8, still, is moved to the reaper of orphans.
    fs::write(root.path().join("7/schedstat"), "5000900 0 2\n").unwrap();
    fs::remove_file(stat_path(root.path(), 7)).unwrap();
    child(1, 2);
    let gone = refresh(&mut tree);
    assert_eq!(gone.iter().map(|(pid, _)| *pid).collect::<Vec<_>>(), [7]);
    assert_eq!(
        tree.processes[&8].stat.ppid, 7,
        "still: not read at that tick"
    );
    refresh(&mut tree);
    let stat = tree.processes[&8].stat;
    assert_eq!(
        (stat.ppid, stat.own_ticks),
        (1, 2),
        "its stat read at the next"
    );
}

/// Two threads that sleep until a line comes, then work a little for each.
const SLEEPER: &str = "import sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
for line in sys.stdin:
    sum(range(2_000_000))
";

/// The real /proc's `pid` with its stat as read now.
fn real_process(pid: u32) -> Process {
    let (_, mut process) = row_process(1, &(pid, 1, 0, 0, 0, 0));
    let text = fs::read(format!("/proc/{pid}/stat")).unwrap();
    process.stat = parse_stat(&text).unwrap().0;
    process.run_time = process::RunTime::open(Path::new("/proc"), pid);
    process
}

#[test]
fn a_process_clock_stays_while_every_thread_sleeps_grows_when_one_runs_and_ends_with_it() {
    let mut sleeper = std::process::Command::new("python3")
        .args(["-c", SLEEPER])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = sleeper.id();
    let mut process = real_process(pid);
    for _ in 0..500 {
        if process.stat.threads == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        process = real_process(pid);
    }
    assert_eq!(process.stat.threads, 2);
    let mut buffer = ReadBuffer::new();
    let mut due = |process: &mut Process| {
        std::thread::sleep(Duration::from_millis(20));
        process.due(&mut buffer)
    };
    let settled = (0..250).any(|_| due(&mut process) == Due::Nothing);
    assert!(settled, "both threads asleep: still, though it has two");
    let next_two = (due(&mut process), due(&mut process));
    assert_eq!(next_two, (Due::Nothing, Due::Nothing));
    assert!(process.read_rss(&mut ReadBuffer::new()));
    assert!(process.stat.rss_pages > 0);

    use std::io::Write;
    let mut input = sleeper.stdin.take().unwrap();
    input.write_all(b"work\n").unwrap();
    input.flush().unwrap();
    let ran = (0..500).any(|_| due(&mut process) == Due::Stat);
    assert!(ran, "woken, it ran");
    assert!(process.ran_ns() > 0);

    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let gone = due(&mut process);
    assert_eq!(gone, Due::Stat, "gone: its clock answers no more");
    assert!(process::RunTime::open(Path::new("/proc"), pid).is_none());
}

#[test]
fn a_stat_path_is_the_pids_directory_and_stat() {
    let root = Path::new("/proc");
    assert_eq!(stat_path(root, 4242), Path::new("/proc/4242/stat"));
    assert_eq!(stat_path(root, 0), Path::new("/proc/0/stat"));
    assert_eq!(
        stat_path(root, u32::MAX),
        Path::new("/proc/4294967295/stat")
    );
}

/// A /proc with this machine's stat and meminfo, the test's own stat, and `loadavg`.
fn fake_proc(loadavg: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for file in ["stat", "meminfo"] {
        fs::copy(Path::new("/proc").join(file), root.path().join(file)).unwrap();
    }
    let own = stat_path(root.path(), std::process::id());
    fs::create_dir(own.parent().unwrap()).unwrap();
    fs::copy("/proc/self/stat", own).unwrap();
    fs::write(root.path().join("loadavg"), loadavg).unwrap();
    root
}

/// Ticks of the tree: `live` and `gone` as (pid, ppid, own ticks, reaped ticks, reaped
/// increase at this refresh, counted ticks); ppid 0 is the recorder.
type Row = (u32, u32, u64, u64, u64, u64);

fn row_process(own: u32, row: &Row) -> (u32, Process) {
    let &(pid, ppid, own_ticks, reaped_ticks, increase, counted) = row;
    let ppid = if ppid == 0 { own } else { ppid };
    let stat = Stat {
        ppid,
        own_ticks,
        reaped_ticks,
        ..Stat::default()
    };
    let process = Process {
        file: None,
        run_time: None,
        stat,
        counted_ticks: counted,
        reaped_increase: increase,
        peak_rss_pages: 0,
        last_seen: 0.0,
        comm: Vec::new(),
        name: String::new(),
        command: String::new(),
        command_known: true,
        ended: false,
    };
    (pid, process)
}

fn tick_of(tree: &mut ProcessTree, live: &[Row], gone: &[Row]) -> u64 {
    let own = tree.own_pid;
    let process = |row: &Row| row_process(own, row);
    tree.processes = live.iter().map(process).collect();
    let gone: Vec<(u32, Process)> = gone.iter().map(process).collect();
    let previous = Previous {
        time: 0.0,
        cpu: CpuTimes::default(),
        own_reaped_ticks: 0,
    };
    tree.tree_ticks(&gone, 0, &previous)
}

fn fresh_tree() -> (ProcessTree, tempfile::TempDir) {
    let root = fake_proc("0.10 0.20 0.30 1/100 5000\n");
    let interval = Duration::from_millis(100);
    let machine = machine_of(root.path());
    let tree = ProcessTree::probe(
        root.path(),
        &Follow::Children,
        interval,
        Clock::start(),
        &machine,
    );
    (tree.unwrap(), root)
}

#[test]
fn the_recorders_own_stat_is_read_again_only_once_it_can_have_reaped() {
    let (mut tree, root) = fresh_tree();
    let own = std::process::id();
    let write_own = |reaped: u64| {
        let (before, after) = (" 0".repeat(11), " 0".repeat(21));
        let stat = format!(
            "{own} (x) S 1{before} {reaped}{after} 17{}\n",
            " 0".repeat(14)
        );
        fs::write(stat_path(root.path(), own), stat).unwrap();
    };
    write_own(5);
    assert_eq!(tree.own_reaped_ticks(&[], Some(5000)), Some(5));
    write_own(9);
    let unchanged = "no pid given out, no child of the recorder gone";
    assert_eq!(
        tree.own_reaped_ticks(&[], Some(5000)),
        Some(5),
        "{unchanged}"
    );
    assert_eq!(
        tree.own_reaped_ticks(&[], Some(5001)),
        Some(9),
        "a pid given out"
    );
    write_own(12);
    let child = row_process(own, &(77, 0, 1, 0, 0, 1));
    assert_eq!(
        tree.own_reaped_ticks(&[child], Some(5001)),
        Some(12),
        "a child gone"
    );
    write_own(20);
    for _ in 1..OWN_STAT_EVERY_TICKS {
        assert_eq!(
            tree.own_reaped_ticks(&[], Some(5001)),
            Some(12),
            "{unchanged}"
        );
    }
    assert_eq!(
        tree.own_reaped_ticks(&[], Some(5001)),
        Some(20),
        "read once in ten"
    );
}

/// Parent 10 (the recorder's child) and its child 11, which ends and is reaped.
#[test]
fn an_ended_child_is_taken_out_once_of_what_its_reaper_reaped_even_a_tick_late() {
    // Seen ended in the tick whose read of its parent holds it: 10 more ticks.
    let (mut tree, _root) = fresh_tree();
    let parent = (10, 0, 100, 60, 60, 100);
    assert_eq!(tick_of(&mut tree, &[parent], &[(11, 10, 50, 0, 0, 50)]), 10);

    // Reaped between the reads of one tick (the child read first, then the parent):
    // one tick over, the next ones under, the same in all: 5 of the child, 80 of the
    // parent.
    let (mut tree, _root) = fresh_tree();
    let ticks = [
        tick_of(
            &mut tree,
            &[(10, 0, 100, 55, 55, 100), (11, 10, 55, 0, 0, 50)],
            &[],
        ),
        tick_of(
            &mut tree,
            &[(10, 0, 100, 55, 0, 155)],
            &[(11, 10, 55, 0, 0, 55)],
        ),
        tick_of(&mut tree, &[(10, 0, 140, 55, 0, 155)], &[]),
        tick_of(&mut tree, &[(10, 0, 180, 55, 0, 195)], &[]),
    ];
    assert_eq!(ticks.iter().sum::<u64>(), 85, "{ticks:?}");
    assert_eq!(tree.owed_ticks, 0);

    // Reaped by nobody in the tree (its parent ignores SIGCHLD): nothing taken out.
    let (mut tree, _root) = fresh_tree();
    let parent = (10, 0, 100, 0, 0, 90);
    assert_eq!(tick_of(&mut tree, &[parent], &[(11, 10, 30, 0, 0, 30)]), 10);
    assert_eq!(tick_of(&mut tree, &[(10, 0, 110, 0, 0, 100)], &[]), 10);
    assert_eq!(tree.owed_ticks, 0);
}

#[test]
fn proc_is_listed_again_only_once_a_new_pid_was_given_out() {
    let clock = Clock::start();
    let root = fake_proc("0.10 0.20 0.30 1/100 5000\n");
    let mut tree = ProcessTree::probe(
        root.path(),
        &Follow::Children,
        Duration::from_millis(100),
        clock,
        &machine_of(root.path()),
    )
    .unwrap();
    tick_markers_under(&mut tree, clock.now_ms(), root.path());
    let child = format!("5001 (child) S {} ", std::process::id());
    let fields =
        String::from_utf8(STAT[STAT.iter().position(|&b| b == b'Z').unwrap() + 5..].to_vec());
    let child_stat = stat_path(root.path(), 5001);
    fs::create_dir(child_stat.parent().unwrap()).unwrap();
    fs::write(&child_stat, child + &fields.unwrap()).unwrap();
    tick_markers_under(&mut tree, clock.now_ms(), root.path());
    assert!(
        tree.processes.is_empty(),
        "no pid given out: /proc is not listed"
    );
    fs::write(root.path().join("loadavg"), "0.10 0.20 0.30 1/101 5001\n").unwrap();
    tick_markers_under(&mut tree, clock.now_ms(), root.path());
    assert!(
        tree.processes.contains_key(&5001),
        "listed once pid 5001 was given out"
    );
}

#[test]
fn children_are_found_and_a_finished_child_gets_a_marker() {
    let clock = Clock::start();
    let follow = Follow::Children;
    let interval = Duration::from_millis(10);
    let mut tree = ProcessTree::probe(
        Path::new("/proc"),
        &follow,
        interval,
        clock,
        &machine_of(Path::new("/proc")),
    )
    .unwrap();
    tick_markers(&mut tree, clock.now_ms());
    let mut child = std::process::Command::new("sleep")
        .arg("0.3")
        .spawn()
        .unwrap();
    tick_markers(&mut tree, clock.now_ms());
    assert!(
        tree.processes.contains_key(&child.id()),
        "the child is in the tree"
    );
    // Seen alive again more than an interval after it started: it gets a marker.
    std::thread::sleep(Duration::from_millis(50));
    tick_markers(&mut tree, clock.now_ms());
    child.wait().unwrap();
    let out = tick_markers(&mut tree, clock.now_ms());
    let marker = out
        .iter()
        .find(|m| m.data.as_ref().is_some_and(|d| d["pid"] == child.id()))
        .expect("a marker for the child");
    assert_eq!(marker.name, "sleep");
    assert_eq!(marker.data.as_ref().unwrap()["command"], "sleep 0.3");
    assert!(out.iter().any(|m| m.name == "Task CPU"));
}

#[test]
fn new_pids_are_read_one_by_one_between_listings_and_threads_are_left_out() {
    let (mut tree, root) = fresh_tree();
    let start = tree.listed_at;
    tick_markers_under(&mut tree, start, root.path());
    let listings = tree.tick;
    // Fields 5 to 37 and 39 to 52 are zeros; field 38 is the exit signal.
    let zeros = |n: usize| " 0".repeat(n);
    for (pid, exit_signal) in [(5001, 17), (5002, -1)] {
        let (before, after) = (zeros(33), zeros(14));
        let stat = format!(
            "{pid} (x) S {}{before} {exit_signal}{after}\n",
            std::process::id()
        );
        let path = stat_path(root.path(), pid);
        fs::create_dir(path.parent().unwrap()).unwrap();
        fs::write(&path, stat).unwrap();
    }
    fs::write(root.path().join("loadavg"), "0.10 0.20 0.30 1/101 5002\n").unwrap();
    tick_markers_under(&mut tree, start + 100.0, root.path());
    assert!(
        tree.processes.contains_key(&5001),
        "the new child is in the tree"
    );
    assert!(
        !tree.processes.contains_key(&5002),
        "a thread is not a process"
    );
    assert_eq!(tree.tick, listings, "found without listing /proc");
    fs::write(root.path().join("loadavg"), "0.10 0.20 0.30 1/101 5003\n").unwrap();
    tick_markers_under(&mut tree, start + 900.0, root.path());
    assert_eq!(tree.tick, listings, "not listed within ten ticks");
    fs::write(root.path().join("loadavg"), "0.10 0.20 0.30 1/101 5004\n").unwrap();
    tick_markers_under(&mut tree, start + 1000.0, root.path());
    assert_eq!(tree.tick, listings + 1, "listed whole once in ten ticks");
}

#[test]
fn a_big_tree_is_sampled_once_a_second() {
    let (mut tree, _root) = fresh_tree();
    assert_eq!(tree.pace_ms(), 0.0, "a small tree: every tick");
    let rows: Vec<Row> = (1..=BIG_TREE as u32 + 1)
        .map(|pid| (pid, 0, 0, 0, 0, 0))
        .collect();
    tick_of(&mut tree, &rows, &[]);
    assert_eq!(tree.pace_ms(), BIG_TREE_PACE_MS);
    assert_eq!(
        tree.listing_pace_ms(),
        10.0 * BIG_TREE_PACE_MS,
        "not listed at each of its ticks"
    );
}

/// A fake /proc where pid 77's stat names the recorder its parent, and the recorder's one
/// thread lists `children`.
fn proc_with_children(children: &str) -> tempfile::TempDir {
    let root = fake_proc("0.10 0.20 0.30 1/100 5000\n");
    let own = std::process::id();
    let stat = format!("77 (x) S {own}{} 17{}\n", " 0".repeat(33), " 0".repeat(14));
    let path = stat_path(root.path(), 77);
    fs::create_dir(path.parent().unwrap()).unwrap();
    fs::write(&path, stat).unwrap();
    let task = root.path().join(format!("{own}/task/{own}"));
    fs::create_dir_all(&task).unwrap();
    fs::write(task.join("children"), children).unwrap();
    root
}

fn probed(root: &Path) -> ProcessTree {
    let interval = Duration::from_millis(100);
    let (clock, machine) = (Clock::start(), machine_of(root));
    ProcessTree::probe(root, &Follow::Children, interval, clock, &machine).unwrap()
}

#[test]
fn without_children_at_the_probe_the_processes_listed_are_others_unread() {
    let root = proc_with_children("");
    let mut tree = probed(root.path());
    assert!(tree.others.contains_key(&77), "listed at the probe");
    tick_markers_under(&mut tree, 100.0, root.path());
    assert!(
        tree.processes.is_empty(),
        "not read: a process that was there before any child is not the task's"
    );
}

#[test]
fn with_children_at_the_probe_the_processes_listed_are_read() {
    let root = proc_with_children("77 ");
    let tree = probed(root.path());
    assert!(tree.processes.contains_key(&77));
}

/// The stat of a `sleep` of one thread, child of pid 1, that has used `own_ticks`.
fn sleeper_stat(pid: u32, own_ticks: u64) -> String {
    // Fields 5 to 37: utime (14) and the thread count (20) set, the rest zeros.
    let fields: Vec<String> = (5..=37)
        .map(|field| match field {
            14 => own_ticks.to_string(),
            20 => "1".to_owned(),
            _ => "0".to_owned(),
        })
        .collect();
    format!(
        "{pid} (sleep) S 1 {} 17{}\n",
        fields.join(" "),
        " 0".repeat(14)
    )
}

/// Sets what the fake /proc says of `pid` (its stat and its schedstat's time on CPU).
fn write_sleeper(root: &Path, pid: u32, own_ticks: u64, run_ns: u64) {
    let dir = root.join(pid.to_string());
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("stat"), sleeper_stat(pid, own_ticks)).unwrap();
    fs::write(dir.join("schedstat"), format!("{run_ns} 0 1\n")).unwrap();
}

/// A tree following the fake cgroup `cgroup` over the fake /proc `root`, at 0.1 s.
fn following_cgroup(root: &Path, cgroup: &Path) -> ProcessTree {
    let follow = Follow::Cgroup(cgroup.to_owned());
    let (clock, machine) = (Clock::start(), machine_of(root));
    let interval = Duration::from_millis(100);
    ProcessTree::probe(root, &follow, interval, clock, &machine).unwrap()
}

/// Processes 7 and 8 in a fake cgroup whose CPU total is usage_usec. The fake's files
/// change without the cgroup's total where a test says so: whether a process was read
/// then shows in the stat the tree keeps of it.
#[test]
fn following_a_cgroup_still_processes_are_read_only_when_its_cpu_total_shows_they_can_have_run() {
    let root = fake_proc("0.10 0.20 0.30 1/100 5000\n");
    let cgroup = crate::sources::fake_root(&[("cgroup.procs", "7\n8\n")]);
    let usage = |usec: u64| {
        let text = format!("usage_usec {usec}\nuser_usec {usec}\nsystem_usec 0\n");
        fs::write(cgroup.path().join("cpu.stat"), text).unwrap();
    };
    usage(1000);
    write_sleeper(root.path(), 7, 1, 5_000_000);
    write_sleeper(root.path(), 8, 1, 6_000_000);
    let mut tree = following_cgroup(root.path(), cgroup.path());
    let mut now = 0.0;
    let mut tick = |tree: &mut ProcessTree| {
        now += 100.0;
        tick_markers_under(tree, now, root.path());
    };
    let own_ticks = |tree: &ProcessTree, pid: u32| tree.processes[&pid].stat.own_ticks;
    // Found; their time on CPU learnt; found still.
    (0..3).for_each(|_| tick(&mut tree));
    assert_eq!(tree.processes.len(), 2);

    write_sleeper(root.path(), 8, 2, 6_000_500);
    tick(&mut tree);
    assert_eq!(
        own_ticks(&tree, 8),
        1,
        "the cgroup used no CPU: the still ones are passed over, not even their schedstat read"
    );

    // It burns CPU: 10 ms, which the cgroup's total shows.
    write_sleeper(root.path(), 8, 3, 16_000_500);
    usage(11_000);
    tick(&mut tree);
    assert_eq!(own_ticks(&tree, 8), 3, "read at the tick its CPU shows");
    tick(&mut tree);
    assert_eq!(own_ticks(&tree, 8), 3);

    // Process 8 runs on, within what its own read explains; 7's stat changes alone (its
    // memory reclaimed): still, 7 is passed over, but read within ten ticks.
    write_sleeper(root.path(), 7, 4, 5_000_000);
    let mut run_ns = 16_000_500;
    let mut usec = 11_000;
    let mut ticks_until_read = 0;
    while own_ticks(&tree, 7) == 1 {
        assert!(ticks_until_read < 10, "7's stat read once in ten ticks");
        (run_ns, usec) = (run_ns + 2_000_000, usec + 2_000);
        write_sleeper(root.path(), 8, 3, run_ns);
        usage(usec);
        tick(&mut tree);
        ticks_until_read += 1;
    }
    assert!(ticks_until_read > 1, "passed over meanwhile");
}

/// Sleeper 7 in a fake cgroup whose CPU total does not grow: cgroup.procs is read again
/// when a pid is given out, when the total shows CPU that the tree's processes did not
/// use, or once in ten ticks.
#[test]
fn a_followed_cgroups_processes_are_read_again_only_when_a_new_one_can_be_there() {
    let root = fake_proc("0.10 0.20 0.30 1/100 5000\n");
    let cgroup =
        crate::sources::fake_root(&[("cgroup.procs", "7\n"), ("cpu.stat", "usage_usec 1000\n")]);
    write_sleeper(root.path(), 7, 1, 5_000_000);
    let mut tree = following_cgroup(root.path(), cgroup.path());
    let mut now = 0.0;
    let mut tick = |tree: &mut ProcessTree| {
        now += 100.0;
        tick_markers_under(tree, now, root.path());
    };
    (0..3).for_each(|_| tick(&mut tree));
    let move_in = |pid: u32| {
        write_sleeper(root.path(), pid, 0, 1_000);
        let procs = cgroup.path().join("cgroup.procs");
        let listed = fs::read_to_string(&procs).unwrap();
        fs::write(procs, format!("{listed}{pid}\n")).unwrap();
    };

    move_in(8);
    let mut ticks_until_found = 0;
    while !tree.processes.contains_key(&8) {
        assert!(ticks_until_found < 10, "read once in ten ticks");
        tick(&mut tree);
        ticks_until_found += 1;
    }
    assert!(ticks_until_found > 1, "not read while nothing could be new");

    tick(&mut tree);
    move_in(9);
    fs::write(root.path().join("loadavg"), "0.10 0.20 0.30 1/101 5001\n").unwrap();
    tick(&mut tree);
    assert!(tree.processes.contains_key(&9), "a pid was given out");

    tick(&mut tree);
    move_in(10);
    fs::write(cgroup.path().join("cpu.stat"), "usage_usec 2000\n").unwrap();
    tick(&mut tree);
    assert!(
        tree.processes.contains_key(&10),
        "CPU that no known process used"
    );
}
