//! Every process of the machine as it exits, from the kernel's taskstats over generic
//! netlink (Documentation/accounting/taskstats.rst): the recorder registers a listener on
//! every CPU, and the kernel sends it a record as each task exits, however short its life.
//! Registering takes root or `CAP_NET_ADMIN` in the initial namespaces; without them, or
//! without taskstats in the kernel, [`Taskstats::open`] fails and the process tree is seen
//! by sampling alone.
//!
//! The socket is read without blocking at each of the tree's ticks: its receive queue holds
//! what came in between, and an overflow is counted ([`Taskstats::overruns`]), not fatal.
//! Everything read is bounded by the lengths the kernel wrote and the buffer read into;
//! the record is parsed by the offsets of `include/uapi/linux/taskstats.h`, a field read
//! only when the record is long enough (and new enough) to hold it.
//!
//! A process's CPU is taken from the scheduler's figures in the record where the kernel
//! fills them ([`exit_cpu_us`]), not from `ac_utime` and `ac_stime` alone: those are whole
//! clock ticks (4 ms at HZ=250) charged to whatever runs when a tick comes, and a process
//! shorter than a tick mostly gets none. Nor from `cpu_run_virtual_total` alone, the run
//! time (`se.sum_exec_runtime`): the record is made in `do_exit` before the process leaves
//! the CPU for the last time, and the run time is brought up to date only when the
//! scheduler looks at the task (a tick, a wait, a preemption), so it lacks the stretch
//! since, all of the life of a process that ran in one go (0 for 75 % of 500 `true`, 7 %
//! of their CPU in all, measured on Linux 6.18). What is exact is the life of a process
//! that never waited: it ran or it was queued for a CPU (`cpu_delay_total`), nothing else.
//! These figures are filled since Linux 5.14 whatever `kernel.task_delayacct` says (that
//! sysctl governs the delays of I/O and memory alone: `kernel/delayacct.c`,
//! `delayacct_add_tsk`), and before it only with delay accounting on.

use crate::sources::netlink::{
    self, align, invalid, messages, read_u16, read_u32, read_u64, DATAGRAM_MAX, NLMSG_ERROR,
};
use std::io;
use std::os::fd::OwnedFd;

/// `include/uapi/linux/genetlink.h` and `taskstats.h`.
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_GENL_NAME: &[u8] = b"TASKSTATS\0";
const TASKSTATS_GENL_VERSION: u8 = 1;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_NEW: u8 = 2;
const TASKSTATS_CMD_ATTR_PID: u16 = 1;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLA_TYPE_MASK: u16 = 0x3fff;
const GENL_HEADER: usize = 4;
const NLA_HEADER: usize = 4;

/// How long the set-up waits for each of the kernel's replies: a recording does not start
/// later than this for want of one.
const SETUP_TIMEOUT: libc::timeval = libc::timeval {
    tv_sec: 1,
    tv_usec: 0,
};
/// Datagrams read at most a tick: the queue's worth, so that exits coming faster than
/// they are read cannot hold the sampler.
const DRAIN_MAX: usize = 65_536;

/// Offsets in `struct taskstats` (taskstats.h), the version that added each in brackets
/// where it is later than 1's layout of the fields used.
mod offset {
    pub(super) const VERSION: usize = 0;
    pub(super) const AC_EXITCODE: usize = 4;
    pub(super) const AC_FLAG: usize = 8;
    pub(super) const CPU_COUNT: usize = 16;
    pub(super) const CPU_DELAY_TOTAL: usize = 24;
    pub(super) const CPU_RUN_VIRTUAL_TOTAL: usize = 72;
    pub(super) const AC_COMM: usize = 80;
    pub(super) const AC_PID: usize = 128;
    pub(super) const AC_PPID: usize = 132;
    pub(super) const AC_ETIME: usize = 144;
    pub(super) const AC_UTIME: usize = 152;
    pub(super) const AC_STIME: usize = 160;
    pub(super) const HIWATER_RSS: usize = 200;
    pub(super) const READ_BYTES: usize = 248;
    pub(super) const WRITE_BYTES: usize = 256;
    pub(super) const NVCSW: usize = 272;
    /// Version 12.
    pub(super) const AC_TGID: usize = 368;
}
const COMM_LEN: usize = 32;
/// The first version with `ac_tgid` and the `AGROUP` flag.
const VERSION_WITH_TGID: u16 = 12;
/// `ac_flag`: the task was the last of its thread group (version 12 on).
const AGROUP: u8 = 0x20;

