//! Stores answer one question, in batches: "have I seen this 64-bit key before?"
//!
//! [`Store`] is the trait every home of the key set implements (the embedded
//! [`MemStore`] here; the server cluster and Redis later). [`block_of`] is the rule
//! that splits the key space into blocks, the unit of persistence, ownership and
//! migration.
//!
//! ```
//! use webdedup_store::{MemStore, Store};
//! let store = MemStore::new(1999);
//! let mut seen = Vec::new();
//! store.test_and_insert(&[7, 8, 7], &mut seen).unwrap();
//! assert_eq!(seen, [false, false, true]); // the second 7 was seen: within a batch too
//! store.test_and_insert(&[8, 9], &mut seen).unwrap();
//! assert_eq!(seen, [true, false]);
//! ```

pub mod bands;
pub mod bits;
pub mod distribute;
pub mod fault;
pub mod journal;
pub mod locations;
mod lock;
mod mem;
pub mod server_map;
pub mod snapshot;
mod table;
#[cfg(test)]
mod test_damage;
mod zeroed;

pub use bands::{BandOwners, BandStore};
pub use journal::{Journal, JournalReplay, SyncMode};
pub use lock::{Busy, DirLock};
pub use mem::MemStore;
pub use snapshot::{refusal, setting_differs, SnapshotInfo, StoreMeta};

/// Default number of blocks: a prime, as in the KNOT system.
pub const DEFAULT_BLOCKS: u32 = 1999;

/// The block of a key: its big-endian bytes read as an unsigned integer, modulo the
/// block count (the KNOT clients' rule). On a `u64` that is simply `key % blocks`.
#[inline]
pub fn block_of(key: u64, blocks: u32) -> u32 {
    (key % blocks as u64) as u32
}

/// [`block_of`] without a division: Lemire's "fastmod" (a multiplication by a
/// precomputed 128-bit inverse), exact for every 64-bit key. A hardware division
/// costs tens of cycles, more than the rest of a cached test-and-insert.
#[derive(Clone, Copy, Debug)]
pub struct BlockMap {
    blocks: u64,
    m: u128,
}

impl BlockMap {
    pub fn new(blocks: u32) -> Self {
        assert!(blocks > 0, "at least one block");
        BlockMap {
            blocks: blocks as u64,
            m: (u128::MAX / blocks as u128).wrapping_add(1),
        }
    }

    #[inline]
    pub fn block(&self, key: u64) -> u32 {
        if self.blocks == 1 {
            return 0;
        }
        let low = self.m.wrapping_mul(key as u128);
        let (hi, lo) = ((low >> 64) as u64, low as u64);
        let t = hi as u128 * self.blocks as u128 + ((lo as u128 * self.blocks as u128) >> 64);
        (t >> 64) as u32
    }

    pub fn blocks(&self) -> u32 {
        self.blocks as u32
    }
}

/// The identity of one store request, stable across runs over the same input.
///
/// A store that keeps answers (the hash server, Redis) answers a repeated id with
/// the verdicts of its first attempt, so a retried request (reconnect, worker
/// restart with `--restore`) never turns the worker's own new keys into
/// "duplicate". `stream` names a sequence of requests (the dedup runner: a hash of
/// the input file's relative path, mixed by the remote store with the run's salt);
/// `seq` orders the requests within it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BatchId {
    pub stream: u64,
    pub seq: u64,
}

/// Where a key was first seen (feedback mode): the input file's id (xxh3-64 of
/// its path relative to the input directory) and the record number, from 1, of the
/// paragraph or row in that file. `Location::UNKNOWN` (all zero) when a store no
/// longer knows (locations are not persisted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Location {
    pub file: u64,
    pub record: u64,
}

