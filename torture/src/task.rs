//! The task's own marker load: processes that append numbered lines to marker files in
//! `$TASKCLUSTER_PROFILE_DIR` until killed. Writer processes append instants, complete
//! intervals and begin/end pairs (by name, nested, and by id) with one write per line; a
//! shell does the same through `tc-profile mark`, `begin` and `end`. Every line but an `end`
//! carries a text unique in the recording, `PID#N`, that the suite finds in the profile.

use crate::random::Random;
use anyhow::{Context, Result};
use serde_json::{json, Map, Value};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tc_profile_format::marker_file::{Begin, End, FileLine, FileMarker};

/// Names of the writer processes' markers.
pub const FILE_INSTANT: &str = "file instant";
pub const FILE_INTERVAL: &str = "file interval";
/// Begun and ended by name in one file, nested two deep.
pub const FILE_SPAN: &str = "file span";
/// Begun and ended by id.
pub const FILE_SPAN_BY_ID: &str = "file span by id";
/// Begun first and never ended: cut off at the kill, whatever batch took it.
pub const FILE_PHASE: &str = "file phase";
/// Names of the shell's markers, through `tc-profile mark|begin|end`.
pub const HELPER_INSTANT: &str = "helper instant";
pub const HELPER_SPAN: &str = "helper span";

/// Writer processes per recording.
const WRITERS: usize = 3;
const DIR_VARIABLE: &str = "TASKCLUSTER_PROFILE_DIR";

/// The shell's loop: a begin/end pair around an instant, numbered as the writers number.
const HELPER_LOOP: &str = r#"i=0
while :; do
    "$0" mark "helper instant" --text "$$#$i"
    "$0" begin "helper span" --text "$$#$((i + 1))"
    "$0" mark "helper instant" --text "$$#$((i + 2))"
    "$0" end "helper span"
    i=$((i + 3))
done"#;

#[derive(clap::Args)]
pub struct TaskArgs {
    /// The tc-profile binary, for its mark, begin and end helpers.
    #[arg(long, value_name = "PATH")]
    helper: PathBuf,
}

/// The task of a `tc-profile run`: starts the writers in the profile directory it was given
/// and waits until killed.
pub fn run(args: TaskArgs) -> Result<()> {
    let dir = std::env::var_os(DIR_VARIABLE).context("TASKCLUSTER_PROFILE_DIR is not set")?;
    let mut writers = spawn_writers(Path::new(&dir), &args.helper)?;
    for writer in &mut writers {
        writer.wait()?;
    }
    Ok(())
}

/// Starts the writer processes and the shell, in the caller's process group.
pub fn spawn_writers(dir: &Path, helper: &Path) -> Result<Vec<Child>> {
    let this = std::env::current_exe()?;
    let mut commands: Vec<Command> = (0..WRITERS)
        .map(|_| {
            let mut command = Command::new(&this);
            command.arg("marker-writer");
            command
        })
        .collect();
    let mut shell = Command::new("sh");
    shell.args(["-c", HELPER_LOOP]).arg(helper);
    commands.push(shell);
    commands
        .iter_mut()
        .map(|command| {
            command
                .env(DIR_VARIABLE, dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("spawning a marker writer")
        })
        .collect()
}

/// One writer process: appends to `<pid>.jsonl` until killed.
pub fn write_markers() -> Result<()> {
    let dir = std::env::var_os(DIR_VARIABLE).context("TASKCLUSTER_PROFILE_DIR is not set")?;
    let pid = std::process::id();
    let path = Path::new(&dir).join(format!("{pid}.jsonl"));
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .with_context(|| format!("{}: cannot create the marker file", path.display()))?;
    let mut random = Random::new(u64::from(pid) * 0x9e37_79b9_7f4a_7c15);
    let text = |n: u64| Some(text_data(&format!("{pid}#{n}")));
    let phase = FileLine::Begin(Begin {
        name: FILE_PHASE.into(),
        id: None,
        time: now_epoch_ms(),
        category: None,
        data: Some(text_data(&format!("{pid}#phase"))),
    });
    append(&mut file, &phase)?;
    for n in 0.. {
        let now = now_epoch_ms();
        let by_id = format!("{pid}-{}", n - n % 8);
        // A span, a span nested in it, and a span by id that overlaps the first's end.
        let line = match n % 8 {
            0 | 2 => begin(FILE_SPAN, None, now, text(n)),
            5 => begin(FILE_SPAN_BY_ID, Some(by_id), now, text(n)),
            4 | 6 => end(FILE_SPAN, None, now),
            7 => end(FILE_SPAN_BY_ID, Some(by_id), now),
            3 => marker(FILE_INTERVAL, now - 0.5, Some(now), text(n)),
            _ => marker(FILE_INSTANT, now, None, text(n)),
        };
        append(&mut file, &line)?;
        std::thread::sleep(Duration::from_micros(100 + random.below(500)));
    }
    unreachable!("the loop above ends only when the process is killed")
}

fn begin(name: &str, id: Option<String>, time: f64, data: Option<Map<String, Value>>) -> FileLine {
    FileLine::Begin(Begin {
        name: name.into(),
        id,
        time,
        category: None,
        data,
    })
}

fn end(name: &str, id: Option<String>, time: f64) -> FileLine {
    FileLine::End(End {
        name: name.into(),
        id,
        time,
        data: None,
    })
}

fn marker(
    name: &str,
    start_time: f64,
    end_time: Option<f64>,
    data: Option<Map<String, Value>>,
) -> FileLine {
    FileLine::Marker(FileMarker {
        name: name.into(),
        start_time,
        end_time,
        category: None,
        data,
    })
}

/// The line with its newline, in one write, as SPEC.md asks of every writer.
fn append(file: &mut std::fs::File, line: &FileLine) -> Result<()> {
    let mut bytes = serde_json::to_vec(line)?;
    bytes.push(b'\n');
    file.write_all(&bytes)?;
    Ok(())
}

fn text_data(text: &str) -> Map<String, Value> {
    match json!({"type": "Text", "text": text}) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn now_epoch_ms() -> f64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    since.as_micros() as f64 / 1000.0
}
