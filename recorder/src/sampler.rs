//! The sampler: every source of resource samples, probed once at start, because the meta
//! line (written first) lists the sources that are on and declares only their schemas; then
//! ticked by the sampler thread, which sends each tick's lines to the writer as one
//! message. A source the machine lacks is simply not there.

use crate::channel::MarkerSink;
use crate::clock::Clock;
use crate::config::RecorderConfig;
#[cfg(target_os = "linux")]
use crate::sources::cgroup::{self, tracks::CgroupSampler};
#[cfg(target_os = "linux")]
use crate::sources::cpu_frequency::CpuFrequency;
#[cfg(target_os = "linux")]
use crate::sources::load::LoadAverage;
use crate::sources::machine::{Machine, MachineReader};
#[cfg(target_os = "linux")]
use crate::sources::pressure::Pressure;
#[cfg(target_os = "linux")]
use crate::sources::process_tree::ProcessTree;
#[cfg(target_os = "linux")]
use crate::sources::swap::Swap;
#[cfg(target_os = "linux")]
use crate::sources::system::SystemSampler;
#[cfg(windows)]
use crate::sources::windows;
use crate::sources::{Lines, Source};
use crossbeam_channel::{bounded, Receiver, Sender};
#[cfg(target_os = "linux")]
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tc_profile_format::CgroupInfo;

/// From this far into a recording on, samples are at least [`COARSE_INTERVAL`] apart: a
/// day-long task then keeps a log of about 80 MB instead of 750 MB (README, "Long tasks").
pub const COARSE_AFTER: Duration = Duration::from_secs(600);
/// The shortest interval between samples after [`COARSE_AFTER`].
pub const COARSE_INTERVAL: Duration = Duration::from_secs(1);

/// How early a tick may come and still be a paced source's: its share of the sleep's jitter.
const PACE_SLACK_MS: f64 = 50.0;

/// The resource sources this machine offers, as decided at start.
///
/// Public so that benchmarks can time one tick; a recording drives it on its own thread.
pub struct Sampler {
    /// Each source, with the time of its last tick.
    sources: Vec<(Box<dyn Source>, Option<f64>)>,
    cgroup: Option<CgroupInfo>,
    machine: Option<MachineReader>,
    /// How the task's processes are seen, when they are followed.
    process_exits: Option<&'static str>,
    /// What the CPU of their exits is counted from, when the kernel reports them.
    process_cpu: Option<&'static str>,
}

impl Sampler {
    /// Probes every source that `config` asks for (none unless `config.sample_system`).
    #[cfg_attr(not(any(target_os = "linux", windows)), allow(unused))]
    pub fn probe(config: &RecorderConfig, clock: Clock) -> Sampler {
        let mut sampler = Sampler {
            sources: Vec::new(),
            cgroup: None,
            machine: None,
            process_exits: None,
            process_cpu: None,
        };
        if !config.sample_system {
            return sampler;
        }
        #[cfg(windows)]
        {
            if config.machine_tracks {
                sampler.add(windows::SystemSampler::probe());
            }
            let follow = config.follow.as_ref();
            sampler.add(follow.and_then(|follow| windows::ProcessTree::probe(follow, clock)));
        }
        #[cfg(target_os = "linux")]
        sampler.probe_linux(config, clock);
        sampler
    }

    /// Linux's sources, from /proc, /sys and the task's cgroup.
    #[cfg(target_os = "linux")]
    fn probe_linux(&mut self, config: &RecorderConfig, clock: Clock) {
        use crate::sources::machine::MachineFiles;
        use std::sync::Arc;
        let sampler = self;
        let (proc_root, sys_root) = (Path::new("/proc"), Path::new("/sys"));
        let mut reader = match &config.shared_machine {
            Some(shared) => MachineReader::Shared(Arc::clone(shared)),
            None => MachineReader::Own(MachineFiles::open(proc_root)),
        };
        let machine = reader.read(None);
        sampler.machine = Some(reader);
        if config.machine_tracks {
            sampler.add(SystemSampler::probe(proc_root, sys_root, &machine));
        }
        if let Some(follow) = &config.follow {
            let tree = ProcessTree::probe(proc_root, follow, config.interval, clock, &machine);
            let since = config
                .processes_since
                .map(|epoch| clock.ms_from_epoch(epoch));
            let marker_min = config.process_markers.unwrap_or(config.interval);
            let tree = tree.map(|tree| {
                tree.starting_from(since.unwrap_or(0.0)).counting_exits(
                    config.process_exits,
                    sys_root,
                    config.shared_machine.as_deref(),
                    marker_min.as_secs_f64() * 1000.0,
                )
            });
            sampler.process_exits = tree.as_ref().map(ProcessTree::exits_seen_by);
            sampler.process_cpu = tree.as_ref().and_then(ProcessTree::exits_cpu);
            sampler.add(tree);
        }
        let task_cgroup = config
            .cgroup
            .clone()
            .or_else(|| config.follow.as_ref().and_then(cgroup::detect));
        if let Some(task_cgroup) = task_cgroup {
            if let Some(source) = CgroupSampler::probe(&task_cgroup, sys_root) {
                sampler.cgroup = Some(source.info());
                sampler.add(Some(source));
            }
        }
        if config.machine_tracks {
            sampler.add(Pressure::probe(proc_root));
            sampler.add(LoadAverage::probe(proc_root));
            sampler.add(Swap::probe(proc_root, &machine));
            sampler.add(CpuFrequency::probe(sys_root));
        }
    }

