//! Connections served at once, bounded: each on a thread of its own for the length of one
//! request, and past the bound (in all, or from one address) turned away, so that a flood
//! of clients costs no more. The requests' own deadlines bound how long each holds its
//! place.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, TcpStream};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Connections served at once.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub total: usize,
    /// From one address (a Unix socket's clients have none: only `total` counts).
    pub per_address: usize,
}

/// The socket's: only root reaches it.
pub const SOCKET_LIMITS: Limits = Limits {
    total: 16,
    per_address: 16,
};

/// The live profiles': a slow client holds its place for the head's deadline at most
/// (5 s), so that one address's clients, at most, leave the others places to spare. Every
/// address of 127.0.0.0/8 is one of the machine's own: against local users the total
/// counts, not the address.
pub const HTTP_LIMITS: Limits = Limits {
    total: 128,
    per_address: 32,
};

/// A stream answered on a thread of its own, or, turned away, through a clone of it on the
/// accepting thread.
pub trait Connection: Sized + Send + 'static {
    fn duplicate(&self) -> io::Result<Self>;
    /// The address it comes from, if it has one.
    fn peer(&self) -> Option<IpAddr>;
}

#[cfg(unix)]
impl Connection for UnixStream {
    fn duplicate(&self) -> io::Result<Self> {
        self.try_clone()
    }

    fn peer(&self) -> Option<IpAddr> {
        None
    }
}

impl Connection for TcpStream {
    fn duplicate(&self) -> io::Result<Self> {
        self.try_clone()
    }

    fn peer(&self) -> Option<IpAddr> {
        self.peer_addr().ok().map(|address| address.ip())
    }
}

/// Answers each connection of `incoming` on a thread of its own until `stop` is set (the
/// stopper then connects once, to wake the accept); past `limits`, `turn_away` answers at
/// once.
pub fn serve_each<C: Connection>(
    incoming: impl Iterator<Item = io::Result<C>>,
    stop: &AtomicBool,
    limits: Limits,
    thread_name: &str,
    answer: Arc<dyn Fn(C) + Send + Sync>,
    turn_away: impl Fn(C),
) {
    let bounded = Bounded {
        limits,
        busy: Arc::default(),
    };
    for connection in incoming {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(connection) = connection else { continue };
        let Ok(turned_away) = connection.duplicate() else {
            continue;
        };
        let peer = connection.peer();
        let answer = Arc::clone(&answer);
        if !bounded.spawn(peer, thread_name, move || answer(connection)) {
            turn_away(turned_away);
        }
    }
}

/// Connections being served: in all, and from each address.
#[derive(Default)]
struct Busy {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

struct Bounded {
    limits: Limits,
    busy: Arc<Mutex<Busy>>,
}

/// A place taken, given back when dropped (a request that panics gives it back too).
struct Place {
    busy: Arc<Mutex<Busy>>,
    peer: Option<IpAddr>,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut busy = lock(&self.busy);
        busy.total -= 1;
        if let Some(peer) = self.peer {
            if let Some(count) = busy.by_address.get_mut(&peer) {
                *count -= 1;
                if *count == 0 {
                    busy.by_address.remove(&peer);
                }
            }
        }
    }
}

fn lock(busy: &Mutex<Busy>) -> MutexGuard<'_, Busy> {
    busy.lock().unwrap_or_else(|e| e.into_inner())
}

impl Bounded {
    /// A place for a connection from `peer`, if the limits leave one.
    fn take(&self, peer: Option<IpAddr>) -> Option<Place> {
        let mut busy = lock(&self.busy);
        let from_peer = peer.map_or(0, |peer| busy.by_address.get(&peer).copied().unwrap_or(0));
        if busy.total >= self.limits.total || from_peer >= self.limits.per_address {
            return None;
        }
        busy.total += 1;
        if let Some(peer) = peer {
            *busy.by_address.entry(peer).or_default() += 1;
        }
        Some(Place {
            busy: Arc::clone(&self.busy),
            peer,
        })
    }

    /// Runs `serve` on a thread of its own; false, without running it, when the limits are
    /// reached (or no thread can be had).
    fn spawn(
        &self,
        peer: Option<IpAddr>,
        name: &str,
        serve: impl FnOnce() + Send + 'static,
    ) -> bool {
        let Some(place) = self.take(peer) else {
            return false;
        };
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let _place = place;
                serve();
            })
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_gets_its_share_and_the_others_the_rest() {
        let bounded = Bounded {
            limits: Limits {
                total: 3,
                per_address: 2,
            },
            busy: Arc::default(),
        };
        let (one, other) = (Some([10, 0, 0, 1].into()), Some([10, 0, 0, 2].into()));
        let first = bounded.take(one).unwrap();
        let _second = bounded.take(one).unwrap();
        assert!(bounded.take(one).is_none(), "over the address's share");
        let _third = bounded.take(other).unwrap();
        assert!(bounded.take(other).is_none(), "over the total");
        assert!(bounded.take(None).is_none(), "over the total");
        drop(first);
        assert!(
            bounded.take(one).is_some(),
            "a place given back is taken again"
        );
    }
}
