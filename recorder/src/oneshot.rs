//! One value handed from one thread to another that waits for it until a deadline: a
//! Mutex and a Condvar, so the wait is one futex sleep. Crossbeam's blocking receive spins
//! and calls sched_yield four times before it sleeps, and on the VMs workers run on a yield
//! costs more than the futex: the recording's one-off waits (a lifecycle line made durable,
//! the writer's and the marker-file thread's ends) use this instead.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A hand-off's two ends: the giver's [`Giver::give`], or its drop, wakes the taker.
pub(crate) fn oneshot<T>() -> (Giver<T>, Taker<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::Waiting),
        changed: Condvar::new(),
    });
    (
        Giver {
            shared: Arc::clone(&shared),
        },
        Taker { shared },
    )
}

enum State<T> {
    Waiting,
    Given(T),
    /// The giver is gone without giving, or the value was taken.
    Closed,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // The lock is held only to swap a state, which cannot panic half-way.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub(crate) struct Giver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Giver<T> {
    pub(crate) fn give(self, value: T) {
        *self.shared.lock() = State::Given(value);
        self.shared.changed.notify_one();
        // Drop finds the state given and leaves it.
    }
}

impl<T> Drop for Giver<T> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if matches!(*state, State::Waiting) {
            *state = State::Closed;
            drop(state);
            self.shared.changed.notify_one();
        }
    }
}

pub(crate) struct Taker<T> {
    shared: Arc<Shared<T>>,
}

/// Why [`Taker::take_deadline`] returned without a value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotGiven {
    Timeout,
    /// The giver was dropped without giving (or the value was taken already).
    Closed,
}

impl<T> Taker<T> {
    /// The value, waiting for it until `deadline`.
    pub(crate) fn take_deadline(&self, deadline: Instant) -> Result<T, NotGiven> {
        let mut state = self.shared.lock();
        loop {
            match std::mem::replace(&mut *state, State::Closed) {
                State::Given(value) => return Ok(value),
                State::Closed => return Err(NotGiven::Closed),
                State::Waiting => *state = State::Waiting,
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NotGiven::Timeout);
            }
            state = match self.shared.changed.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// The value, waiting `wait` at most.
    pub(crate) fn take_timeout(&self, wait: Duration) -> Result<T, NotGiven> {
        self.take_deadline(Instant::now() + wait)
    }

    /// The value if it was given, without waiting.
    pub(crate) fn try_take(&self) -> Option<T> {
        self.take_deadline(Instant::now()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far_away() -> Instant {
        Instant::now() + Duration::from_secs(600)
    }

    #[test]
    fn a_value_given_on_another_thread_wakes_the_taker() {
        let (giver, taker) = oneshot();
        let giving = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            giver.give(7);
        });
        assert_eq!(taker.take_deadline(far_away()), Ok(7));
        giving.join().unwrap();
    }

    #[test]
    fn a_giver_dropped_without_giving_wakes_the_taker_closed() {
        let (giver, taker) = oneshot::<()>();
        let dropping = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(giver);
        });
        assert_eq!(taker.take_deadline(far_away()), Err(NotGiven::Closed));
        dropping.join().unwrap();
    }

    #[test]
    fn waiting_ends_at_the_deadline_and_the_value_is_taken_once() {
        let (giver, taker) = oneshot();
        assert_eq!(
            taker.take_timeout(Duration::from_millis(5)),
            Err(NotGiven::Timeout)
        );
        assert_eq!(taker.try_take(), None);
        giver.give("line");
        assert_eq!(taker.try_take(), Some("line"));
        assert_eq!(taker.try_take(), None);
    }
}
