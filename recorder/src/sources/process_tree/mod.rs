//! The task's process tree against everything else on the machine: "Task CPU" and "Other
//! CPU" (fractions of all cores), "Task Memory" (the tree's RSS) and "Other Memory" (what
//! the machine uses beyond it), and a "Process" marker for each process of the tree,
//! written when the process ends.
//!
//! Cost is the point of most choices here. Each tick reads /proc/<pid>/stat of the tree's
//! processes only, through files kept open (a re-read is cheaper than an open, and an open
//! file stays bound to its process, so a reused pid is never mistaken for it), but not of
//! a process none of whose threads ran since (its CPU-time clock the same, a ninth of a
//! stat's cost): its statm alone once in ten ticks, for its resident set, and its stat
//! once its parent ends ([`process::Process::due`]); other processes are read once, when
//! first listed, to learn their parent. Following a cgroup, its CPU total, read first,
//! tells when none of the still ones can have run: then not even their clocks are read
//! ([`ProcessTree::refresh`]). A process that lived between two ticks is never seen, but
//! its CPU time is not lost: its parent's stat counts it among the reaped children's time
//! (cutime, cstime) once it has been waited for.

pub(crate) mod command_line;
mod discovery;
mod exits;
pub(crate) mod process;
mod tokens;
pub(crate) mod wait_status;

use crate::clock::Clock;
use crate::sources::cgroup::cpu_total::CpuTotal;
use crate::sources::machine::{CpuTimes, Machine, SharedMachine};
use crate::sources::proc_connector::ProcConnector;
use crate::sources::procfs::ReadBuffer;
use crate::sources::shared_exits::ExitReader;
use crate::sources::task_tracks::TaskSample;
use crate::sources::taskstats::{ProcessCpu, TaskExit, Taskstats};
use crate::sources::{Lines, ProcessExits, Source};
use exits::{Exits, TreeView};
use process::{parse_stat, stat_path, Due, Process, StatUnits};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tc_profile_format::schema::source;
use wait_status::describe_status;

/// At most this many pids given out since the last look are read one by one; past that, or
/// when pids wrapped around, /proc is listed whole.
const PIDS_READ_ONE_BY_ONE: u32 = 256;
/// A tree of more processes than this is sampled at most every [`BIG_TREE_PACE_MS`]: each
/// process's stat costs a few µs of kernel time a read, and 500 of them read ten times a
/// second took 3 % of a core.
const BIG_TREE: usize = 64;
const BIG_TREE_PACE_MS: f64 = 1000.0;
/// /proc is listed whole once in this many of the tree's ticks while pids are read one by
/// one, to find what that missed: a process whose pid was given out before it could be
/// opened (found late, its CPU time is not lost). Counted in the tree's own ticks, so that
/// a big tree's 1 s pace or a 1 s interval does not make every tick a listing.
const LISTING_EVERY_TICKS: f64 = 10.0;
/// The recorder's own stat is read at least once in this many ticks, whatever else says
/// that it cannot have changed (see [`ProcessTree::own_reaped_ticks`]).
const OWN_STAT_EVERY_TICKS: u32 = 10;
/// A followed cgroup's CPU total may grow by this much more than the processes read at a
/// tick used, and the still ones still be passed over unread ([`ProcessTree::refresh`]).
/// Both figures come from the scheduler's own ns (a task's run time is charged to it and
/// to its cgroup by the same update), so with nothing else run the difference is what v2's
/// whole µs lose: under 1 µs. A still process that ran less than this (a wake-up that
/// found nothing to do) is read at its stat's next due read, within ten ticks, its CPU
/// then counted: 10 µs late by a second is nothing on a track of fractions of all cores.
/// An exit, or a wake-up that does work, takes tens of µs or more, and is read at once.
const UNEXPLAINED_CPU_NS: u64 = 10_000;

pub(crate) use super::Follow;

