use crate::synthetic::{complete_task, cut_off_task};
use crate::util::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Stdio};

const PROFILER: &str = "https://profiler.firefox.com/from-url/";

/// `tc-profile open --no-browser FILE`, and the link it printed.
fn start_open(sandbox: &Sandbox, file: &str) -> (Child, String) {
    let mut child = sandbox
        .command(&["open", "--no-browser", file])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout: BufReader<ChildStdout> = BufReader::new(child.stdout.take().unwrap());
    let mut link = String::new();
    stdout.read_line(&mut link).unwrap();
    (child, link.trim_end().to_owned())
}

/// The URL inside a from-url link, decoded as the profiler decodes it.
fn served_url(link: &str) -> String {
    let encoded = link
        .strip_prefix(PROFILER)
        .unwrap_or_else(|| panic!("not a from-url link: {link:?}"));
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            decoded.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).unwrap()
}

struct Response {
    status: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A plain HTTP/1.1 GET, as the profiler's fetch() sends it.
fn http_get(url: &str) -> Response {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: https://profiler.firefox.com\r\n\
         Accept: */*\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header block");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().to_owned();
    let headers = lines
        .map(|l| {
            let (name, value) = l.split_once(':').unwrap();
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    Response {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

fn wait_for_exit(child: &mut Child) -> std::process::ExitStatus {
    let mut status = None;
    wait_for(|| {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

/// Fetches what `open FILE` serves, checks what the profiler needs of the answer, and
/// returns the profile; `open` must then stop by itself.
fn fetch_served_profile(sandbox: &Sandbox, file: &str) -> Value {
    let (mut child, link) = start_open(sandbox, file);
    let url = served_url(&link);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let stray = http_get(&format!("{}/favicon.ico", url.rsplit_once('/').unwrap().0));
    assert!(stray.status.contains(" 404 "), "{}", stray.status);

    let response = http_get(&url);
    assert!(
        response.status.starts_with("HTTP/1.1 200"),
        "{}",
        response.status
    );
    assert_eq!(response.header("Access-Control-Allow-Origin"), Some("*"));
    assert_eq!(
        response.header("Content-Length"),
        Some(response.body.len().to_string().as_str())
    );
    let status = wait_for_exit(&mut child);
    assert!(status.success(), "open stops once the profile is fetched");
    let profile = serde_json::from_slice(&response.body).expect("the body is JSON");
    assert_processed_profile(&profile);
    profile
}

#[test]
fn open_serves_a_log_finalized_in_memory_with_cors_and_stops_after_the_fetch() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task()).unwrap();
    let profile = fetch_served_profile(&sandbox, "task.jsonl");
    let markers = profile_markers(&profile);
    assert_eq!(count_named(&markers, "CPU Use"), 72);
    assert!(
        sandbox.path("task.jsonl").exists(),
        "the log is left as it is"
    );
}

#[test]
fn open_serves_a_torn_log_as_a_profile_that_opens() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("torn.jsonl"), cut_off_task(40)).unwrap();
    let profile = fetch_served_profile(&sandbox, "torn.jsonl");
    let markers = profile_markers(&profile);
    assert_eq!(count_named(&markers, "CPU Use"), 40);
    assert_eq!(count_named(&markers, "Recording ended early"), 1);
    assert_eq!(count_named(&markers, "Log damage"), 1);
}

#[test]
fn open_serves_a_compressed_profile_decompressed() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("task.jsonl"), complete_task()).unwrap();
    sandbox.run_ok(&["finalize", "task.jsonl", "-o", "task.json.zst"]);
    let profile = fetch_served_profile(&sandbox, "task.json.zst");
    assert_eq!(count_named(&profile_markers(&profile), "Command"), 1);
}

#[test]
fn open_of_something_else_fails_in_one_line() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("notes.txt"), "not a profile\n").unwrap();
    let output = sandbox.run(&["open", "--no-browser", "notes.txt"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr
            .starts_with("tc-profile: error: notes.txt is neither a tc-profile log nor a profile"),
        "{stderr}"
    );
}
