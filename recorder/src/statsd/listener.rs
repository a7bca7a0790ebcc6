//! The statsd listener's thread: the sockets it takes packets on, its wait on them, and
//! its aggregation into one interval's lines at a time.

use super::socket::{self, SocketFile, SOCKET_NAME};
use super::{record_packet, MAX_PACKET_BYTES};
use crate::channel::MarkerSink;
use crate::error::RecorderError;
use crate::influx::Unserved;
use std::io::{self, PipeReader};
use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};
use tc_profile_format::{Aggregator, MetricLimits, StatsdInfo};

/// The receive buffer asked of the kernel, so that a burst waits for the thread instead
/// of being dropped (Linux caps it at net.core.rmem_max unless the recorder is root).
const RECEIVE_BUFFER_BYTES: libc::c_int = 8 << 20;

/// Where the listener takes packets: the socket in the profile directory, the UDP port on
/// 127.0.0.1, or both.
pub(crate) struct Inputs {
    pub(crate) socket: Option<(UnixDatagram, SocketFile)>,
    pub(crate) udp: Option<UdpSocket>,
}

impl Inputs {
    /// Binds the socket in `profile_dir`, when there is one, and the UDP port when asked.
    pub(crate) fn bind(profile_dir: Option<&Path>, udp: bool) -> Result<Inputs, RecorderError> {
        let socket = profile_dir
            .map(|dir| {
                socket::bind(dir).map_err(|source| RecorderError::StatsdSocket {
                    path: dir.join(SOCKET_NAME),
                    source,
                })
            })
            .transpose()?;
        let udp = udp
            .then(bind_udp)
            .transpose()
            .map_err(RecorderError::Statsd)?;
        Ok(Inputs { socket, udp })
    }

    /// What the meta line says about the listener.
    pub(crate) fn info(&self, limits: &MetricLimits) -> io::Result<StatsdInfo> {
        let address = self.udp.as_ref().map(UdpSocket::local_addr).transpose()?;
        let socket = self.socket.as_ref().map(|(_, file)| file.path());
        Ok(StatsdInfo {
            address: address.map(|address| address.to_string()),
            socket: socket.map(|path| path.to_string_lossy().into_owned()),
            prefix: limits.prefix.clone(),
            max_packet_bytes: MAX_PACKET_BYTES,
            max_series: limits.max_series,
        })
    }
}

/// Binds a UDP socket on 127.0.0.1, on a port the kernel picks.
fn bind_udp() -> io::Result<UdpSocket> {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    for option in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: a valid socket, and a pointer to a c_int of the length passed.
        let done = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&RECEIVE_BUFFER_BYTES as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        // SO_RCVBUFFORCE needs CAP_NET_ADMIN; SO_RCVBUF is capped by rmem_max. A small
        // buffer only means that bursts may lose packets, as with any statsd.
        if done == 0 {
            break;
        }
    }
    Ok(socket)
}

/// The sockets themselves, as the thread gives them back when it ends.
pub(crate) type Sockets = (Option<UnixDatagram>, Option<UdpSocket>);

/// The listener thread's state.
pub(crate) struct Listener {
    socket: Option<UnixDatagram>,
    udp: Option<UdpSocket>,
    /// Readable once the recording stops.
    stop: PipeReader,
    aggregator: Aggregator,
    markers: MarkerSink,
    interval: Duration,
    kernel_drops: KernelDrops,
    /// The InfluxDB endpoint, until a connection to it starts its first handler.
    endpoint: Option<Unserved>,
}

/// What a wait found ready.
struct Ready {
    packets: bool,
    stop: bool,
}

impl Listener {
    pub(crate) fn new(
        (socket, udp): Sockets,
        stop: PipeReader,
        limits: MetricLimits,
        markers: MarkerSink,
        interval: Duration,
        endpoint: Option<Unserved>,
    ) -> Listener {
        Listener {
            kernel_drops: KernelDrops::of(udp.as_ref()),
            socket,
            udp,
            stop,
            aggregator: Aggregator::new(limits),
            markers,
            interval,
            endpoint,
        }
    }

    /// Receives until the stop, flushing once per interval that had packets; then takes
    /// what is still queued in the sockets and flushes the last, partial interval. An
    /// interval starts with its first packet: without packets the thread sleeps (the stop
    /// ends the sleep) instead of waking every interval for nothing. Returns the sockets,
    /// for a next recording of the task.
    pub(crate) fn run(mut self) -> Sockets {
        let mut buffer = vec![0u8; MAX_PACKET_BYTES + 1];
        // The interval being taken: its start (log time) and when to flush it.
        let mut interval: Option<(f64, Instant)> = None;
        loop {
            if let Some((start, flush_at)) = interval {
                if Instant::now() >= flush_at {
                    self.flush(start);
                    interval = None;
                }
            }
            // Without an interval to flush, it sleeps until a packet or the stop.
            let timeout =
                interval.map(|(_, flush_at)| flush_at.saturating_duration_since(Instant::now()));
            let ready = self.wait(timeout);
            // A packet received together with the stop is still taken.
            if ready.packets {
                let period = self.interval;
                let now = self.markers.now();
                let (_, flush_at) = *interval.get_or_insert_with(|| (now, Instant::now() + period));
                self.take_queued(&mut buffer, Some(flush_at));
            }
            if ready.stop {
                break;
            }
        }
        let start = interval.map_or_else(|| self.markers.now(), |(start, _)| start);
        self.take_queued(&mut buffer, None);
        self.flush(start);
        (self.socket, self.udp)
    }