pub(crate) struct ProcessTree {
    proc_root: PathBuf,
    follow: Follow,
    own_pid: u32,
    units: StatUnits,
    interval_ms: f64,
    processes: HashMap<u32, Process>,
    /// Processes found not to be the task's, by pid, with the inode of their /proc entry
    /// (a reused pid gets a new one) and the tick that last listed them.
    others: HashMap<u32, (u64, u64)>,
    tick: u64,
    /// The pid most recently given out on the machine (/proc/loadavg) at the last look for
    /// new processes: while it stays the same, no process has been created; when it grew a
    /// little, only the pids in between can be new ones, read one by one rather than by
    /// listing /proc (the costliest read of a tick, on a machine busy starting processes).
    listed_at_pid: Option<u32>,
    /// When /proc was last listed whole, or a followed cgroup's processes read.
    listed_at: f64,
    /// The recorder's own /proc/<pid>/stat, kept open.
    own_stat: File,
    /// Its reaped ticks as last read, the last pid given out then, and the ticks since.
    own_read: Option<OwnRead>,
    buffer: ReadBuffer,
    /// Pids to read, with the inode of their /proc entry when a listing gave it.
    candidates: Vec<(u32, Option<u64>)>,
    previous: Option<Previous>,
    /// What ended processes' reapers owe the tree's ticks, and what they reaped that no ended
    /// process accounted for, from the tick before: a reap that falls between two reads of
    /// a tick shows one tick late.
    reapers: HashMap<u32, Reaped>,
    /// Ticks taken back beyond what a tick counted, taken from the next ticks.
    owed_ticks: i64,
    /// Every exit the kernel reports, and what sorts them; None: the tree is seen by
    /// sampling alone.
    exits: Option<(ExitRecords, Exits)>,
    /// A followed cgroup's CPU total, by which the still processes are passed over unread
    /// when it shows that none of them ran; None when following a pid, or the cgroup has
    /// no total to read.
    cgroup_cpu: Option<CgroupCpu>,
    /// This tick's reads of the tree's processes explained all that the cgroup's CPU total
    /// grew by (false without a total): no process that the tree does not know ran in it.
    cgroup_cpu_explained: bool,
}

/// A followed cgroup's CPU total and its value at the previous tick.
struct CgroupCpu {
    total: CpuTotal,
    last_ns: Option<u64>,
}

impl CgroupCpu {
    /// Its CPU since the previous tick, ns; None at the first tick or when it cannot be read.
    fn ran_ns(&mut self, buffer: &mut ReadBuffer) -> Option<u64> {
        let now = self.total.read_ns(buffer);
        let before = std::mem::replace(&mut self.last_ns, now);
        Some(now?.saturating_sub(before?))
    }
}

/// Where the kernel's report of every exit comes from.
enum ExitRecords {
    Taskstats(Taskstats),
    /// The taskstats listener of the recorders that share the machine's reads.
    SharedTaskstats(ExitReader),
    ProcConnector(ProcConnector),
}

impl ExitRecords {
    /// The first of the sources `way` allows that the machine and the privilege do;
    /// taskstats through the `shared` listener when there is one.
    fn open(
        way: ProcessExits,
        proc_root: &Path,
        sys_root: &Path,
        shared: Option<&SharedMachine>,
    ) -> Option<ExitRecords> {
        let taskstats = || {
            let possible = sys_root.join("devices/system/cpu/possible");
            let possible = std::fs::read_to_string(possible).unwrap_or_default();
            match shared {
                Some(shared) => shared
                    .exit_reader(&possible)
                    .map(ExitRecords::SharedTaskstats),
                None => Taskstats::open(&possible).ok().map(ExitRecords::Taskstats),
            }
        };
        let proc_connector = || {
            let connector = ProcConnector::open(proc_root).ok();
            connector.map(ExitRecords::ProcConnector)
        };
        match way {
            ProcessExits::Auto => taskstats().or_else(proc_connector),
            ProcessExits::Taskstats => taskstats(),
            ProcessExits::ProcConnector => proc_connector(),
            ProcessExits::Sampling => None,
        }
    }

    fn drain(&mut self, exits: &mut Vec<TaskExit>) {
        match self {
            ExitRecords::Taskstats(taskstats) => taskstats.drain(exits),
            ExitRecords::SharedTaskstats(reader) => reader.drain(exits),
            ExitRecords::ProcConnector(connector) => connector.drain(exits),
        }
    }

    fn overruns(&self) -> u64 {
        match self {
            ExitRecords::Taskstats(taskstats) => taskstats.overruns(),
            ExitRecords::SharedTaskstats(reader) => reader.overruns(),
            ExitRecords::ProcConnector(connector) => connector.overruns(),
        }
    }

