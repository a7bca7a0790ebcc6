//! Every process of the machine as it exits, from the kernel's proc connector (netlink's
//! `NETLINK_CONNECTOR`, group `CN_IDX_PROC`, `include/uapi/linux/cn_proc.h`): where
//! taskstats is missing (a kernel without `CONFIG_TASKSTATS`) but the connector is there.
//! Listening takes `CAP_NET_ADMIN` in the initial namespaces, as taskstats does; without
//! it [`ProcConnector::open`] fails and the tree is seen by sampling alone.
//!
//! An exit event carries the pid, the parent and the wait status, nothing else: the
//! name, the CPU and the start are read from /proc at once, by a thread of its own that
//! waits on the socket, because the parent may reap the process a moment later. The name
//! is read at each exec (a fork's child keeps its parent's until then) and again from the
//! zombie at its exit; the CPU from the zombie (`stat` and `schedstat`), so a process
//! reaped before that read has its run and its status counted and its CPU missing. Peak
//! RSS and storage I/O are not in the events: they are left out.

use crate::sources::netlink::{self, messages, read_u16, read_u32, read_u64, DATAGRAM_MAX};
use crate::sources::process_tree::process::{parse_stat, stat_path, Stat};
use crate::sources::procfs::{decimal, sysconf, ReadBuffer};
use crate::sources::taskstats::{ProcessCpu, TaskExit};
use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// `include/uapi/linux/netlink.h`: the type the connector's messages are sent with.
const NLMSG_DONE: u16 = 3;
/// `struct cn_msg`: idx, val, seq, ack (u32 each), len, flags (u16 each).
const CN_MSG_HEADER: usize = 20;
/// `struct proc_event`: what, cpu (u32 each), timestamp_ns (u64), then the event's data.
const EVENT_DATA: usize = 16;
const COMM_LEN: usize = 16;

/// How long the set-up waits for the kernel's acknowledgement, and how often the reader
/// looks whether it is to stop while no event comes.
const RECEIVE_TIMEOUT: libc::timeval = libc::timeval {
    tv_sec: 1,
    tv_usec: 0,
};
const SETUP_TIMEOUT: Duration = Duration::from_secs(1);
/// Processes followed from their fork (parent, start, name) at most: every process of the
/// machine started since the recording began and still alive.
const KNOWN_MAX: usize = 65_536;
/// Exits read and not yet drained at most: more than ten seconds of a busy build's.
const QUEUED_MAX: usize = 262_144;
/// The name of a process whose exec was seen but which was reaped before its name could
/// be read.
pub(crate) const UNNAMED: &str = "(unnamed)";

/// Why the proc connector is not used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProcConnectorError {
    #[error("joining the proc connector's group (CAP_NET_ADMIN): {0}")]
    Socket(io::Error),
    #[error("listening for process events (CAP_NET_ADMIN, initial namespaces): {0}")]
    Listen(io::Error),
    #[error("starting its reader thread: {0}")]
    Thread(io::Error),
}

/// A listener for every process's exit, read by a thread of its own.
pub(crate) struct ProcConnector {
    socket: Arc<OwnedFd>,
    shared: Arc<Shared>,
    process_cpu: ProcessCpu,
}

/// What the reader thread hands over.
#[derive(Default)]
struct Shared {
    exits: Mutex<Vec<TaskExit>>,
    /// Times exits were lost: the socket's queue overflowed, or [`QUEUED_MAX`] was reached.
    overruns: AtomicU64,
    stop: AtomicBool,
}

impl ProcConnector {
    /// Listens for the machine's process events and starts the thread that reads them.
    pub(crate) fn open(proc_root: &Path) -> Result<ProcConnector, ProcConnectorError> {
        let groups = 1 << (libc::CN_IDX_PROC - 1);
        let socket = netlink::socket(libc::NETLINK_CONNECTOR, groups, RECEIVE_TIMEOUT)
            .map_err(ProcConnectorError::Socket)?;
        let mut reader = Reader::new(proc_root);
        // The run time is in schedstat where the kernel keeps it (`CONFIG_SCHED_INFO`),
        // else zeros.
        let process_cpu = match reader.read_runtime_ns(std::process::id()) {
            Some(1..) => ProcessCpu::RunTime,
            _ => ProcessCpu::Ticks,
        };
        let mut early = Vec::new();
        let listen = control(libc::PROC_CN_MCAST_LISTEN, reader.ack_id);
        netlink::send(&socket, &listen).map_err(ProcConnectorError::Listen)?;
        reader
            .acknowledgement(&socket, &mut early)
            .map_err(ProcConnectorError::Listen)?;
        let socket = Arc::new(socket);
        let shared = Arc::new(Shared {
            exits: Mutex::new(early),
            ..Shared::default()
        });
        let (thread_socket, thread_shared) = (Arc::clone(&socket), Arc::clone(&shared));
        std::thread::Builder::new()
            .name("tc-profile-exits".to_owned())
            .spawn(move || reader.run(&thread_socket, &thread_shared))
            .map_err(ProcConnectorError::Thread)?;
        Ok(ProcConnector {
            socket,
            shared,
            process_cpu,
        })
    }

