//! `tc-profile mark|begin|end`: helpers that append one marker-file line to
//! `$TASKCLUSTER_PROFILE_DIR/<PPID>.jsonl`. PPID is the calling process (the shell running
//! a script), so that one script's begin and end land in one file and match by name.

use crate::cli::{BeginArgs, EndArgs, MarkArgs};
use crate::os;
use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};
use tc_profile_format::marker_file::{decode_file_line, Begin, End, FileLine, FileMarker, Limits};
use tc_profile_format::schema::data_type;

const DIR_VARIABLE: &str = "TASKCLUSTER_PROFILE_DIR";

pub fn mark(args: MarkArgs) -> Result<u8> {
    append(&FileLine::Marker(FileMarker {
        name: args.name,
        start_time: now_epoch_ms(),
        end_time: None,
        category: Some(args.details.category.into()),
        data: text_data(args.details.text),
    }))
}

pub fn begin(args: BeginArgs) -> Result<u8> {
    append(&FileLine::Begin(Begin {
        name: args.name,
        id: args.id,
        time: now_epoch_ms(),
        category: Some(args.details.category.into()),
        data: text_data(args.details.text),
    }))
}

pub fn end(args: EndArgs) -> Result<u8> {
    append(&FileLine::End(End {
        name: args.name,
        id: args.id,
        time: now_epoch_ms(),
        data: text_data(args.text),
    }))
}

fn text_data(text: Option<String>) -> Option<Map<String, Value>> {
    match json!({"type": data_type::TEXT, "text": text?}) {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// Appends the line with one write; refuses what the recorder would drop.
fn append(line: &FileLine) -> Result<u8> {
    let dir = std::env::var_os(DIR_VARIABLE)
        .filter(|dir| !dir.is_empty())
        .with_context(|| {
            format!(
                "{DIR_VARIABLE} is not set: run this under `tc-profile run`, or export the \
                 directory that `tc-profile record` printed"
            )
        })?;
    let mut bytes = serde_json::to_vec(line)?;
    if let Err(problem) = decode_file_line(&bytes, &Limits::default()) {
        bail!("the marker would be dropped: {}", problem.describe());
    }
    bytes.push(b'\n');
    let path = PathBuf::from(dir).join(format!("{}.jsonl", os::parent_pid()));
    os::open_marker_file(&path)
        .and_then(|mut file| file.write_all(&bytes))
        .with_context(|| format!("{}: cannot append the marker", path.display()))?;
    Ok(0)
}

fn now_epoch_ms() -> f64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    since.as_micros() as f64 / 1000.0
}