/// One task's exit, as the kernel accounted it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TaskExit {
    /// `ac_comm`: the command name, at most 15 bytes in the kernels of today.
    pub(crate) comm: String,
    /// The task's id: its process's (`ac_tgid`) from version 12 on, else its own.
    pub(crate) pid: u32,
    /// The parent process when it exited.
    pub(crate) ppid: u32,
    /// Whether it was the last thread of its process (always, before version 12, where a
    /// thread cannot be told from a process).
    pub(crate) process_ended: bool,
    /// Wall time from its start to its exit, µs (`ac_etime`).
    pub(crate) elapsed_us: u64,
    /// User and system CPU, µs.
    pub(crate) cpu_us: u64,
    /// The process's peak resident set, bytes (`hiwater_rss`, KiB in the record).
    pub(crate) peak_rss: u64,
    /// Bytes read from and written to storage, when the source counts them.
    pub(crate) storage_io: Option<(u64, u64)>,
    /// The wait status: an exit code shifted by 8, or a signal number.
    pub(crate) status: i32,
}

/// What the CPU of the exits is counted from: `meta.tcProfile.processCpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcessCpu {
    /// The scheduler's figures ([`exit_cpu_us`]).
    RunTime,
    /// Whole clock ticks.
    Ticks,
}

impl ProcessCpu {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProcessCpu::RunTime => "run-time",
            ProcessCpu::Ticks => "ticks",
        }
    }
}

/// Why taskstats is not used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TaskstatsError {
    #[error("a generic netlink socket: {0}")]
    Socket(io::Error),
    #[error("the kernel has no TASKSTATS family: {0}")]
    NoFamily(io::Error),
    #[error("registering for exits (root or CAP_NET_ADMIN, initial namespaces): {0}")]
    Register(io::Error),
}

/// A registered listener for every task's exit.
pub(crate) struct Taskstats {
    socket: OwnedFd,
    family: u16,
    buffer: Vec<u8>,
    overruns: u64,
    /// Exits read while waiting for the registration's acknowledgement.
    early: Vec<TaskExit>,
    process_cpu: ProcessCpu,
}

impl Taskstats {
    /// Resolves the TASKSTATS family and registers for the exits on every possible CPU.
    pub(crate) fn open(possible_cpus: &str) -> Result<Taskstats, TaskstatsError> {
        let socket = netlink::socket(libc::NETLINK_GENERIC, 0, SETUP_TIMEOUT)
            .map_err(TaskstatsError::Socket)?;
        let mut taskstats = Taskstats {
            socket,
            family: 0,
            buffer: vec![0; DATAGRAM_MAX],
            overruns: 0,
            early: Vec::new(),
            process_cpu: ProcessCpu::Ticks,
        };
        taskstats.family = taskstats.resolve_family()?;
        taskstats.process_cpu =
            taskstats
                .own_record()
                .map_or(ProcessCpu::Ticks, |stats| {
                    match SchedulerFigures::read(&stats) {
                        Some(_) => ProcessCpu::RunTime,
                        None => ProcessCpu::Ticks,
                    }
                });
        let mut cpumask = possible_cpus.trim().as_bytes().to_vec();
        cpumask.push(0);
        let request = request(
            taskstats.family,
            NLM_F_REQUEST | NLM_F_ACK,
            TASKSTATS_CMD_GET,
            TASKSTATS_GENL_VERSION,
            TASKSTATS_CMD_ATTR_REGISTER_CPUMASK,
            &cpumask,
        );
        netlink::send(&taskstats.socket, &request).map_err(TaskstatsError::Register)?;
        match taskstats.acknowledgement() {
            Ok(0) => Ok(taskstats),
            Ok(errno) => Err(TaskstatsError::Register(io::Error::from_raw_os_error(
                -errno,
            ))),
            Err(error) => Err(TaskstatsError::Register(error)),
        }
    }

