//! The task's commands added up over any span of time, from its `Commands` markers (each a
//! command's exits in up to a second): `summary`'s top commands, and the `CommandTotals`
//! marker the finalizer gives each step and the whole task, so that the profile itself
//! answers "how much of this step was cc1, and how many runs".

use crate::steps::{step_markers, STEP_CATEGORIES};
use crate::{MarkerRef, Markers, ProfileMarker};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::Marker;

/// Commands listed in a `CommandTotals` marker's table, the most CPU first.
const TABLE_ROWS: usize = 10;
/// The names of the `CommandTotals` markers: every step's on one row of the marker chart,
/// the whole task's on one of its own.
const STEP_TOTALS: &str = "Command totals";
const TASK_TOTALS: &str = "Command totals (whole task)";
/// The `step` of the whole task's.
const WHOLE_TASK: &str = "whole task";

/// One command's runs added up.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CommandUse {
    pub command: String,
    pub runs: u64,
    /// Runs that ended with a non-zero status or a signal.
    pub failures: u64,
    pub cpu_ms: f64,
    /// The highest peak RSS of its runs.
    pub peak_rss_bytes: u64,
}

/// The `Commands` markers of a profile, each with its start and end.
#[derive(Default)]
pub struct CommandRuns {
    runs: Vec<(f64, f64, CommandUse)>,
}

impl CommandRuns {
    /// Every `Commands` marker of `markers`.
    pub fn of(markers: &Markers) -> CommandRuns {
        let mut runs = CommandRuns::default();
        // A payload's type reads `Commands` only if its text holds the word or a `\u`
        // escape: a log of other markers is passed over with one search, where reading
        // each marker's type was 5 % of finalizing 100,000 markers.
        if !markers.payloads_hold(data_type::COMMANDS) && !markers.payloads_hold("\\u") {
            return runs;
        }
        for marker in markers.iter() {
            if marker.data_type().as_deref() == Some(data_type::COMMANDS) {
                runs.add(marker);
            }
        }
        runs
    }

    /// Adds the runs of `other` after these.
    pub(crate) fn extend(&mut self, other: CommandRuns) {
        self.runs.extend(other.runs);
    }

    /// Puts the runs in the order of their markers' starts (equal ones as they came), as
    /// [`CommandRuns::of`] finds them in sorted markers: the totals add them in that order.
    pub(crate) fn sort_by_start(&mut self) {
        self.runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    }

    /// Keeps a `Commands` marker's figures.
    pub fn add(&mut self, marker: MarkerRef) {
        let data = marker.data_value().unwrap_or_default();
        let Some(command) = data.get("command").and_then(Value::as_str) else {
            return;
        };
        let number = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
        let figures = CommandUse {
            command: command.to_owned(),
            runs: number("runs"),
            failures: number("failures"),
            cpu_ms: data.get("cpuTime").and_then(Value::as_f64).unwrap_or(0.0),
            peak_rss_bytes: number("peakRss"),
        };
        let end = marker.end_time.unwrap_or(marker.start_time);
        self.runs.push((marker.start_time, end, figures));
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Every command's totals from `start` to `end`, the most CPU first (the most runs
    /// among equals): those of the `Commands` markers whose middle is within it. To a
    /// second: a marker holds the exits of up to a second, which may be on either side of
    /// a step's start or end.
    pub fn within(&self, start: f64, end: f64) -> Vec<CommandUse> {
        let mut totals: HashMap<&str, CommandUse> = HashMap::new();
        let middle = |from: f64, to: f64| (from + to) / 2.0;
        let within = self
            .runs
            .iter()
            .filter(|(from, to, _)| (start..=end).contains(&middle(*from, *to)));
        for (_, _, figures) in within {
            let sum = totals
                .entry(&figures.command)
                .or_insert_with(|| CommandUse {
                    runs: 0,
                    failures: 0,
                    cpu_ms: 0.0,
                    peak_rss_bytes: 0,
                    ..figures.clone()
                });
            sum.runs += figures.runs;
            sum.failures += figures.failures;
            sum.cpu_ms += figures.cpu_ms;
            sum.peak_rss_bytes = sum.peak_rss_bytes.max(figures.peak_rss_bytes);
        }
        let mut commands: Vec<CommandUse> = totals.into_values().collect();
        commands.sort_by(|a, b| {
            let by_cpu = b.cpu_ms.total_cmp(&a.cpu_ms);
            by_cpu
                .then(b.runs.cmp(&a.runs))
                .then(a.command.cmp(&b.command))
        });
        commands
    }
}

/// A `CommandTotals` marker over each step of `markers` that ran commands, and one over the
/// whole task (`0..end_time`), from the `Commands` markers' `runs`; none when there are none.
pub(crate) fn command_totals(
    meta: &Map<String, Value>,
    markers: &Markers,
    runs: &CommandRuns,
    end_time: f64,
) -> Vec<ProfileMarker> {
    if runs.is_empty() {
        return Vec::new();
    }
    let steps = step_markers(meta, markers, &STEP_CATEGORIES).map(|step| {
        let name = step.marker.name.to_owned();
        (STEP_TOTALS, name, step.marker.start_time, step.end)
    });
    let whole = (TASK_TOTALS, WHOLE_TASK.to_owned(), 0.0, end_time);
    steps
        .chain([whole])
        .filter_map(|(name, step, start, end)| {
            totals_marker(name, step, start, end, &runs.within(start, end))
        })
        .collect()
}

/// The totals of `commands` as one marker over the step, or None when it ran none.
fn totals_marker(
    name: &str,
    step: String,
    start: f64,
    end: f64,
    commands: &[CommandUse],
) -> Option<ProfileMarker> {
    if commands.is_empty() {
        return None;
    }
    let runs: u64 = commands.iter().map(|c| c.runs).sum();
    let failures: u64 = commands.iter().map(|c| c.failures).sum();
    let cpu_ms: f64 = commands.iter().map(|c| c.cpu_ms).sum();
    let rows: Vec<Value> = commands
        .iter()
        .take(TABLE_ROWS)
        .map(|c| {
            json!([
                c.command,
                c.runs,
                c.failures,
                round_ms(c.cpu_ms),
                c.peak_rss_bytes
            ])
        })
        .collect();
    let data = json!({
        "type": data_type::COMMAND_TOTALS,
        "step": step,
        "runs": runs,
        "failures": failures,
        "cpuTime": round_ms(cpu_ms),
        "commands": commands.len(),
        "top": rows,
    });
    let marker = Marker::interval(name.to_owned(), start, end)
        .with_category(category::TASK)
        .with_data(data);
    Some(ProfileMarker::from(marker))
}

/// To the µs, as every time in the log.
fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use crate::{compact, read_log};
    use serde_json::Value;

