//! The channel into the writer, with a wake-up of its own: a sender unparks the writer after
//! each message, and the writer parks until then (one futex wait), because crossbeam's own
//! blocking receive spins and yields about a dozen times before it sleeps, which at ten
//! ticks a second was a quarter of the writer's CPU.

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender, TryIter, TryRecvError};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::Thread;
use std::time::Instant;

/// A channel into the writer: the senders' end, cheap to clone, and the writer's.
pub(crate) fn inbox<T>() -> (Outbox<T>, Inbox<T>) {
    let (sender, receiver) = unbounded();
    let wake = Arc::new(Wake::default());
    let inbox = Inbox {
        receiver,
        wake: Arc::downgrade(&wake),
    };
    (Outbox { sender, wake }, inbox)
}

/// The writer's thread, once it has first waited; unparked when the last sender is gone,
/// after its channel end (declared first in [`Outbox`], so dropped first), so that the
/// writer wakes to find the channel disconnected.
#[derive(Default)]
struct Wake {
    writer: OnceLock<Thread>,
}

impl Wake {
    fn unpark(&self) {
        if let Some(writer) = self.writer.get() {
            writer.unpark();
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
    /// Sends `message` and wakes the writer; false once the writer is gone.
    pub(crate) fn send(&self, message: T) -> bool {
        let sent = self.sender.send(message).is_ok();
        self.wake.unpark();
        sent
    }

    /// Messages waiting for the writer.
    pub(crate) fn len(&self) -> usize {
        self.sender.len()
    }
}

pub(crate) struct Inbox<T> {
    receiver: Receiver<T>,
    wake: Weak<Wake>,
}

impl<T> Inbox<T> {
    /// The next message, waiting for it until `deadline`. Called on the writer's thread.
    pub(crate) fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        if let Some(wake) = self.wake.upgrade() {
            let _ = wake.writer.set(std::thread::current());
        }
        loop {
            match self.receiver.try_recv() {
                Ok(message) => return Ok(message),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RecvTimeoutError::Timeout);
            }
            // A wake-up that came before this park makes it return at once.
            std::thread::park_timeout(deadline - now);
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
        let writer = std::thread::spawn(move || inbox.recv_deadline(far_away()));
        std::thread::sleep(Duration::from_millis(20));
        assert!(outbox.send(Message::Shutdown));
        let received = writer.join().unwrap();
        assert!(matches!(received, Ok(Message::Shutdown)));
    }

    #[test]
    fn the_last_sender_gone_wakes_the_writer_to_a_disconnected_channel() {
        let (outbox, inbox) = inbox::<Message>();
        let second = outbox.clone();
        let writer = std::thread::spawn(move || inbox.recv_deadline(far_away()));
        std::thread::sleep(Duration::from_millis(20));
        drop(outbox);
        drop(second);
        let received = writer.join().unwrap();
        assert!(matches!(received, Err(RecvTimeoutError::Disconnected)));
    }

    #[test]
    fn waiting_ends_at_the_deadline() {
        let (_outbox, inbox) = inbox::<Message>();
        let received = inbox.recv_deadline(Instant::now() + Duration::from_millis(5));
        assert!(matches!(received, Err(RecvTimeoutError::Timeout)));
    }
}