    /// The registration's acknowledgement (0, or a negative errno). Exits may come first,
    /// once the kernel has added the listener and before it acknowledges: they are kept
    /// for the first [`Taskstats::drain`].
    fn acknowledgement(&mut self) -> io::Result<i32> {
        for _ in 0..DRAIN_MAX {
            let family = self.family;
            let datagram = self.receive_blocking()?;
            if let Some(errno) = acknowledged(datagram) {
                return Ok(errno);
            }
            let exits = messages(datagram).filter(|(kind, _)| *kind == family);
            let exits: Vec<TaskExit> = exits.filter_map(|(_, p)| parse_exit(p)).collect();
            self.early.extend(exits);
        }
        Err(invalid())
    }

    /// The kernel's record of the recorder's own process, asked for before registering
    /// (no exit comes in between): whether it fills the scheduler's figures.
    fn own_record(&mut self) -> Option<Vec<u8>> {
        let pid = std::process::id().to_ne_bytes();
        let request = request(
            self.family,
            NLM_F_REQUEST,
            TASKSTATS_CMD_GET,
            TASKSTATS_GENL_VERSION,
            TASKSTATS_CMD_ATTR_PID,
            &pid,
        );
        netlink::send(&self.socket, &request).ok()?;
        let family = self.family;
        let reply = self.receive_blocking().ok()?;
        let (_, payload) = messages(reply).find(|(kind, _)| *kind == family)?;
        stats_of(payload).map(<[u8]>::to_vec)
    }

    fn resolve_family(&mut self) -> Result<u16, TaskstatsError> {
        let request = request(
            GENL_ID_CTRL,
            NLM_F_REQUEST,
            CTRL_CMD_GETFAMILY,
            1,
            CTRL_ATTR_FAMILY_NAME,
            TASKSTATS_GENL_NAME,
        );
        netlink::send(&self.socket, &request).map_err(TaskstatsError::NoFamily)?;
        let reply = self.receive_blocking().map_err(TaskstatsError::NoFamily)?;
        if let Some(errno) = acknowledged(reply) {
            return Err(TaskstatsError::NoFamily(io::Error::from_raw_os_error(
                -errno,
            )));
        }
        family_id(reply).ok_or(TaskstatsError::NoFamily(invalid()))
    }

    fn receive_blocking(&mut self) -> io::Result<&[u8]> {
        let length = netlink::receive(&self.socket, &mut self.buffer, 0)?;
        Ok(&self.buffer[..length])
    }

    /// Every exit queued since the last call, in the order the kernel sent them.
    pub(crate) fn drain(&mut self, exits: &mut Vec<TaskExit>) {
        exits.append(&mut self.early);
        for _ in 0..DRAIN_MAX {
            match netlink::receive(&self.socket, &mut self.buffer, libc::MSG_DONTWAIT) {
                Ok(length) => {
                    let family = self.family;
                    for (kind, payload) in messages(&self.buffer[..length]) {
                        if kind == family {
                            exits.extend(parse_exit(payload));
                        }
                    }
                }
                Err(error) if error.raw_os_error() == Some(libc::ENOBUFS) => self.overruns += 1,
                Err(_) => return,
            }
        }
    }

    /// How many times the receive queue overflowed: exits were lost, the kernel does not
    /// say how many.
    pub(crate) fn overruns(&self) -> u64 {
        self.overruns
    }

    /// What the exits' CPU is counted from, as the kernel's record of the recorder showed.
    pub(crate) fn process_cpu(&self) -> ProcessCpu {
        self.process_cpu
    }
}

/// A generic netlink request with one attribute.
fn request(family: u16, flags: u16, command: u8, version: u8, kind: u16, value: &[u8]) -> Vec<u8> {
    let attribute_length = NLA_HEADER + value.len();
    let mut payload = Vec::with_capacity(GENL_HEADER + align(attribute_length));
    payload.extend_from_slice(&[command, version, 0, 0]);
    payload.extend_from_slice(&(attribute_length as u16).to_ne_bytes());
    payload.extend_from_slice(&kind.to_ne_bytes());
    payload.extend_from_slice(value);
    payload.resize(GENL_HEADER + align(attribute_length), 0);
    netlink::message(family, flags, &payload)
}