    /// A log with the categories of ours, a step `build` from 1000 to 3000 ms, and the
    /// `Commands` markers of three seconds: cc1 in the first two (one ended within the
    /// step), sh in the last (after it).
    fn log() -> String {
        let commands = |start: u32, command: &str, runs: u32, cpu: f64| {
            format!(
                r#"{{"type":"marker","name":"{command}","startTime":{start},"endTime":{},"category":2,"data":{{"type":"Commands","command":"{command}","runs":{runs},"failures":{},"cpuTime":{cpu},"peakRss":{}}}}}"#,
                start + 1000,
                u32::from(command == "sh") * runs,
                runs * 1000,
            )
        };
        let categories = r#"[{"name":"Other","color":"grey","subcategories":["Other"]},{"name":"Worker","color":"blue","subcategories":["Other"]},{"name":"Task","color":"green","subcategories":["Other"]}]"#;
        [
            format!(r#"{{"type":"meta","startTime":1000,"categories":{categories},"markerSchema":[]}}"#),
            r#"{"type":"thread","name":"t"}"#.to_owned(),
            r#"{"type":"marker","name":"build","startTime":1000,"endTime":3000,"category":2,"data":{"type":"Text","text":"make"}}"#.to_owned(),
            commands(1000, "cc1", 3, 30.5),
            commands(2000, "cc1", 2, 20.0),
            commands(2000, "as", 2, 1.0),
            commands(3500, "sh", 4, 2.0),
        ]
        .join("\n")
    }

    fn totals(profile: &crate::Profile) -> Vec<(String, Value)> {
        let markers = profile.markers().iter();
        let totals = markers.filter(|m| m.data_type().as_deref() == Some("CommandTotals"));
        totals
            .map(|m| (m.name.to_owned(), m.data_value().unwrap()))
            .collect()
    }

    #[test]
    fn each_step_and_the_whole_task_get_their_commands_added_up() {
        let (profile, _) = compact(read_log(log().as_bytes()).unwrap());
        let totals = totals(&profile);
        assert_eq!(totals.len(), 2, "{totals:?}");
        let of = |name: &str| &totals.iter().find(|(n, _)| n == name).unwrap().1;
        let build = of("Command totals");
        assert_eq!(build["step"], "build");
        assert_eq!(
            (build["runs"].as_u64(), build["failures"].as_u64()),
            (Some(7), Some(0))
        );
        assert_eq!(build["cpuTime"], 51.5);
        assert_eq!(build["commands"], 2);
        assert_eq!(
            build["top"],
            serde_json::json!([["cc1", 5, 0, 50.5, 3000], ["as", 2, 0, 1.0, 2000]])
        );
        let whole = of("Command totals (whole task)");
        assert_eq!(
            (whole["runs"].as_u64(), whole["failures"].as_u64()),
            (Some(11), Some(4))
        );
        assert_eq!(whole["top"][1], serde_json::json!(["sh", 4, 4, 2.0, 4000]));
    }

    #[test]
    fn a_commands_type_spelled_with_an_escape_is_added_up() {
        let escaped = log().replace(r#""type":"Commands""#, r#""type":"Comm\u0061nds""#);
        assert!(!escaped.contains("Commands"));
        let (profile, _) = compact(read_log(escaped.as_bytes()).unwrap());
        let whole = totals(&profile)
            .into_iter()
            .find(|(name, _)| name == "Command totals (whole task)");
        assert_eq!(whole.map(|(_, data)| data["runs"].clone()), Some(11.into()));
    }

    #[test]
    fn a_profile_without_commands_gets_no_totals_and_totals_are_no_steps() {
        let without = log().lines().take(3).collect::<Vec<_>>().join("\n");
        let (profile, _) = compact(read_log(without.as_bytes()).unwrap());
        assert!(totals(&profile).is_empty());
        let (profile, _) = compact(read_log(log().as_bytes()).unwrap());
        let steps = crate::step_markers(profile.meta(), profile.markers(), &crate::STEP_CATEGORIES);
        let names: Vec<&str> = steps.map(|s| s.marker.name).collect();
        assert_eq!(names, ["build"]);
    }
}