    fn add(&mut self, source: Option<impl Source + 'static>) {
        if let Some(source) = source {
            self.sources.push((Box::new(source), None));
        }
    }

    /// The names for `meta.tcProfile.sources`.
    pub fn sources(&self) -> Vec<String> {
        let names = self.sources.iter().flat_map(|(s, _)| s.names());
        names.map(str::to_owned).collect()
    }

    /// How the task's processes are seen (`taskstats` or `sampling`), when they are
    /// followed: `meta.tcProfile.processExits`.
    pub fn process_exits(&self) -> Option<&'static str> {
        self.process_exits
    }

    /// What the CPU of the kernel's exits is counted from (`run-time` or `ticks`):
    /// `meta.tcProfile.processCpu`.
    pub fn process_cpu(&self) -> Option<&'static str> {
        self.process_cpu
    }

    /// The task's cgroup, when its counters are sampled.
    pub fn cgroup(&self) -> Option<&CgroupInfo> {
        self.cgroup.as_ref()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Samples every source whose pace allows it now, appending to `lines` the marker
    /// lines of the interval since its previous tick; returns how many.
    pub fn tick(&mut self, now: f64, lines: &mut Vec<u8>) -> u64 {
        self.tick_in(None, now, lines)
    }

    /// [`Sampler::tick`], for a tick in `slot` of the shared machine's grid (None: off it).
    fn tick_in(&mut self, slot: Option<u128>, now: f64, lines: &mut Vec<u8>) -> u64 {
        let machine = self.read_machine(slot);
        self.each_source(lines, &machine, now, false, |source, out| {
            source.tick(now, out)
        })
    }

    /// The last tick of a recording: every source, which also writes out what is still
    /// open (live processes).
    pub fn last_tick(&mut self, now: f64, lines: &mut Vec<u8>) -> u64 {
        let machine = self.read_machine(None);
        self.each_source(lines, &machine, now, true, |source, out| {
            source.last_tick(now, out)
        })
    }

    fn each_source(
        &mut self,
        lines: &mut Vec<u8>,
        machine: &Machine,
        now: f64,
        every_source: bool,
        tick: impl Fn(&mut dyn Source, &mut Lines),
    ) -> u64 {
        let mut out = Lines::new(lines, machine);
        for (source, last) in &mut self.sources {
            // A tick may come a little early (scheduling): it still counts as on time.
            let on_time = |last: f64| now - last + PACE_SLACK_MS >= source.pace_ms();
            if every_source || last.is_none_or(on_time) {
                tick(source.as_mut(), &mut out);
                *last = Some(now);
            }
        }
        out.count()
    }

    fn read_machine(&mut self, slot: Option<u128>) -> Machine {
        self.machine
            .as_mut()
            .filter(|_| !self.sources.is_empty())
            .map(|reader| reader.read(slot))
            .unwrap_or_default()
    }

    /// The next tick's deadline after one at `deadline`, `interval` later: on the shared
    /// machine's grid when there is one, so that the sharers tick together.
    fn next_deadline(&self, deadline: Instant, interval: Duration) -> Instant {
        match self.machine.as_ref().and_then(MachineReader::grid) {
            Some(grid) => grid.grid_point_from(deadline + interval),
            None => deadline + interval,
        }
    }

    /// The slot of the shared machine's grid a tick at `at` falls in, if there is one.
    fn slot_of(&self, at: Instant) -> Option<u128> {
        let grid = self.machine.as_ref().and_then(MachineReader::grid)?;
        Some(grid.slot_of(at))
    }
}

/// The interval between samples `elapsed` into a recording sampled every `base` at first.
pub fn sampling_interval(base: Duration, elapsed: Duration) -> Duration {
    if elapsed >= COARSE_AFTER {
        base.max(COARSE_INTERVAL)
    } else {
        base
    }
}

/// How other threads steer the sampler thread: stop it, or ask for a tick now.
#[derive(Default)]
pub(crate) struct Steering {
    stop: AtomicBool,
    /// Whether `asked` holds any request, read at every wake-up without the lock.
    asked_any: AtomicBool,
    /// Those waiting for a tick now: each is woken once that tick's lines are written.
    asked: Mutex<Vec<Sender<()>>>,
}

impl Steering {
    /// The next tick is the last; the thread must be unparked to see it at once.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Asks for a tick now; the thread must be unparked to see it at once. The returned
    /// receiver gets `()` once the tick's lines are written, or is disconnected when they
    /// are not (nothing to sample, lines dropped, the recording over).
    pub(crate) fn ask_tick(&self) -> Receiver<()> {
        let (written, taken) = bounded(1);
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(written);
        self.asked_any.store(true, Ordering::Release);
        taken
    }

    fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn is_woken(&self) -> bool {
        self.is_stopped() || self.asked_any.load(Ordering::Acquire)
    }