/// The attributes of a payload: (type without its flags, value); stops at the first whose
/// length does not fit.
fn attributes(mut bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let length = read_u16(bytes, 0)? as usize;
        let kind = read_u16(bytes, 2)? & NLA_TYPE_MASK;
        let value = bytes.get(NLA_HEADER..length)?;
        bytes = bytes.get(align(length)..).unwrap_or_default();
        Some((kind, value))
    })
}

/// The family id in the reply to CTRL_CMD_GETFAMILY.
fn family_id(reply: &[u8]) -> Option<u16> {
    let (_, payload) = messages(reply).next()?;
    let mut attributes = attributes(payload.get(GENL_HEADER..)?);
    let (_, id) = attributes.find(|(kind, _)| *kind == CTRL_ATTR_FAMILY_ID)?;
    read_u16(id, 0)
}

/// The error code of an acknowledgement (0: success, else a negative errno), None when the
/// datagram is something else.
fn acknowledged(datagram: &[u8]) -> Option<i32> {
    let (kind, payload) = messages(datagram).next()?;
    if kind != NLMSG_ERROR {
        return None;
    }
    Some(read_u32(payload, 0)? as i32)
}

/// The exit in a TASKSTATS_CMD_NEW message (its payload after the netlink header).
fn parse_exit(payload: &[u8]) -> Option<TaskExit> {
    parse_stats(stats_of(payload)?)
}

/// The record of a TASKSTATS_CMD_NEW message's TASKSTATS_TYPE_AGGR_PID attribute.
fn stats_of(payload: &[u8]) -> Option<&[u8]> {
    if *payload.first()? != TASKSTATS_CMD_NEW {
        return None;
    }
    let (_, aggregate) = attributes(payload.get(GENL_HEADER..)?)
        .find(|(kind, _)| *kind == TASKSTATS_TYPE_AGGR_PID)?;
    let (_, stats) = attributes(aggregate).find(|(kind, _)| *kind == TASKSTATS_TYPE_STATS)?;
    Some(stats)
}

/// A `struct taskstats`, bounded by its length: the fields of version 1's layout that are
/// used must be there; `ac_tgid` and `AGROUP` are read from version 12 on.
fn parse_stats(stats: &[u8]) -> Option<TaskExit> {
    let version = read_u16(stats, offset::VERSION)?;
    let flag = *stats.get(offset::AC_FLAG)?;
    let comm = stats.get(offset::AC_COMM..offset::AC_COMM + COMM_LEN)?;
    let comm = &comm[..memchr::memchr(0, comm).unwrap_or(COMM_LEN)];
    let task_pid = read_u32(stats, offset::AC_PID)?;
    let tgid = match version >= VERSION_WITH_TGID {
        true => read_u32(stats, offset::AC_TGID).filter(|&tgid| tgid != 0),
        false => None,
    };
    let elapsed_us = read_u64(stats, offset::AC_ETIME)?;
    Some(TaskExit {
        comm: String::from_utf8_lossy(comm).into_owned(),
        pid: tgid.unwrap_or(task_pid),
        ppid: read_u32(stats, offset::AC_PPID)?,
        process_ended: tgid.is_none() || flag & AGROUP != 0,
        elapsed_us,
        cpu_us: exit_cpu_us(stats, elapsed_us)?,
        peak_rss: read_u64(stats, offset::HIWATER_RSS)?.saturating_mul(1024),
        storage_io: Some((
            read_u64(stats, offset::READ_BYTES)?,
            read_u64(stats, offset::WRITE_BYTES)?,
        )),
        status: read_u32(stats, offset::AC_EXITCODE)? as i32,
    })
}

/// A task's CPU, µs, from its record (`elapsed_us`: its life): where it never waited (no
/// voluntary switch), it ran or was queued for a CPU all its life, and its life but the
/// queueing is exact, up to its exit's last moments; else the run time as the scheduler
/// last brought it up to date, a little short of the truth (it lacks the stretch since),
/// or the ticks when they say more. The ticks alone where the kernel does not fill the
/// scheduler's figures.
fn exit_cpu_us(stats: &[u8], elapsed_us: u64) -> Option<u64> {
    let ticks_us = read_u64(stats, offset::AC_UTIME)? + read_u64(stats, offset::AC_STIME)?;
    let Some(figures) = SchedulerFigures::read(stats) else {
        return Some(ticks_us);
    };
    let run_us = figures.run_ns / 1000;
    Some(match figures.voluntary_switches {
        0 => elapsed_us
            .saturating_sub(figures.queued_ns / 1000)
            .max(run_us),
        _ => run_us.max(ticks_us),
    })
}

