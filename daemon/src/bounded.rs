//! Connections served at once, bounded: each on a thread of its own for the length of one
//! request, and past the bound turned away, so that a flood of clients costs no more.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Connections served at once, by the socket and by the HTTP server each.
pub const MAX_CONNECTIONS: usize = 16;

#[derive(Default)]
pub struct Bounded {
    busy: Arc<AtomicUsize>,
}

impl Bounded {
    /// Runs `serve` on a thread of its own; false, without running it, when
    /// [`MAX_CONNECTIONS`] are being served (or no thread can be had).
    pub fn spawn(&self, name: &str, serve: impl FnOnce() + Send + 'static) -> bool {
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