    fn process_cpu(&self) -> ProcessCpu {
        match self {
            ExitRecords::Taskstats(taskstats) => taskstats.process_cpu(),
            ExitRecords::SharedTaskstats(reader) => reader.process_cpu(),
            ExitRecords::ProcConnector(connector) => connector.process_cpu(),
        }
    }

    fn way(&self) -> ProcessExits {
        match self {
            ExitRecords::Taskstats(_) | ExitRecords::SharedTaskstats(_) => ProcessExits::Taskstats,
            ExitRecords::ProcConnector(_) => ProcessExits::ProcConnector,
        }
    }
}

/// One reaper's side of the ledger, carried for one tick.
#[derive(Clone, Copy, Default)]
struct Reaped {
    /// Ticks of its ended children counted already, not yet found in its reaped time.
    pending: u64,
    /// Growth of its reaped time not yet matched by an ended child.
    unmatched: u64,
}

#[derive(Clone, Copy)]
struct OwnRead {
    reaped_ticks: u64,
    last_pid: Option<u32>,
    ticks_since: u32,
}

struct Previous {
    time: f64,
    cpu: CpuTimes,
    /// Children mode: the recorder's reaped-children ticks.
    own_reaped_ticks: u64,
}

impl ProcessTree {
    pub(crate) fn probe(
        proc_root: &Path,
        follow: &Follow,
        interval: Duration,
        clock: Clock,
        machine: &Machine,
    ) -> Option<ProcessTree> {
        machine_now(machine)?;
        let mut tree = ProcessTree {
            proc_root: proc_root.to_owned(),
            own_stat: File::open(stat_path(proc_root, std::process::id())).ok()?,
            own_read: None,
            follow: follow.clone(),
            own_pid: std::process::id(),
            units: StatUnits::probe(clock)?,
            interval_ms: interval.as_secs_f64() * 1000.0,
            processes: HashMap::new(),
            others: HashMap::new(),
            tick: 0,
            listed_at_pid: None,
            listed_at: f64::NEG_INFINITY,
            buffer: ReadBuffer::new(),
            candidates: Vec::new(),
            previous: None,
            reapers: HashMap::new(),
            owed_ticks: 0,
            exits: None,
            cgroup_cpu: match follow {
                Follow::Cgroup(path) => CpuTotal::open(path).map(|total| CgroupCpu {
                    total,
                    last_ns: None,
                }),
                Follow::Pid(_) | Follow::Children => None,
            },
            cgroup_cpu_explained: false,
        };
        tree.read_own_reaped_ticks()?;
        match *follow {
            Follow::Pid(root) => {
                tree.candidates.push((root, None));
                tree.admit_candidates(clock.now_ms(), machine, |_| true);
            }
            Follow::Children => tree.list_before_children(clock.now_ms(), machine),
            Follow::Cgroup(_) => {}
        }
        Some(tree)
    }

    /// Lets a process that started before the log be drawn from its start, back to
    /// `earliest` (log ms, at most 0).
    pub(crate) fn starting_from(mut self, earliest: f64) -> ProcessTree {
        self.units.earliest_ms = earliest.min(0.0);
        self
    }

    /// Counts every exit of the task, however short, when the kernel reports exits
    /// (taskstats or the proc connector, as `way` allows: root or CAP_NET_ADMIN), taskstats
    /// through the listener of the recorders that `shared` the machine's reads;
    /// `marker_min_ms`: the shortest life that gets a "Process" marker.
    pub(crate) fn counting_exits(
        mut self,
        way: ProcessExits,
        sys_root: &Path,
        shared: Option<&SharedMachine>,
        marker_min_ms: f64,
    ) -> ProcessTree {
        let records = ExitRecords::open(way, &self.proc_root, sys_root, shared);
        self.exits = records.map(|records| (records, Exits::new(marker_min_ms)));
        self
    }

