//! Who may hold a connection. A new connection first waits in the handshake room
//! (at most `max_connections` of them, each for at most the handshake deadline);
//! only a connection that completed the handshake (authenticated when the server
//! has a token) takes one of the `max_connections` slots. When the room is full,
//! the oldest connection in it is evicted to let the new one in: silent or slow
//! strangers can delay a worker's handshake, never keep it out, and can never take
//! a slot.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

pub(crate) struct Admission {
    /// Connections in their handshake, oldest (smallest number) first; dropping a
    /// sender evicts its connection.
    room: Mutex<BTreeMap<u64, oneshot::Sender<()>>>,
    room_size: usize,
    next: AtomicU64,
    slots: Arc<Semaphore>,
    pub evicted: AtomicU64,
}

/// A connection's place in the handshake room (left when dropped).
pub(crate) struct InRoom<'a> {
    admission: &'a Admission,
    id: u64,
    evicted: Option<oneshot::Receiver<()>>,
}

impl Admission {
    pub fn new(max_connections: usize) -> Admission {
        Admission {
            room: Mutex::new(BTreeMap::new()),
            room_size: max_connections.max(1),
            next: AtomicU64::new(0),
            slots: Arc::new(Semaphore::new(max_connections.max(1))),
            evicted: AtomicU64::new(0),
        }
    }

    /// Enters the handshake room, evicting the oldest connection there if full.
    pub fn enter(&self) -> InRoom<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let mut room = self.room.lock();
        while room.len() >= self.room_size {
            // Dropping the sender wakes the evicted connection's task.
            room.pop_first();
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        room.insert(id, tx);
        InRoom {
            admission: self,
            id,
            evicted: Some(rx),
        }
    }

    /// Connections in their handshake now.
    pub fn in_handshake(&self) -> usize {
        self.room.lock().len()
    }

    /// A slot for a connection past its handshake, if one is free.
    pub fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }
}

impl InRoom<'_> {
    /// Resolves when this connection is evicted from the room.
    pub async fn evicted(&mut self) {
        match self.evicted.as_mut() {
            Some(rx) => {
                let _ = rx.await;
                self.evicted = None;
            }
            None => std::future::pending().await,
        }
    }
}

impl Drop for InRoom<'_> {
    fn drop(&mut self) {
        self.admission.room.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_room_evicts_its_oldest_and_slots_are_separate() {
        let a = Admission::new(2);
        let mut first = a.enter();
        let _second = a.enter();
        assert_eq!(a.in_handshake(), 2);
        let _third = a.enter();
        first.evicted().await; // returns: the oldest was evicted
        assert_eq!(a.evicted.load(Ordering::Relaxed), 1);
        assert_eq!(a.in_handshake(), 2);
        drop(first);
        assert_eq!(
            a.in_handshake(),
            2,
            "leaving after eviction removes no one else"
        );
        let s1 = a.slot().unwrap();
        let _s2 = a.slot().unwrap();
        assert!(a.slot().is_none());
        drop(s1);
        assert!(a.slot().is_some());
    }
}
