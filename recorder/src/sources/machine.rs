//! What several sources need of the machine, read once a tick: /proc/stat and
//! /proc/meminfo (the system tracks and the task's process tree; among the costliest files
//! of a tick), and the pid last given out (the process tree's new-pid check), from
//! /proc/loadavg, read again only after /proc/stat has counted a fork. The recorders of one
//! process (the daemon's machine segment and its tasks) can share one read a tick
//! ([`SharedMachine`]), their process trees one listing of /proc ([`SharedListing`]) and
//! one taskstats listener (`shared_exits`).

use crate::sources::procfs::{decimal, fields, lines, numbers, ReadBuffer};
#[cfg(target_os = "linux")]
use crate::sources::shared_exits::{ExitReader, SharedExits};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The machine as read at one tick; None where a file could not be read.
#[derive(Clone, Default)]
pub(crate) struct Machine {
    pub(crate) cpu: Option<CpuTimes>,
    pub(crate) memory: Option<MemInfo>,
    /// The pid most recently given out on the machine.
    pub(crate) last_pid: Option<u32>,
    /// /proc's listing as the sharers take it in this tick's slot, when the tick is on the
    /// shared grid.
    pub(crate) listing: Option<(Arc<SharedListing>, u128)>,
}

impl Machine {
    /// The pids of /proc and the inodes of their entries: this slot's shared listing, or
    /// listed now.
    pub(crate) fn list_processes(&self, proc_root: &Path) -> Option<Listing> {
        match &self.listing {
            Some((shared, slot)) => shared.list(*slot),
            None => list_processes(proc_root).map(Arc::new),
        }
    }

    /// The shared reads of new processes' stat files in this tick's slot, when the tick is
    /// on the shared grid.
    pub(crate) fn shared_stats(&self) -> Option<SlotStats<'_>> {
        let (shared, slot) = self.listing.as_ref()?;
        Some(SlotStats {
            stats: &shared.stats,
            slot: *slot,
        })
    }
}

/// The heads of /proc/PID/stat read in one slot, by pid (None: it could not be read).
type StatHeads = HashMap<u32, Option<Box<[u8]>>>;

/// The stat files of the processes new to the trees, read once a slot for them all: each
/// tree reads the stat of every pid given out since its last look (or of every process a
/// listing finds that it does not know) to learn the parent, so that 16 trees read each
/// process a busy machine starts 16 times (16 tasks at 0.1 s, other builds running: a
/// sixth of the daemon's CPU, in do_task_stat and the opens). Held for the slot only.
pub(crate) struct SlotStats<'a> {
    stats: &'a Mutex<Option<(u128, StatHeads)>>,
    slot: u128,
}

impl SlotStats<'_> {
    /// Calls `each` with every item of `pids` (a pid and what goes with it) and the head of
    /// its stat as read in this slot: by `read` for the first tree to ask for it, taken from
    /// that read by the others.
    pub(crate) fn each<T>(
        &self,
        pids: impl IntoIterator<Item = (u32, T)>,
        mut read: impl FnMut(u32) -> Option<Box<[u8]>>,
        mut each: impl FnMut((u32, T), Option<&[u8]>),
    ) {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        if stats.as_ref().is_none_or(|(slot, _)| *slot != self.slot) {
            *stats = Some((self.slot, HashMap::new()));
        }
        let Some((_, heads)) = stats.as_mut() else {
            return;
        };
        for item in pids {
            let head = heads.entry(item.0).or_insert_with(|| read(item.0));
            each(item, head.as_deref());
        }
    }
}

/// The pids of /proc and the inodes of their entries, as listed once.
pub(crate) type Listing = Arc<Vec<(u32, u64)>>;

/// The pids of `proc_root` and the inodes of their entries.
#[cfg(target_os = "linux")]
fn list_processes(proc_root: &Path) -> Option<Vec<(u32, u64)>> {
    use std::os::unix::fs::DirEntryExt;
    let entries = std::fs::read_dir(proc_root).ok()?;
    let pid = |entry: &std::fs::DirEntry| entry.file_name().to_str()?.parse::<u32>().ok();
    let listed = entries.flatten().filter_map(|e| Some((pid(&e)?, e.ino())));
    Some(listed.collect())
}