    /// How the tree's processes are seen, for `meta.tcProfile.processExits`.
    pub(crate) fn exits_seen_by(&self) -> &'static str {
        let way = self.exits.as_ref().map(|(records, _)| records.way());
        way.unwrap_or(ProcessExits::Sampling).name()
    }

    /// What the CPU of the kernel's exits is counted from, for `meta.tcProfile.processCpu`;
    /// None when the tree is seen by sampling alone.
    pub(crate) fn exits_cpu(&self) -> Option<&'static str> {
        let records = self.exits.as_ref().map(|(records, _)| records);
        records.map(|records| records.process_cpu().name())
    }

    /// Places the exits the kernel reported since the last tick.
    fn count_exits(&mut self, now: f64, gone: &[(u32, Process)], last: bool, out: &mut Lines) {
        let Some((records, exits)) = &mut self.exits else {
            return;
        };
        let mut fresh = Vec::new();
        records.drain(&mut fresh);
        let tree = TreeView {
            processes: &self.processes,
            gone,
            root_parent: (self.follow == Follow::Children).then_some(self.own_pid),
            units: &self.units,
        };
        exits.tick(fresh, records.overruns(), now, &tree, last, out);
    }

    /// The recorder's reaped-children ticks, in Children mode (0 in the others, which do not
    /// count them). They grow only when it reaps a child: one of the tree (gone, or a
    /// zombie now), or one made since the last read, which gave out a pid. So its stat, a
    /// system call of the ten of a tick, is read only then, or once in
    /// [`OWN_STAT_EVERY_TICKS`] for a child that discovery missed.
    fn own_reaped_ticks(&mut self, gone: &[(u32, Process)], last_pid: Option<u32>) -> Option<u64> {
        if self.follow != Follow::Children {
            return Some(0);
        }
        let own_pid = self.own_pid;
        let live = self.processes.values().filter(|p| p.stat.is_zombie());
        let mut reaping = gone.iter().map(|(_, p)| p).chain(live);
        let reaping = reaping.any(|p| p.stat.ppid == own_pid);
        match &mut self.own_read {
            Some(read)
                if !reaping
                    && last_pid.is_some()
                    && read.last_pid == last_pid
                    && read.ticks_since + 1 < OWN_STAT_EVERY_TICKS =>
            {
                read.ticks_since += 1;
                Some(read.reaped_ticks)
            }
            _ => {
                let reaped_ticks = self.read_own_reaped_ticks()?;
                self.own_read = Some(OwnRead {
                    reaped_ticks,
                    last_pid,
                    ticks_since: 0,
                });
                Some(reaped_ticks)
            }
        }
    }

    fn read_own_reaped_ticks(&mut self) -> Option<u64> {
        let (stat, _) = parse_stat(self.buffer.head_of(&self.own_stat)?)?;
        Some(stat.reaped_ticks)
    }

    /// Re-reads the tree's processes; returns those that are gone. Following a cgroup, its
    /// CPU total is read first, then the processes that may have run: all but those found
    /// still at their last read whose stat is not yet due ([`Process::may_pass_over`]).
    /// When the total grew by no more than what those used (and [`UNEXPLAINED_CPU_NS`]),
    /// no still one can have run: they are passed over unread. Else they are read too: a
    /// process that ended, or moved in, or was not read the tick before, only costs reads.
    /// The order makes a process that runs between the two reads count against the total
    /// (its run is in its own read, not in the total's): a skip it hides is made good by
    /// its stat's read once in ten ticks. Only a followed cgroup: the tree of a followed
    /// pid may have processes outside its cgroup, whose CPU the total would not show.
    fn refresh(&mut self, now: f64) -> Vec<(u32, Process)> {
        let buffer = &mut self.buffer;
        let cgroup_ran = self.cgroup_cpu.as_mut().and_then(|cpu| cpu.ran_ns(buffer));
        let proc_root = &self.proc_root;
        let mut deferred = Vec::new();
        let mut read_ran_ns = 0;
        let mut gone: Vec<(u32, Process)> = self
            .processes
            .extract_if(|&pid, process| {
                if cgroup_ran.is_some() && process.may_pass_over() {
                    deferred.push(pid);
                    return false;
                }
                let gone = reread(pid, process, proc_root, buffer, now);
                read_ran_ns += process.ran_ns();
                gone
            })
            .collect();
        let explained = |read_ns: u64| {
            cgroup_ran.is_some_and(|ran| ran.saturating_sub(read_ns) <= UNEXPLAINED_CPU_NS)
        };
        let none_ran = explained(read_ran_ns);
        for pid in deferred {
            let Some(process) = self.processes.get_mut(&pid) else {
                continue;
            };
            if none_ran {
                process.pass_over(now);
            } else if reread(pid, process, proc_root, buffer, now) {
                gone.extend(self.processes.remove_entry(&pid));
            } else {
                read_ran_ns += process.ran_ns();
            }
        }
        self.cgroup_cpu_explained = explained(read_ran_ns);
        for process in self.processes.values_mut() {
            if gone.iter().any(|(pid, _)| *pid == process.stat.ppid) {
                process.parent_ended();
            }
        }
        gone
    }

    /// The tree's CPU ticks since the previous tick. A process that ended was counted up
    /// to the previous tick; the reaped time of the tree's process that reaped it (or of
    /// the recorder, for the command) now holds all of it, so what was counted is taken
    /// back out, as far as that reaped time grew: a child reaped by nobody in the tree (its
    /// parent ignored SIGCHLD, or died first) is not taken out.
    fn tree_ticks(&mut self, gone: &[(u32, Process)], own_reaped: u64, previous: &Previous) -> u64 {
        let mut ticks: i64 = 0;
        for process in self.processes.values_mut() {
            let total = process.stat.total_ticks();
            ticks += total.saturating_sub(process.counted_ticks) as i64;
            process.counted_ticks = total;
        }
        let children = self.follow == Follow::Children;
        let own_increase = own_reaped.saturating_sub(previous.own_reaped_ticks);
        if children {
            ticks += own_increase as i64;
        }
        let mut due: HashMap<u32, u64> = HashMap::new();
        for (_, process) in gone {
            if let Some(reaper) = self.reaper_of(process.stat.ppid, gone) {
                *due.entry(reaper).or_default() += process.counted_ticks;
            }
        }
        let increase = |pid: u32| match self.processes.get(&pid) {
            Some(process) => process.reaped_increase,
            None if children && pid == self.own_pid => own_increase,
            None => 0,
        };
        let mut reapers: Vec<u32> = due.keys().chain(self.reapers.keys()).copied().collect();
        reapers.extend(
            self.processes
                .iter()
                .filter(|(_, p)| p.reaped_increase > 0)
                .map(|(&pid, _)| pid),
        );
        if children && own_increase > 0 {
            reapers.push(self.own_pid);
        }
        reapers.sort_unstable();
        reapers.dedup();
        let mut ledger = HashMap::new();
        for pid in reapers {
            let before = self.reapers.get(&pid).copied().unwrap_or_default();
            let (due_now, increase_now) = (due.get(&pid).copied().unwrap_or(0), increase(pid));
            let available = increase_now + before.unmatched;
            let needed = due_now + before.pending;
            let taken = available.min(needed);
            ticks -= taken as i64;
            let after = Reaped {
                pending: due_now.min(needed - taken),
                unmatched: increase_now.min(available - taken),
            };
            if after.pending > 0 || after.unmatched > 0 {
                ledger.insert(pid, after);
            }
        }
        self.reapers = ledger;
        ticks += self.owed_ticks;
        self.owed_ticks = ticks.min(0);
        ticks.max(0) as u64
    }

    /// The process that reaps a child of `ppid` among those still here: `ppid` itself, or
    /// the nearest ancestor past those that ended with it; None outside the tree.
    fn reaper_of(&self, mut ppid: u32, gone: &[(u32, Process)]) -> Option<u32> {
        // Each step goes one generation up among the ended: at most that many steps.
        for _ in 0..=gone.len() {
            if self.processes.contains_key(&ppid)
                || (self.follow == Follow::Children && ppid == self.own_pid)
            {
                return Some(ppid);
            }
            ppid = gone.iter().find(|(pid, _)| *pid == ppid)?.1.stat.ppid;
        }
        None
    }

    /// A marker for a process that has ended, if it was seen alive an interval after it
    /// started or used CPU. It ends at `now`: at most one interval after the process did.
    fn end(&self, pid: u32, process: &Process, now: f64, status: String, out: &mut Lines) {
        let marker = process.marker(pid, now, status, &self.units);
        let lived = process.last_seen - marker.start_time;
        if lived >= self.interval_ms || process.stat.own_ticks > 0 {
            out.marker(marker);
        }
    }
}

