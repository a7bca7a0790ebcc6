//! Unit tests of a whole recording, through [`Recorder`].

use super::*;
use crate::profile_dir::now_epoch_ms;
use std::time::{Duration, Instant};
use tc_profile_format::EndReason;

/// A recording's log in `dir` and its configuration with only the profile-directory source
/// (`dir/markers`), that source's configuration apart.
fn markers_only(dir: &Path) -> (PathBuf, RecorderConfig, ProfileDirConfig) {
    let log = dir.join("log.jsonl");
    let mut config = RecorderConfig::new(log.clone());
    config.sample_system = false;
    config.statsd = None;
    (log, config, ProfileDirConfig::new(dir.join("markers")))
}

/// Records with only the profile-directory source, inotify on or off.
fn record_markers(watch: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (log, mut config, mut profile_dir) = markers_only(dir.path());
    profile_dir.watch = watch;
    profile_dir.poll_interval = Duration::from_millis(20);
    config.profile_dir = Some(profile_dir);
    let recorder = Recorder::start(config).unwrap();
    let line = format!(
        "{{\"type\":\"marker\",\"name\":\"seen\",\"startTime\":{}}}\n",
        now_epoch_ms()
    );
    std::fs::write(dir.path().join("markers/1.jsonl"), line).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let logged = || std::fs::read_to_string(&log).unwrap().contains("\"seen\"");
    while !logged() {
        assert!(
            Instant::now() < deadline,
            "the marker never reached the log"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(recorder.finish(EndReason::Stopped).unwrap());
    // A scan may find the file before its line (created, not yet written): a batch of
    // its own, without lines.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let marker = lines
        .iter()
        .position(|l| l.contains("\"name\":\"seen\""))
        .unwrap();
    let is_bound = |l: &&&str| {
        l.starts_with("{\"type\":\"ingest\"") || l.starts_with("{\"type\":\"checkpoint\"")
    };
    let before = lines[..marker].iter().rev().find(is_bound);
    let after = lines[marker + 1..].iter().find(is_bound);
    assert!(
        before.is_some_and(|l| l.contains("ingest"))
            && after.is_some_and(|l| l.contains("checkpoint")),
        "inside its batch:\n{text}"
    );
}

#[test]
fn markers_arrive_through_inotify() {
    record_markers(true);
}

#[test]
fn markers_arrive_by_polling_where_inotify_is_not_used() {
    record_markers(false);
}

#[test]
fn a_metric_prefix_that_could_name_a_recorder_track_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    for prefix in ["", "Memory", "CPU Use."] {
        let mut config = RecorderConfig::new(log.clone());
        config.sample_system = false;
        config.statsd = Some(MetricLimits {
            prefix: prefix.to_owned(),
            ..MetricLimits::default()
        });
        let refused = Recorder::start(config);
        assert!(
            matches!(refused, Err(RecorderError::MetricPrefix(ref p)) if p == prefix),
            "{prefix:?}"
        );
        assert!(!log.exists(), "no log is created");
    }
}

/// Pings the InfluxDB endpoint over connections held open at once (which start more
/// handlers), then finishes: the stop must wake every handler blocked in accept.
fn ping_the_endpoint_then_finish(statsd: bool) {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut config = RecorderConfig::new(dir.path().join("log.jsonl"));
    config.sample_system = false;
    config.influx = true;
    if !statsd {
        config.statsd = None;
    }
    let recorder = Recorder::start(config).unwrap();
    let url = recorder.influx_url().unwrap();
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let address: SocketAddr = authority.parse().unwrap();
    let mut held: Vec<_> = (0..3)
        .map(|_| std::net::TcpStream::connect(address).unwrap())
        .collect();
    for stream in &mut held {
        // An endpoint that nothing serves fails the test rather than hanging it.
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream
            .write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = [0; 12];
        stream.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"HTTP/1.1 204");
    }
    drop(held);
    let (done, finished) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || done.send(recorder.finish(EndReason::Stopped).is_ok()));
    let finished = finished.recv_timeout(Duration::from_secs(20));
    assert_eq!(finished, Ok(true), "finish returned, the handlers joined");
    assert!(
        std::net::TcpStream::connect(address).is_err(),
        "the endpoint is closed"
    );
}

/// The statsd listener's thread starts the endpoint's first handler at its first connection.
#[test]
fn the_influx_endpoint_serves_from_its_first_connection_and_stops_with_statsd_on() {
    ping_the_endpoint_then_finish(true);
}

/// Without statsd, no thread watches the endpoint: its first handler starts with it.
#[test]
fn the_influx_endpoint_serves_from_its_first_connection_and_stops_with_statsd_off() {
    ping_the_endpoint_then_finish(false);
}

#[test]
fn a_sample_asked_for_is_in_the_log_before_the_next_tick_is_due() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let mut config = RecorderConfig::new(log.clone());
    config.interval = Duration::from_secs(600);
    config.statsd = None;
    let recorder = Recorder::start(config).unwrap();
    let memory_samples = || {
        let text = std::fs::read_to_string(&log).unwrap();
        text.matches("\"name\":\"Memory\"").count()
    };
    let wait = Duration::from_secs(20);
    let asked = Instant::now();
    // The first tick, at start, writes no sample: it has no interval behind it.
    assert!(recorder.sample_now().wait(wait));
    let before = memory_samples();
    assert!(recorder.sample_now().wait(wait));
    assert_eq!(memory_samples(), before + 1);
    // Asked for together: one tick, or two when the first had already begun.
    let (first, second) = (recorder.sample_now(), recorder.sample_now());
    assert!(first.wait(wait) && second.wait(wait));
    assert!((before + 2..=before + 3).contains(&memory_samples()));
    assert!(
        asked.elapsed() < wait,
        "a tick due in 10 minutes waited for"
    );
    drop(recorder.finish(EndReason::Stopped).unwrap());
}