    /// Every exit read since the last call, in the order the kernel sent them.
    pub(crate) fn drain(&mut self, exits: &mut Vec<TaskExit>) {
        let mut queued = self
            .shared
            .exits
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        exits.append(&mut queued);
    }

    /// How many times exits were lost; the kernel does not say how many.
    pub(crate) fn overruns(&self) -> u64 {
        self.shared.overruns.load(Ordering::Relaxed)
    }

    /// What the exits' CPU is counted from: the run time in a zombie's schedstat, where the
    /// kernel keeps it (read at the exit event, as the exit leaves the CPU: some 1 ms for
    /// a `true` of about that, measured), else the ticks in its stat.
    pub(crate) fn process_cpu(&self) -> ProcessCpu {
        self.process_cpu
    }
}

impl Drop for ProcConnector {
    /// Stops listening at once (the kernel makes the events only while someone listens);
    /// the thread ends at its next event or timeout, and the socket with it.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let ignore = control(libc::PROC_CN_MCAST_IGNORE, 0);
        let _ = netlink::send(&self.socket, &ignore);
    }
}

/// A message to the proc connector: `op` (listen or ignore), with `ack` for its reply.
fn control(op: libc::proc_cn_mcast_op, ack: u32) -> Vec<u8> {
    let mut payload = Vec::with_capacity(CN_MSG_HEADER + 4);
    for word in [libc::CN_IDX_PROC, libc::CN_VAL_PROC, 0, ack] {
        payload.extend_from_slice(&word.to_ne_bytes());
    }
    payload.extend_from_slice(&4u16.to_ne_bytes()); // len: the op
    payload.extend_from_slice(&0u16.to_ne_bytes()); // flags
    payload.extend_from_slice(&op.to_ne_bytes());
    netlink::message(NLMSG_DONE, 0, &payload)
}

/// One process event, as far as it is used.
#[derive(Clone, Debug, PartialEq)]
enum Event {
    /// The reply to a control message: its `ack` plus one, and an errno (0: success).
    Acknowledgement {
        ack: u32,
        errno: u32,
    },
    Fork {
        parent: u32,
        child: u32,
        /// Monotonic ns.
        at: u64,
    },
    Exec {
        pid: u32,
    },
    Comm {
        pid: u32,
        comm: String,
    },
    Exit {
        pid: u32,
        parent: u32,
        status: u32,
        at: u64,
    },
}

/// The event of one message's payload (after the netlink header); None for another
/// connector's message, an event not used, a thread's (its process goes on), or one too
/// short for its fields.
fn parse_event(payload: &[u8]) -> Option<Event> {
    let (index, value) = (read_u32(payload, 0)?, read_u32(payload, 4)?);
    if (index, value) != (libc::CN_IDX_PROC, libc::CN_VAL_PROC) {
        return None;
    }
    let length = read_u16(payload, 16)? as usize;
    let event = payload.get(CN_MSG_HEADER..CN_MSG_HEADER + length)?;
    let data = event.get(EVENT_DATA..)?;
    let at = read_u64(event, 8)?;
    // Each event's data starts with a (pid, tgid) pair (the fork's is the parent's).
    let word = |i: usize| read_u32(data, 4 * i);
    let process = |pid: u32, tgid: u32| (pid == tgid).then_some(tgid);
    match read_u32(event, 0)? {
        libc::PROC_EVENT_NONE => Some(Event::Acknowledgement {
            ack: read_u32(payload, 12)?,
            errno: word(0)?,
        }),
        libc::PROC_EVENT_FORK => Some(Event::Fork {
            parent: word(1)?,
            child: process(word(2)?, word(3)?)?,
            at,
        }),
        libc::PROC_EVENT_EXEC => Some(Event::Exec {
            pid: process(word(0)?, word(1)?)?,
        }),
        libc::PROC_EVENT_COMM => {
            let comm = data.get(8..8 + COMM_LEN)?;
            let comm = &comm[..memchr::memchr(0, comm).unwrap_or(COMM_LEN)];
            Some(Event::Comm {
                pid: process(word(0)?, word(1)?)?,
                comm: String::from_utf8_lossy(comm).into_owned(),
            })
        }
        libc::PROC_EVENT_EXIT => Some(Event::Exit {
            pid: process(word(0)?, word(1)?)?,
            status: word(2)?,
            // Linux 4.18 and later; 0 before.
            parent: word(5).unwrap_or(0),
            at,
        }),
        _ => None,
    }
}

