//! Connections served at once, bounded: each on a thread of its own for the length of one
//! request, and past the bound turned away, so that a flood of clients costs no more.

use std::io;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Connections served at once, by the socket and by the HTTP server each.
pub const MAX_CONNECTIONS: usize = 16;

/// A stream answered on a thread of its own, or, turned away, through a clone of it on the
/// accepting thread.
pub trait Connection: Sized + Send + 'static {
    fn duplicate(&self) -> io::Result<Self>;
}

impl Connection for UnixStream {
    fn duplicate(&self) -> io::Result<Self> {
        self.try_clone()
    }
}

impl Connection for TcpStream {
    fn duplicate(&self) -> io::Result<Self> {
        self.try_clone()
    }
}

/// Answers each connection of `incoming` on a thread of its own until `stop` is set (the
/// stopper then connects once, to wake the accept); past [`MAX_CONNECTIONS`], `turn_away`
/// answers at once.
pub fn serve_each<C: Connection>(
    incoming: impl Iterator<Item = io::Result<C>>,
    stop: &AtomicBool,
    thread_name: &str,
    answer: Arc<dyn Fn(C) + Send + Sync>,
    turn_away: impl Fn(C),
) {
    let bounded = Bounded::default();
    for connection in incoming {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(connection) = connection else { continue };
        let Ok(turned_away) = connection.duplicate() else {
            continue;
        };
        let answer = Arc::clone(&answer);
        if !bounded.spawn(thread_name, move || answer(connection)) {
            turn_away(turned_away);
        }
    }
}

#[derive(Default)]
struct Bounded {
    busy: Arc<AtomicUsize>,
}

impl Bounded {
    /// Runs `serve` on a thread of its own; false, without running it, when
    /// [`MAX_CONNECTIONS`] are being served (or no thread can be had).
    fn spawn(&self, name: &str, serve: impl FnOnce() + Send + 'static) -> bool {
        if self.busy.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            self.busy.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let busy = Arc::clone(&self.busy);
        let spawned = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                serve();
                busy.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
        spawned.is_ok()
    }
}