impl Location {
    pub const UNKNOWN: Location = Location { file: 0, record: 0 };
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store cannot do what was asked (for example feedback locations on a
    /// backend that keeps none).
    #[error("not supported by this store: {0}")]
    Unsupported(String),
    #[error("store settings mismatch: {0}")]
    Mismatch(String),
    /// A snapshot or journal that is damaged: where, and what is wrong.
    #[error("{}: byte offset {offset}: {reason}", path.display())]
    Corrupt {
        path: std::path::PathBuf,
        offset: u64,
        reason: String,
    },
    /// The OS error is part of the message and deliberately not a `source()`:
    /// printed with its chain (`{:#}`) it would appear twice.
    #[error("{}: {error}", path.display())]
    Io {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
}

/// The check every located insert makes first: one location a key.
pub fn check_locations(keys: &[u64], locs: &[Location]) -> Result<(), StoreError> {
    if keys.len() == locs.len() {
        return Ok(());
    }
    Err(StoreError::Mismatch(format!(
        "{} keys but {} locations",
        keys.len(),
        locs.len()
    )))
}

/// A set of 64-bit keys with batched test-and-insert.
///
/// Contract: the batch behaves exactly as if its keys were tested and inserted one
/// by one in order, so a key repeated inside one batch is new the first time and
/// seen the second time.
pub trait Store: Send + Sync {
    /// For each key in order, pushes onto `seen` whether it was already present, and
    /// inserts it. `seen` is cleared first.
    fn test_and_insert(&self, keys: &[u64], seen: &mut Vec<bool>) -> Result<(), StoreError>;

    /// [`Store::test_and_insert`] for a request with an identity (see [`BatchId`]).
    /// Stores that keep no per-request answers simply forward.
    fn test_and_insert_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        seen: &mut Vec<bool>,
    ) -> Result<(), StoreError> {
        let _ = id;
        self.test_and_insert(keys, seen)
    }

    /// For each key in order, pushes whether it is present, inserting nothing
    /// (near mode tests a paragraph's n-grams before deciding to insert them).
    fn test(&self, keys: &[u64], seen: &mut Vec<bool>) -> Result<(), StoreError> {
        let _ = (keys, seen);
        Err(StoreError::Unsupported("testing without inserting".into()))
    }

    /// [`Store::test`] for a request with an identity (see [`BatchId`]): a store
    /// that keeps answers answers a retried test as its first attempt was, so the
    /// keys a retried chunk's first attempt inserted after its test (near mode's
    /// insert round) are not found "seen". Stores that keep none simply forward.
    fn test_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        seen: &mut Vec<bool>,
    ) -> Result<(), StoreError> {
        let _ = id;
        self.test(keys, seen)
    }

    /// [`Store::test`] that also pushes, for each key, the location of its first
    /// sighting ([`Location::UNKNOWN`] if absent or not known).
    fn test_located(
        &self,
        keys: &[u64],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let _ = (keys, seen, originals);
        Err(StoreError::Unsupported("feedback locations".into()))
    }

    /// [`Store::test_located`] for a request with an identity, answered as
    /// [`Store::test_batch`] is (the verdicts of the first attempt; the locations
    /// the store holds now). Stores that keep no answers simply forward.
    fn test_located_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let _ = id;
        self.test_located(keys, seen, originals)
    }

    /// [`Store::test_and_insert`] that also remembers where each new key was seen
    /// (`locs[i]` for `keys[i]`) and, for each key already present, pushes onto
    /// `originals` the location of its first sighting ([`Location::UNKNOWN`] if
    /// the store no longer knows, e.g. after loading a snapshot); for new keys it
    /// pushes [`Location::UNKNOWN`]. `seen` and `originals` are cleared first.
    fn test_and_insert_located(
        &self,
        keys: &[u64],
        locs: &[Location],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let _ = (keys, locs, seen, originals);
        Err(StoreError::Unsupported("feedback locations".into()))
    }

    /// [`Store::test_and_insert_located`] for a request with an identity (see
    /// [`BatchId`]): a store reached over a network answers a retried request from
    /// its records, so the retry never finds the request's own keys "seen".
    /// Stores in this process simply forward.
    fn test_and_insert_located_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        locs: &[Location],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let _ = id;
        self.test_and_insert_located(keys, locs, seen, originals)
    }

    /// Number of distinct keys stored (0 where [`Store::counts_keys`] is false).
    fn len(&self) -> u64;

    /// Whether [`Store::len`] is a count: false for a store that keeps none
    /// (Redis: counting would scan every bucket), so a summary says so instead of
    /// showing 0.
    fn counts_keys(&self) -> bool {
        true
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory the store holds for its keys (tables, not process overhead).
    fn memory_bytes(&self) -> u64;

    /// Block count of the store's key space.
    fn blocks(&self) -> u32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_is_big_endian_integer_modulo_blocks() {
        let key: u64 = 0x0102_0304_0506_0708;
        let be = u128::from_be_bytes({
            let mut b = [0u8; 16];
            b[8..].copy_from_slice(&key.to_be_bytes());
            b
        });
        assert_eq!(block_of(key, 1999) as u128, be % 1999);
        assert_eq!(block_of(u64::MAX, 1999), (u64::MAX % 1999) as u32);
    }

    proptest::proptest! {
        #[test]
        fn fast_block_equals_modulo(key: u64, blocks in 1u32..) {
            proptest::prop_assert_eq!(BlockMap::new(blocks).block(key), block_of(key, blocks));
        }
    }

    #[test]
    fn fast_block_edge_cases() {
        for blocks in [1u32, 2, 3, 1999, 65536, u32::MAX - 1, u32::MAX] {
            let m = BlockMap::new(blocks);
            for key in [
                0u64,
                1,
                blocks as u64 - 1,
                blocks as u64,
                blocks as u64 + 1,
                u64::MAX,
                u64::MAX - 1,
                1 << 63,
            ] {
                assert_eq!(
                    m.block(key),
                    block_of(key, blocks),
                    "key {key} blocks {blocks}"
                );
            }
        }
    }
}