    /// Waits until a packet is queued, the stop, or `timeout` has passed (None: for ever);
    /// a connection to the InfluxDB endpoint meanwhile starts its first handler.
    fn wait(&mut self, timeout: Option<Duration>) -> Ready {
        // poll(2) skips a negative descriptor.
        let watch = |fd: Option<RawFd>| libc::pollfd {
            fd: fd.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        };
        let endpoint = self.endpoint.as_ref().map(|e| e.listener().as_raw_fd());
        let mut ready = [
            watch(Some(self.stop.as_raw_fd())),
            watch(self.socket.as_ref().map(AsRawFd::as_raw_fd)),
            watch(self.udp.as_ref().map(AsRawFd::as_raw_fd)),
            watch(endpoint),
        ];
        // Rounded up: a flush due in 0.4 ms is not waited for with a busy loop.
        let timeout_ms = timeout.map_or(-1, |t| {
            i32::try_from(t.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
        });
        // SAFETY: four pollfds, valid for the call.
        if unsafe { libc::poll(ready.as_mut_ptr(), 4, timeout_ms) } <= 0 {
            return Ready {
                packets: false,
                stop: false,
            };
        }
        if ready[3].revents != 0 {
            if let Some(endpoint) = self.endpoint.take() {
                // A handler that cannot start leaves the endpoint unanswered, as a full one.
                let _ = endpoint.serve();
            }
        }
        Ready {
            packets: ready[1].revents != 0 || ready[2].revents != 0,
            stop: ready[0].revents != 0,
        }
    }

    /// Takes the packets already queued in each socket, one syscall each, until none is
    /// left or the deadline has passed (checked every few hundred packets).
    fn take_queued(&mut self, buffer: &mut [u8], deadline: Option<Instant>) {
        let socket = self.socket.as_ref().map(AsRawFd::as_raw_fd);
        let udp = self.udp.as_ref().map(AsRawFd::as_raw_fd);
        for (fd, from_udp) in [(socket, false), (udp, true)] {
            if let Some(fd) = fd {
                self.take_queued_from(fd, from_udp, buffer, deadline);
            }
        }
    }

    fn take_queued_from(
        &mut self,
        fd: RawFd,
        from_udp: bool,
        buffer: &mut [u8],
        deadline: Option<Instant>,
    ) {
        for taken in 1u64.. {
            // SAFETY: the buffer is valid for writes of its length.
            let length = unsafe {
                libc::recv(
                    fd,
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            let Ok(length) = usize::try_from(length) else {
                return;
            };
            // Only the UDP socket's packets can be dropped by the kernel: a full Unix
            // socket makes its sender wait instead.
            self.kernel_drops.traffic |= from_udp;
            self.take_packet(&buffer[..length]);
            if taken % 256 == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
        }
    }

    fn take_packet(&mut self, packet: &[u8]) {
        if packet.len() > MAX_PACKET_BYTES {
            self.aggregator.drops.oversized += 1;
            return;
        }
        record_packet(&mut self.aggregator, packet);
    }

    /// Sends the interval's lines; returns the start of the next interval.
    fn flush(&mut self, start: f64) -> f64 {
        self.aggregator.drops.kernel_dropped += self.kernel_drops.since_last();
        let end = self.markers.now();
        for marker in self.aggregator.flush(start, end) {
            self.markers.marker(&marker);
        }
        end
    }
}

/// The kernel's count of packets it dropped for this socket (its receive buffer was
/// full), from /proc/net/udp; read only after an interval that had traffic.
struct KernelDrops {
    inode: Option<u64>,
    seen: u64,
    traffic: bool,
}

impl KernelDrops {
    fn of(socket: Option<&UdpSocket>) -> KernelDrops {
        let inode = socket.and_then(|socket| {
            let descriptor = format!("/proc/self/fd/{}", socket.as_raw_fd());
            std::fs::metadata(descriptor).ok().map(|m| m.ino())
        });
        KernelDrops {
            inode,
            seen: 0,
            traffic: false,
        }
    }

    fn since_last(&mut self) -> u64 {
        let (Some(inode), true) = (self.inode, std::mem::take(&mut self.traffic)) else {
            return 0;
        };
        let Ok(table) = std::fs::read_to_string("/proc/net/udp") else {
            return 0;
        };
        let total = socket_drops(&table, inode).unwrap_or(self.seen);
        let new = total.saturating_sub(self.seen);
        self.seen = total;
        new
    }
}

/// The `drops` column of the socket with this inode in /proc/net/udp.
fn socket_drops(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        let matches = fields.get(9)?.parse::<u64>().ok()? == inode;
        matches.then(|| fields.get(12)?.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_read_from_the_sockets_line() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
            1: 0100007F:A1B2 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 17\n";
        assert_eq!(socket_drops(table, 4242), Some(17));
        assert_eq!(socket_drops(table, 1), None);
    }
}