/// Other systems have no /proc to list (their sources find processes their own way).
#[cfg(not(target_os = "linux"))]
fn list_processes(_: &Path) -> Option<Vec<(u32, u64)>> {
    None
}

/// /proc listed once a slot for every process tree of the sharers: each tree lists it
/// to find new processes (once in ten of its ticks, or at every tick while the machine gives
/// out more pids than it reads one by one: a machine busy building), and 16 trees took a
/// quarter of the daemon's sampling at 1 s listing it each.
pub(crate) struct SharedListing {
    proc_root: PathBuf,
    last: Mutex<Option<(u128, Listing)>>,
    listings: AtomicU64,
    /// The slot's reads of new processes' stat files ([`SlotStats`]).
    stats: Mutex<Option<(u128, StatHeads)>>,
}

impl SharedListing {
    /// This slot's listing: listed by the first tree to ask in it.
    fn list(&self, slot: u128) -> Option<Listing> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((listed_in, listing)) = &*last {
            if *listed_in == slot {
                return Some(Arc::clone(listing));
            }
        }
        let listing = Arc::new(list_processes(&self.proc_root)?);
        self.listings.fetch_add(1, Ordering::Relaxed);
        *last = Some((slot, Arc::clone(&listing)));
        Some(listing)
    }
}

/// /proc/stat, /proc/meminfo and /proc/loadavg, kept open.
pub(crate) struct MachineFiles {
    stat: Option<File>,
    meminfo: Option<File>,
    loadavg: Option<File>,
    buffer: ReadBuffer,
    /// The forks counted and the last pid as last read: without a fork since, no pid was
    /// given out, and /proc/loadavg (a system call of the six of a tick) is not read.
    forked: Option<(u64, Option<u32>)>,
}

impl MachineFiles {
    pub(crate) fn open(proc_root: &Path) -> MachineFiles {
        let open = |name: &str| File::open(proc_root.join(name)).ok();
        MachineFiles {
            stat: open("stat"),
            meminfo: open("meminfo"),
            loadavg: open("loadavg"),
            buffer: ReadBuffer::new(),
            forked: None,
        }
    }

    pub(crate) fn read(&mut self) -> Machine {
        let stat = self
            .stat
            .as_ref()
            .and_then(|file| self.buffer.head_of(file));
        let forks = stat.and_then(parse_forks);
        let cpu = stat.and_then(parse_cpu);
        let meminfo = self
            .meminfo
            .as_ref()
            .and_then(|file| self.buffer.head_of(file));
        Machine {
            cpu,
            memory: meminfo.and_then(parse_meminfo),
            last_pid: self.last_pid(forks),
            listing: None,
        }
    }

    fn last_pid(&mut self, forks: Option<u64>) -> Option<u32> {
        match self.forked {
            Some((counted, last_pid)) if forks == Some(counted) => last_pid,
            _ => {
                let loadavg = self
                    .loadavg
                    .as_ref()
                    .and_then(|file| self.buffer.head_of(file));
                let load = loadavg.and_then(parse_loadavg);
                let last_pid = load.map(|load| load.last_pid);
                self.forked = forks.map(|forks| (forks, last_pid));
                last_pid
            }
        }
    }
}

/// The machine as read under `proc_root` now: for unit tests.
#[cfg(test)]
pub(crate) fn machine_of(proc_root: &Path) -> Machine {
    MachineFiles::open(proc_root).read()
}

/// The `processes` line of /proc/stat: the forks (threads too) since boot. Looked for from
/// the end, which it is near, past the per-CPU and interrupt lines of a big machine.
fn parse_forks(stat: &[u8]) -> Option<u64> {
    let mut lines_from_end = stat.rsplit(|&b| b == b'\n');
    let forks = lines_from_end.find_map(|l| l.strip_prefix(b"processes "))?;
    numbers(forks).next()?
}

