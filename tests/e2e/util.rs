//! Helpers shared by the end-to-end tests: a directory per test, running the binary with
//! failures that show the command and its output, and the Firefox Profiler's constraints
//! (those its front-end applies on import and drawing) as assertions.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_tc-profile");
/// A log of Mozilla's resource monitor, as Firefox CI writes it.
pub const MOZILLA_STREAM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/mozsystemmonitor-stream.jsonl"
);

/// A fresh directory for one test, removed when dropped.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        // Under target/ rather than /tmp: on a real disk, so that disk I/O shows in "IO".
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        Sandbox {
            dir: tempfile::tempdir_in(base).expect("create a test directory"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A `tc-profile` command run in this directory.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command.args(args).current_dir(self.dir.path());
        command
    }

    /// Runs `tc-profile ARGS` and returns its output, whatever its status.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("spawn tc-profile")
    }

    /// Runs `tc-profile ARGS` and fails the test, showing everything, unless it exits 0.
    pub fn run_ok(&self, args: &[&str]) -> Output {
        let output = self.run(args);
        assert!(output.status.success(), "{}", describe(args, &output));
        output
    }
}

/// The command, its status, stdout and stderr: for assertion messages.
pub fn describe(args: &[&str], output: &Output) -> String {
    format!(
        "tc-profile {}\nstatus: {}\nstdout: {}\nstderr: {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The markers of a finalized profile, as (name, start, end, data) rows.
#[derive(Debug)]
pub struct MarkerRow {
    pub name: String,
    pub start: f64,
    pub end: Option<f64>,
    pub category: u64,
    pub data: Value,
}

impl MarkerRow {
    /// A metric marker's series, `METRIC #TAGS` as the task wrote it (SPEC.md, "Metric
    /// tracks"), whatever its track is named; any other marker's name.
    pub fn series(&self) -> String {
        let Some(metric) = self.data["metric"].as_str() else {
            return self.name.clone();
        };
        match self.data["tags"].as_str() {
            Some(tags) => format!("{metric} #{tags}"),
            None => metric.to_owned(),
        }
    }
}

pub fn profile_markers(profile: &Value) -> Vec<MarkerRow> {
    thread_markers(&profile["threads"][0])
}

/// The markers of one thread of a processed profile.
pub fn thread_markers(thread: &Value) -> Vec<MarkerRow> {
    let strings = thread["stringArray"].as_array().expect("stringArray");
    let table = &thread["markers"];
    let length = table["length"].as_u64().expect("markers.length") as usize;
    (0..length)
        .map(|i| MarkerRow {
            name: strings[table["name"][i].as_u64().expect("name index") as usize]
                .as_str()
                .expect("string")
                .to_owned(),
            start: table["startTime"][i].as_f64().expect("startTime"),
            end: table["endTime"][i].as_f64(),
            category: table["category"][i].as_u64().expect("category"),
            data: table["data"][i].clone(),
        })
        .collect()
}

pub fn count_named(rows: &[MarkerRow], name: &str) -> usize {
    rows.iter().filter(|m| m.series() == name).count()
}

/// Asserts that no graph track of `profile` (all of them ours) draws anything from `from` to
/// `to` (profile times), as the front-end draws them: a `line` graph is one path through
/// every sample of its track, so every graph must be a bar, which covers its own sample's
/// interval alone, and no sample may reach into the stretch.
pub fn assert_graph_tracks_blank(profile: &Value, from: f64, to: f64) {
    let schemas = profile["meta"]["markerSchema"]
        .as_array()
        .expect("markerSchema");
    let mut graphed = Vec::new();
    for schema in schemas {
        for graph in schema["graphs"].as_array().into_iter().flatten() {
            assert_eq!(graph["type"], "bar", "{}", schema["name"]);
            graphed.push(schema["name"].as_str().expect("a schema's name"));
        }
    }
    for row in profile_markers(profile) {
        let graph = row.data["type"]
            .as_str()
            .is_some_and(|t| graphed.contains(&t));
        let within = row.start < to && row.end.unwrap_or(row.start) > from;
        assert!(
            !(graph && within),
            "{} draws from {} to {:?}, within {from} to {to}",
            row.name,
            row.start,
            row.end
        );
    }
}

const TABLES_47: [(&str, &[&str]); 5] = [
    (
        "stackTable",
        &["frame", "prefix", "category", "subcategory"],
    ),
    (
        "frameTable",
        &["address", "category", "func", "line", "column"],
    ),
    ("funcTable", &["name", "resource", "fileName", "lineNumber"]),
    ("resourceTable", &["lib", "name", "host", "type"]),
    (
        "nativeSymbols",
        &["libIndex", "address", "name", "functionSize"],
    ),
];

/// Every constraint the profiler's JSON Lines importer puts on a streamed profile.
pub fn assert_streamed_profile(bytes: &[u8]) {
    assert!(
        bytes.starts_with(br#"{"type":"meta""#),
        "log must start with the meta prefix"
    );
    assert!(bytes.ends_with(b"\n"), "log must end in a complete line");
    let lines: Vec<&[u8]> = bytes[..bytes.len() - 1].split(|&b| b == b'\n').collect();
    let mut threads = 0;
    for (i, line) in lines.iter().enumerate() {
        let text = std::str::from_utf8(line).expect("UTF-8 line");
        assert!(
            text.starts_with(r#"{"type":""#),
            "line {i}: type must be the first key: {text}"
        );
        let value: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("line {i} is not JSON ({e}): {text}"));
        assert_eq!(
            serde_json::to_string(&value).unwrap().len(),
            text.len(),
            "line {i} must be compact: {text}"
        );
        match value["type"].as_str().unwrap() {
            "meta" => assert_eq!(i, 0, "meta must be the first line"),
            "thread" => {
                threads += 1;
                assert_eq!(i, 1, "thread must come right after meta");
                assert_thread_tables(&value);
            }
            "marker" => {
                assert!(threads == 1, "marker line {i} before the thread line");
                assert_marker_line(&value);
            }
            _ => {}
        }
    }
    assert_eq!(threads, 1, "exactly one thread line");
    let meta: Value = serde_json::from_slice(lines[0]).unwrap();
    assert_meta(&meta);
    // The importer's string table holds the marker names, in the order first seen.
    let markers: Vec<Value> = lines[2..]
        .iter()
        .map(|l| serde_json::from_slice::<Value>(l).unwrap())
        .filter(|line| line["type"] == "marker")
        .collect();
    let names: std::collections::HashSet<&str> =
        markers.iter().filter_map(|m| m["name"].as_str()).collect();
    let strings = names.len() as u64;
    assert_markers_fit_meta(&meta, markers.iter().cloned(), strings);
}

fn assert_thread_tables(thread: &Value) {
    assert_eq!(thread["samples"]["length"], 0);
    for (table, columns) in TABLES_47 {
        assert!(thread[table].is_object(), "thread lacks {table}");
        assert!(thread[table]["length"].is_u64(), "{table}.length");
        for column in columns {
            assert!(
                thread[table][column].is_array(),
                "{table}.{column} must be an array"
            );
        }
    }
    assert!(thread["pid"].is_string(), "thread.pid must be a string");
    assert_eq!(thread["showMarkersInTimeline"], true);
}

fn assert_marker_line(marker: &Value) {
    assert!(marker["name"].is_string(), "marker name: {marker}");
    assert!(
        marker["startTime"].is_number(),
        "marker startTime: {marker}"
    );
    assert!(
        marker["endTime"].is_number() || marker["endTime"].is_null(),
        "marker endTime: {marker}"
    );
    if let Some(data) = marker.get("data") {
        assert!(data.is_object() || data.is_null(), "marker data: {marker}");
    }
}

fn assert_meta(meta: &Value) {
    assert_eq!(meta["preprocessedProfileVersion"], 47);
    assert_eq!(meta["version"], 27);
    assert!(meta["startTime"].is_number());
    assert!(meta["interval"].is_number());
    let categories = meta["categories"].as_array().expect("categories");
    assert!(
        categories.iter().any(|c| c["color"] == "grey"),
        "a grey category"
    );
    for category in categories {
        assert_eq!(category["subcategories"][0], "Other", "{category}");
    }
    for schema in meta["markerSchema"].as_array().expect("markerSchema") {
        assert!(
            schema["data"].is_array(),
            "schema fields go under data at 47: {schema}"
        );
        assert!(
            schema.get("fields").is_none(),
            "no fields key at 47: {schema}"
        );
    }
}

/// What the front-end requires of each marker against the meta: its category is declared,
/// a graph key holds a number (a string is an error), and a `unique-string` field holds an
/// index into the string table (a string there renders as garbage).
fn assert_markers_fit_meta(meta: &Value, markers: impl Iterator<Item = Value>, strings: u64) {
    let categories = meta["categories"].as_array().unwrap().len() as u64;
    let schemas = meta["markerSchema"].as_array().unwrap();
    let keys_of = |schema: &Value, list: &str, wanted: fn(&Value) -> bool| -> Vec<String> {
        schema[list]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|entry| wanted(entry))
            .map(|entry| entry["key"].as_str().unwrap().to_owned())
            .collect()
    };
    for marker in markers {
        let category = marker.get("category").map_or(Some(0), Value::as_u64);
        assert!(
            category.is_some_and(|c| c < categories),
            "category must index meta.categories ({categories}): {marker}"
        );
        let Some(kind) = marker["data"]["type"].as_str() else {
            continue;
        };
        let Some(schema) = schemas.iter().find(|s| s["name"] == kind) else {
            continue;
        };
        for key in keys_of(schema, "graphs", |_| true) {
            assert!(
                marker["data"][&key].is_number(),
                "graph key {key} must be a number: {marker}"
            );
        }
        for key in keys_of(schema, "data", |f| f["format"] == "unique-string") {
            let value = &marker["data"][&key];
            assert!(
                value.is_null() || value.as_u64().is_some_and(|i| i < strings),
                "unique-string field {key} must index the string table ({strings}): {marker}"
            );
        }
    }
}

/// The processed profile's constraints at version 47.
pub fn assert_processed_profile(profile: &Value) {
    assert_meta(&profile["meta"]);
    assert!(
        profile["meta"]["profilingEndTime"].is_number(),
        "profilingEndTime"
    );
    assert_eq!(profile["libs"], serde_json::json!([]));
    let threads = profile["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 1);
    assert_processed_thread(&profile["meta"], &threads[0]);
}

/// A processed profile of several processes (`merge`): `processes` threads, each its own
/// process, each meeting the constraints of a processed profile's thread.
pub fn assert_processed_group(profile: &Value, processes: usize) {
    assert_meta(&profile["meta"]);
    assert!(profile["meta"]["profilingEndTime"].is_number());
    let threads = profile["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), processes);
    let pids: std::collections::HashSet<&str> =
        threads.iter().map(|t| t["pid"].as_str().unwrap()).collect();
    assert_eq!(pids.len(), processes, "a pid per process");
    for thread in threads {
        assert_processed_thread(&profile["meta"], thread);
    }
}

/// A thread's tables, its marker columns, and its markers' string and category indexes.
fn assert_processed_thread(meta: &Value, thread: &Value) {
    assert_thread_tables(thread);
    let markers = &thread["markers"];
    let length = markers["length"].as_u64().expect("markers.length") as usize;
    for column in ["data", "name", "startTime", "endTime", "phase", "category"] {
        assert_eq!(
            markers[column].as_array().map(Vec::len),
            Some(length),
            "markers.{column}"
        );
    }
    let strings = thread["stringArray"].as_array().expect("stringArray").len() as u64;
    for i in 0..length {
        assert!(
            markers["name"][i].as_u64().unwrap() < strings,
            "name index in stringArray"
        );
        let phase = markers["phase"][i].as_u64().unwrap();
        assert_eq!(
            phase,
            if markers["endTime"][i].is_null() {
                0
            } else {
                1
            },
            "phase of marker {i}"
        );
    }
    let rows = (0..length).map(
        |i| serde_json::json!({ "category": markers["category"][i], "data": markers["data"][i] }),
    );
    assert_markers_fit_meta(meta, rows, strings);
}

/// Polls a condition for up to 20 s: for the recorder's own progress, never for timing.
pub fn wait_for(mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "condition not reached in 20 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Unix epoch milliseconds now, as marker files carry them.
pub fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// Sends `signal` to a child of the test.
pub fn signal(child: &std::process::Child, signal: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
}

/// Appends `text` to a file with one write, creating it if needed.
pub fn append(path: &Path, text: &[u8]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.write_all(text).unwrap();
}

/// The Python interpreter itself (not a shim that wraps it, which costs 0.1 s a start).
pub fn python() -> &'static Path {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let output = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 is needed by the marker tests (.ci/run installs it)");
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
}

/// A `tc-profile record` running in a sandbox, ready: its profile directory exists and is
/// followed.
pub struct Recording {
    pub child: std::process::Child,
    pub profile_dir: PathBuf,
    pub log: PathBuf,
}

impl Recording {
    /// Starts `tc-profile record --ready-file ready ARGS` and waits until it is ready.
    pub fn start(sandbox: &Sandbox, args: &[&str]) -> Recording {
        Recording::start_with_env(sandbox, args, &[])
    }

    /// [`Recording::start`] with these environment variables set.
    pub fn start_with_env(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Recording {
        let mut all = vec!["record", "--ready-file", "ready", "--interval", "0.1"];
        all.extend_from_slice(args);
        let child = sandbox
            .command(&all)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn tc-profile record");
        let ready = sandbox.path("ready");
        wait_for(|| ready.exists());
        let ready = std::fs::read_to_string(&ready).unwrap();
        // The first line; the second, with --http, is the live profile's base URL.
        let dir = ready.lines().next().unwrap_or_default();
        Recording {
            child,
            profile_dir: PathBuf::from(dir),
            log: sandbox.path("profile_resource-usage.jsonl"),
        }
    }

    /// The path of a marker file in the profile directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.profile_dir.join(name)
    }

    /// Waits until the log holds `needle` (a marker name, say), taken from a marker file.
    pub fn wait_logged(&self, needle: &str) {
        wait_for(|| std::fs::read_to_string(&self.log).is_ok_and(|log| log.contains(needle)));
    }

    /// SIGTERM, then the exit status and stderr; fails the test unless it exits 0.
    pub fn stop(self) -> String {
        signal(&self.child, libc::SIGTERM);
        let output = self.child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "record: {}\n{stderr}",
            output.status
        );
        stderr
    }

    /// SIGKILL: the recorder dies where it stands.
    pub fn kill(mut self) {
        signal(&self.child, libc::SIGKILL);
        self.child.wait().unwrap();
    }
}

/// The text of the profile's `Marker files` note, or "" when there is none.
pub fn marker_files_note(profile: &Value) -> String {
    profile_markers(profile)
        .iter()
        .find(|m| m.name == "Marker files")
        .map(|m| m.data["text"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// Runs `command` with its stdout and stderr on a fresh pseudo-terminal (80x24); returns
/// its status and everything it wrote there.
pub fn run_on_terminal(mut command: Command) -> (std::process::ExitStatus, String) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (-1, -1);
    // Mutable, and a mutable null for the terminal settings: macOS's openpty takes both
    // as *mut, Linux's as *const.
    let mut size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty(3) writes two descriptors into the integers given; the size is read.
    let result = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &raw mut size,
        )
    };
    assert_eq!(result, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    command
        .stdin(std::process::Stdio::null())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave);
    let mut child = command.spawn().expect("spawn on a terminal");
    // The command's own copies of the terminal are its only ones now: reading ends (EIO)
    // when it exits.
    drop(command);
    let reader = std::thread::spawn(move || {
        let mut terminal = std::fs::File::from(master);
        let mut output = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            match std::io::Read::read(&mut terminal, &mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => output.extend_from_slice(&buffer[..n]),
            }
        }
        output
    });
    let status = child.wait().unwrap();
    let output = reader.join().unwrap();
    (status, String::from_utf8_lossy(&output).into_owned())
}

/// `run FLAGS -- sh -c SCRIPT`: the arguments of a recording of one shell script.
pub fn run_script<'a>(flags: &[&'a str], script: &'a str) -> Vec<&'a str> {
    let mut args = vec!["run"];
    args.extend_from_slice(flags);
    args.extend(["--", "sh", "-c", script]);
    args
}

/// The fenced block of `language` that follows `heading` in the README.
pub fn readme_example(heading: &str, language: &str) -> String {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find(heading).expect("README section")..];
    let fence = format!("```{language}\n");
    let start = section.find(&fence).expect("README example") + fence.len();
    section[start..][..section[start..].find("```").unwrap()].to_owned()
}

/// Fails the test, showing everything, unless `tc-profile ARGS` exited with `code`;
/// returns its stderr.
pub fn assert_exit_code(args: &[&str], output: &Output, code: i32) -> String {
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        describe(args, output)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// GET `url`: the status, the Access-Control-Allow-Origin header and the body.
pub fn http_get(url: &str) -> (u16, String, Vec<u8>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .get(url)
        .call()
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let origin = response
        .headers()
        .get("access-control-allow-origin")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.body_mut().read_to_vec().unwrap();
    (response.status().as_u16(), origin, body)
}
