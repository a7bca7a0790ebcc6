//! How the process tree finds its processes: /proc listed whole (others remembered by the
//! inode of their entry, so that each is read once), or only the pids given out since the
//! last look read one by one; and the processes found admitted by their parent.

use super::{Follow, ProcessTree, LISTING_EVERY_TICKS, PIDS_READ_ONE_BY_ONE};
use crate::sources::machine::Machine;
use crate::sources::process_tree::process::{
    parse_stat, stat_path, KeptFile, Process, RunTime, Stat,
};
use crate::sources::Source;
use std::fs::{self, File};

impl ProcessTree {
    /// Lists /proc once before the recorder has children (`run` starts its command after
    /// the probe): every process listed is then another's, for good (a process's parent
    /// changes only to an ancestor of it that reaps orphans), and is not read. The first
    /// listing would otherwise read the stat of every process on the machine, the costliest
    /// part of a short recording's start. With children already, they are read as at a tick.
    pub(super) fn list_before_children(&mut self, now: f64, machine: &Machine) {
        self.list_unknown_processes(now, machine);
        // Asked after the listing: a child started during it is among those found here.
        if self.has_no_children() {
            let tick = self.tick;
            for (pid, inode) in std::mem::take(&mut self.candidates) {
                if let Some(inode) = inode {
                    self.others.insert(pid, (inode, tick));
                }
            }
        } else {
            let own_pid = self.own_pid;
            self.admit_candidates(now, machine, |parent| parent == own_pid);
        }
    }

    /// Whether no thread of the recorder's process has a child (/proc/PID/task/TID/children);
    /// false when that cannot be told.
    fn has_no_children(&mut self) -> bool {
        let tasks = self.proc_root.join(self.own_pid.to_string()).join("task");
        let Ok(entries) = fs::read_dir(tasks) else {
            return false;
        };
        entries.flatten().all(|entry| {
            let children = self.buffer.read_path(&entry.path().join("children"));
            children.is_ok_and(|text| text.iter().all(u8::is_ascii_whitespace))
        })
    }

    /// Finds the processes that joined the tree since the previous tick.
    pub(super) fn discover(&mut self, now: f64, machine: &Machine) {
        match &self.follow {
            Follow::Cgroup(path) => {
                let procs = path.join("cgroup.procs");
                let may_have_new = self.cgroup_may_have_new(now, machine);
                if let Some(text) = may_have_new
                    .then(|| self.buffer.read_text(&procs))
                    .flatten()
                {
                    let listed = text.lines().filter_map(|l| l.trim().parse().ok());
                    let known = &self.processes;
                    let new = listed.filter(|pid| !known.contains_key(pid));
                    self.candidates.extend(new.map(|pid| (pid, None)));
                }
                self.admit_candidates(now, machine, |_| true);
            }
            Follow::Children | Follow::Pid(_) => {
                self.list_unknown_processes(now, machine);
                let own_pid = self.own_pid;
                let children = self.follow == Follow::Children;
                self.admit_candidates(now, machine, |parent| children && parent == own_pid);
            }
        }
    }

    /// Whether the followed cgroup may hold a process the tree does not know, so that its
    /// cgroup.procs is read (the costliest read of its tick: the kernel walks its tasks):
    /// a pid was given out since the last read (a fork), its CPU total grew by more than
    /// the tree's processes used (one moved in and ran), there is no total, or it was read
    /// [`LISTING_EVERY_TICKS`] ticks ago (one moved in that has not run yet, found that late).
    fn cgroup_may_have_new(&mut self, now: f64, machine: &Machine) -> bool {
        let last_pid = machine.last_pid;
        let quiet = self.cgroup_cpu_explained
            && last_pid.is_some()
            && last_pid == self.listed_at_pid
            && now - self.listed_at < self.listing_pace_ms();
        if !quiet {
            (self.listed_at_pid, self.listed_at) = (last_pid, now);
        }
        !quiet
    }