/// The machine's files read once a tick for every recorder that shares them: the daemon's
/// machine segment and its tasks' parts, which would each read /proc/stat and meminfo at
/// every tick otherwise (16 tasks: 17 reads a tick). Their sampler threads tick on one grid
/// (every `interval` from the same origin); the first to tick in a slot of it reads the
/// files, the others take that read. A tick off the grid (a recorder's first, its last, one
/// asked for) reads them afresh, since it must see the machine as it is then.
pub struct SharedMachine {
    origin: Instant,
    /// The grid's step, in ns (at least 1).
    step_ns: u128,
    read: Mutex<SlotRead>,
    reads: AtomicU64,
    listing: Arc<SharedListing>,
    /// The sharers' one taskstats listener while a tree reads it (closed with the last).
    #[cfg(target_os = "linux")]
    exits: Mutex<std::sync::Weak<SharedExits>>,
}

struct SlotRead {
    files: MachineFiles,
    /// The slot of the grid the read was taken in, and the read.
    last: Option<(u128, Machine)>,
}

impl SharedMachine {
    /// The machine's files, opened once, on a grid of `interval` that starts now.
    pub fn new(interval: Duration) -> SharedMachine {
        SharedMachine::under(Path::new("/proc"), interval)
    }

    pub(crate) fn under(proc_root: &Path, interval: Duration) -> SharedMachine {
        SharedMachine {
            origin: Instant::now(),
            step_ns: interval.as_nanos().max(1),
            read: Mutex::new(SlotRead {
                files: MachineFiles::open(proc_root),
                last: None,
            }),
            reads: AtomicU64::new(0),
            listing: Arc::new(SharedListing {
                proc_root: proc_root.to_owned(),
                last: Mutex::new(None),
                listings: AtomicU64::new(0),
                stats: Mutex::new(None),
            }),
            #[cfg(target_os = "linux")]
            exits: Mutex::new(std::sync::Weak::new()),
        }
    }

    /// A reader of the sharers' one taskstats listener, opened for the first reader (on the
    /// CPUs of `possible_cpus`); None when it cannot be (no privilege, no taskstats).
    #[cfg(target_os = "linux")]
    pub(crate) fn exit_reader(&self, possible_cpus: &str) -> Option<ExitReader> {
        let mut exits = self.exits.lock().unwrap_or_else(|e| e.into_inner());
        let shared = match exits.upgrade() {
            Some(shared) => shared,
            None => {
                let shared = Arc::new(SharedExits::open(possible_cpus).ok()?);
                *exits = Arc::downgrade(&shared);
                shared
            }
        };
        Some(shared.reader())
    }

    /// How many times /proc was listed for the sharers' process trees.
    pub fn listings(&self) -> u64 {
        self.listing.listings.load(Ordering::Relaxed)
    }

    /// How many times the files were read (a tick of every sharer counted once).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// The first point of the grid at or after `at`.
    pub(crate) fn grid_point_from(&self, at: Instant) -> Instant {
        let since = at.saturating_duration_since(self.origin).as_nanos();
        let slot = since.div_ceil(self.step_ns);
        self.origin + nanos(slot * self.step_ns)
    }

    /// The slot of the grid that `at` falls in.
    pub(crate) fn slot_of(&self, at: Instant) -> u128 {
        at.saturating_duration_since(self.origin).as_nanos() / self.step_ns
    }

    /// The machine for a tick in `slot` of the grid (the slot's one read), or, with None,
    /// as read now.
    pub(crate) fn read(&self, slot: Option<u128>) -> Machine {
        let mut shared = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(slot), Some((read_in, machine))) = (slot, &shared.last) {
            if *read_in == slot {
                let listing = Some((Arc::clone(&self.listing), slot));
                return Machine {
                    listing,
                    ..machine.clone()
                };
            }
        }
        let machine = shared.files.read();
        self.reads.fetch_add(1, Ordering::Relaxed);
        if let Some(slot) = slot {
            shared.last = Some((slot, machine.clone()));
            let listing = Some((Arc::clone(&self.listing), slot));
            return Machine { listing, ..machine };
        }
        shared.last = Some((self.slot_of(Instant::now()), machine.clone()));
        machine
    }
}