/// A process followed from its fork or exec.
#[derive(Clone, Debug, Default)]
struct Known {
    parent: u32,
    /// Monotonic ns; 0: not seen.
    forked_at: u64,
    execed: bool,
    comm: Option<String>,
}

/// The reader's state: the processes it follows, and what reads their /proc files.
struct Reader {
    proc_root: PathBuf,
    known: HashMap<u32, Known>,
    buffer: ReadBuffer,
    ticks_per_second: u64,
    /// The `ack` of the listen request: its reply carries it plus one.
    ack_id: u32,
}

impl Reader {
    fn new(proc_root: &Path) -> Reader {
        Reader {
            proc_root: proc_root.to_owned(),
            known: HashMap::new(),
            buffer: ReadBuffer::new(),
            ticks_per_second: sysconf(libc::_SC_CLK_TCK).unwrap_or(100),
            ack_id: std::process::id(),
        }
    }

    /// Waits for the reply to the listen request (other listeners' replies come to every
    /// listener); events before it are handled.
    fn acknowledgement(&mut self, socket: &OwnedFd, exits: &mut Vec<TaskExit>) -> io::Result<()> {
        let mut datagram = vec![0; DATAGRAM_MAX];
        let deadline = Instant::now() + SETUP_TIMEOUT;
        // Events keep coming while other listeners are there: the wait is bounded by time.
        while Instant::now() < deadline {
            let length = netlink::receive(socket, &mut datagram, 0)?;
            for (_, payload) in messages(&datagram[..length]) {
                match parse_event(payload) {
                    Some(Event::Acknowledgement { ack, errno }) if ack == self.ack_id + 1 => {
                        return match errno {
                            0 => Ok(()),
                            errno => Err(io::Error::from_raw_os_error(errno as i32)),
                        };
                    }
                    Some(event) => exits.extend(self.handle(event)),
                    None => {}
                }
            }
        }
        Err(io::ErrorKind::TimedOut.into())
    }

    /// Reads events until told to stop, handing over the exits of each datagram.
    fn run(mut self, socket: &OwnedFd, shared: &Shared) {
        promote_this_thread();
        let mut datagram = vec![0; DATAGRAM_MAX];
        let mut exits = Vec::new();
        while !shared.stop.load(Ordering::Relaxed) {
            match netlink::receive(socket, &mut datagram, 0) {
                Ok(length) => {
                    let events = messages(&datagram[..length]).filter_map(|(_, p)| parse_event(p));
                    let events: Vec<Event> = events.collect();
                    exits.extend(events.into_iter().filter_map(|event| self.handle(event)));
                }
                Err(error) if error.raw_os_error() == Some(libc::ENOBUFS) => {
                    shared.overruns.fetch_add(1, Ordering::Relaxed);
                }
                Err(error) if is_transient(&error) => {}
                Err(_) => return,
            }
            if !exits.is_empty() {
                let mut queued = shared.exits.lock().unwrap_or_else(PoisonError::into_inner);
                if queued.len() + exits.len() > QUEUED_MAX {
                    shared.overruns.fetch_add(1, Ordering::Relaxed);
                    exits.clear();
                } else {
                    queued.append(&mut exits);
                }
            }
        }
    }

