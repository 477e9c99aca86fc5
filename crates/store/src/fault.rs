//! Fault injection for crash tests: `WEBDEDUP_FAULT=POINT:N` makes the process abort
//! (like `kill -9`: no destructor, no flush) the N-th time it passes the named point.
//! Several may be given, comma-separated. Unset (the normal case) the cost is one
//! relaxed load per call.
//!
//! Points (the code that passes them says when):
//! * `journal-record`: after the N-th journal record was handed to the OS.
//! * `journal-torn`: in the middle of the N-th journal record (half of it written).
//! * `journal-sync`: before the N-th journal sync that precedes an output rename.
//! * `snapshot-mid`: half-way through writing the N-th snapshot (temporary file).
//! * `journal-create`: half-way through writing a new journal's header.
//! * `log-mid`: half-way through writing a decision log (`REL.dedup.log`).
//! * `snapshot-renamed`: after the N-th snapshot was renamed into place, before the
//!   journal is removed.
//! * `commit`: after the N-th chunk's store requests, before its journal record.
//! * `output-bytes`: once N bytes of output were handed to the output writer.
//! * `rename`: before the N-th output rename; `renamed`: after it.
//! * `stop-logs`: after the N-th `.dedup.log` was written during a clean stop.
//! * `stop`: not an abort: after the N-th chunk commit, behave as if SIGTERM came.
//! * `server-stop`: not an abort: a hash server stops as on SIGTERM (drains, saves)
//!   after answering its N-th key request.
//! * `locations-mid`: half-way through writing a server's first-seen locations
//!   (`SAVE.locations`).
//!
//! `POINT:N:enospc` is not an abort either: at the points that write a file
//! atomically (`snapshot-mid`, `journal-create`, `log-mid`, and `batch-write`: every
//! file batch mode writes), the N-th write fails half-way with "No space left on
//! device", as on a full disk, to test error paths; `output-bytes:N:enospc` fails
//! `warc dedup`'s output write that reaches N bytes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

struct Fault {
    point: String,
    at: u64,
    /// `POINT:N:enospc`: fail with a disk-full error instead of aborting.
    disk_full: bool,
    count: AtomicU64,
}

fn faults() -> &'static [Fault] {
    static F: OnceLock<Vec<Fault>> = OnceLock::new();
    F.get_or_init(|| {
        let Ok(spec) = std::env::var("WEBDEDUP_FAULT") else {
            return Vec::new();
        };
        spec.split(',')
            .filter_map(|p| {
                let p = p.trim();
                let (p, disk_full) = match p.strip_suffix(":enospc") {
                    Some(rest) => (rest, true),
                    None => (p, false),
                };
                let (point, n) = p.rsplit_once(':')?;
                Some(Fault {
                    point: point.to_string(),
                    at: n.parse().ok()?,
                    disk_full,
                    count: AtomicU64::new(0),
                })
            })
            .collect()
    })
}

/// Whether any fault is armed (so callers can skip bookkeeping otherwise).
#[inline]
pub fn armed() -> bool {
    !faults().is_empty()
}

/// Counts one pass through `point` (by `by`, e.g. bytes); true when the armed
/// count is reached by this pass.
pub fn reached(point: &str, by: u64) -> bool {
    reached_kind(point, by, false)
}

/// [`reached`] for the disk-full faults (`POINT:N:enospc`).
pub fn disk_full(point: &str, by: u64) -> bool {
    reached_kind(point, by, true)
}

fn reached_kind(point: &str, by: u64, disk_full: bool) -> bool {
    for f in faults() {
        if f.point == point && f.disk_full == disk_full {
            let before = f.count.fetch_add(by, Ordering::SeqCst);
            if before < f.at && before + by >= f.at {
                return true;
            }
        }
    }
    false
}

/// Aborts the process when `point` reaches its armed count.
#[inline]
pub fn hit(point: &str) {
    if armed() && reached(point, 1) {
        crash(point);
    }
}

/// Aborts now, like `kill -9` (no unwinding, no buffered data flushed).
pub fn crash(point: &str) -> ! {
    eprintln!("webdedup: fault injection: abort at {point}");
    std::process::abort()
}