// inotify's: elsewhere the poll interval makes the batches.
#[cfg(target_os = "linux")]
#[test]
fn markers_written_one_at_a_time_come_a_batch_a_scan_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (log, mut config, mut profile_dir) = markers_only(dir.path());
    profile_dir.scan_gap = Duration::from_secs(600);
    config.profile_dir = Some(profile_dir);
    let recorder = Recorder::start(config).unwrap();
    let file = dir.path().join("markers/1.jsonl");
    for n in 0..20 {
        let line = format!(
            "{{\"type\":\"marker\",\"name\":\"m{n}\",\"startTime\":{}}}\n",
            now_epoch_ms()
        );
        append(&file, &line);
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(recorder.finish(EndReason::Stopped).unwrap());
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("\"name\":\"m").count(), 20);
    // The first write's scan, and the stop's; a scan a write at the default gap.
    let batches = text.matches("{\"type\":\"checkpoint\"").count();
    assert!(batches <= 2, "{batches} batches:\n{text}");
}

fn append(path: &std::path::Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(line.as_bytes()).unwrap();
}

/// Set, to the profile directory, in the environment of the test binary run again as the
/// command of [`a_busy_command_that_allocates_is_on_the_tracks_with_its_markers`].
const BUSY_COMMAND_VARIABLE: &str = "TC_PROFILE_TEST_BUSY_COMMAND";

/// The command of [`a_busy_command_that_allocates_is_on_the_tracks_with_its_markers`]:
/// nothing unless it started this. Writes a marker, takes 200 MB (written, so resident),
/// busy-loops 1.5 s, writes another.
#[test]
fn busy_command() {
    let Some(dir) = std::env::var_os(BUSY_COMMAND_VARIABLE) else {
        return;
    };
    let markers = Path::new(&dir).join(format!("{}.jsonl", std::process::id()));
    let line = |name: &str| {
        format!(
            "{{\"type\":\"marker\",\"name\":\"{name}\",\"startTime\":{}}}\n",
            now_epoch_ms()
        )
    };
    append(&markers, &line("allocating"));
    let memory = std::hint::black_box(vec![1u8; 200 << 20]);
    let until = Instant::now() + Duration::from_millis(1500);
    let mut spins = 0u64;
    while Instant::now() < until {
        spins = std::hint::black_box(spins + 1);
    }
    append(&markers, &line("done"));
    drop(memory);
}

/// What `run` of a busy command records, on each OS with sources: the machine's CPU and
/// memory, the task's CPU and its 200 MB, and the markers it wrote.
#[cfg(any(target_os = "linux", windows))]
#[test]
fn a_busy_command_that_allocates_is_on_the_tracks_with_its_markers() {
    let dir = tempfile::tempdir().unwrap();
    let (log, mut config, mut profile_dir) = markers_only(dir.path());
    config.sample_system = true;
    config.influx = false;
    config.follow = Some(Follow::Children);
    profile_dir.poll_interval = Duration::from_millis(20);
    config.profile_dir = Some(profile_dir);
    let recorder = Recorder::start(config).unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tests::busy_command"])
        .env(BUSY_COMMAND_VARIABLE, dir.path().join("markers"))
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    drop(recorder.finish(EndReason::Stopped).unwrap());
    let text = std::fs::read_to_string(&log).unwrap();
    let markers: Vec<tc_profile_format::Marker> = text
        .lines()
        .filter_map(
            |line| match tc_profile_format::decode_line(line.as_bytes()) {
                Ok(Line::Marker(marker)) => Some(marker),
                _ => None,
            },
        )
        .collect();
    let largest = |track: &str, key: &str| {
        let values = markers.iter().filter(|m| m.name == track);
        let values = values.filter_map(|m| m.data.as_ref()?.get(key)?.as_f64());
        values.fold(None, |most: Option<f64>, v| {
            Some(most.map_or(v, |m| m.max(v)))
        })
    };
    let cpu = largest("CPU Use", "cpuPercent").expect("a CPU track");
    let used = largest("Memory", "used").expect("a Memory track");
    let task_cpu = largest("Task CPU", "cpu").expect("a Task CPU track");
    let task_memory = largest("Task Memory", "rss").expect("a Task Memory track");
    assert!(
        cpu > 0.0 && task_cpu > 0.0,
        "CPU {cpu}, the task's {task_cpu}"
    );
    assert!(
        task_memory >= (200 << 20) as f64,
        "the task's memory {task_memory}"
    );
    assert!(used >= task_memory, "used {used}");
    for name in ["allocating", "done"] {
        assert!(markers.iter().any(|m| m.name == name), "{name}");
    }
    // The front-end graphs a sample only with every graph key of its schema.
    let cpu_samples = markers.iter().filter(|m| m.name == "CPU Use");
    for data in cpu_samples.filter_map(|m| m.data.as_ref()) {
        for key in ["nice", "user", "system", "iowait", "softirq", "steal"] {
            assert!(data.get(key).is_some_and(|v| v.is_f64()), "{key} in {data}");
        }
    }
    eprintln!("CPU at most {cpu}, the task's {task_cpu}; the task's memory {task_memory} B");
}
