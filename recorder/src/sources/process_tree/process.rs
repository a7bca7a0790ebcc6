//! One process of the task's tree: the fields of its /proc/<pid>/stat that are used, its
//! name and command, and the wording of its exit status.

use super::command_line;
use crate::clock::Clock;
use crate::sources::procfs::{decimal, sysconf, ReadBuffer};
use serde_json::json;
use std::fs::File;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use tc_profile_format::schema::{category, data_type};
use tc_profile_format::Marker;

/// Half the soft open-file limit at most goes to stat and statm files kept open, by all the
/// trees of the process together (a daemon follows one a task); the rest is left to its
/// other files.
const OPEN_FILES_SHARE: u64 = 2;
const OPEN_FILES_MAX: u64 = 4096;
/// A still process's resident set is read at least once in this many ticks (see
/// [`Process::due`]).
const RSS_EVERY_TICKS: u32 = 10;

/// The fields of /proc/<pid>/stat that are used.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Stat {
    pub(crate) state: u8,
    pub(crate) ppid: u32,
    /// utime + stime, clock ticks.
    pub(crate) own_ticks: u64,
    /// cutime + cstime: the time of children it has waited for.
    pub(crate) reaped_ticks: u64,
    /// Clock ticks after boot: with the pid, it names a process for good.
    pub(crate) start_ticks: u64,
    pub(crate) rss_pages: u64,
    /// Its threads.
    pub(crate) threads: u64,
    /// The wait status, readable while the process is a zombie (Linux 3.5 and later).
    pub(crate) exit_status: Option<i32>,
    /// A thread's stat (its exit signal is -1), which /proc/<tid>/stat gives though /proc
    /// lists only processes.
    pub(crate) thread: bool,
}

impl Stat {
    pub(crate) fn total_ticks(&self) -> u64 {
        self.own_ticks + self.reaped_ticks
    }

    pub(crate) fn is_zombie(&self) -> bool {
        self.state == b'Z' || self.state == b'X'
    }
}

/// What turns a stat's clock ticks into milliseconds, its pages into bytes and its start
/// times into the log's time base.
#[derive(Clone, Copy)]
pub(crate) struct StatUnits {
    ticks_per_second: f64,
    pub(crate) page_size: u64,
    /// Log time of the boot, in ms (negative).
    boot_ms: f64,
    /// The earliest start a "Process" marker is given (log ms, at most 0).
    pub(crate) earliest_ms: f64,
}

impl StatUnits {
    pub(crate) fn probe(clock: Clock) -> Option<StatUnits> {
        Some(StatUnits {
            ticks_per_second: sysconf(libc::_SC_CLK_TCK)? as f64,
            page_size: sysconf(libc::_SC_PAGESIZE)?,
            boot_ms: clock.now_ms() - boot_time_ms()?,
            earliest_ms: 0.0,
        })
    }
}

/// Milliseconds since boot, on the clock that /proc/<pid>/stat start times use.
fn boot_time_ms() -> Option<f64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) writes only into the timespec it is given.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut now) };
    (status == 0).then(|| now.tv_sec as f64 * 1000.0 + now.tv_nsec as f64 / 1e6)
}

/// How many stat files to keep open: a share of the soft open-file limit.
fn open_files_max() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes only into the rlimit it is given.
    let status = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if status != 0 {
        return 0;
    }
    (limit.rlim_cur / OPEN_FILES_SHARE).min(OPEN_FILES_MAX)
}

/// Files kept open now, by every tree of the process.
static KEPT_OPEN: AtomicU64 = AtomicU64::new(0);

/// A /proc file kept open within the process's budget, whose place in it is given back
/// when it is dropped: sixteen trees of a daemon, each given half the limit, opened more
/// than the whole limit, and the daemon's own files failed (EMFILE).
pub(crate) struct KeptFile(File);

impl KeptFile {
    /// `path`, opened if the budget has room.
    pub(crate) fn open(path: &Path) -> Option<KeptFile> {
        static MAX: OnceLock<u64> = OnceLock::new();
        let max = *MAX.get_or_init(open_files_max);
        KEPT_OPEN
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |kept| {
                (kept < max).then_some(kept + 1)
            })
            .ok()?;
        match File::open(path) {
            Ok(file) => Some(KeptFile(file)),
            Err(_) => {
                KEPT_OPEN.fetch_sub(1, Ordering::Relaxed);
                None
            }
        }
    }
}

