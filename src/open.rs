//! `tc-profile open`: serves a profile on 127.0.0.1 for the Firefox Profiler to fetch, as
//! Mozilla's `mach resource-usage` does, and points a browser at the profiler's from-url
//! link. A log is finalized in memory first, so that a torn one opens too.

use crate::cli::OpenArgs;
use crate::progress::Reading;
use anyhow::{Context, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tc_profile_finalizer::read_input;

const PROFILER: &str = "https://profiler.firefox.com/from-url/";
/// The longest request head read; the profiler's is well under 2 KiB.
const HEAD_MAX: u64 = 16 << 10;
/// A client that says nothing for this long is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

pub fn open(args: OpenArgs) -> Result<u8> {
    let reading = Reading::start(&args.input, "finalizing in memory");
    let caps = args.input_caps.caps();
    let body = read_input(&args.input, caps, reading.callback().as_deref())?
        .into_profile_json(&args.input)?;
    drop(reading);

    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("cannot listen on 127.0.0.1; is the loopback interface up?")?;
    let address = listener.local_addr()?;
    let path = format!("/{}", served_name(&args.input));
    let url = format!("http://{address}{path}");
    let link = format!("{PROFILER}{}", encode_uri_component(&url));
    println!("{link}");
    eprintln!(
        "tc-profile: serving {} at {url} until the profiler has fetched it (Ctrl-C stops)",
        args.input.display()
    );
    if !args.no_browser {
        open_browser(&link);
    }
    serve_until_fetched(listener, address, &path, Arc::new(body));
    eprintln!("tc-profile: the profiler has fetched the profile");
    Ok(0)
}

/// The file name the profile is served under: the input's, as `.json`, in characters that
/// need no escaping in a URL path.
fn served_name(input: &Path) -> String {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name
        .trim_end_matches(".gz")
        .trim_end_matches(".zst")
        .trim_end_matches(".jsonl")
        .trim_end_matches(".json");
    let name: String = name
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    format!("{}.json", if name.is_empty() { "profile" } else { &name })
}

/// JavaScript's encodeURIComponent, which the profiler reverses.
fn encode_uri_component(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => encoded.push(byte as char),
            b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')' => {
                encoded.push(byte as char)
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

/// $BROWSER (a list separated by ':'), else the desktop's opener where there is a desktop.
fn open_browser(link: &str) {
    let mut candidates: Vec<String> = std::env::var("BROWSER")
        .map(|list| list.split(':').map(str::to_owned).collect())
        .unwrap_or_default();
    if cfg!(target_os = "macos") {
        candidates.push("open".to_owned());
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        candidates.push("xdg-open".to_owned());
    }
    let started = candidates.iter().filter(|c| !c.is_empty()).any(|browser| {
        Command::new(browser)
            .arg(link)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .is_ok()
    });
    if !started {
        eprintln!("tc-profile: no browser found; open the link above in one");
    }
}

/// Serves each connection on its own thread until one has received the whole profile.
fn serve_until_fetched(listener: TcpListener, address: SocketAddr, path: &str, body: Arc<Vec<u8>>) {
    let fetched = Arc::new(AtomicBool::new(false));
    for stream in listener.incoming() {
        if fetched.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let (path, body, fetched) = (path.to_owned(), Arc::clone(&body), Arc::clone(&fetched));
        let spawned = std::thread::Builder::new()
            .name("tc-profile-http".to_owned())
            .spawn(move || {
                if respond(stream, &path, &body).unwrap_or(false) {
                    fetched.store(true, Ordering::SeqCst);
                    // Wakes the accept loop, which then sees `fetched`.
                    let _ = TcpStream::connect(address);
                }
            });
        if spawned.is_err() {
            eprintln!("tc-profile: warning: cannot start a thread for a connection");
        }
    }
}

/// Answers one request; true when it was a GET of the profile whose body went out whole.
fn respond(stream: TcpStream, path: &str, body: &[u8]) -> std::io::Result<bool> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new((&stream).take(HEAD_MAX));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The rest of the head: nothing in it changes the answer.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut words = request_line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let target = target.split('?').next().unwrap_or("");
    let mut out = &stream;
    let (status, content): (&str, &[u8]) = match (method, target == path) {
        ("OPTIONS", _) => ("204 No Content", b""),
        ("GET" | "HEAD", true) => ("200 OK", body),
        ("GET" | "HEAD", false) => ("404 Not Found", b"not found\n"),
        _ => ("405 Method Not Allowed", b"GET only\n"),
    };
    let content_type = if target == path {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n\
         Access-Control-Allow-Headers: *\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        content.len()
    )?;
    if method != "HEAD" {
        out.write_all(content)?;
    }
    out.flush()?;
    Ok(method == "GET" && target == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_encode_the_url_as_the_profiler_decodes_it() {
        assert_eq!(
            encode_uri_component("http://127.0.0.1:8000/a b.json"),
            "http%3A%2F%2F127.0.0.1%3A8000%2Fa%20b.json"
        );
    }

    #[test]
    fn served_names_are_plain_json_names() {
        let name = |input: &str| served_name(Path::new(input));
        assert_eq!(name("dir/profile_x.jsonl"), "profile_x.json");
        assert_eq!(name("p.json.gz"), "p.json");
        assert_eq!(name("p.jsonl.zst"), "p.json");
        assert_eq!(name("my profile?.json"), "my_profile_.json");
    }
}
