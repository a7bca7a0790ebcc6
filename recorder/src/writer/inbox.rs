//! The channel into the writer (and into the task output's consumer), with a wake-up of its
//! own: a sender unparks the receiver after each message, and the receiver parks until then
//! (one futex wait), because crossbeam's own blocking receive spins and yields about a dozen
//! times before it sleeps, which at ten ticks a second was a quarter of the writer's CPU.

use crossbeam_channel::{
    bounded, unbounded, Receiver, RecvTimeoutError, Sender, TryIter, TryRecvError, TrySendError,
};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::Thread;
use std::time::Instant;

/// An unbounded channel into the writer: the senders' end, cheap to clone, and the writer's.
pub(crate) fn inbox<T>() -> (Outbox<T>, Inbox<T>) {
    over(unbounded())
}

/// An inbox that holds `capacity` messages at most: see [`Outbox::try_send`].
pub(crate) fn bounded_inbox<T>(capacity: usize) -> (Outbox<T>, Inbox<T>) {
    over(bounded(capacity))
}

fn over<T>((sender, receiver): (Sender<T>, Receiver<T>)) -> (Outbox<T>, Inbox<T>) {
    let wake = Arc::new(Wake::default());
    let inbox = Inbox {
        receiver,
        wake: Arc::downgrade(&wake),
    };
    (Outbox { sender, wake }, inbox)
}

/// The receiver's thread, once it has first waited; unparked when the last sender is gone,
/// after its channel end (declared first in [`Outbox`], so dropped first), so that the
/// receiver wakes to find the channel disconnected.
#[derive(Default)]
struct Wake {
    receiver: OnceLock<Thread>,
}

impl Wake {
    fn unpark(&self) {
        if let Some(receiver) = self.receiver.get() {
            receiver.unpark();
        }
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        self.unpark();
    }
}

pub(crate) struct Outbox<T> {
    sender: Sender<T>,
    wake: Arc<Wake>,
}

// Not derived: that would ask T to be Clone.
impl<T> Clone for Outbox<T> {
    fn clone(&self) -> Self {
        Outbox {
            sender: self.sender.clone(),
            wake: Arc::clone(&self.wake),
        }
    }
}

impl<T> Outbox<T> {
    /// Sends `message` and wakes the receiver; false once the receiver is gone. Waits
    /// while a bounded inbox is full.
    pub(crate) fn send(&self, message: T) -> bool {
        let sent = self.sender.send(message).is_ok();
        self.wake.unpark();
        sent
    }

    /// Sends `message` unless a bounded inbox is full (or the receiver gone): then gives it
    /// back.
    pub(crate) fn try_send(&self, message: T) -> Result<(), T> {
        let sent = self.sender.try_send(message);
        self.wake.unpark();
        sent.map_err(TrySendError::into_inner)
    }

    /// Messages waiting for the receiver.
    pub(crate) fn len(&self) -> usize {
        self.sender.len()
    }
}

pub(crate) struct Inbox<T> {
    receiver: Receiver<T>,
    wake: Weak<Wake>,
}

impl<T> Inbox<T> {
    /// The next message, waiting for it until `deadline` (None: for as long as a sender
    /// is left). Called on the receiver's thread.
    pub(crate) fn recv_until(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        if let Some(wake) = self.wake.upgrade() {
            let _ = wake.receiver.set(std::thread::current());
        }
        loop {
            match self.receiver.try_recv() {
                Ok(message) => return Ok(message),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            // A wake-up that came before this park makes it return at once.
            match deadline {
                None => std::thread::park(),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(RecvTimeoutError::Timeout);
                    }
                    std::thread::park_timeout(left);
                }
            }
        }
    }

    /// The messages already waiting.
    pub(crate) fn try_iter(&self) -> TryIter<'_, T> {
        self.receiver.try_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::Message;
    use std::time::Duration;

    /// A deadline no test waits for: a writer that is not woken hangs the test.
    fn far_away() -> Instant {
        Instant::now() + Duration::from_secs(600)
    }

    #[test]
    fn a_message_wakes_a_writer_parked_until_far_away() {
        let (outbox, inbox) = inbox();
        let writer = std::thread::spawn(move || inbox.recv_until(Some(far_away())));
        std::thread::sleep(Duration::from_millis(20));
        assert!(outbox.send(Message::Shutdown));
        let received = writer.join().unwrap();
        assert!(matches!(received, Ok(Message::Shutdown)));
    }

    #[test]
    fn the_last_sender_gone_wakes_the_writer_to_a_disconnected_channel() {
        let (outbox, inbox) = inbox::<Message>();
        let second = outbox.clone();
        let writer = std::thread::spawn(move || inbox.recv_until(Some(far_away())));
        std::thread::sleep(Duration::from_millis(20));
        drop(outbox);
        drop(second);
        let received = writer.join().unwrap();
        assert!(matches!(received, Err(RecvTimeoutError::Disconnected)));
    }

    #[test]
    fn a_full_bounded_inbox_gives_the_message_back() {
        let (outbox, inbox) = bounded_inbox(1);
        assert_eq!(outbox.try_send(1), Ok(()));
        assert_eq!(outbox.try_send(2), Err(2));
        assert!(matches!(inbox.recv_until(None), Ok(1)));
    }

    #[test]
    fn waiting_ends_at_the_deadline() {
        let (_outbox, inbox) = inbox::<Message>();
        let received = inbox.recv_until(Some(Instant::now() + Duration::from_millis(5)));
        assert!(matches!(received, Err(RecvTimeoutError::Timeout)));
    }
}
