use crate::util::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The complete lines of a log, as JSON (a line being written is left out).
fn log_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
    complete
        .lines()
        .map(|line| serde_json::from_str(line).expect("a complete log line is JSON"))
        .collect()
}

fn markers_named<'a>(lines: &'a [Value], name: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "marker" && l["name"] == name)
        .collect()
}

/// Process markers: those whose data.type is "Process".
fn process_markers(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "marker" && l["data"]["type"] == "Process")
        .collect()
}

/// CPU time that a track of fractions of all cores carries, in ms.
fn integrated_cpu_ms(lines: &[Value], track: &str, cpus: f64) -> f64 {
    markers_named(lines, track)
        .iter()
        .map(|m| {
            let duration = m["endTime"].as_f64().unwrap() - m["startTime"].as_f64().unwrap();
            m["data"]["cpu"].as_f64().unwrap() * duration * cpus
        })
        .sum()
}

/// utime + stime of a process, in ms (clock ticks of 10 ms, as on every Linux we run on).
fn cpu_ms_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 * 10.0
}

/// A CPU burner that is not part of any recorded tree; killed when dropped.
struct Burner(Child);

impl Burner {
    fn start() -> Burner {
        let child = Command::new("md5sum")
            .arg("/dev/zero")
            .stdout(Stdio::null())
            .spawn()
            .expect("start md5sum");
        Burner(child)
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Two burners and a process holding 100 MiB in the task's tree for 3 s, and one burner
/// outside it. The machine is shared and noisy, so the assertions compare quantities
/// measured in the same run rather than absolute loads:
/// - "Task CPU", integrated, matches the CPU time of the tree's process markers within 25%
///   plus 150 ms (a tick is 10 ms and each process can lose its last interval), so it did
///   not take in the outside burner;
/// - "Other CPU", integrated, holds at least 70% (less 100 ms) of the CPU time the outside
///   burner used while the task ran, measured from its /proc/<pid>/stat;
/// - "Task Memory" reaches 90 MiB of the 100 MiB held.
#[test]
fn the_task_tree_carries_its_load_and_other_cpu_carries_the_unrelated_burner() {
    let sandbox = Sandbox::new();
    let burner = Burner::start();
    let script = "sha1sum /dev/zero & a=$!; sha1sum /dev/zero & b=$!; \
                  dd if=/dev/zero bs=100M count=1 2>/dev/null | sleep 3; kill $a $b; wait";
    let args = run_script(&["--interval", "0.1", "--keep-log"], script);
    let burner_before = cpu_ms_of(burner.0.id());
    let output = sandbox.run(&args);
    let burner_during = cpu_ms_of(burner.0.id()) - burner_before;
    drop(burner);
    assert!(output.status.success(), "{}", describe(&args, &output));

    let log_path = sandbox.path("profile_resource-usage.jsonl");
    assert_streamed_profile(&std::fs::read(&log_path).unwrap());
    let lines = log_lines(&log_path);
    let meta = &lines[0];
    assert!(
        meta["tcProfile"]["sources"]
            .as_array()
            .unwrap()
            .contains(&"processes".into()),
        "{meta}"
    );
    let cpus = meta["logicalCPUs"].as_f64().unwrap();

    let processes = process_markers(&lines);
    let names: Vec<&str> = processes
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    let shell = processes
        .iter()
        .find(|m| m["name"] == "sh")
        .expect("the shell");
    let burners: Vec<&&Value> = processes
        .iter()
        .filter(|m| m["name"] == "sha1sum")
        .collect();
    assert_eq!(burners.len(), 2, "{names:?}");
    for burner in &burners {
        assert_eq!(burner["data"]["ppid"], shell["data"]["pid"]);
        assert_eq!(burner["data"]["command"], "sha1sum /dev/zero");
        assert_eq!(burner["category"], 2, "the Task category");
    }
    assert!(
        !names.contains(&"md5sum"),
        "the outside burner is not the task's: {names:?}"
    );

    let tree_markers_ms: f64 = processes
        .iter()
        .map(|m| m["data"]["cpuTime"].as_f64().unwrap())
        .sum();
    let task_ms = integrated_cpu_ms(&lines, "Task CPU", cpus);
    let other_ms = integrated_cpu_ms(&lines, "Other CPU", cpus);
    let summary = format!(
        "Task CPU {task_ms:.0} ms, process markers {tree_markers_ms:.0} ms, \
         Other CPU {other_ms:.0} ms, outside burner {burner_during:.0} ms"
    );
    eprintln!("{summary}");
    assert!(tree_markers_ms >= 100.0, "the burners ran: {summary}");
    assert!(
        (task_ms - tree_markers_ms).abs() <= 0.25 * tree_markers_ms + 150.0,
        "{summary}"
    );
    assert!(other_ms >= 0.7 * burner_during - 100.0, "{summary}");

    let peak_rss = |name: &str| {
        markers_named(&lines, name)
            .iter()
            .map(|m| {
                m["data"]["rss"]
                    .as_f64()
                    .or(m["data"]["used"].as_f64())
                    .unwrap()
            })
            .fold(0.0, f64::max)
    };
    assert!(
        peak_rss("Task Memory") >= 90.0 * 1048576.0,
        "{}",
        peak_rss("Task Memory")
    );
    assert!(peak_rss("Other Memory") > 0.0);
    let dd = processes.iter().find(|m| m["name"] == "dd").expect("dd");
    assert!(
        dd["data"]["peakRss"].as_f64().unwrap() >= 90.0 * 1048576.0,
        "{dd}"
    );
}

/// A task blocked on a fifo that the test opens only after it has seen the markers: they
/// must be in the log while the task still runs. The inner shell's exit status is read
/// while it is a zombie (its parent, `sleep`, never waits for it).
#[test]
fn process_markers_are_in_the_log_while_the_task_still_runs() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.path("go");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let script = r#"(sh -c "sleep 0.3; exit 3" & exec sleep 1); read go < "$FIFO""#;
    let args = run_script(&["--interval", "0.1", "--keep-log"], script);
    let mut recorder = sandbox.command(&args).env("FIFO", &fifo).spawn().unwrap();
    let log_path = sandbox.path("profile_resource-usage.jsonl");

    let mut lines = Vec::new();
    wait_for(|| {
        lines = log_lines(&log_path);
        let ended = process_markers(&lines);
        ended
            .iter()
            .any(|m| m["name"] == "sleep" && m["data"]["command"] == "sleep 1")
            && ended.iter().any(|m| m["data"]["status"] == "exit code 3")
    });
    assert!(
        markers_named(&lines, "Command").is_empty() && !lines.iter().any(|l| l["type"] == "footer"),
        "the task was still running"
    );
    let inner = process_markers(&lines)
        .into_iter()
        .find(|m| m["data"]["status"] == "exit code 3")
        .unwrap();
    assert_eq!(inner["name"], "sh");
    assert_eq!(inner["data"]["command"], "sh -c sleep 0.3; exit 3");
    assert!(inner["data"]["peakRss"].as_u64().unwrap() > 0, "{inner}");
    assert!(inner["data"]["cpuTime"].is_number(), "{inner}");
    assert!(inner["startTime"].as_f64() < inner["endTime"].as_f64());

    std::fs::write(&fifo, "go\n").unwrap();
    let status = recorder.wait().unwrap();
    assert!(status.success());
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
}

/// A cgroup with a memory limit, made by the test as root; removed when dropped.
struct LimitedCgroup {
    path: PathBuf,
    kills_file: &'static str,
}

impl LimitedCgroup {
    /// A child of this process's own cgroup with 64 MiB and no swap: in cgroup v2 where
    /// the memory controller is delegated, else in the v1 memory controller. Err says why
    /// none could be made.
    fn create(name: &str) -> Result<LimitedCgroup, String> {
        let limit = (64u64 << 20).to_string();
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let v2 = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .map(|p| PathBuf::from(format!("/sys/fs/cgroup{}", p.trim_end_matches('/'))));
        let v2 = v2.filter(|dir| {
            std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                .is_ok_and(|t| t.contains("memory"))
        });
        let v1 = own
            .lines()
            .find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_owned()))
            .map(|p| PathBuf::from(format!("/sys/fs/cgroup/memory{}", p.trim_end_matches('/'))));
        let (parent, files, kills_file): (PathBuf, [&str; 2], _) = match (v2, v1) {
            (Some(dir), _) => (dir, ["memory.max", "memory.swap.max"], "memory.events"),
            (None, Some(dir)) => (
                dir,
                ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"],
                "memory.oom_control",
            ),
            _ => return Err("no cgroup v2 memory controller and no v1 memory controller".into()),
        };
        let path = parent.join(name);
        std::fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let cgroup = LimitedCgroup { path, kills_file };
        std::fs::write(cgroup.path.join(files[0]), &limit).map_err(|e| e.to_string())?;
        let swap = cgroup.path.join(files[1]);
        if swap.exists() {
            let value = if files[1] == "memory.swap.max" {
                "0"
            } else {
                limit.as_str()
            };
            std::fs::write(swap, value).map_err(|e| e.to_string())?;
        }
        Ok(cgroup)
    }

    fn oom_kills(&self) -> u64 {
        let text = std::fs::read_to_string(self.path.join(self.kills_file)).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("oom_kill "))
            .expect("oom_kill");
        line[9..].trim().parse().unwrap()
    }
}

