//! The daemon's live HTTP server attacked as any local user (or anything reaching the
//! loopback) would: no profile without its token, 16 concurrent requests for a large task's
//! profile cost one build's memory, slow clients starve no one, a second Content-Length is
//! refused at once. Over TCP a client's user makes no difference: the test's own clients
//! are the attacker's.

use crate::daemon::Daemon;
use crate::util::{
    assert_processed_profile, count_named, http_get as get, profile_markers, Sandbox,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// A daemon with --http, and a task started on it: the task's live URL (its base), and
/// the server's.
fn daemon_with_task(sandbox: &Sandbox, task: &str) -> (Daemon, String, String) {
    let daemon = Daemon::start_with(sandbox, &["--http", "0"], &[]);
    let ready = std::fs::read_to_string(sandbox.path("ready")).unwrap();
    let base = ready.lines().nth(1).expect("the base URL").to_owned();
    let live = start_task(sandbox, task);
    (daemon, base, live)
}

/// `task start TASK`: its live base URL, as printed on stderr.
fn start_task(sandbox: &Sandbox, task: &str) -> String {
    let output = sandbox.run_ok(&["task", "start", task, "--socket", "daemon.sock"]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    stderr
        .trim_end()
        .strip_prefix("tc-profile: live profile at ")
        .and_then(|url| url.strip_suffix("/profile.json"))
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_owned()
}

/// The daemon's peak resident memory so far, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap()
}

/// Appends about `bytes` of marker lines to the task's log, as its recorder writes them
/// (whole lines, appended): a large task without waiting for one to record them.
fn grow_task_log(log: &Path, bytes: usize) -> usize {
    let mut file = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    let pad = "x".repeat(100);
    let (mut written, mut lines) = (0, 0);
    while written < bytes {
        let mut block = String::new();
        for i in lines..lines + 5000 {
            let time = i % 100_000;
            block.push_str(&format!(
                "{{\"type\":\"marker\",\"name\":\"bulk\",\"startTime\":{time}.5,\"endTime\":{time}.75,\
                 \"category\":2,\"data\":{{\"type\":\"Text\",\"text\":\"line {i} {pad}\"}}}}\n"
            ));
        }
        file.write_all(block.as_bytes()).unwrap();
        written += block.len();
        lines += 5000;
    }
    lines
}

/// GETs `url` and reads its body as it comes: its status, length, a checksum, and the
/// body itself when `keep`.
fn get_streamed(url: &str, keep: bool) -> (u16, usize, u64, Vec<u8>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent.get(url).call().unwrap();
    let status = response.status().as_u16();
    let mut reader = response.body_mut().with_config().limit(u64::MAX).reader();
    let (mut length, mut sum, mut kept) = (0, 0u64, Vec::new());
    let mut chunk = vec![0; 1 << 16];
    loop {
        let read = reader.read(&mut chunk).unwrap();
        if read == 0 {
            break;
        }
        for &byte in &chunk[..read] {
            sum = sum.rotate_left(5) ^ u64::from(byte);
        }
        length += read;
        if keep {
            kept.extend_from_slice(&chunk[..read]);
        }
    }
    (status, length, sum, kept)
}

#[test]
fn sixteen_concurrent_live_profiles_of_a_large_task_cost_one_builds_memory() {
    let sandbox = Sandbox::new();
    let (daemon, _, live) = daemon_with_task(&sandbox, "large");
    let lines = grow_task_log(&sandbox.path("state/tasks/large-0-1.jsonl"), 100 << 20);
    let pid = daemon.child.id();
    let url = format!("{live}/profile.json");

    let before = peak_rss_kib(pid);
    let (status, one_length, _, _) = get_streamed(&url, false);
    assert_eq!(status, 200);
    let one = peak_rss_kib(pid) - before;

    let start = Barrier::new(16);
    let answers: Vec<_> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..16)
            .map(|n| {
                let (start, url) = (&start, &url);
                scope.spawn(move || {
                    start.wait();
                    get_streamed(url, n == 0)
                })
            })
            .collect();
        readers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let sixteen = peak_rss_kib(pid) - before;
    eprintln!(
        "daemon's peak RSS: +{one} KiB for one request ({one_length} bytes), +{sixteen} KiB with 16"
    );
    // One build, shared: the same bytes for every request.
    for (status, length, sum, _) in &answers {
        assert_eq!((*status, *length, *sum), (200, answers[0].1, answers[0].2));
    }
    assert!(
        sixteen <= 2 * one,
        "16 requests took +{sixteen} KiB, one +{one} KiB"
    );
    let profile: serde_json::Value = serde_json::from_slice(&answers[0].3).unwrap();
    assert_processed_profile(&profile);
    assert_eq!(count_named(&profile_markers(&profile), "bulk"), lines);
    daemon.stop();
}