    /// Follows a process's life; returns its exit when it ends.
    fn handle(&mut self, event: Event) -> Option<TaskExit> {
        match event {
            Event::Acknowledgement { .. } => None,
            Event::Fork { parent, child, at } => {
                if let Some(known) = self.follow(child) {
                    *known = Known {
                        parent,
                        forked_at: at,
                        ..Known::default()
                    };
                }
                None
            }
            Event::Exec { pid } => {
                let comm = self.read_stat(pid).map(|(_, comm)| comm);
                if let Some(known) = self.follow(pid) {
                    known.execed = true;
                    known.comm = comm;
                }
                None
            }
            Event::Comm { pid, comm } => {
                if let Some(known) = self.follow(pid) {
                    known.comm = Some(comm);
                }
                None
            }
            Event::Exit {
                pid,
                parent,
                status,
                at,
            } => Some(self.exit(pid, parent, status, at)),
        }
    }

    /// The entry of `pid`, made if there is room.
    fn follow(&mut self, pid: u32) -> Option<&mut Known> {
        if self.known.len() >= KNOWN_MAX && !self.known.contains_key(&pid) {
            return None;
        }
        Some(self.known.entry(pid).or_default())
    }

    fn exit(&mut self, pid: u32, parent: u32, status: u32, at: u64) -> TaskExit {
        let known = self.known.remove(&pid).unwrap_or_default();
        let zombie = self.read_stat(pid).filter(|(stat, _)| stat.is_zombie());
        let cpu_us = zombie.as_ref().map_or(0, |(stat, _)| {
            let stat_us = stat.own_ticks * 1_000_000 / self.ticks_per_second;
            stat_us.max(self.read_runtime_ns(pid).unwrap_or(0) / 1000)
        });
        let parent = [
            parent,
            known.parent,
            zombie.as_ref().map_or(0, |(s, _)| s.ppid),
        ]
        .into_iter()
        .find(|&pid| pid != 0)
        .unwrap_or(0);
        let elapsed_us = match (known.forked_at, &zombie) {
            (0, Some((stat, _))) => self.since_start_us(stat),
            (0, None) => 0,
            (forked_at, _) => at.saturating_sub(forked_at) / 1000,
        };
        let comm = match (zombie, known) {
            (Some((_, comm)), _) => comm,
            (
                None,
                Known {
                    comm: Some(comm), ..
                },
            ) => comm,
            // A fork that did not exec runs under its parent's name.
            (
                None,
                Known {
                    execed: false,
                    forked_at,
                    ..
                },
            ) if forked_at != 0 => self.parents_name(parent),
            (None, _) => UNNAMED.to_owned(),
        };
        TaskExit {
            comm,
            pid,
            ppid: parent,
            process_ended: true,
            elapsed_us,
            cpu_us,
            peak_rss: 0,
            storage_io: None,
            status: status as i32,
        }
    }

    fn parents_name(&mut self, parent: u32) -> String {
        let known = self.known.get(&parent).and_then(|known| known.comm.clone());
        let read = || self.read_stat(parent).map(|(_, comm)| comm);
        known.or_else(read).unwrap_or_else(|| UNNAMED.to_owned())
    }

    fn read_stat(&mut self, pid: u32) -> Option<(Stat, String)> {
        let bytes = self
            .buffer
            .read_path(&stat_path(&self.proc_root, pid))
            .ok()?;
        let (stat, comm) = parse_stat(bytes)?;
        Some((stat, String::from_utf8_lossy(comm).into_owned()))
    }

    /// The first field of /proc/<pid>/schedstat: the ns its main thread ran, exact where
    /// stat's CPU is in whole clock ticks (none, for most short processes).
    fn read_runtime_ns(&mut self, pid: u32) -> Option<u64> {
        let path = self
            .proc_root
            .join(itoa::Buffer::new().format(pid))
            .join("schedstat");
        let bytes = self.buffer.read_path(&path).ok()?;
        decimal(bytes.split(|&b| b == b' ').next()?)
    }

    /// µs from a process's start (its stat, in clock ticks after boot) to now.
    fn since_start_us(&self, stat: &Stat) -> u64 {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime(2) writes only into the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut now) } != 0 {
            return 0;
        }
        let now_us = now.tv_sec as u64 * 1_000_000 + now.tv_nsec as u64 / 1000;
        now_us.saturating_sub(stat.start_ticks * 1_000_000 / self.ticks_per_second)
    }
}