    /// Puts into `candidates` the processes that are neither in the tree nor known to be
    /// outside it: the pids given out since the last look, or every listed process (the
    /// slot's shared listing, on a daemon's grid).
    fn list_unknown_processes(&mut self, now: f64, machine: &Machine) {
        let last_pid = machine.last_pid;
        if last_pid.is_some() && last_pid == self.listed_at_pid {
            return;
        }
        let previous = std::mem::replace(&mut self.listed_at_pid, last_pid);
        if let (Some(from), Some(to)) = (previous, last_pid) {
            let few = from < to && to - from <= PIDS_READ_ONE_BY_ONE;
            if few && now - self.listed_at < self.listing_pace_ms() {
                let known = &self.processes;
                let new = (from + 1..=to).filter(|pid| !known.contains_key(pid));
                self.candidates.extend(new.map(|pid| (pid, None)));
                return;
            }
        }
        self.listed_at = now;
        self.tick += 1;
        let Some(listing) = machine.list_processes(&self.proc_root) else {
            return;
        };
        for &(pid, inode) in listing.iter() {
            if self.processes.contains_key(&pid) {
                continue;
            }
            match self.others.get_mut(&pid) {
                Some((known, listed)) if *known == inode => *listed = self.tick,
                _ => self.candidates.push((pid, Some(inode))),
            }
        }
        let tick = self.tick;
        self.others.retain(|_, (_, listed)| *listed == tick);
    }

    /// How long pids are read one by one before /proc is listed whole again.
    pub(super) fn listing_pace_ms(&self) -> f64 {
        LISTING_EVERY_TICKS * self.interval_ms.max(self.pace_ms())
    }

    /// Reads the candidates and admits those whose parent is in the tree (or, by
    /// `is_root_parent`, is the tree's root), until no more join; the rest are others.
    pub(super) fn admit_candidates(
        &mut self,
        now: f64,
        machine: &Machine,
        is_root_parent: impl Fn(u32) -> bool,
    ) {
        // A v1 cgroup.procs may list a pid twice.
        self.candidates.sort_unstable();
        self.candidates.dedup_by_key(|&mut (pid, _)| pid);
        let mut read = self.read_candidates(machine);
        let whole_list = !matches!(self.follow, Follow::Children | Follow::Pid(_));
        loop {
            let joining: Vec<usize> = (0..read.len())
                .filter(|&i| {
                    let ppid = read[i].2.ppid;
                    whole_list || is_root_parent(ppid) || self.processes.contains_key(&ppid)
                })
                .collect();
            if joining.is_empty() {
                break;
            }
            for i in joining.into_iter().rev() {
                let (pid, _, stat, comm) = read.swap_remove(i);
                self.admit(pid, stat, comm, now);
            }
        }
        // Only a listing forgets others, so only a listing's are remembered: a pid read one
        // by one is not read again that way, and remembering it would grow without end.
        for (pid, inode, ..) in read {
            if let Some(inode) = inode {
                self.others.insert(pid, (inode, self.tick));
            }
        }
    }

    /// The candidates' stats (processes, not threads), read now or, on the shared grid,
    /// taken from the slot's one read of each for every tree.
    fn read_candidates(&mut self, machine: &Machine) -> Vec<(u32, Option<u64>, Stat, Vec<u8>)> {
        let candidates = std::mem::take(&mut self.candidates);
        let mut read = Vec::new();
        let mut keep = |(pid, inode): (u32, Option<u64>), head: Option<&[u8]>| {
            match head.and_then(parse_stat) {
                Some((stat, comm)) if !stat.thread => read.push((pid, inode, stat, comm.to_vec())),
                _ => {} // a pid read one by one: given to a process that ended, or to none
            }
        };
        let (proc_root, buffer) = (&self.proc_root, &mut self.buffer);
        // Files are closed once read: the first listing reads every process of the machine.
        let open = |pid| File::open(stat_path(proc_root, pid)).ok();
        match machine.shared_stats() {
            Some(shared) => {
                let read = |pid| buffer.head_of(&open(pid)?).map(Box::from);
                shared.each(candidates, read, &mut keep);
            }
            None => {
                for candidate in candidates {
                    keep(
                        candidate,
                        open(candidate.0).and_then(|f| buffer.head_of(&f)),
                    );
                }
            }
        }
        read
    }

    fn admit(&mut self, pid: u32, stat: Stat, comm: Vec<u8>, now: f64) {
        let file = KeptFile::open(&stat_path(&self.proc_root, pid));
        // A clock names a pid, not a process: read only while the stat file kept open
        // tells a reused pid (see `RunClock`).
        let run_time = file
            .as_ref()
            .and_then(|_| RunTime::open(&self.proc_root, pid));
        // Time used before the first tick is before the recording: not counted.
        let counted_ticks = if self.previous.is_none() {
            stat.total_ticks()
        } else {
            0
        };
        let process = Process {
            file,
            run_time,
            stat,
            counted_ticks,
            reaped_increase: 0,
            peak_rss_pages: stat.rss_pages,
            last_seen: now,
            comm,
            name: String::new(),
            command: String::new(),
            command_known: false,
            ended: false,
        };
        let process = self.processes.entry(pid).insert_entry(process).into_mut();
        process.describe(&mut self.buffer, &self.proc_root.join(pid.to_string()));
    }
}