impl Drop for KeptFile {
    fn drop(&mut self) {
        KEPT_OPEN.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Deref for KeptFile {
    type Target = File;

    fn deref(&self) -> &File {
        &self.0
    }
}

/// What a tick reads of a process ([`Process::due`]).
#[derive(Debug, PartialEq)]
pub(crate) enum Due {
    Nothing,
    /// Its resident set alone.
    Rss,
    Stat,
}

/// A process of the tree.
pub(crate) struct Process {
    /// Kept open while the open-file budget allows; else reopened at each tick.
    pub(crate) file: Option<KeptFile>,
    /// Its time on CPU, to tell whether it ran since its stat was read; None without a
    /// clock to read it from, or without its stat file kept open (see `RunClock`).
    pub(crate) run_time: Option<RunTime>,
    pub(crate) stat: Stat,
    /// Its ticks (own and reaped) already counted in "Task CPU".
    pub(crate) counted_ticks: u64,
    /// How much its reaped-children ticks grew at the last refresh.
    pub(crate) reaped_increase: u64,
    pub(crate) peak_rss_pages: u64,
    /// The last tick that found it alive.
    pub(crate) last_seen: f64,
    pub(crate) comm: Vec<u8>,
    pub(crate) name: String,
    pub(crate) command: String,
    /// Whether `name` and `command` come from its command line, not from `comm` alone: a
    /// process caught in the middle of exec has an empty one for a moment.
    pub(crate) command_known: bool,
    /// Its marker has been written (it is a zombie, or the recording ended).
    pub(crate) ended: bool,
}

/// A process's time on CPU in ns, which the kernel keeps exactly, to tell whether it ran
/// since it was last read, for a fraction of its stat's cost (52 fields made text, and the
/// thread group's times summed).
pub(crate) struct RunTime {
    clock: RunClock,
    /// Its statm, kept open, for its resident set while it is still: a quarter of a stat's
    /// cost. None past the open-file budget: its stat then.
    statm: Option<KeptFile>,
    /// The time on CPU read just before the stat was last read.
    ns: Option<u64>,
    /// Ticks since the stat or statm was last read.
    skipped: u32,
    /// Its parent was seen to end: its stat, with its new parent, is read at the next tick.
    stat_due: bool,
    /// Its time on CPU between its last read and the one before, when that was at the tick
    /// before (else 0): as far as its clock sees (see [`RunClock`]).
    ran_ns: u64,
    /// A tick has passed it over unread since its last read ([`Process::pass_over`]).
    passed_over: bool,
}

/// Where a process's time on CPU is read.
enum RunClock {
    /// Its CPU-time clock (clock_getcpuclockid): every thread's time, ns, answered by one
    /// clock_gettime with no text made or parsed. 0.3 µs a read against 0.9 for a pread of
    /// its schedstat, hot; with cold caches, as a tick reads it, a 50-process tree's reads
    /// took a third less of the sampler's CPU. A clock names a pid, not a process: once the
    /// process is gone, a reused pid's clock tells another's time, which can only make the
    /// tick read the stat, through the file kept open that fails once its process is gone
    /// (or by its path, whose start time tells a reused pid).
    Process(libc::clockid_t),
    /// `<pid>/schedstat` of a /proc whose pids are not this process's own (the tests'
    /// fakes, another pid namespace's), kept open: the main thread's time alone.
    Schedstat(KeptFile),
}

impl RunTime {
    /// The clock of `pid` under `proc_root`; None when there is none to read.
    pub(crate) fn open(proc_root: &Path, pid: u32) -> Option<RunTime> {
        let path = proc_root.join(itoa::Buffer::new().format(pid));
        let clock = if pids_are_own(proc_root) {
            RunClock::Process(cpu_clock(pid)?)
        } else {
            RunClock::Schedstat(KeptFile::open(&path.join("schedstat"))?)
        };
        Some(RunTime {
            clock,
            statm: KeptFile::open(&path.join("statm")),
            ns: None,
            skipped: 0,
            stat_due: false,
            ran_ns: 0,
            passed_over: false,
        })
    }

    fn read_ns(&self, buffer: &mut ReadBuffer) -> Option<u64> {
        match &self.clock {
            RunClock::Process(clock) => clock_ns(*clock),
            RunClock::Schedstat(file) => buffer.head_of(file).and_then(parse_run_ns),
        }
    }

    /// Whether an unchanged time means that none of the process's threads ran.
    fn counts_every_thread(&self) -> bool {
        matches!(self.clock, RunClock::Process(_))
    }
}

/// Whether `proc_root`'s pids are this process's own, those its clocks name: the /proc of
/// its own pid namespace, whose `self` is its pid (not a fake's, nor another namespace's
/// mounted there).
fn pids_are_own(proc_root: &Path) -> bool {
    static OWN: OnceLock<bool> = OnceLock::new();
    proc_root == Path::new("/proc")
        && *OWN.get_or_init(|| {
            let own = std::fs::read_link("/proc/self");
            own.is_ok_and(|pid| pid.as_os_str() == itoa::Buffer::new().format(std::process::id()))
        })
}

fn cpu_clock(pid: u32) -> Option<libc::clockid_t> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is a valid place for the answer.
    let found = unsafe { libc::clock_getcpuclockid(pid, &mut clock) } == 0;
    found.then_some(clock)
}

/// `clock`'s time, ns; None once its process is gone.
fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid place for the answer.
    if unsafe { libc::clock_gettime(clock, &mut time) } != 0 {
        return None;
    }
    let seconds = u64::try_from(time.tv_sec).ok()?;
    let nanos = u64::try_from(time.tv_nsec).ok()?;
    Some(seconds * 1_000_000_000 + nanos)
}