/// The scheduler's figures of a record (`sched_info` and the run time).
struct SchedulerFigures {
    /// `cpu_run_virtual_total`: the run time as last brought up to date.
    run_ns: u64,
    /// `cpu_delay_total`: the time queued for a CPU.
    queued_ns: u64,
    /// `nvcsw`: the times it gave up the CPU to wait.
    voluntary_switches: u64,
}

impl SchedulerFigures {
    /// None where the kernel did not fill them (a task that ran has been given a CPU at
    /// least once: `cpu_count`), or the record is too short.
    fn read(stats: &[u8]) -> Option<SchedulerFigures> {
        if read_u64(stats, offset::CPU_COUNT)? == 0 {
            return None;
        }
        Some(SchedulerFigures {
            run_ns: read_u64(stats, offset::CPU_RUN_VIRTUAL_TOTAL)?,
            queued_ns: read_u64(stats, offset::CPU_DELAY_TOTAL)?,
            voluntary_switches: read_u64(stats, offset::NVCSW)?,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sources::netlink::NLMSG_HEADER;
    use std::os::fd::{AsRawFd, FromRawFd};

    /// Writes `bytes` at `at` in `stats`, as far as it is long.
    fn put(stats: &mut [u8], at: usize, bytes: &[u8]) {
        let end = (at + bytes.len()).min(stats.len());
        if let Some(slot) = stats.get_mut(at..end) {
            slot.copy_from_slice(&bytes[..end - at]);
        }
    }

    /// A record of `version` and `length` bytes with the fields used set, the scheduler's
    /// figures left out (0), as a kernel without them writes it.
    fn record(version: u16, length: usize, flag: u8) -> Vec<u8> {
        let mut stats = vec![0; length];
        let mut put = |at: usize, bytes: &[u8]| put(&mut stats, at, bytes);
        put(offset::VERSION, &version.to_ne_bytes());
        put(offset::AC_EXITCODE, &(3u32 << 8).to_ne_bytes());
        put(offset::AC_FLAG, &[flag]);
        put(offset::AC_COMM, b"sh\0garbage");
        put(offset::AC_PID, &4243u32.to_ne_bytes());
        put(offset::AC_PPID, &4000u32.to_ne_bytes());
        put(offset::AC_ETIME, &1500u64.to_ne_bytes());
        put(offset::AC_UTIME, &700u64.to_ne_bytes());
        put(offset::AC_STIME, &300u64.to_ne_bytes());
        put(offset::HIWATER_RSS, &2048u64.to_ne_bytes());
        put(offset::READ_BYTES, &4096u64.to_ne_bytes());
        put(offset::WRITE_BYTES, &8192u64.to_ne_bytes());
        put(offset::AC_TGID, &4242u32.to_ne_bytes());
        stats
    }

    /// A TASKSTATS_CMD_NEW message as the kernel sends it: the pid and the record nested in
    /// TASKSTATS_TYPE_AGGR_PID.
    fn exit_message(family: u16, stats: &[u8]) -> Vec<u8> {
        let mut nested = Vec::new();
        for (kind, value) in [
            (1u16, &4243u32.to_ne_bytes()[..]),
            (TASKSTATS_TYPE_STATS, stats),
        ] {
            nested.extend_from_slice(&((NLA_HEADER + value.len()) as u16).to_ne_bytes());
            nested.extend_from_slice(&kind.to_ne_bytes());
            nested.extend_from_slice(value);
            nested.resize(align(nested.len()), 0);
        }
        let nested_kind = TASKSTATS_TYPE_AGGR_PID | 0x8000; // NLA_F_NESTED, as some send it
        request(family, 0, TASKSTATS_CMD_NEW, 1, nested_kind, &nested)
    }

    fn exits_of(datagram: &[u8], family: u16) -> Vec<TaskExit> {
        messages(datagram)
            .filter(|(kind, _)| *kind == family)
            .filter_map(|(_, payload)| parse_exit(payload))
            .collect()
    }

    #[test]
    fn a_version_14_record_names_the_process_by_its_tgid() {
        let message = exit_message(27, &record(14, 432, AGROUP));
        let exits = exits_of(&message, 27);
        assert_eq!(
            exits,
            [TaskExit {
                comm: "sh".into(),
                pid: 4242,
                ppid: 4000,
                process_ended: true,
                elapsed_us: 1500,
                cpu_us: 1000,
                peak_rss: 2048 * 1024,
                storage_io: Some((4096, 8192)),
                status: 3 << 8,
            }]
        );
    }

    /// `record` with the scheduler's figures: given a CPU `count` times, `queued_ns` in the
    /// queue, a run time of `run_ns` and `waits` voluntary switches.
    fn record_with_figures(count: u64, queued_ns: u64, run_ns: u64, waits: u64) -> Vec<u8> {
        let mut stats = record(14, 432, AGROUP);
        put(&mut stats, offset::CPU_COUNT, &count.to_ne_bytes());
        put(
            &mut stats,
            offset::CPU_DELAY_TOTAL,
            &queued_ns.to_ne_bytes(),
        );
        put(
            &mut stats,
            offset::CPU_RUN_VIRTUAL_TOTAL,
            &run_ns.to_ne_bytes(),
        );
        put(&mut stats, offset::NVCSW, &waits.to_ne_bytes());
        stats
    }

    fn cpu_us_of(stats: &[u8]) -> u64 {
        exits_of(&exit_message(27, stats), 27)[0].cpu_us
    }

    #[test]
    fn a_process_that_never_waited_used_its_life_but_its_time_queued() {
        // 1,500 µs of life, 400 queued, the run time never brought up to date; 1,000 µs in
        // ticks.
        assert_eq!(cpu_us_of(&record_with_figures(1, 400_000, 0, 0)), 1_100);
        // The run time, where it says more (the clocks differ by a little).
        assert_eq!(
            cpu_us_of(&record_with_figures(3, 400_000, 1_200_000, 0)),
            1_200
        );
    }

    #[test]
    fn a_process_that_waited_used_its_run_time_or_its_ticks_whichever_says_more() {
        assert_eq!(cpu_us_of(&record_with_figures(9, 0, 2_500_000, 2)), 2_500);
        assert_eq!(cpu_us_of(&record_with_figures(9, 0, 300_000, 2)), 1_000);
    }

    #[test]
    fn without_the_schedulers_figures_the_cpu_is_the_ticks() {
        // Not filled (given a CPU 0 times): before Linux 5.14 with delay accounting off.
        assert_eq!(cpu_us_of(&record_with_figures(0, 400_000, 0, 0)), 1_000);
        // A record too short to hold them all.
        let mut short = record_with_figures(1, 400_000, 0, 0);
        short.truncate(offset::NVCSW);
        assert_eq!(cpu_us_of(&short), 1_000);
    }

    #[test]
    fn a_thread_that_is_not_the_last_of_its_process_does_not_end_it() {
        let exits = exits_of(&exit_message(27, &record(14, 432, 0)), 27);
        assert!(!exits[0].process_ended);
    }

    #[test]
    fn before_version_12_every_record_is_a_process_by_its_own_pid() {
        // Version 11 ends at compact_delay_total; the bytes past it are not read.
        let exits = exits_of(&exit_message(27, &record(11, 368, 0)), 27);
        assert_eq!((exits[0].pid, exits[0].process_ended), (4243, true));
    }

    #[test]
    fn a_record_too_short_for_a_field_used_is_dropped() {
        for length in [0, 2, 100, offset::WRITE_BYTES + 7] {
            let message = exit_message(27, &record(14, length, AGROUP));
            assert_eq!(exits_of(&message, 27), [], "{length} bytes");
        }
    }

    #[test]
    fn lengths_past_the_datagram_end_the_walk() {
        let mut message = exit_message(27, &record(14, 432, AGROUP));
        message[..4].copy_from_slice(&9999u32.to_ne_bytes());
        assert_eq!(exits_of(&message, 27), []);
        let mut message = exit_message(27, &record(14, 432, AGROUP));
        // The nested attribute's length, past its message.
        let at = NLMSG_HEADER + GENL_HEADER;
        message[at..at + 2].copy_from_slice(&u16::MAX.to_ne_bytes());
        assert_eq!(exits_of(&message, 27), []);
        for cut in 0..message.len() {
            exits_of(&message[..cut], 27);
        }
    }

    /// Runs `sh -c 'exit 3'` and returns its exit as `drain` (an exit source's) reports it:
    /// a command and a status that are the child's.
    pub(crate) fn failing_childs_exit(mut drain: impl FnMut(&mut Vec<TaskExit>)) -> TaskExit {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(3));
        // By its pid: the other tests of this process start children too.
        let ours = |exits: &[TaskExit]| exits.iter().position(|e| e.pid == child.id());
        let mut exits = Vec::new();
        for _ in 0..100 {
            drain(&mut exits);
            if let Some(at) = ours(&exits) {
                let ours = exits.swap_remove(at);
                let expected = ("sh", 3 << 8, std::process::id());
                assert_eq!((ours.comm.as_str(), ours.status, ours.ppid), expected);
                return ours;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the child's exit was not reported in a second")
    }

    #[test]
    fn a_child_that_exits_is_reported_with_its_status() {
        let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
        let mut taskstats = match Taskstats::open(&possible) {
            Ok(taskstats) => taskstats,
            Err(error) => return eprintln!("skipped: {error}"),
        };
        let ours = failing_childs_exit(|exits| taskstats.drain(exits));
        assert!(ours.process_ended && ours.peak_rss > 0, "{ours:?}");
        // A run of a millisecond, seldom a tick's worth: counted from the scheduler's
        // figures, it is never none.
        match taskstats.process_cpu() {
            ProcessCpu::RunTime => assert!(ours.cpu_us > 0, "{ours:?}"),
            ProcessCpu::Ticks => eprintln!("note: the kernel has no scheduler's figures"),
        }
    }

    #[test]
    fn exits_before_the_acknowledgement_are_kept_for_the_first_drain() {
        let mut ends = [0; 2];
        // SAFETY: socketpair(2) writes two descriptors into the array it is given.
        let made =
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, ends.as_mut_ptr()) };
        assert_eq!(made, 0);
        // SAFETY: descriptors just made, owned by nothing else.
        let (ours, kernel) =
            unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
        let mut taskstats = Taskstats {
            socket: ours,
            family: 27,
            buffer: vec![0; DATAGRAM_MAX],
            overruns: 0,
            early: Vec::new(),
            process_cpu: ProcessCpu::Ticks,
        };
        let ack = request(NLMSG_ERROR, 0, 0, 0, 0, &[]);
        for datagram in [exit_message(27, &record(14, 432, AGROUP)), ack] {
            // SAFETY: a valid buffer of that length, for the call.
            let sent = unsafe {
                libc::send(
                    kernel.as_raw_fd(),
                    datagram.as_ptr().cast(),
                    datagram.len(),
                    0,
                )
            };
            assert_eq!(sent, datagram.len() as isize);
        }
        assert_eq!(taskstats.acknowledgement().unwrap(), 0);
        let mut exits = Vec::new();
        taskstats.drain(&mut exits);
        assert_eq!(exits.iter().map(|e| e.pid).collect::<Vec<_>>(), [4242]);
    }

    #[test]
    fn the_family_id_is_read_from_the_controllers_reply() {
        let reply = request(
            GENL_ID_CTRL,
            0,
            1,
            2,
            CTRL_ATTR_FAMILY_ID,
            &27u16.to_ne_bytes(),
        );
        assert_eq!(family_id(&reply), Some(27));
        assert_eq!(family_id(&reply[..reply.len() - 4]), None);
    }

    #[test]
    fn an_error_acknowledgement_carries_its_errno() {
        let mut ack = request(NLMSG_ERROR, 0, 0, 0, 0, &[]);
        ack[NLMSG_HEADER..NLMSG_HEADER + 4].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert_eq!(acknowledged(&ack), Some(-libc::EPERM));
    }
}
