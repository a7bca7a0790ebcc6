//! The task's processes counted as they exit, every one however short, from the kernel's
//! exit records ([`crate::sources::taskstats`]): which exits are the task's, their totals
//! per command ("Commands" markers, one a command and interval), a "Process" marker for
//! each that lived at least `--process-markers` ms, and the machine's other exits counted
//! apart ("OtherProcesses"), never named.
//!
//! An exit is the task's when its pid or its parent is in the tree, or its parent is an exit
//! of the task's from the last few seconds: a process too short for the tree to see whose
//! parent was too short as well. Such a child exits before its parent does, so an exit the
//! tree cannot place waits [`PENDING_MS`] for its parent's before it is counted apart.

use super::process::{Process, ProcessEnd, StatUnits};
use super::wait_status::describe_status;
use crate::sources::taskstats::TaskExit;
use crate::sources::Lines;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use tc_profile_format::schema::{category, data_type, track};
use tc_profile_format::Marker;

/// How long an exit whose parent the tree does not know waits for that parent's exit.
const PENDING_MS: f64 = 1000.0;
/// How long the pid of a task's exit counts as the task's, for the exits of its children.
const RECENT_MS: f64 = 5000.0;
/// How often the totals are written.
const TOTALS_EVERY_MS: f64 = 1000.0;
/// Processes with threads that exited before the last, whose CPU is held until it does.
const THREADED_MAX: usize = 65_536;
/// "Process" markers of exits written between two writes of the totals (a second) at most:
/// a fork bomb of long-lived processes cannot grow the log without bound. The rest are
/// counted, each in its command's `undrawn`.
pub(super) const PROCESS_MARKERS_PER_TOTALS: u64 = 200;
/// "Commands" markers a write of the totals at most, the commands that used the most CPU;
/// the rest are one marker, [`OTHER_COMMANDS`].
pub(super) const COMMAND_MARKERS_PER_TOTALS: usize = 50;
/// The marker of the commands past [`COMMAND_MARKERS_PER_TOTALS`], added up.
pub(super) const OTHER_COMMANDS: &str = "(other commands)";

/// What the tree knows at a tick: its processes, those that it found gone, and the parent of
/// its roots (the recorder, when it started the command).
pub(super) struct TreeView<'a> {
    pub(super) processes: &'a HashMap<u32, Process>,
    pub(super) gone: &'a [(u32, Process)],
    pub(super) root_parent: Option<u32>,
    pub(super) units: &'a StatUnits,
}

impl TreeView<'_> {
    fn process(&self, pid: u32) -> Option<&Process> {
        let gone = || self.gone.iter().find(|(p, _)| *p == pid).map(|(_, p)| p);
        self.processes.get(&pid).or_else(gone)
    }
}

/// A process's exit not placed yet.
struct Pending {
    exit: TaskExit,
    /// Its CPU, µs, with that of its threads that ended before it.
    cpu_us: u64,
    /// When it was read.
    read: f64,
}

/// One command's exits since the totals were last written.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct CommandTotals {
    runs: u64,
    failures: u64,
    cpu_us: u64,
    peak_rss: u64,
    /// Runs long enough for a "Process" marker that got none (over the cap).
    undrawn: u64,
    /// Commands these totals add up (1 but for [`OTHER_COMMANDS`]).
    commands: u64,
}

impl CommandTotals {
    fn add(&mut self, other: &CommandTotals) {
        self.runs += other.runs;
        self.failures += other.failures;
        self.cpu_us += other.cpu_us;
        self.peak_rss = self.peak_rss.max(other.peak_rss);
        self.undrawn += other.undrawn;
        self.commands += other.commands;
    }
}

/// The exits of the machine, sorted: the task's counted and the rest apart.
pub(super) struct Exits {
    /// A "Process" marker for an exit that lived at least this long.
    marker_min_ms: f64,
    /// Exits not placed yet.
    pending: Vec<Pending>,
    /// Pids of the task's exits, with when they were read.
    recent: HashMap<u32, f64>,
    /// CPU µs of the threads that ended before their process, by process.
    threads: HashMap<u32, u64>,
    commands: BTreeMap<String, CommandTotals>,
    /// Exits not the task's since the totals were last written: count and CPU µs.
    others: (u64, u64),
    overruns_written: u64,
    totals_since: f64,
    /// "Process" markers written since the totals were.
    process_markers: u64,
}