impl Drop for LimitedCgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() || !self.path.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Why no cgroup can be made here (the tests' own probe, not tc-profile's), or None.
fn no_cgroup_here() -> Option<String> {
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let probe = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("tc-profile-test-probe-{}-{probe}", std::process::id());
    LimitedCgroup::create(&name).err()
}

#[test]
fn an_oom_kill_in_a_memory_limited_cgroup_is_an_oom_kill_marker() {
    let name = format!("tc-profile-test-oom-{}", std::process::id());
    let cgroup = match LimitedCgroup::create(&name) {
        Ok(cgroup) => cgroup,
        Err(why) => {
            eprintln!("skipped: no memory-limited cgroup can be created here: {why}");
            return;
        }
    };
    let sandbox = Sandbox::new();
    let dir = cgroup.path.to_str().unwrap();
    let script = r#"echo $$ > "$CG/cgroup.procs" && dd if=/dev/zero of=/dev/null bs=200M count=1"#;
    let args = run_script(&["--cgroup", dir, "--keep-log"], script);
    let output = sandbox.command(&args).env("CG", dir).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(137),
        "dd was OOM-killed: {}",
        describe(&args, &output)
    );
    assert_eq!(cgroup.oom_kills(), 1, "the kernel counted one OOM kill");

    let lines = log_lines(&sandbox.path("profile_resource-usage.jsonl"));
    let meta = &lines[0]["tcProfile"];
    assert_eq!(meta["cgroup"]["path"], dir);
    assert_eq!(meta["cgroup"]["created"], false);
    for source in ["cgroup-memory", "oom-kills"] {
        assert!(
            meta["sources"].as_array().unwrap().contains(&source.into()),
            "{meta}"
        );
    }
    let kills = markers_named(&lines, "OOM kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    let kill = &kills[0]["data"];
    assert_eq!(kill["kills"], 1);
    assert_eq!(kill["cgroup"], dir);
    if let Some(process) = kill.get("process") {
        assert_eq!(process, "dd", "the victim, from the kernel log: {kill}");
    }
    let memory = markers_named(&lines, "Cgroup Memory");
    let peak = memory
        .iter()
        .filter_map(|m| m["data"]["peak"].as_u64())
        .max();
    assert!(peak.is_some_and(|p| p >= 32 << 20), "peak {peak:?}");
    assert_eq!(memory.last().unwrap()["data"]["limit"], 64 << 20);
}

