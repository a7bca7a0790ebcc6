//! `tc-profile fleet`: the tasks of many profiles and logs (two at a time, one profile in
//! memory per thread, a few numbers kept of each) or of InfluxDB, grouped and sized.

use crate::cli::FleetArgs;
use crate::export::influx_target;
use crate::output;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use tc_profile_finalizer::{read_input, write_atomically, InputCaps};
use tc_profile_fs::SHARED_FILE;
use tc_profile_reports::{
    read_influx, Catalog, Fleet, FleetFormat, FleetReport, FleetTask, GroupBy, NO_VALUE,
};

/// The files of a directory that are read: profiles and logs, compressed or not.
const EXTENSIONS: [&str; 4] = ["json", "jsonl", "gz", "zst"];
/// Readers at once: one profile in memory each.
const MAX_READERS: usize = 4;

pub fn fleet(args: FleetArgs) -> Result<u8> {
    let catalog = match &args.instances {
        Some(path) => {
            let context = || format!("--instances {}", path.display());
            let text = std::fs::read_to_string(path).with_context(context)?;
            Catalog::parse(&text).with_context(context)?
        }
        None => Catalog::default(),
    };
    let mut fleet = Fleet::new(GroupBy::parse(&args.by));
    let mut unreadable = Vec::new();
    if let Some(url) = &args.influx {
        let database = args.database.as_deref().unwrap_or_default();
        let target = influx_target(Some(url), Some(database), &args.credentials)?
            .context("--influx needs --database")?;
        let rows = read_influx(&target, &args.since, |task| fleet.add(task))?;
        if rows == 0 {
            bail!(
                "no tc_profile_task rows in the last {} of database {database:?} at {url}: \
                 export tasks there first (tc-profile export --influx), or widen --since",
                args.since
            );
        }
    } else {
        let files = input_files(&args.inputs, &mut unreadable);
        read_tasks(&files, args.input_caps.caps(), &mut fleet, &mut unreadable);
        if fleet.tasks() == 0 {
            bail!(
                "no task read from {} input files{}: give profiles or logs",
                files.len(),
                unreadable
                    .first()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            );
        }
    }
    for error in &unreadable {
        eprintln!("tc-profile: warning: skipped {error}");
    }
    let report = FleetReport::new(fleet, &catalog, &unreadable, unreadable.len() as u64);
    if let [only] = &report.groups[..] {
        if only.key == NO_VALUE {
            eprintln!(
                "tc-profile: warning: no task has a {} tag: they are one group, {NO_VALUE}",
                args.by
            );
        }
    }
    if let Some(path) = &args.output {
        let page = FleetFormat::Html.serialize(&report);
        write_atomically(path, SHARED_FILE, |out| out.write_all(&page))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let format = if args.json {
        FleetFormat::Json
    } else {
        FleetFormat::Text
    };
    output::to_stdout(&format.serialize(&report))?;
    Ok(0)
}

/// The files named, and those under the directories named (symbolic links in them are not
/// followed), in a stable order; a directory that cannot be listed is counted unreadable.
fn input_files(inputs: &[PathBuf], unreadable: &mut Vec<String>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            walk(input, &mut files, unreadable);
        } else {
            files.push(input.clone());
        }
    }
    files
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, unreadable: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => return unreadable.push(format!("{}: {error}", dir.display())),
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk(&path, files, unreadable),
            Ok(kind) if kind.is_file() && has_input_extension(&path) => files.push(path),
            _ => {}
        }
    }
}

fn has_input_extension(path: &Path) -> bool {
    let extension = path.extension().and_then(|e| e.to_str());
    extension.is_some_and(|e| EXTENSIONS.contains(&e))
}

/// Reads the files on a few threads, each task reduced to its few numbers as it is read;
/// a file that cannot be read is named in `unreadable`.
fn read_tasks(files: &[PathBuf], caps: InputCaps, fleet: &mut Fleet, unreadable: &mut Vec<String>) {
    let readers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_READERS);
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::sync_channel(64);
    std::thread::scope(|scope| {
        for _ in 0..readers {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || {
                while let Some(path) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if sender.send(read_task(path, caps)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        for task in receiver {
            match task {
                Ok(task) => fleet.add(task),
                Err(error) => unreadable.push(error),
            }
        }
    });
}

fn read_task(path: &Path, caps: InputCaps) -> Result<FleetTask, String> {
    let profile = read_input(path, caps, None)
        .and_then(|input| input.into_profile(path))
        .map_err(|error| error.to_string())?;
    Ok(FleetTask::of_profile(&profile))
}