impl Process {
    /// What this tick reads of it. Nothing while none of its threads ran since its last
    /// read (the same time on CPU): it used no CPU, reaped no child, started or ended no
    /// thread, neither stopped nor exited. What can change meanwhile is its resident set
    /// (reclaim shrinks it), read once in [`RSS_EVERY_TICKS`], and its parent, when that
    /// ends ([`Process::parent_ended`]). A 50-process tree of sleepers at 0.1 s: one
    /// clock_gettime a process and tick, and a statm once in ten.
    pub(crate) fn due(&mut self, buffer: &mut ReadBuffer) -> Due {
        let Some(run) = &mut self.run_time else {
            return Due::Stat;
        };
        let ns = run.read_ns(buffer);
        run.ran_ns = match (ns, run.ns) {
            (Some(now), Some(before)) if !run.passed_over => now.saturating_sub(before),
            _ => 0,
        };
        run.passed_over = false;
        let still = (run.counts_every_thread() || self.stat.threads == 1)
            && !self.stat.is_zombie()
            && ns.is_some()
            && ns == run.ns
            && !run.stat_due;
        if !still {
            (run.ns, run.skipped, run.stat_due) = (ns, 0, false);
            return Due::Stat;
        }
        run.skipped += 1;
        if run.skipped < RSS_EVERY_TICKS {
            return Due::Nothing;
        }
        run.skipped = 0;
        Due::Rss
    }

    /// Reads its resident set from its statm; false when it cannot (no statm kept, or the
    /// process is gone): its stat then.
    pub(crate) fn read_rss(&mut self, buffer: &mut ReadBuffer) -> bool {
        let statm = self.run_time.as_ref().and_then(|run| run.statm.as_ref());
        let resident = statm
            .and_then(|file| buffer.head_of(file))
            .and_then(|text| decimal(text.split(|&b| b == b' ').nth(1)?));
        let Some(pages) = resident else {
            return false;
        };
        self.stat.rss_pages = pages;
        self.peak_rss_pages = self.peak_rss_pages.max(pages);
        true
    }

    /// Its parent was seen to end: its stat is read at the next tick, for its new parent
    /// (the process that will reap it), still or not.
    pub(crate) fn parent_ended(&mut self) {
        if let Some(run) = &mut self.run_time {
            run.stat_due = true;
        }
    }

    /// Whether a tick may pass it over unread, when its cgroup shows that none of the
    /// still ones ran: it was still at its last read, and nothing of it is due at this one.
    pub(crate) fn may_pass_over(&self) -> bool {
        let run = self.run_time.as_ref();
        run.is_some_and(|run| run.skipped > 0 && run.skipped + 1 < RSS_EVERY_TICKS && !run.stat_due)
    }

    /// Passes it over unread at `now`: a still tick, which brings its resident set's next
    /// read nearer.
    pub(crate) fn pass_over(&mut self, now: f64) {
        if let Some(run) = &mut self.run_time {
            run.skipped += 1;
            run.passed_over = true;
        }
        self.seen_still(now);
    }

    /// Found alive at `now` with nothing changed: no child reaped since.
    pub(crate) fn seen_still(&mut self, now: f64) {
        self.reaped_increase = 0;
        self.last_seen = now;
    }

    /// Its time on CPU since the tick before, ns, as far as its last read tells (see
    /// [`RunTime`]'s `ran_ns`): at most what it used.
    pub(crate) fn ran_ns(&self) -> u64 {
        self.run_time.as_ref().map_or(0, |run| run.ran_ns)
    }