impl Exits {
    pub(super) fn new(marker_min_ms: f64) -> Exits {
        Exits {
            marker_min_ms,
            pending: Vec::new(),
            recent: HashMap::new(),
            threads: HashMap::new(),
            commands: BTreeMap::new(),
            others: (0, 0),
            overruns_written: 0,
            totals_since: 0.0,
            process_markers: 0,
        }
    }

    /// Places the exits read since the last tick (`overruns`: how often exits were lost
    /// so far); every second, and at the `last` tick, writes the totals.
    pub(super) fn tick(
        &mut self,
        fresh: Vec<TaskExit>,
        overruns: u64,
        now: f64,
        tree: &TreeView,
        last: bool,
        out: &mut Lines,
    ) {
        self.receive(fresh, now);
        self.place(now, tree, out);
        let (waited, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|pending| last || now - pending.read >= PENDING_MS);
        self.pending = waiting;
        for pending in waited {
            self.others.0 += 1;
            self.others.1 += pending.cpu_us;
        }
        if last || now - self.totals_since >= TOTALS_EVERY_MS {
            self.write_totals(now, overruns, out);
            self.recent.retain(|_, read| now - *read < RECENT_MS);
        }
    }

    /// Holds the CPU of threads until their process ends; queues the processes' exits with
    /// it.
    fn receive(&mut self, fresh: Vec<TaskExit>, now: f64) {
        for exit in fresh {
            let cpu_us = exit.cpu_us;
            if exit.process_ended {
                let threads_us = self.threads.remove(&exit.pid).unwrap_or(0);
                self.pending.push(Pending {
                    exit,
                    cpu_us: cpu_us + threads_us,
                    read: now,
                });
            } else if self.threads.len() < THREADED_MAX || self.threads.contains_key(&exit.pid) {
                *self.threads.entry(exit.pid).or_default() += cpu_us;
            }
        }
    }

    /// Counts every pending exit that is the task's, again while one more is found: a
    /// child's exit comes before its short parent's, which places it.
    fn place(&mut self, now: f64, tree: &TreeView, out: &mut Lines) {
        loop {
            let recent = &self.recent;
            let is_task = |pending: &Pending| {
                let exit = &pending.exit;
                tree.process(exit.pid).is_some()
                    || tree.process(exit.ppid).is_some()
                    || tree.root_parent == Some(exit.ppid)
                    || recent.contains_key(&exit.ppid)
            };
            let (placed, pending): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
                .into_iter()
                .partition(is_task);
            self.pending = pending;
            if placed.is_empty() {
                return;
            }
            for pending in placed {
                self.count(&pending, tree, out);
                self.recent.insert(pending.exit.pid, now);
            }
        }
    }