/// Puts the calling thread ahead of the machine's ordinary ones (SCHED_FIFO at the lowest
/// priority, else the highest nice): a process lives less than a millisecond after its
/// exec, and its parent reaps it a moment after its exit, so that a reader waiting its
/// turn behind a busy machine's runnable threads finds it gone. The work it does at each
/// event is a few reads of /proc.
fn promote_this_thread() {
    let parameters = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler(2) on the calling thread (0) reads the parameters given.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &parameters) } == 0 {
        return;
    }
    // SAFETY: gettid(2) cannot fail; setpriority(2) on that thread has no other effect.
    unsafe {
        let thread = libc::gettid() as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, thread, -20);
    }
}

fn is_transient(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connector message of event `what` at `at` ns with the data's 32-bit words (and
    /// `comm` after the first two, for a COMM event).
    fn event(what: u32, at: u64, words: &[u32], comm: &[u8]) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend_from_slice(&what.to_ne_bytes());
        data.extend_from_slice(&0u32.to_ne_bytes()); // cpu
        data.extend_from_slice(&at.to_ne_bytes());
        for word in words {
            data.extend_from_slice(&word.to_ne_bytes());
        }
        data.extend_from_slice(comm);
        data.resize(EVENT_DATA + 24, 0); // the union's size
        let mut payload = Vec::new();
        for word in [libc::CN_IDX_PROC, libc::CN_VAL_PROC, 7, 0] {
            payload.extend_from_slice(&word.to_ne_bytes());
        }
        payload.extend_from_slice(&(data.len() as u16).to_ne_bytes());
        payload.extend_from_slice(&0u16.to_ne_bytes());
        payload.extend_from_slice(&data);
        netlink::message(NLMSG_DONE, 0, &payload)
    }

    fn fork(parent: u32, child: u32, at: u64) -> Vec<u8> {
        event(
            libc::PROC_EVENT_FORK,
            at,
            &[parent, parent, child, child],
            &[],
        )
    }

    fn exec(pid: u32) -> Vec<u8> {
        event(libc::PROC_EVENT_EXEC, 0, &[pid, pid], &[])
    }

    fn exit(pid: u32, tgid: u32, status: u32, parent: u32, at: u64) -> Vec<u8> {
        let words = [pid, tgid, status, libc::SIGCHLD as u32, parent, parent];
        event(libc::PROC_EVENT_EXIT, at, &words, &[])
    }

    /// Writes `proc/<pid>/stat` (state, ppid, 3 + 2 ticks of CPU) and `schedstat`.
    fn put_stat(proc_root: &Path, pid: u32, comm: &str, state: char, runtime_ns: u64) {
        let dir = proc_root.join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let mut fields = vec!["0"; 49];
        let state = state.to_string();
        fields[0] = &state; // 3: state
        fields[1] = "1"; // 4: ppid
        fields[11] = "3"; // 14: utime
        fields[12] = "2"; // 15: stime
        fields[19] = "100"; // 22: starttime
        let stat = format!("{pid} ({comm}) {}\n", fields.join(" "));
        std::fs::write(dir.join("stat"), stat).unwrap();
        std::fs::write(dir.join("schedstat"), format!("{runtime_ns} 0 1\n")).unwrap();
    }

    fn events_of(reader: &mut Reader, datagrams: &[Vec<u8>]) -> Vec<TaskExit> {
        let all = datagrams.iter().flat_map(|d| messages(d).map(|(_, p)| p));
        let events: Vec<Event> = all.filter_map(parse_event).collect();
        events
            .into_iter()
            .filter_map(|e| reader.handle(e))
            .collect()
    }

    #[test]
    fn an_exit_read_from_its_zombie_has_its_name_cpu_parent_and_life() {
        let proc_root = tempfile::tempdir().unwrap();
        let mut reader = Reader::new(proc_root.path());
        put_stat(proc_root.path(), 500, "cc1", 'Z', 1_234_000);
        let exits = events_of(
            &mut reader,
            &[
                fork(400, 500, 1_000_000),
                exec(500),
                exit(500, 500, 3 << 8, 400, 4_000_000),
            ],
        );
        let ticks_us = 5 * 1_000_000 / reader.ticks_per_second;
        assert_eq!(
            exits,
            [TaskExit {
                comm: "cc1".into(),
                pid: 500,
                ppid: 400,
                process_ended: true,
                elapsed_us: 3_000,
                cpu_us: ticks_us.max(1_234),
                peak_rss: 0,
                storage_io: None,
                status: 3 << 8,
            }]
        );
        assert!(reader.known.is_empty(), "its entry let go");
    }

    #[test]
    fn a_process_reaped_before_its_exit_is_read_keeps_its_name_from_the_exec() {
        let proc_root = tempfile::tempdir().unwrap();
        let mut reader = Reader::new(proc_root.path());
        put_stat(proc_root.path(), 501, "true", 'R', 9_000);
        let mut exits = events_of(&mut reader, &[fork(400, 501, 1_000), exec(501)]);
        std::fs::remove_dir_all(proc_root.path().join("501")).unwrap(); // reaped
        exits.extend(events_of(&mut reader, &[exit(501, 501, 0, 400, 2_000)]));
        assert_eq!(exits.len(), 1);
        assert_eq!((exits[0].comm.as_str(), exits[0].cpu_us), ("true", 0));
    }

    #[test]
    fn a_fork_without_exec_is_named_after_its_parent_and_an_unread_exec_is_unnamed() {
        let proc_root = tempfile::tempdir().unwrap();
        let mut reader = Reader::new(proc_root.path());
        put_stat(proc_root.path(), 400, "make", 'S', 0);
        let exits = events_of(
            &mut reader,
            &[
                fork(400, 502, 1_000),
                exit(502, 502, 0, 400, 2_000),
                fork(400, 503, 1_000),
                exec(503),
                exit(503, 503, 0, 400, 2_000),
            ],
        );
        let names: Vec<&str> = exits.iter().map(|e| e.comm.as_str()).collect();
        assert_eq!(names, ["make", UNNAMED]);
    }

    #[test]
    fn a_threads_events_are_no_process_and_a_live_pid_is_no_zombie() {
        let proc_root = tempfile::tempdir().unwrap();
        let mut reader = Reader::new(proc_root.path());
        // A pid already given to a new, live process when the exit is read: not its CPU.
        put_stat(proc_root.path(), 600, "reused", 'R', 5_000_000);
        let exits = events_of(
            &mut reader,
            &[
                event(libc::PROC_EVENT_FORK, 0, &[600, 600, 601, 600], &[]),
                exit(601, 600, 0, 0, 10),
                exit(600, 600, libc::SIGKILL as u32, 1, 10),
            ],
        );
        assert_eq!(exits.len(), 1, "{exits:?}");
        assert_eq!((exits[0].pid, exits[0].cpu_us), (600, 0));
        assert_eq!(
            (exits[0].comm.as_str(), exits[0].status),
            (UNNAMED, libc::SIGKILL)
        );
    }

    #[test]
    fn a_comm_event_renames_and_other_connectors_and_short_messages_are_skipped() {
        let proc_root = tempfile::tempdir().unwrap();
        let mut reader = Reader::new(proc_root.path());
        let comm = event(libc::PROC_EVENT_COMM, 0, &[700, 700], b"worker\0");
        let exits = events_of(&mut reader, &[comm, exit(700, 700, 0, 1, 10)]);
        assert_eq!(exits[0].comm, "worker");
        let mut other = exit(701, 701, 0, 1, 10);
        other[netlink::NLMSG_HEADER] = 9; // cn_msg.idx: another connector
        assert_eq!(events_of(&mut reader, &[other]), []);
        let whole = exit(702, 702, 0, 1, 10);
        for cut in 0..whole.len() {
            let mut cut_short = whole[..cut].to_vec();
            if cut >= 4 {
                cut_short[..4].copy_from_slice(&(cut as u32).to_ne_bytes());
            }
            assert_eq!(events_of(&mut reader, &[cut_short]), [], "{cut} bytes");
        }
    }

    #[test]
    fn the_listen_request_is_acknowledged_by_its_own_reply() {
        let request = control(libc::PROC_CN_MCAST_LISTEN, 41);
        let (_, payload) = messages(&request).next().unwrap();
        assert_eq!(read_u32(payload, 12), Some(41));
        assert_eq!(read_u32(payload, CN_MSG_HEADER), Some(1));
        let reply = event(libc::PROC_EVENT_NONE, 0, &[0], &[]);
        let (_, payload) = messages(&reply).next().unwrap();
        assert_eq!(
            parse_event(payload),
            Some(Event::Acknowledgement { ack: 0, errno: 0 })
        );
    }

    #[test]
    fn a_child_that_exits_is_reported_by_the_kernel() {
        let mut connector = match ProcConnector::open(Path::new("/proc")) {
            Ok(connector) => connector,
            Err(error) => return eprintln!("skipped: {error}"),
        };
        crate::sources::taskstats::tests::failing_childs_exit(|exits| connector.drain(exits));
    }
}
