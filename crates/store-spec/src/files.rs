//! The file names of a store directory (`--store DIR`, Python's `store_dir`,
//! batch mode's `--store`) and of a run's own state in its output directory:
//! every reader and writer of them takes the names from here.

/// The key set's snapshot (`webdedup_store::snapshot`).
pub const SNAPSHOT_FILE: &str = "store.snap";
/// MinHash mode's side store of kept documents (`dedup::policy::minhash`).
pub const MINHASH_KEPT_FILE: &str = "minhash.kept";
/// Feedback mode: the first-seen locations of the keys a run stopped by a signal
/// saved in the snapshot (`webdedup_store::locations`, canonical form). Only that
/// run's restore loads it: an uninterrupted run names no original of a key from
/// before it.
pub const LOCATIONS_FILE: &str = "store.locations";
/// The store directory's lock: one run at a time.
pub const LOCK_FILE: &str = "lock";
/// The journal of the run on a store directory.
pub const JOURNAL_FILE: &str = "journal";
/// The lock of a run without `--store`, in its output directory (removed at the end).
pub const OUTPUT_LOCK_FILE: &str = ".webdedup.lock";
/// The journal of a run without `--store`, in its output directory.
pub const OUTPUT_JOURNAL_FILE: &str = ".webdedup.journal";