#[test]
fn own_cgroup_holds_the_command_and_is_removed_at_the_end() {
    let sandbox = Sandbox::new();
    let script = "cat /proc/self/cgroup > cgroup.txt; dd if=/dev/zero of=/dev/null bs=50M count=1";
    let args = run_script(&["--own-cgroup", "--keep-log"], script);
    if let Some(why) = no_cgroup_here() {
        eprintln!("skipped: no cgroup can be created here: {why}");
        return;
    }
    let output = sandbox.run(&args);
    assert!(output.status.success(), "{}", describe(&args, &output));
    let lines = log_lines(&sandbox.path("profile_resource-usage.jsonl"));
    let cgroup = &lines[0]["tcProfile"]["cgroup"];
    assert_eq!(cgroup["created"], true, "{cgroup}");
    let path = PathBuf::from(cgroup["path"].as_str().unwrap());
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("tc-profile-"), "{name}");
    let inside = std::fs::read_to_string(sandbox.path("cgroup.txt")).unwrap();
    assert!(inside.contains(name), "the command ran in {name}: {inside}");
    assert!(!path.exists(), "{} is removed at the end", path.display());
    let peak = markers_named(&lines, "Cgroup Memory")
        .iter()
        .filter_map(|m| m["data"]["peak"].as_u64().or(m["data"]["current"].as_u64()))
        .max();
    assert!(
        peak.is_some_and(|p| p >= 40 << 20),
        "the 50 MiB buffer: {peak:?}"
    );
}

