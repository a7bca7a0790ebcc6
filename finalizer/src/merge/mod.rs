//! `tc-profile merge`: several profiles (the tasks of a group, the runs of one task) in one
//! processed profile, one process per input, on one wall-clock axis (`group.rs`), with the
//! shared tables merged (`tables.rs`). Inputs are read as `summary` reads them: a log,
//! torn or whole, is finalized in memory and left as it is; gzip and zstd are recognised by
//! their first bytes. The group is written atomically, compressed by its extension.
//! `tc-profile compare` merges two runs read as [`MergeInput`]s, the new one shifted so that
//! a step starts at the same time in both, with a `Compare` marker per step.

mod group;
mod tables;

use crate::compression::InputCaps;
use crate::input::{read_input, InputError};
use crate::marker_table::ThreadOut;
use crate::output::write_profile;
use crate::profile::Profile;
use crate::profile_marker::ProfileMarker;
use group::{group, Group, Member};
use serde::Serialize;
use serde_json::{json, Value};
use std::io;
use std::path::{Path, PathBuf};
use tc_profile_format::schema::{data_type::COMPARE, declare_compare};
use tc_profile_format::{Marker, PREPROCESSED_PROFILE_VERSION};
use tc_profile_fs::{identity_of_path, Identity};

/// Where to write the group.
#[derive(Clone, Debug)]
pub struct MergeOptions {
    /// A `.gz` or `.zst` name is compressed.
    pub output: PathBuf,
    /// Replace an existing file at `output`.
    pub force: bool,
    /// How far a compressed input may decompress.
    pub input_caps: InputCaps,
}

/// What merging did.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeReport {
    pub output: PathBuf,
    pub bytes_written: u64,
    /// The processes' names, in the inputs' order.
    pub processes: Vec<String>,
    /// Markers in the group.
    pub markers: usize,
    /// Schemas that an input declared unlike an earlier one, kept under a name of their own
    /// (`OLD -> NEW`).
    pub renamed_schemas: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{again} is {first} again; name each profile once")]
    Twice { first: PathBuf, again: PathBuf },
    #[error(
        "{path} holds {what}, which merge does not carry; merge profiles of one thread, as \
         tc-profile and Mozilla's resource monitor write them"
    )]
    LeftOut { path: PathBuf, what: String },
    #[error(
        "{path} is a profile of version {version}; merge reads version 47, as tc-profile and \
         Mozilla's resource monitor write them"
    )]
    Version { path: PathBuf, version: String },
    #[error(
        "{path} has no meta.startTime to place it by; it is not a profile that merge can align"
    )]
    NoStartTime { path: PathBuf },
    #[error("the output {path} is one of the inputs; choose another -o")]
    OutputIsInput { path: PathBuf },
    #[error("{path} exists; choose another -o, or pass --force to replace it")]
    OutputExists { path: PathBuf },
    #[error("cannot write {path}: {source}; choose a writable place with -o")]
    Write { path: PathBuf, source: io::Error },
}

/// One input of a merge, read and checked: a profile that the group can carry whole.
pub struct MergeInput(Member);

/// A step of two runs compared, as a `Compare` marker shows it: where it lies in the run
/// whose marker it is (ms since that run's start), and its duration in each.
#[derive(Clone, Debug, PartialEq)]
pub struct StepCompared {
    pub step: String,
    pub start_ms: f64,
    pub end_ms: f64,
    pub base_ms: f64,
    pub new_ms: f64,
    /// The change of duration as text (`+2.01s`), for the marker's labels.
    pub change: String,
}

impl MergeInput {
    /// Reads the profile or log at `path` and checks that a group can carry all of it.
    pub fn read(path: &Path, caps: InputCaps) -> Result<MergeInput, MergeError> {
        member(path, caps).map(MergeInput)
    }

    pub fn profile(&self) -> &Profile {
        &self.0.profile
    }

    /// Moves the input `ms` later on the group's axis (earlier when negative) than its
    /// wall-clock start would place it; `meta.tcProfile.group` says by how much.
    pub fn shift(&mut self, ms: f64) {
        self.0.shift += ms;
    }

    /// Adds a `Compare` marker (category Recorder) over each step.
    pub fn add_compared_steps(&mut self, steps: &[StepCompared]) {
        let profile = &mut self.0.profile;
        let category = declare_compare(profile.meta_mut());
        profile.add_markers(steps.iter().map(|step| {
            let data = json!({"type": COMPARE, "step": step.step, "base": step.base_ms,
                "new": step.new_ms, "delta": step.new_ms - step.base_ms, "change": step.change});
            let marker = Marker::interval(COMPARE, step.start_ms, step.end_ms);
            ProfileMarker::from(marker.with_category(category).with_data(data))
        }));
    }
}