impl Source for ProcessTree {
    fn names(&self) -> Vec<&'static str> {
        match self.exits {
            Some(_) => vec![source::PROCESSES, source::PROCESS_EXITS],
            None => vec![source::PROCESSES],
        }
    }

    fn pace_ms(&self) -> f64 {
        if self.processes.len() > BIG_TREE {
            BIG_TREE_PACE_MS
        } else {
            0.0
        }
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        self.sample(now, false, out);
    }

    fn last_tick(&mut self, now: f64, out: &mut Lines) {
        self.sample(now, true, out);
        for (&pid, process) in &self.processes {
            if !process.ended {
                self.end(pid, process, now, "still running".to_owned(), out);
            }
        }
    }
}

impl ProcessTree {
    /// A tick; the `last` writes out what the exits' totals hold.
    fn sample(&mut self, now: f64, last: bool, out: &mut Lines) {
        let gone = self.refresh(now);
        let last_pid = out.machine.last_pid;
        self.discover(now, out.machine);
        self.count_exits(now, &gone, last, out);
        // With the kernel's exits, their markers are the ended processes'.
        let sampled_ends = self.exits.is_none();
        for (pid, process) in &gone {
            if !process.ended && sampled_ends {
                self.end(*pid, process, now, "unknown".to_owned(), out);
            }
        }
        let mut newly_ended = Vec::new();
        for (&pid, process) in &self.processes {
            if process.stat.is_zombie() && !process.ended {
                if sampled_ends {
                    let status = describe_status(process.stat.exit_status);
                    self.end(pid, process, now, status, out);
                }
                newly_ended.push(pid);
            }
        }
        for pid in newly_ended {
            if let Some(process) = self.processes.get_mut(&pid) {
                process.ended = true;
            }
        }
        let (Some((cpu, used)), Some(own_reaped)) = (
            machine_now(out.machine),
            self.own_reaped_ticks(&gone, last_pid),
        ) else {
            self.previous = None;
            return;
        };
        let current = Previous {
            time: now,
            cpu,
            own_reaped_ticks: own_reaped,
        };
        let Some(previous) = self.previous.replace(current) else {
            for process in self.processes.values_mut() {
                process.counted_ticks = process.stat.total_ticks();
            }
            return;
        };
        let tree = self.tree_ticks(&gone, own_reaped, &previous) as f64;
        let delta = |i: usize| cpu.0[i].saturating_sub(previous.cpu.0[i]) as f64;
        let all: f64 = (0..8).map(delta).sum();
        // Busy: user (guest included), nice, system, irq, softirq.
        let busy = delta(0) + delta(1) + delta(2) + delta(5) + delta(6);
        let live = self.processes.values().filter(|p| !p.stat.is_zombie());
        let (count, rss_pages) = live.fold((0, 0), |(n, rss), p| (n + 1, rss + p.stat.rss_pages));
        let sample = TaskSample {
            tree,
            all,
            busy,
            processes: count,
            rss: rss_pages * self.units.page_size,
            used,
        };
        sample.write(previous.time, now, out);
    }
}