    fn count(&mut self, pending: &Pending, tree: &TreeView, out: &mut Lines) {
        let Pending { exit, cpu_us, read } = pending;
        let (cpu_us, read) = (*cpu_us, *read);
        let known = tree.process(exit.pid);
        // The proc connector has no peak: the tree's samples give one for what they saw.
        let sampled_peak = known.map_or(0, |p| p.peak_rss_pages * tree.units.page_size);
        let peak_rss = exit.peak_rss.max(sampled_peak);
        let totals = self
            .commands
            .entry(exit.comm.clone())
            .or_insert(CommandTotals {
                commands: 1,
                ..CommandTotals::default()
            });
        totals.add(&CommandTotals {
            runs: 1,
            failures: u64::from(exit.status != 0),
            cpu_us,
            peak_rss,
            ..CommandTotals::default()
        });
        let elapsed_ms = exit.elapsed_us as f64 / 1000.0;
        if elapsed_ms < self.marker_min_ms {
            return;
        }
        if self.process_markers >= PROCESS_MARKERS_PER_TOTALS {
            totals.undrawn += 1;
            return;
        }
        self.process_markers += 1;
        // The tree knows the start to the clock tick; otherwise the exit is placed when it
        // was read, at most one tick late.
        let (start, end) = match known {
            Some(process) => {
                let start = process.start_ms(tree.units).min(read);
                (start, (start + elapsed_ms).min(read))
            }
            None => ((read - elapsed_ms).max(tree.units.earliest_ms), read),
        };
        let (name, command) = known.map_or((exit.comm.as_str(), exit.comm.as_str()), |p| {
            (p.name.as_str(), p.command.as_str())
        });
        let marker = ProcessEnd {
            name,
            command,
            pid: exit.pid,
            ppid: exit.ppid,
            start: round_to_microseconds(start),
            end: round_to_microseconds(end),
            cpu_ms: cpu_us as f64 / 1000.0,
            peak_rss,
            status: describe_status(Some(exit.status)),
            storage_io: exit.storage_io,
        };
        out.marker(marker.marker());
    }

    /// A "Commands" marker for each command that exited since the last (the fifty that
    /// used the most CPU, the rest added up in one), and an "OtherProcesses" one when other
    /// processes did or exits were lost.
    fn write_totals(&mut self, now: f64, overruns: u64, out: &mut Lines) {
        let since = self.totals_since;
        let mut commands: Vec<_> = std::mem::take(&mut self.commands).into_iter().collect();
        let mut all = CommandTotals::default();
        for (_, totals) in &commands {
            all.add(totals);
        }
        out.marker(processes_marker(since, now, &all));
        if commands.len() > COMMAND_MARKERS_PER_TOTALS {
            commands.sort_by(|(_, a), (_, b)| b.cpu_us.cmp(&a.cpu_us).then(b.runs.cmp(&a.runs)));
            let mut rest = CommandTotals::default();
            for (_, totals) in commands.drain(COMMAND_MARKERS_PER_TOTALS..) {
                rest.add(&totals);
            }
            commands.push((OTHER_COMMANDS.to_owned(), rest));
        }
        for (command, totals) in commands {
            out.marker(command_marker(command, since, now, totals));
        }
        self.process_markers = 0;
        let overruns = overruns.saturating_sub(self.overruns_written);
        let (runs, cpu_us) = std::mem::take(&mut self.others);
        if runs > 0 || overruns > 0 {
            let marker = Marker::interval("Other processes".to_owned(), since, now)
                .with_category(category::OTHER)
                .with_data(json!({
                    "type": data_type::OTHER_PROCESSES,
                    "runs": runs,
                    "cpuTime": cpu_us as f64 / 1000.0,
                    "overruns": overruns,
                }));
            out.marker(marker);
        }
        self.overruns_written += overruns;
        self.totals_since = now;
    }
}

/// A sample of the "Processes" track: the task's processes that ended since the last, 0
/// included, so that the track is drawn without a gap.
fn processes_marker(since: f64, now: f64, all: &CommandTotals) -> Marker {
    Marker::interval(track::PROCESSES.to_owned(), since, now)
        .with_category(category::OTHER)
        .with_data(json!({
            "type": data_type::PROCESSES_ENDED,
            "runs": all.runs,
            "failures": all.failures,
        }))
}

fn command_marker(command: String, since: f64, now: f64, totals: CommandTotals) -> Marker {
    let mut data = json!({
        "type": data_type::COMMANDS,
        "command": command,
        "runs": totals.runs,
        "failures": totals.failures,
        "cpuTime": totals.cpu_us as f64 / 1000.0,
        "peakRss": totals.peak_rss,
    });
    // Only when they say something, to keep the log short.
    if totals.undrawn > 0 {
        data["undrawn"] = json!(totals.undrawn);
    }
    if totals.commands > 1 {
        data["commands"] = json!(totals.commands);
    }
    Marker::interval(command, since, now)
        .with_category(category::TASK)
        .with_data(data)
}