    /// Its "Process" marker, ending at `now`.
    pub(crate) fn marker(&self, pid: u32, now: f64, status: String, units: &StatUnits) -> Marker {
        ProcessEnd {
            name: &self.name,
            command: &self.command,
            pid,
            ppid: self.stat.ppid,
            start: self.start_ms(units).min(now),
            end: now,
            cpu_ms: self.stat.own_ticks as f64 * 1000.0 / units.ticks_per_second,
            peak_rss: self.peak_rss_pages * units.page_size,
            status,
            storage_io: None,
        }
        .marker()
    }

    /// When it started, in log ms rounded to the microsecond as every time in the log, at
    /// the earliest `units.earliest_ms`.
    pub(crate) fn start_ms(&self, units: &StatUnits) -> f64 {
        let start = units.boot_ms + self.stat.start_ticks as f64 * 1000.0 / units.ticks_per_second;
        ((start * 1000.0).round() / 1000.0).max(units.earliest_ms)
    }

    /// Names it from its command line (`dir` is its /proc directory), or from `comm` while
    /// that is empty.
    pub(crate) fn describe(&mut self, buffer: &mut ReadBuffer, dir: &Path) {
        let described = match buffer.read_path(&dir.join("cmdline")) {
            Ok(bytes) => command_line::describe(bytes),
            Err(_) => None,
        };
        self.command_known = described.is_some();
        (self.name, self.command) =
            described.unwrap_or_else(|| (lossy(&self.comm), lossy(&self.comm)));
    }
}

/// What a "Process" marker says of a process that ended: the tree's, as sampled, or an exit
/// the kernel reported.
pub(crate) struct ProcessEnd<'a> {
    pub(crate) name: &'a str,
    pub(crate) command: &'a str,
    pub(crate) pid: u32,
    pub(crate) ppid: u32,
    /// Log ms.
    pub(crate) start: f64,
    pub(crate) end: f64,
    pub(crate) cpu_ms: f64,
    pub(crate) peak_rss: u64,
    pub(crate) status: String,
    /// Bytes read from and written to storage, when known.
    pub(crate) storage_io: Option<(u64, u64)>,
}

impl ProcessEnd<'_> {
    pub(crate) fn marker(self) -> Marker {
        let mut data = json!({
            "type": data_type::PROCESS,
            "command": self.command,
            "pid": self.pid,
            "ppid": self.ppid,
            "cpuTime": self.cpu_ms,
            "peakRss": self.peak_rss,
            "status": self.status,
        });
        if let Some((read, written)) = self.storage_io {
            data["readBytes"] = read.into();
            data["writeBytes"] = written.into();
        }
        Marker::interval(self.name.to_owned(), self.start, self.end)
            .with_category(category::TASK)
            .with_data(data)
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `proc_root/<pid>/stat`, in one allocation: discovery reads a path for every pid given
/// out on the machine.
pub(crate) fn stat_path(proc_root: &Path, pid: u32) -> PathBuf {
    const PID_MAX: usize = "4294967295".len();
    let mut path = PathBuf::with_capacity(proc_root.as_os_str().len() + PID_MAX + "//stat".len());
    path.push(proc_root);
    path.push(itoa::Buffer::new().format(pid));
    path.push("stat");
    path
}

/// The first field of /proc/<pid>/schedstat: time on CPU, ns.
fn parse_run_ns(bytes: &[u8]) -> Option<u64> {
    decimal(bytes.split(|&b| b == b' ').next()?)
}

/// Parses `pid (comm) state ppid ...`; the command name may hold spaces and parentheses,
/// so the fields start after the last `)`. Field numbers are proc(5)'s.
pub(crate) fn parse_stat(bytes: &[u8]) -> Option<(Stat, &[u8])> {
    let open = memchr::memchr(b'(', bytes)?;
    let close = memchr::memrchr(b')', bytes)?;
    let comm = bytes.get(open + 1..close)?;
    let mut stat = Stat::default();
    let mut last = 0;
    // Split, and only the fields used parsed: most of the 52 are not.
    for (i, field) in bytes.get(close + 2..)?.split(|&b| b == b' ').enumerate() {
        // The last field is followed by the line's newline.
        let number = || decimal(field.strip_suffix(b"\n").unwrap_or(field));
        match i + 3 {
            3 => stat.state = *field.first()?,
            4 => stat.ppid = number()? as u32,
            14 | 15 => stat.own_ticks += number()?,
            16 | 17 => stat.reaped_ticks += number()?,
            22 => stat.start_ticks = number()?,
            20 => stat.threads = number()?,
            24 => stat.rss_pages = number()?,
            38 => stat.thread = field == b"-1",
            52 => {
                stat.exit_status = Some(number()? as i32);
                break;
            }
            _ => {}
        }
        last = i + 3;
    }
    (last >= 24).then_some((stat, comm))
}