impl std::fmt::Debug for SharedMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMachine")
            .field("step_ns", &self.step_ns)
            .field("reads", &self.reads())
            .finish_non_exhaustive()
    }
}

fn nanos(ns: u128) -> Duration {
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// Where a sampler takes the machine from: files of its own, or the process's shared ones.
pub(crate) enum MachineReader {
    Own(MachineFiles),
    Shared(Arc<SharedMachine>),
}

impl MachineReader {
    /// The machine for a tick in `slot` of the shared grid (None: off it, read now).
    pub(crate) fn read(&mut self, slot: Option<u128>) -> Machine {
        match self {
            MachineReader::Own(files) => files.read(),
            MachineReader::Shared(shared) => shared.read(slot),
        }
    }

    /// The shared grid, if any.
    pub(crate) fn grid(&self) -> Option<&SharedMachine> {
        match self {
            MachineReader::Own(_) => None,
            MachineReader::Shared(shared) => Some(shared),
        }
    }
}

/// Jiffies since boot, in /proc/stat's order: user nice system idle iowait irq softirq steal.
#[derive(Clone, Copy, Default)]
pub(crate) struct CpuTimes(pub(crate) [u64; 8]);

/// The first line of /proc/stat, `cpu  ...`: the sum of all CPUs.
fn parse_cpu(stat: &[u8]) -> Option<CpuTimes> {
    let line = lines(stat).find_map(|l| l.strip_prefix(b"cpu "))?;
    let mut times = CpuTimes::default();
    let mut numbers = numbers(line);
    for slot in times.0.iter_mut() {
        // Kernels before 2.6.11 lack steal: a missing field stays 0.
        *slot = numbers.next().unwrap_or(Some(0))?;
    }
    Some(times)
}

#[derive(Clone)]
pub(crate) struct MemInfo {
    total: u64,
    pub(crate) available: u64,
    pub(crate) cached: u64,
    pub(crate) buffers: u64,
    pub(crate) swap_total: u64,
    pub(crate) swap_free: u64,
}

impl MemInfo {
    /// What Mozilla's monitor draws as used: total minus available.
    pub(crate) fn used(&self) -> u64 {
        self.total.saturating_sub(self.available)
    }
}

fn parse_meminfo(text: &[u8]) -> Option<MemInfo> {
    const KEYS: [&[u8]; 7] = [
        b"MemTotal",
        b"MemFree",
        b"MemAvailable",
        b"Buffers",
        b"Cached",
        b"SwapTotal",
        b"SwapFree",
    ];
    let mut bytes = [None; KEYS.len()];
    let mut found = 0;
    // The keys are near the top: stop once all are found.
    for line in lines(text) {
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let (key, rest) = (&line[..colon], &line[colon + 1..]);
        if let Some(slot) = KEYS.iter().position(|k| *k == key) {
            let kib = numbers(rest).next().flatten();
            bytes[slot] = kib.map(|kib| kib * 1024);
            found += 1;
            if found == KEYS.len() {
                break;
            }
        }
    }
    let [total, free, available, buffers, cached, swap_total, swap_free] = bytes;
    let (buffers, cached) = (buffers.unwrap_or(0), cached.unwrap_or(0));
    Some(MemInfo {
        total: total?,
        // Kernels before 3.14 lack MemAvailable: estimate it as psutil does.
        available: available.unwrap_or(free? + buffers + cached),
        cached,
        buffers,
        swap_total: swap_total.unwrap_or(0),
        swap_free: swap_free.unwrap_or(0),
    })
}

/// /proc/loadavg: `0.77 0.85 0.53 3/108 12481`.
#[derive(Clone, Copy)]
pub(crate) struct Loadavg {
    pub(crate) averages: [f64; 3],
    pub(crate) runnable: u64,
    /// The pid most recently given out on the machine.
    pub(crate) last_pid: u32,
}

pub(crate) fn parse_loadavg(text: &[u8]) -> Option<Loadavg> {
    let mut fields = fields(text);
    let mut average = || {
        std::str::from_utf8(fields.next()?)
            .ok()?
            .parse::<f64>()
            .ok()
    };
    let averages = [average()?, average()?, average()?];
    let running = fields.next()?;
    let slash = running.iter().position(|&b| b == b'/')?;
    let runnable = decimal(&running[..slash])?;
    let last_pid = decimal(fields.next()?)?.try_into().ok()?;
    Some(Loadavg {
        averages,
        runnable,
        last_pid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let text = "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\nBuffers: 10 kB\nCached: 200 kB\nSwapCached: 7 kB\nSwapTotal: 50 kB\nSwapFree: 20 kB\n";
        let info = parse_meminfo(text.as_bytes()).unwrap();
        assert_eq!(info.used(), 400 * 1024);
        assert_eq!(info.cached, 200 * 1024, "SwapCached is not Cached");
        assert_eq!(info.swap_total - info.swap_free, 30 * 1024);
    }

    #[test]
    fn stat_gives_the_cpu_line_and_the_forks_past_long_lines() {
        let intr = format!("intr 99{}", " 0".repeat(4000));
        let stat = format!(
            "cpu  10 20 30 40 50 60 70 80 90 100\ncpu0 1 2 3 4 5 6 7 8\n{intr}\nctxt 5\nprocesses 4321\nprocs_running 2\nsoftirq 1 2 3\n"
        );
        assert_eq!(
            parse_cpu(stat.as_bytes()).unwrap().0,
            [10, 20, 30, 40, 50, 60, 70, 80]
        );
        assert_eq!(parse_forks(stat.as_bytes()), Some(4321));
        let old_kernel = parse_cpu(b"cpu  1 2 3 4 5 6 7\n").unwrap();
        assert_eq!(old_kernel.0, [1, 2, 3, 4, 5, 6, 7, 0], "no steal: 0");
        assert!(parse_cpu(b"cpu  1 2 x 4\n").is_none(), "not a number");
        assert!(parse_cpu(b"cpu0 1 2 3 4\n").is_none(), "no sum line");
        assert_eq!(parse_forks(b"cpu  1\nprocesses_x 5\n"), None);
    }

    #[test]
    fn loadavg_gives_the_averages_the_runnable_and_the_last_pid() {
        let load = parse_loadavg(b"0.77 0.85 0.53 3/108 12481\n").unwrap();
        assert_eq!(load.averages, [0.77, 0.85, 0.53]);
        assert_eq!((load.runnable, load.last_pid), (3, 12481));
        assert!(
            parse_loadavg(b"0.77 0.85 0.53 3 12481\n").is_none(),
            "no slash"
        );
        assert!(parse_loadavg(b"0.77 0.85 0.53 3/108 4294967296\n").is_none());
    }

    #[test]
    fn sharers_read_the_machine_once_a_slot_of_the_grid_and_afresh_off_it() {
        let stat = |user: u64| format!("cpu  {user} 2 3 4 5 6 7 8\nprocesses 9\n");
        let root = crate::sources::fake_root(&[("stat", &stat(1)), ("loadavg", "0 0 0 1/9 7\n")]);
        let step = Duration::from_millis(100);
        let shared = SharedMachine::under(root.path(), step);
        let tick = shared.grid_point_from(Instant::now());
        assert_eq!(shared.grid_point_from(tick), tick, "on the grid already");
        let next = shared.grid_point_from(tick + Duration::from_nanos(1));
        assert_eq!(next - tick, step);
        let slot = shared.slot_of(tick);
        let user = |machine: Machine| machine.cpu.unwrap().0[0];
        // The segment's sampler and 16 tasks' tick in the same slot.
        assert_eq!(user(shared.read(Some(slot))), 1);
        std::fs::write(root.path().join("stat"), stat(2)).unwrap();
        for _ in 0..16 {
            assert_eq!(user(shared.read(Some(slot))), 1, "the slot's read");
        }
        assert_eq!(shared.reads(), 1);
        assert_eq!(user(shared.read(Some(slot + 1))), 2, "the next slot's");
        std::fs::write(root.path().join("stat"), stat(3)).unwrap();
        assert_eq!(user(shared.read(None)), 3, "a tick off the grid: afresh");
        assert_eq!(shared.reads(), 3);
    }

    /// Linux alone lists /proc (`list_processes`).
    #[cfg(target_os = "linux")]
    #[test]
    fn sharers_process_trees_list_proc_once_a_slot() {
        let root =
            crate::sources::fake_root(&[("stat", "cpu  1 2 3 4 5 6 7 8\n"), ("12/stat", "")]);
        let shared = SharedMachine::under(root.path(), Duration::from_millis(100));
        let pids = |machine: &Machine| {
            let listing = machine.list_processes(Path::new("/nonexistent")).unwrap();
            listing.iter().map(|&(pid, _)| pid).collect::<Vec<_>>()
        };
        for _ in 0..16 {
            assert_eq!(pids(&shared.read(Some(7))), [12], "the slot's listing");
        }
        assert_eq!(shared.listings(), 1);
        std::fs::create_dir(root.path().join("34")).unwrap();
        let mut next = pids(&shared.read(Some(8)));
        next.sort_unstable();
        assert_eq!(next, [12, 34]);
        assert_eq!(shared.listings(), 2);
        let off_grid = shared.read(None);
        assert!(
            off_grid.listing.is_none(),
            "a tick off the grid lists /proc itself"
        );
        assert_eq!(pids(&shared.read(Some(8))), next, "still the slot's");
    }

    #[test]
    fn sharers_process_trees_read_a_new_processs_stat_once_a_slot() {
        let root = crate::sources::fake_root(&[("stat", "cpu  1 2 3 4 5 6 7 8\n")]);
        let shared = SharedMachine::under(root.path(), Duration::from_millis(100));
        let reads = std::cell::Cell::new(0);
        let read = |pid: u32| {
            reads.set(reads.get() + 1);
            (pid != 99).then(|| Box::from(format!("{pid} (sleep) S 1\n").as_bytes()))
        };
        let heads_in = |slot| {
            let machine = shared.read(Some(slot));
            let mut heads = Vec::new();
            let candidates = [(12, 'a'), (99, 'b'), (34, 'c')];
            let each = |item, head: Option<&[u8]>| heads.push((item, head.map(<[u8]>::to_vec)));
            machine.shared_stats().unwrap().each(candidates, read, each);
            heads
        };
        let first = heads_in(7);
        assert_eq!(first[0], ((12, 'a'), Some(b"12 (sleep) S 1\n".to_vec())));
        assert_eq!(first[1], ((99, 'b'), None), "a pid given to no process");
        for _ in 0..15 {
            assert_eq!(heads_in(7), first, "the slot's reads");
        }
        assert_eq!(reads.get(), 3, "each pid read once for 16 trees");
        assert_eq!(heads_in(8), first);
        assert_eq!(reads.get(), 6, "read again in the next slot");
        assert!(
            shared.read(None).shared_stats().is_none(),
            "a tick off the grid reads the stats itself"
        );
    }

    #[test]
    fn loadavg_is_read_again_only_after_a_fork() {
        let stat = |forks: u64| format!("cpu  1 2 3 4 5 6 7 8\nctxt 9\nprocesses {forks}\n");
        let loadavg = |pid: u32| format!("0.50 0.40 0.30 1/99 {pid}\n");
        let root = crate::sources::fake_root(&[("stat", &stat(70)), ("loadavg", &loadavg(700))]);
        let write = |name: &str, text: String| std::fs::write(root.path().join(name), text);
        let mut files = MachineFiles::open(root.path());
        assert_eq!(files.read().last_pid, Some(700));
        write("loadavg", loadavg(701)).unwrap();
        assert_eq!(files.read().last_pid, Some(700), "no fork: not read");
        write("stat", stat(71)).unwrap();
        assert_eq!(files.read().last_pid, Some(701));
        write("stat", "cpu  1 2 3 4 5 6 7 8\n".to_owned()).unwrap();
        write("loadavg", loadavg(702)).unwrap();
        assert_eq!(
            files.read().last_pid,
            Some(702),
            "forks unknown: read every tick"
        );
    }
}