/// Reads `process` again (its stat; while it is still, its clock, and its statm when due);
/// whether it is gone.
fn reread(
    pid: u32,
    process: &mut Process,
    proc_root: &Path,
    buffer: &mut ReadBuffer,
    now: f64,
) -> bool {
    match process.due(buffer) {
        Due::Nothing => {
            process.seen_still(now);
            return false;
        }
        Due::Rss if process.read_rss(buffer) => {
            process.seen_still(now);
            return false;
        }
        Due::Rss | Due::Stat => {}
    }
    let reopened;
    let file = match &process.file {
        Some(file) => &**file,
        None => match File::open(stat_path(proc_root, pid)) {
            Ok(file) => {
                reopened = file;
                &reopened
            }
            Err(_) => return true,
        },
    };
    let Some((stat, comm)) = buffer.head_of(file).and_then(parse_stat) else {
        return true;
    };
    if stat.start_ticks != process.stat.start_ticks {
        return true; // the pid was reused (only possible without a kept file)
    }
    if comm != process.comm || (!process.command_known && !stat.is_zombie()) {
        process.comm = comm.to_owned();
        process.describe(buffer, &proc_root.join(pid.to_string()));
    }
    process.reaped_increase = stat.reaped_ticks.saturating_sub(process.stat.reaped_ticks);
    process.stat = stat;
    process.peak_rss_pages = process.peak_rss_pages.max(stat.rss_pages);
    if !stat.is_zombie() {
        process.last_seen = now;
    }
    false
}

/// CPU times of the machine and the memory it uses.
fn machine_now(machine: &Machine) -> Option<(CpuTimes, u64)> {
    Some((machine.cpu?, machine.memory.as_ref()?.used()))
}

#[cfg(test)]
mod tests;