#[test]
fn without_its_token_no_profile_log_or_worker_profile_is_served() {
    let sandbox = Sandbox::new();
    let (daemon, base, live) = daemon_with_task(&sandbox, "secret");
    let token = live.rsplit('/').next().unwrap();
    let worker_token = std::fs::read_to_string(sandbox.path("state/http-token")).unwrap();
    let wrong = "0".repeat(token.len());
    let (status, _, unknown_task) = get(&format!("{base}/tasks/nosuch/{wrong}/profile.json"));
    assert_eq!(status, 404);
    let (status, _, unknown_path) = get(&format!("{base}/nosuch"));
    assert_eq!(status, 404);
    for file in ["profile.json", "log.jsonl"] {
        assert_eq!(get(&format!("{live}/{file}")).0, 200, "{file}");
        let (status, _, body) = get(&format!("{base}/tasks/secret/{wrong}/{file}"));
        assert_eq!(status, 404, "{file}");
        // Told apart from a task that is not open by nothing but its name.
        let as_unknown = String::from_utf8_lossy(&unknown_task).replace("nosuch", "secret");
        assert_eq!(String::from_utf8_lossy(&body), as_unknown, "{file}");
        for missing in [
            format!("{base}/tasks/secret/{file}"),
            format!("{base}/tasks/secret//{file}"),
            format!("{base}/tasks/secret/{}/{file}", &token[..token.len() - 1]),
            format!("{base}/tasks/secret/{worker_token}/{file}"),
            format!("{base}/{token}/{file}"),
        ] {
            assert_eq!(get(&missing).0, 404, "{missing}");
        }
    }
    let (status, _, worker) = get(&format!("{base}/worker/{worker_token}/profile.json"));
    assert_eq!(status, 200);
    assert_processed_profile(&serde_json::from_slice(&worker).unwrap());
    for wrong in [
        format!("{base}/worker/profile.json"),
        format!("{base}/worker/{wrong}/profile.json"),
        format!("{base}/worker/{token}/profile.json"),
    ] {
        let (status, _, body) = get(&wrong);
        assert_eq!((status, &body), (404, &unknown_path), "{wrong}");
    }
    let worker_mode = std::fs::metadata(sandbox.path("state/http-token")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&worker_mode.permissions()) & 0o777,
        0o600
    );
    daemon.stop();
}

#[test]
fn a_worker_profile_over_a_day_is_refused_naming_the_limit() {
    let sandbox = Sandbox::new();
    let (daemon, base, _) = daemon_with_task(&sandbox, "t");
    let worker_token = std::fs::read_to_string(sandbox.path("state/http-token")).unwrap();
    let (status, _, body) = get(&format!(
        "{base}/worker/{worker_token}/profile.json?since=0"
    ));
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 400, "{error}");
    let text = error["error"].as_str().unwrap();
    assert!(
        text.contains("86400 s") && text.contains("--http-max-span"),
        "{text}"
    );
    daemon.stop();
}

/// A client that sends a request head a byte at a time, never finishing it, and
/// reconnects whenever the server closes it; how long the server held each connection
/// at most.
fn slow_client(address: &str, stop: &AtomicBool, connected: &AtomicUsize) -> Duration {
    let mut longest = Duration::ZERO;
    let mut counted = false;
    while !stop.load(Ordering::Acquire) {
        let Ok(mut stream) = TcpStream::connect(address) else {
            continue;
        };
        if !counted {
            connected.fetch_add(1, Ordering::AcqRel);
            counted = true;
        }
        let opened = Instant::now();
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        // A path that never ends: the head is never whole, nor wrong.
        let head = b"GET /tasks/".iter().chain(std::iter::repeat(&b'a'));
        for byte in head {
            if stop.load(Ordering::Acquire) || stream.write_all(&[*byte]).is_err() {
                break;
            }
            // Closed by the server: the read sees its end (or a reset).
            match stream.read(&mut [0; 64]) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
        if !stop.load(Ordering::Acquire) {
            longest = longest.max(opened.elapsed());
        }
    }
    longest
}

#[test]
fn twenty_slow_clients_starve_no_one() {
    let sandbox = Sandbox::new();
    let (daemon, base, live) = daemon_with_task(&sandbox, "starved");
    let address = base.trim_start_matches("http://").to_owned();
    let stop = AtomicBool::new(false);
    let connected = AtomicUsize::new(0);
    let (mut took, held) = std::thread::scope(|scope| {
        let slow: Vec<_> = (0..20)
            .map(|_| scope.spawn(|| slow_client(&address, &stop, &connected)))
            .collect();
        crate::util::wait_for(|| connected.load(Ordering::Acquire) == 20);
        let mut took = Vec::new();
        // Spread over more than the slow clients' deadline, so that some requests come as
        // they reconnect.
        for _ in 0..7 {
            std::thread::sleep(Duration::from_secs(1));
            let started = Instant::now();
            let (status, _, body) = get(&format!("{live}/profile.json"));
            took.push(started.elapsed());
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
            assert_processed_profile(&serde_json::from_slice(&body).unwrap());
        }
        stop.store(true, Ordering::Release);
        let held: Vec<_> = slow.into_iter().map(|s| s.join().unwrap()).collect();
        (took, held)
    });
    took.sort();
    eprintln!("answers took {took:?}; slow clients held at most {held:?}");
    // The one timed assertion, as the issue asks: a legitimate client is answered within
    // 1 s (the median of seven, against a noisy machine).
    assert!(took[took.len() / 2] < Duration::from_secs(1), "{took:?}");
    // Each slow client was dropped at the head's deadline (5 s in all), not held for ever
    // by a byte every 200 ms.
    let longest = held.into_iter().max().unwrap();
    assert!(longest < Duration::from_secs(9), "held {longest:?}");
    daemon.stop();
}

#[test]
fn a_second_content_length_is_refused_at_once() {
    let sandbox = Sandbox::new();
    let (daemon, base, live) = daemon_with_task(&sandbox, "t");
    let address = base.trim_start_matches("http://");
    let path = live.trim_start_matches(&base);
    for lengths in [
        "Content-Length: 0\r\nContent-Length: 5",
        "Content-Length: 5x",
    ] {
        let mut stream = TcpStream::connect(address).unwrap();
        // Generous: a hang would be the request deadline, 10 s.
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let head = format!("GET {path}/profile.json HTTP/1.1\r\nHost: x\r\n{lengths}\r\n\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400 "), "{lengths}: {answer}");
        assert!(answer.contains("Content-Length"), "{answer}");
    }
    daemon.stop();
}
