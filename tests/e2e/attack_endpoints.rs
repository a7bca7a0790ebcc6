//! Another local user against a task's metric endpoints (issue 31, attack 4): its statsd
//! packets cannot reach the task's socket and its InfluxDB writes without the token are
//! 401, none of it in the profile; the task's own packets and writes are tracks. The
//! attacker and the task's user are uids made up by the test (`setpriv`), so these tests
//! need root: without it they pass with a note.

use crate::util::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};

/// The attacker: a user with no business in the task.
const ATTACKER: u32 = 64_422;
/// The task's own user, in the daemon's test.
const TASK_USER: u32 = 64_421;

/// Python for the attacker, given the socket's path and the endpoint's URL without its
/// token: what each try got, as JSON on stdout.
const ATTACK: &str = r#"
import json, socket, sys, urllib.request, urllib.error
statsd_socket, base = sys.argv[1], sys.argv[2]
got = {}
try:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    client.sendto(b"attack.count:1|c", statsd_socket)
    got["statsd"] = "sent"
except OSError as error:
    got["statsd"] = type(error).__name__
def post(url):
    request = urllib.request.Request(url, data=b"attack v=1", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError as error:
        return type(error).__name__
if base:
    guess = "0" * 32
    got["no token"] = post(base + "/write?db=ci")
    got["guessed path"] = post(base + "/" + guess + "/write?db=ci")
    got["guessed p"] = post(base + "/write?db=ci&u=tc&p=" + guess)
print(json.dumps(got))
"#;

/// The task's side: a packet to its socket and a write with its URL; then it waits for
/// `done`, so that the attacker tries while it runs.
const TASK: &str = r#"
import os, socket, time, urllib.request
socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"own.count:1|c", os.environ["STATSD_SOCKET"])
url = os.environ["TASKCLUSTER_INFLUX_URL"]
request = urllib.request.Request(url + "/write?db=ci", data=b"own v=1", method="POST")
assert urllib.request.urlopen(request, timeout=10).status == 204
base = url.rsplit("/", 1)[0]
with open("endpoints.tmp", "w") as out:
    json = '{"socket": "%s", "base": "%s"}' % (os.environ["STATSD_SOCKET"], base)
    out.write(json)
os.rename("endpoints.tmp", "endpoints")
while not os.path.exists("done"):
    time.sleep(0.02)
"#;

/// Tells the task to end when dropped, so that a failed assertion does not leave it waiting.
struct Done(std::path::PathBuf);

impl Drop for Done {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("note: not root: another user cannot be made, the attack is not tried");
    }
    root
}

/// The system's Python, which every user may run (the test's own may be under /root).
const SYSTEM_PYTHON: &str = "/usr/bin/python3";

/// `setpriv` running `/usr/bin/python3 -c SCRIPT ARGS` as `uid` (its group the same number).
fn python_as(uid: u32, script: &str, args: &[&str]) -> Command {
    let mut command = Command::new("setpriv");
    let id = uid.to_string();
    command
        .args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
        .args([SYSTEM_PYTHON, "-c", script])
        .args(args);
    command
}