/// /proc/pressure hidden under an empty tmpfs, in a mount namespace of its own: PSI is
/// left out of the sources and schemas, and no pressure track is drawn, not even zeros.
#[test]
fn a_source_the_machine_lacks_is_left_out_not_drawn_as_zeros() {
    if !Path::new("/proc/pressure/memory").exists() {
        eprintln!("skipped: this kernel has no PSI to hide");
        return;
    }
    let sandbox = Sandbox::new();
    let hide =
        format!("mount -t tmpfs none /proc/pressure && exec {BIN} run --keep-log -- sleep 0.5");
    let output = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &hide])
        .current_dir(sandbox.dir())
        .output()
        .expect("unshare");
    if !output.status.success() && !sandbox.path("profile_resource-usage.jsonl").exists() {
        eprintln!(
            "skipped: no private mount namespace here: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let lines = log_lines(&sandbox.path("profile_resource-usage.jsonl"));
    let meta = &lines[0];
    let sources = meta["tcProfile"]["sources"].as_array().unwrap();
    assert!(!sources.contains(&"pressure".into()), "{sources:?}");
    assert!(sources.contains(&"processes".into()), "{sources:?}");
    let schemas: Vec<&str> = meta["markerSchema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(!schemas.contains(&"PSI"), "{schemas:?}");
    assert!(lines.iter().all(|l| l["data"]["type"] != "PSI"));
    assert!(!markers_named(&lines, "Task CPU").is_empty());
}

/// The recorder of `run --own-cgroup` is SIGKILLed while its command lives on inside the
/// cgroup: the next `recover` finalizes the log, moves the command out and removes the
/// cgroup.
#[test]
fn recover_removes_the_cgroup_a_killed_recorder_left() {
    if let Some(why) = no_cgroup_here() {
        eprintln!("skipped: no cgroup can be created here: {why}");
        return;
    }
    let sandbox = Sandbox::new();
    let args = run_script(
        &["--own-cgroup", "--state-dir", "state"],
        "echo $$ > command.pid; exec sleep 60",
    );
    let mut recorder = sandbox
        .command(&args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = sandbox.path("command.pid");
    wait_for(|| std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n')));
    let command_pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let inside = std::fs::read_to_string(format!("/proc/{command_pid}/cgroup")).unwrap();
    let Some(name) = inside
        .split(['/', '\n'])
        .find(|part| part.starts_with("tc-profile-"))
        .map(str::to_owned)
    else {
        signal(&recorder, libc::SIGTERM);
        let output = recorder.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        panic!("the command is in no cgroup of tc-profile: {inside}\n{stderr}");
    };
    signal(&recorder, libc::SIGKILL);
    recorder.wait().unwrap();
    let log = std::fs::read_dir(sandbox.path("state"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .expect("the killed recorder's log");
    let meta = &log_lines(&log)[0]["tcProfile"]["cgroup"];
    assert_eq!(meta["created"], true, "{meta}");
    let cgroup = PathBuf::from(meta["path"].as_str().unwrap());
    assert!(
        cgroup.ends_with(&name) && cgroup.exists(),
        "{}",
        cgroup.display()
    );

    let output = sandbox.run_ok(&["recover", "--state-dir", "state"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let now_in = std::fs::read_to_string(format!("/proc/{command_pid}/cgroup"));
    // SAFETY: kill(2) on the command the killed recorder left running.
    unsafe { libc::kill(command_pid, libc::SIGKILL) };
    assert!(
        !cgroup.exists(),
        "{} is removed: {stderr}",
        cgroup.display()
    );
    assert!(stderr.contains("the cgroup its recorder left"), "{stderr}");
    let now_in = now_in.unwrap();
    assert!(
        !now_in.contains(&name),
        "the command was moved out: {now_in}"
    );
    let again = sandbox.run_ok(&["recover", "--state-dir", "state"]);
    assert!(again.stderr.is_empty(), "nothing left to recover or remove");
}
