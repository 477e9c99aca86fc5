//! At most `--threads` workers busy at once, with spare workers that take the
//! next chunk while a busy one waits at a gate.
//!
//! Chunks pass the gates in input order, so a worker whose chunk is ready early
//! (a file's short last chunk after a full one) would wait for the chunk before
//! it, and its core would idle. Instead the run has a few more worker threads
//! than `--threads`, and a worker must hold one of `--threads` cores to work: it
//! gives its core up while it waits at a gate (a spare worker then plans the
//! next chunk) and takes one back before it goes on, ahead of workers starting
//! a new chunk. The gates are unchanged, so are the outputs.

use parking_lot::{Condvar, Mutex};
use std::cell::Cell;

/// The cores workers take turns on.
pub(crate) struct Cores {
    state: Mutex<Free>,
    cv: Condvar,
}

struct Free {
    cores: usize,
    /// Workers back from a wait, waiting for a core: they go first.
    resuming: usize,
}

thread_local! {
    /// The cores the calling thread holds one of (null: none).
    static HELD: Cell<*const Cores> = const { Cell::new(std::ptr::null()) };
}

impl Cores {
    pub(crate) fn new(cores: usize) -> Self {
        Cores {
            state: Mutex::new(Free {
                cores: cores.max(1),
                resuming: 0,
            }),
            cv: Condvar::new(),
        }
    }

    /// Takes a core for a new chunk (after every worker resuming one), held
    /// until the returned guard is dropped.
    pub(crate) fn start(&self) -> Busy<'_> {
        let mut s = self.state.lock();
        while s.cores == 0 || s.resuming > 0 {
            self.cv.wait(&mut s);
        }
        s.cores -= 1;
        drop(s);
        HELD.with(|h| h.set(self));
        Busy { cores: self }
    }

    fn resume(&self) {
        let mut s = self.state.lock();
        s.resuming += 1;
        while s.cores == 0 {
            self.cv.wait(&mut s);
        }
        s.resuming -= 1;
        s.cores -= 1;
        let others_may_start = s.resuming == 0 && s.cores > 0;
        drop(s);
        if others_may_start {
            self.cv.notify_all();
        }
    }

    fn release(&self) {
        self.state.lock().cores += 1;
        self.cv.notify_all();
    }
}

/// A core held for one chunk.
pub(crate) struct Busy<'a> {
    cores: &'a Cores,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        HELD.with(|h| h.set(std::ptr::null()));
        self.cores.release();
    }
}

/// A wait for another worker: the calling thread's core (if it holds one) is
/// free for a spare worker until [`Idle::end`], which takes one back. Never
/// end it while holding a lock another worker may need.
pub(crate) struct Idle {
    cores: *const Cores,
}

impl Idle {
    pub(crate) fn begin() -> Idle {
        let cores = HELD.with(|h| h.get());
        if !cores.is_null() {
            // SAFETY: a non-null `HELD` points to the `Cores` of the live `Busy`
            // guard of this thread (cleared when the guard drops), which
            // outlives every wait of its chunk.
            unsafe { &*cores }.release();
        }
        Idle { cores }
    }

    pub(crate) fn end(self) {
        if !self.cores.is_null() {
            // SAFETY: as in `begin`: the thread's `Busy` guard is still alive.
            unsafe { &*self.cores }.resume();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_waiting_worker_frees_its_core_and_takes_one_back() {
        // One core: the second worker can only work while the first waits.
        let cores = Cores::new(1);
        let (done, busy, most) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        let work = || {
            let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::yield_now();
            busy.fetch_sub(1, Ordering::SeqCst);
        };
        std::thread::scope(|s| {
            let _core = cores.start();
            s.spawn(|| {
                let _core = cores.start();
                work();
                done.fetch_add(1, Ordering::SeqCst);
            });
            let idle = Idle::begin();
            while done.load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
            idle.end();
            work();
        });
        assert_eq!(
            most.load(Ordering::SeqCst),
            1,
            "never two workers busy on one core"
        );
    }
}