/// Merges the profiles or logs at `inputs`, in that order, into `options.output`.
pub fn merge(inputs: &[PathBuf], options: &MergeOptions) -> Result<MergeReport, MergeError> {
    let members = read_inputs(inputs, options)?;
    merge_inputs(members, options)
}

/// Reads the profiles or logs at `inputs` for [`merge_inputs`], once each path is checked:
/// no input named twice, an output that is none of them and, without `force`, new.
pub fn read_inputs(
    inputs: &[PathBuf],
    options: &MergeOptions,
) -> Result<Vec<MergeInput>, MergeError> {
    check_paths(inputs, options)?;
    inputs
        .iter()
        .map(|path| MergeInput::read(path, options.input_caps))
        .collect()
}

/// Merges `inputs`, in that order, into `options.output`.
pub fn merge_inputs(
    inputs: Vec<MergeInput>,
    options: &MergeOptions,
) -> Result<MergeReport, MergeError> {
    let group = group(inputs.into_iter().map(|input| input.0).collect());
    let bytes_written =
        write_profile(&options.output, &Document::of(&group)).map_err(|source| {
            MergeError::Write {
                path: options.output.clone(),
                source,
            }
        })?;
    Ok(MergeReport {
        output: options.output.clone(),
        bytes_written,
        processes: group
            .threads
            .iter()
            .map(|(thread, _)| {
                thread["processName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect(),
        markers: group.threads.iter().map(|(_, markers)| markers.len()).sum(),
        renamed_schemas: group.renamed,
    })
}

/// Refuses an input named twice (by any path), and an output that is an input or, without
/// `force`, exists; before anything is read.
fn check_paths(inputs: &[PathBuf], options: &MergeOptions) -> Result<(), MergeError> {
    let mut seen: Vec<(Identity, &PathBuf)> = Vec::with_capacity(inputs.len());
    for path in inputs {
        let identity = identity_of_path(path).map_err(|source| InputError::Open {
            path: path.clone(),
            source,
        })?;
        if let Some((_, first)) = seen.iter().find(|(known, _)| *known == identity) {
            return Err(MergeError::Twice {
                first: (*first).clone(),
                again: path.clone(),
            });
        }
        seen.push((identity, path));
    }
    let output = &options.output;
    let Ok(existing) = identity_of_path(output) else {
        return Ok(());
    };
    if seen.iter().any(|(identity, _)| *identity == existing) {
        return Err(MergeError::OutputIsInput {
            path: output.clone(),
        });
    }
    if !options.force {
        return Err(MergeError::OutputExists {
            path: output.clone(),
        });
    }
    Ok(())
}

/// Reads one input and checks that the group can carry all of it.
fn member(path: &Path, caps: InputCaps) -> Result<Member, MergeError> {
    let profile = read_input(path, caps, None)?.into_profile(path)?;
    if !profile.left_out.is_empty() {
        return Err(MergeError::LeftOut {
            path: path.to_owned(),
            what: profile.left_out.join(" and "),
        });
    }
    let version = profile.meta.get("preprocessedProfileVersion");
    if version.and_then(Value::as_u64) != Some(u64::from(PREPROCESSED_PROFILE_VERSION)) {
        return Err(MergeError::Version {
            path: path.to_owned(),
            version: version.map_or_else(|| "none".to_owned(), Value::to_string),
        });
    }
    let start_time = profile
        .meta
        .get("startTime")
        .and_then(Value::as_f64)
        .ok_or_else(|| MergeError::NoStartTime {
            path: path.to_owned(),
        })?;
    let source = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(Member {
        source,
        start_time,
        shift: 0.0,
        profile,
    })
}

/// The group as the processed format at version 47 lays it out.
#[derive(Serialize)]
struct Document<'a> {
    meta: &'a serde_json::Map<String, Value>,
    libs: [(); 0],
    threads: Vec<ThreadOut<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    counters: &'a [serde_json::Map<String, Value>],
}

impl<'a> Document<'a> {
    fn of(group: &'a Group) -> Document<'a> {
        Document {
            meta: &group.meta,
            libs: [],
            threads: group
                .threads
                .iter()
                .map(|(base, markers)| ThreadOut {
                    base,
                    markers,
                    unique_strings: &group.unique_strings,
                })
                .collect(),
            counters: &group.counters,
        }
    }
}