    /// The requests for this tick, taken.
    fn take_asked(&self) -> Vec<Sender<()>> {
        if !self.asked_any.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Samples every `interval` (see [`sampling_interval`]) until `steering` stops it, then
/// once more, the last time; a tick asked for comes at once, and the ticks due go on at
/// their times. The clock is read once a tick, as the thread wakes: that instant is the
/// tick's time and the next sleep's start (a tick's work, some 0.1 ms, makes the sleep
/// that much longer; the deadlines stay on the interval). With a shared machine, the
/// deadlines are on its grid, and a tick due there takes the slot's one read of it.
pub(crate) fn run_sampler(
    mut sampler: Sampler,
    markers: MarkerSink,
    interval: Duration,
    steering: &Steering,
) {
    let clock = markers.clock();
    let started = Instant::now();
    let (mut next, mut woke) = (started, started);
    let mut first = true;
    loop {
        let last = steering.is_stopped();
        let asked = steering.take_asked();
        // The first tick, the last and one asked for read the machine as it is then.
        let due = !first && !last && asked.is_empty() && woke >= next;
        let slot = due.then(|| sampler.slot_of(woke)).flatten();
        tick(&mut sampler, &markers, clock.ms_at(woke), slot, last, asked);
        first = false;
        if last {
            return;
        }
        if woke >= next {
            let interval = sampling_interval(interval, next - started);
            next = sampler.next_deadline(next, interval);
            // After a stall (a suspended VM, an overloaded host) skip the missed ticks.
            if next < woke {
                next = sampler.next_deadline(woke, interval);
            }
        }
        woke = sleep_until(next, woke, steering);
    }
}

/// One tick at `now` (in `slot` of the shared machine's grid, if due there), the last one
/// if `last`; `asked`, waiting for it, are woken once its lines are written (or, when
/// there are none, dropped at once).
fn tick(
    sampler: &mut Sampler,
    markers: &MarkerSink,
    now: f64,
    slot: Option<u128>,
    last: bool,
    asked: Vec<Sender<()>>,
) {
    // Room for a tick's lines with the paced sources' (some 2 KiB at most on a machine of
    // one disk): one allocation, never grown.
    let mut lines = Vec::with_capacity(4096);
    let count = if last {
        sampler.last_tick(now, &mut lines)
    } else {
        sampler.tick_in(slot, now, &mut lines)
    };
    if count > 0 {
        markers.send_acknowledged(lines, count, false, asked);
    }
}

/// Sleeps from `now` until `deadline`, or until `steering` stops the thread or asks for a
/// tick and unparks it; returns when it woke. Parking is one futex wait; a channel's
/// receive with a deadline spins and yields a dozen times first, which at ten ticks a
/// second cost more than the sampling.
fn sleep_until(deadline: Instant, mut now: Instant, steering: &Steering) -> Instant {
    while now < deadline && !steering.is_woken() {
        std::thread::park_timeout(deadline - now);
        now = Instant::now();
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A source that records when it was ticked.
    struct Paced {
        pace_ms: f64,
        ticks: Arc<Mutex<Vec<f64>>>,
    }

    impl Source for Paced {
        fn names(&self) -> Vec<&'static str> {
            vec!["paced"]
        }
        fn tick(&mut self, now: f64, _: &mut Lines) {
            self.ticks.lock().unwrap().push(now);
        }
        fn pace_ms(&self) -> f64 {
            self.pace_ms
        }
    }

    #[test]
    fn a_paced_source_is_ticked_once_per_pace_and_at_the_last_tick() {
        let mut sampler = Sampler {
            sources: Vec::new(),
            cgroup: None,
            machine: None,
            process_exits: None,
            process_cpu: None,
        };
        let [every, paced] = [0.0, 1000.0].map(|pace_ms| {
            let ticks = Arc::default();
            sampler.add(Some(Paced {
                pace_ms,
                ticks: Arc::clone(&ticks),
            }));
            ticks
        });
        let mut lines = Vec::new();
        // Every 0.1 s, a little early or late as a sleeping thread wakes.
        for i in 0..=25 {
            let jitter = [0.0, -3.0, 2.5][i % 3];
            sampler.tick(i as f64 * 100.0 + jitter, &mut lines);
        }
        sampler.last_tick(2540.0, &mut lines);
        assert_eq!(every.lock().unwrap().len(), 27);
        assert_eq!(*paced.lock().unwrap(), [0.0, 997.0, 2002.5, 2540.0]);
    }

    #[test]
    fn samples_thin_out_to_one_a_second_after_ten_minutes() {
        let tenth = Duration::from_millis(100);
        let minutes = |m: u64| Duration::from_secs(m * 60);
        assert_eq!(sampling_interval(tenth, minutes(9)), tenth);
        assert_eq!(sampling_interval(tenth, minutes(10)), COARSE_INTERVAL);
        assert_eq!(sampling_interval(tenth, minutes(24 * 60)), COARSE_INTERVAL);
        let slow = Duration::from_secs(5);
        assert_eq!(sampling_interval(slow, minutes(60)), slow, "never faster");
    }
}