fn round_to_microseconds(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::sources::decode_markers;
    use crate::sources::machine::Machine;

    /// The recorder, parent of the task's command.
    const RECORDER: u32 = 1000;

    fn exit(comm: &str, pid: u32, ppid: u32, status: i32) -> TaskExit {
        TaskExit {
            comm: comm.to_owned(),
            pid,
            ppid,
            process_ended: true,
            elapsed_us: 2_000,
            cpu_us: 1_500,
            peak_rss: 1 << 20,
            status,
            ..TaskExit::default()
        }
    }

    /// The markers of ticks at `times`, each given its exits.
    fn ticks(exits: &mut Exits, batches: Vec<(f64, Vec<TaskExit>, bool)>) -> Vec<Marker> {
        let processes = HashMap::new();
        let units = StatUnits::probe(Clock::start()).unwrap();
        let tree = TreeView {
            processes: &processes,
            gone: &[],
            root_parent: Some(RECORDER),
            units: &units,
        };
        let mut bytes = Vec::new();
        let machine = Machine::default();
        for (now, fresh, last) in batches {
            let mut out = Lines::new(&mut bytes, &machine);
            exits.tick(fresh, 0, now, &tree, last, &mut out);
        }
        decode_markers(&bytes)
    }

    fn totals_of(markers: &[Marker], kind: &str) -> Vec<serde_json::Value> {
        let data = markers.iter().filter_map(|m| m.data.as_ref());
        data.filter(|d| d["type"] == kind).cloned().collect()
    }

    #[test]
    fn every_exit_of_the_task_is_counted_per_command_with_its_failures() {
        let mut fresh: Vec<_> = (0..20)
            .map(|i| exit("true", 2000 + i, RECORDER, 0))
            .collect();
        fresh.extend((0..5).map(|i| exit("sh", 3000 + i, RECORDER, 3 << 8)));
        fresh.push(exit("sleep", 3100, RECORDER, libc::SIGKILL));
        let markers = ticks(&mut Exits::new(100.0), vec![(1000.0, fresh, false)]);
        let commands = totals_of(&markers, data_type::COMMANDS);
        let runs: Vec<_> = commands
            .iter()
            .map(|c| {
                (
                    c["command"].as_str().unwrap(),
                    c["runs"].as_u64().unwrap(),
                    c["failures"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(runs, [("sh", 5, 5), ("sleep", 1, 1), ("true", 20, 0)]);
        assert_eq!(commands[2]["cpuTime"], 30.0);
        assert_eq!(commands[2]["peakRss"], 1 << 20);
        assert!(
            totals_of(&markers, data_type::PROCESS).is_empty(),
            "all shorter than 100 ms"
        );
    }

    /// A fork bomb of long-lived processes of many names: the markers of a second stay
    /// bounded, and what was not drawn is counted, the totals whole.
    #[test]
    fn a_fork_bomb_writes_a_bounded_number_of_markers_and_counts_the_rest() {
        let fresh: Vec<_> = (0..10_000)
            .map(|i| TaskExit {
                elapsed_us: 500_000,
                ..exit(&format!("bomb{}", i % 1000), 10_000 + i, RECORDER, 0)
            })
            .collect();
        let markers = ticks(&mut Exits::new(100.0), vec![(1000.0, fresh, false)]);
        let processes = totals_of(&markers, data_type::PROCESS).len() as u64;
        assert_eq!(processes, PROCESS_MARKERS_PER_TOTALS);
        let commands = totals_of(&markers, data_type::COMMANDS);
        assert_eq!(commands.len(), COMMAND_MARKERS_PER_TOTALS + 1);
        let sum = |key: &str| {
            commands
                .iter()
                .map(|c| c[key].as_u64().unwrap_or(0))
                .sum::<u64>()
        };
        assert_eq!(sum("runs"), 10_000, "every run counted");
        assert_eq!(sum("undrawn"), 10_000 - PROCESS_MARKERS_PER_TOTALS);
        let rest = commands
            .iter()
            .find(|c| c["command"] == OTHER_COMMANDS)
            .unwrap();
        assert_eq!(rest["commands"], 1000 - COMMAND_MARKERS_PER_TOTALS as u64);
    }

    #[test]
    fn a_child_that_exits_before_its_short_parent_is_the_tasks() {
        let child = exit("cc1", 2002, 2001, 0);
        let parent = exit("gcc", 2001, RECORDER, 0);
        let markers = ticks(
            &mut Exits::new(100.0),
            vec![(100.0, vec![child], false), (200.0, vec![parent], true)],
        );
        let commands = totals_of(&markers, data_type::COMMANDS);
        assert_eq!(commands.len(), 2, "{commands:?}");
        assert!(totals_of(&markers, data_type::OTHER_PROCESSES).is_empty());
    }

    #[test]
    fn exits_outside_the_task_are_counted_apart_and_never_named() {
        let stranger = exit("secret-tool", 4000, 1, 0);
        let grandchild = exit("cat", 4001, 4000, 0);
        let markers = ticks(
            &mut Exits::new(100.0),
            vec![
                (100.0, vec![stranger, grandchild], false),
                (100.0 + PENDING_MS, Vec::new(), false),
            ],
        );
        assert!(totals_of(&markers, data_type::COMMANDS).is_empty());
        let others = totals_of(&markers, data_type::OTHER_PROCESSES);
        assert_eq!(others.len(), 1);
        assert_eq!(others[0]["runs"], 2);
        let text = format!("{markers:?}");
        assert!(!text.contains("secret-tool"), "{text}");
        assert!(markers.iter().all(|m| m.name != "cat"), "{text}");
    }

    #[test]
    fn the_threads_cpu_is_its_processes_and_a_thread_is_no_run() {
        let thread = TaskExit {
            process_ended: false,
            cpu_us: 7_500,
            ..exit("worker", 2000, RECORDER, 0)
        };
        let process = exit("worker", 2000, RECORDER, 0);
        let markers = ticks(
            &mut Exits::new(100.0),
            vec![(1000.0, vec![thread, process], true)],
        );
        let commands = totals_of(&markers, data_type::COMMANDS);
        assert_eq!(
            (
                commands[0]["runs"].as_u64(),
                commands[0]["cpuTime"].as_f64()
            ),
            (Some(1), Some(9.0))
        );
    }

    #[test]
    fn the_threads_of_a_process_not_the_tasks_are_let_go_with_it() {
        let thread = TaskExit {
            process_ended: false,
            ..exit("browser", 4000, 1, 0)
        };
        let mut exits = Exits::new(100.0);
        let process = exit("browser", 4000, 1, 0);
        let markers = ticks(
            &mut exits,
            vec![
                (100.0, vec![thread, process], false),
                (2000.0, Vec::new(), false),
            ],
        );
        assert!(exits.threads.is_empty());
        let others = totals_of(&markers, data_type::OTHER_PROCESSES);
        assert_eq!(
            (others[0]["runs"].as_u64(), others[0]["cpuTime"].as_f64()),
            (Some(1), Some(3.0))
        );
    }

    #[test]
    fn only_a_process_at_least_as_long_as_the_threshold_gets_a_marker() {
        let long = TaskExit {
            elapsed_us: 250_000,
            ..exit("rustc", 2000, RECORDER, 0)
        };
        let short = exit("true", 2001, RECORDER, 0);
        let markers = ticks(
            &mut Exits::new(100.0),
            vec![(1000.0, vec![long, short], true)],
        );
        let processes: Vec<_> = markers
            .iter()
            .filter(|m| {
                m.data
                    .as_ref()
                    .is_some_and(|d| d["type"] == data_type::PROCESS)
            })
            .collect();
        assert_eq!(processes.len(), 1);
        assert_eq!(processes[0].name, "rustc");
        assert_eq!(
            (processes[0].start_time, processes[0].end_time),
            (750.0, Some(1000.0))
        );
        let data = processes[0].data.as_ref().unwrap();
        assert_eq!(
            (data["status"].as_str(), data["pid"].as_u64()),
            (Some("exit code 0"), Some(2000))
        );
    }
}
