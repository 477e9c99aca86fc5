//! CPU time of a run and of its ordered step (the commit gate, where store
//! requests and decisions pass one chunk at a time in input order): the share of
//! the work no added thread can take, which caps what more cores give (Amdahl).

use std::sync::atomic::{AtomicU64, Ordering};

fn nanos(t: libc::timespec) -> u64 {
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time the calling thread has used, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes into the struct we pass.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return 0;
    }
    nanos(t)
}

/// CPU time (user and system) every thread of the process has used, in
/// nanoseconds.
pub(crate) fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0;
    }
    let t = |v: libc::timeval| v.tv_sec as u64 * 1_000_000_000 + v.tv_usec as u64 * 1_000;
    t(u.ru_utime) + t(u.ru_stime)
}

/// The CPU time spent in the ordered step, summed over the threads that pass it.
#[derive(Default)]
pub(crate) struct OrderedClock {
    ns: AtomicU64,
}

impl OrderedClock {
    /// Runs `f` (one pass of the ordered step), adding the thread's CPU time in it.
    pub(crate) fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        let start = thread_cpu_ns();
        let r = f();
        let spent = thread_cpu_ns().saturating_sub(start);
        self.ns.fetch_add(spent, Ordering::Relaxed);
        r
    }

    /// Counts `seconds` of serial work measured elsewhere (the block-split
    /// step's longest chain).
    pub(crate) fn add_seconds(&self, seconds: f64) {
        self.ns.fetch_add((seconds * 1e9) as u64, Ordering::Relaxed);
    }

    pub(crate) fn seconds(&self) -> f64 {
        self.ns.load(Ordering::Relaxed) as f64 / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_in_the_step_is_counted_and_within_the_process_time() {
        let clock = OrderedClock::default();
        let before = process_cpu_ns();
        let sum = clock.time(|| (0..20_000_000u64).fold(0u64, |a, b| a.wrapping_add(b * b)));
        std::hint::black_box(sum);
        let all = (process_cpu_ns() - before) as f64 / 1e9;
        assert!(clock.seconds() > 0.0);
        // getrusage counts in microseconds, the thread clock in nanoseconds.
        assert!(clock.seconds() <= all + 0.01, "{} > {all}", clock.seconds());
    }
}
