//! The suite's own recorder: the recorder library under a steady marker load (an instant
//! every ~100 µs, numbered, and an interval every 50 of them), following a profile
//! directory that task processes write marker files to, recording until killed.

use anyhow::Result;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::Marker;
use tc_profile_recorder::{ProfileDirConfig, Recorder, RecorderConfig, SyncPolicy};

/// Name of the numbered instant markers.
pub const INSTANT: &str = "torture";
/// Name of the numbered intervals.
pub const INTERVAL: &str = "torture interval";

#[derive(clap::Args)]
pub struct ChildArgs {
    #[arg(long)]
    log: PathBuf,
    /// always, interval or never.
    #[arg(long)]
    sync: String,
    /// The tc-profile binary, for the task's mark, begin and end helpers.
    #[arg(long, value_name = "PATH")]
    helper: PathBuf,
}

pub fn sync_policy(name: &str, interval: Duration) -> SyncPolicy {
    match name {
        "always" => SyncPolicy::Always,
        "never" => SyncPolicy::Never,
        _ => SyncPolicy::Interval(interval),
    }
}

pub fn numbered(number: u64) -> serde_json::Value {
    json!({"type": data_type::TEXT, "text": format!("#{number}")})
}

pub fn run(args: ChildArgs) -> Result<()> {
    let interval = Duration::from_millis(10);
    let dir = args.log.with_file_name("markers");
    let mut config = RecorderConfig::new(args.log);
    config.interval = interval;
    config.sync = sync_policy(&args.sync, interval);
    config.statsd = None;
    config.profile_dir = Some(ProfileDirConfig::new(dir.clone()));
    let recorder = Recorder::start(config)?;
    crate::task::spawn_writers(&dir, &args.helper)?;
    let markers = recorder.markers();
    let mut open = None;
    for number in 0.. {
        if number % 50 == 0 {
            drop(open.take());
            open = Some(markers.begin(INTERVAL, category::USER, Some(numbered(number / 50))));
        }
        let marker = Marker::instant(INSTANT, markers.now())
            .with_category(category::USER)
            .with_data(numbered(number));
        markers.marker(&marker);
        std::thread::sleep(Duration::from_micros(100));
    }
    unreachable!("the loop above ends only when the process is killed")
}