/// Runs the attack as [`ATTACKER`]; what each try got.
fn attack(statsd_socket: &Path, base: &str) -> Value {
    let socket = statsd_socket.to_str().unwrap();
    let output = python_as(ATTACKER, ATTACK, &[socket, base])
        .current_dir("/")
        .output()
        .expect("setpriv");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What the profile's series say: no attack among them, the task's own there.
fn assert_only_the_tasks_own(profile: &Value) {
    assert_processed_profile(profile);
    let markers = profile_markers(profile);
    let names: Vec<&str> = markers.iter().map(|m| m.name.as_str()).collect();
    assert!(!names.iter().any(|n| n.contains("attack")), "{names:?}");
    assert!(!names.contains(&"Metrics dropped"), "not even counted");
    let own = markers.iter().find(|m| m.series() == "task.own.count");
    assert_eq!(own.map(|m| m.data["value"].clone()), Some(json!(1.0)));
}

#[test]
fn another_users_packets_and_writes_to_a_runs_endpoints_are_refused() {
    if !is_root() {
        return;
    }
    let sandbox = Sandbox::new();
    // Every directory on the way open to all: only the endpoints' own protection is left.
    std::fs::set_permissions(sandbox.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let python = python().to_str().unwrap();
    let mut run = sandbox
        .command(&["run", "-q", "--", python, "-c", TASK])
        .spawn()
        .unwrap();
    let done = Done(sandbox.path("done"));
    wait_for(|| sandbox.path("endpoints").exists());
    let endpoints = read_json(&sandbox.path("endpoints"));
    let socket = Path::new(endpoints["socket"].as_str().unwrap());
    let mode = std::fs::symlink_metadata(socket)
        .unwrap()
        .permissions()
        .mode();
    let got = attack(socket, endpoints["base"].as_str().unwrap());
    drop(done);
    assert!(run.wait().unwrap().success());
    assert_eq!(
        got,
        json!({"statsd": "PermissionError", "no token": 401, "guessed path": 401, "guessed p": 401})
    );
    assert_eq!(mode & 0o777, 0o600);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_only_the_tasks_own(&profile);
    let own_write = profile_markers(&profile)
        .into_iter()
        .find(|m| m.series() == "task.own.v");
    assert!(
        own_write.is_some(),
        "the task's write with its token is a track"
    );
}

/// One request to the daemon's socket; its reply.
fn request(socket: &Path, request: Value) -> Value {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.write_all(format!("{request}\n").as_bytes()).unwrap();
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply).unwrap();
    serde_json::from_str(&reply).unwrap()
}

#[test]
fn a_daemon_tasks_socket_is_its_users_and_unreachable_to_others() {
    if !is_root() {
        return;
    }
    let sandbox = Sandbox::new();
    std::fs::set_permissions(sandbox.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The task's profile directory, its user's alone (as a worker makes it for the task).
    let profile_dir = sandbox.path("task-profile");
    std::fs::create_dir(&profile_dir).unwrap();
    std::os::unix::fs::chown(&profile_dir, Some(TASK_USER), Some(TASK_USER)).unwrap();
    std::fs::set_permissions(&profile_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let args = [
        "daemon",
        "--state-dir",
        "state",
        "--socket",
        "daemon.sock",
        "--interval",
        "0.1",
        "--ready-file",
        "ready",
    ];
    let mut daemon = sandbox
        .command(&args)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(|| sandbox.path("ready").exists());
    let daemon_socket = sandbox.path("daemon.sock");
    let start = json!({"v": 1, "op": "task-start", "task": "t1", "profileDir": profile_dir});
    let reply = request(&daemon_socket, start);
    let statsd_socket = profile_dir.join("statsd.sock");
    assert_eq!(
        reply["statsdSocket"],
        statsd_socket.to_str().unwrap(),
        "{reply}"
    );
    let status = std::fs::symlink_metadata(&statsd_socket).unwrap();
    assert_eq!((status.uid(), status.mode() & 0o777), (TASK_USER, 0o600));

    let send = r#"import socket, sys
socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"own.count:1|c", sys.argv[1])"#;
    let own = python_as(TASK_USER, send, &[statsd_socket.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(own.success(), "the task's user sends");
    assert_eq!(
        attack(&statsd_socket, ""),
        json!({"statsd": "PermissionError"})
    );

    let output = sandbox.path("t1.json");
    let end = json!({"v": 1, "op": "task-end", "task": "t1", "output": output});
    assert!(request(&daemon_socket, end)["output"].is_string());
    signal(&daemon, libc::SIGTERM);
    assert!(daemon.wait().unwrap().success());
    assert_only_the_tasks_own(&read_json(&output));
}
