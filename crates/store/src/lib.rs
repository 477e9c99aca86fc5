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
mod located;
mod location_codes;
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
pub use zeroed::{request_buffers_freed, trim_heap_as_tables_grow};

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

/// What a request does with its keys. Feedback mode's operations (`*Located`)
/// also answer each key's first-seen location; its insert records where each new
/// key was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// Tests each key and inserts it.
    TestAndInsert,
    /// Tests each key, inserting nothing (near mode tests a paragraph's n-grams
    /// before deciding to insert them).
    Test,
    /// [`Op::Test`], answering each key's first-seen location too.
    TestLocated,
    /// [`Op::TestAndInsert`] that records `locs[i]` as where `keys[i]` was seen
    /// (when new) and answers each key's first-seen location.
    TestAndInsertLocated(&'a [Location]),
}

impl<'a> Op<'a> {
    pub fn inserts(self) -> bool {
        matches!(self, Op::TestAndInsert | Op::TestAndInsertLocated(_))
    }

    /// Whether the answer carries first-seen locations.
    pub fn located(self) -> bool {
        matches!(self, Op::TestLocated | Op::TestAndInsertLocated(_))
    }

    /// The locations a located insert records (none for the other operations).
    pub fn locs(self) -> &'a [Location] {
        match self {
            Op::TestAndInsertLocated(locs) => locs,
            _ => &[],
        }
    }

    /// What a store that cannot do this operation answers.
    pub fn unsupported(self) -> StoreError {
        StoreError::Unsupported(
            match self {
                Op::TestAndInsert => "testing and inserting",
                Op::Test => "testing without inserting",
                Op::TestLocated | Op::TestAndInsertLocated(_) => "feedback locations",
            }
            .into(),
        )
    }
}

/// One request to a [`Store`]: its identity (see [`BatchId`]; `None` for a
/// request that is never retried), its keys and what to do with them. Built only
/// by [`Request::new`], so a located insert always has one location a key.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    id: Option<BatchId>,
    keys: &'a [u64],
    op: Op<'a>,
}

impl<'a> Request<'a> {
    pub fn new(id: Option<BatchId>, keys: &'a [u64], op: Op<'a>) -> Result<Self, StoreError> {
        if let Op::TestAndInsertLocated(locs) = op {
            check_locations(keys, locs)?;
        }
        Ok(Request { id, keys, op })
    }

    pub fn id(&self) -> Option<BatchId> {
        self.id
    }

    pub fn keys(&self) -> &'a [u64] {
        self.keys
    }

    pub fn op(&self) -> Op<'a> {
        self.op
    }
}

/// Where a request's answer goes: the caller's vectors, reused from request to
/// request.
pub struct Answer<'a> {
    /// Whether each key was present, in order.
    pub seen: &'a mut Vec<bool>,
    /// A located operation's first-seen location of each key, in order.
    pub originals: &'a mut Vec<Location>,
}

impl Answer<'_> {
    /// Empties both vectors: how a located answer starts.
    pub fn clear(&mut self) {
        self.seen.clear();
        self.originals.clear();
    }

    /// The answer for the next key of a located request.
    #[inline]
    pub fn push(&mut self, seen: bool, original: Location) {
        self.seen.push(seen);
        self.originals.push(original);
    }
}

/// Asks `req` of `store` for its verdicts only (the named requests without
/// feedback locations).
fn ask_verdicts<S: Store + ?Sized>(
    store: &S,
    req: Result<Request<'_>, StoreError>,
    seen: &mut Vec<bool>,
) -> Result<(), StoreError> {
    let originals = &mut Vec::new();
    store.ask(req?, &mut Answer { seen, originals })
}

/// A set of 64-bit keys with batched test-and-insert.
///
/// Contract: the batch behaves exactly as if its keys were tested (and inserted)
/// one by one in order, so a key repeated inside one inserting batch is new the
/// first time and seen the second time.
///
/// A store implements [`Store::ask`]; the named requests below build a
/// [`Request`] and ask it.
pub trait Store: Send + Sync {
    /// Answers `req`: for each key in order, pushes onto `out.seen` (cleared
    /// first) whether it was already present, inserting it if the operation
    /// inserts. A located operation also pushes onto `out.originals` (cleared
    /// first) the location of each present key's first sighting
    /// ([`Location::UNKNOWN`] for a new key, or where the store no longer knows,
    /// e.g. after loading a snapshot); other operations leave `out.originals`
    /// alone.
    ///
    /// A request with an identity is answered, by a store that keeps answers (the
    /// hash server, Redis), as its first attempt was: a retried request
    /// (reconnect, worker restart with `--restore`) never finds its own keys
    /// "seen", nor the keys a retried chunk's first attempt inserted after its
    /// test (near mode's insert round). Stores in this process ignore the
    /// identity. An operation a store cannot do is [`StoreError::Unsupported`]
    /// ([`Op::unsupported`] says it in the common words).
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError>;

    /// Asks [`Op::TestAndInsert`] of `keys`.
    fn test_and_insert(&self, keys: &[u64], seen: &mut Vec<bool>) -> Result<(), StoreError> {
        ask_verdicts(self, Request::new(None, keys, Op::TestAndInsert), seen)
    }

    /// Asks [`Op::TestAndInsert`] of `keys`, as request `id`.
    fn test_and_insert_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        seen: &mut Vec<bool>,
    ) -> Result<(), StoreError> {
        ask_verdicts(self, Request::new(Some(id), keys, Op::TestAndInsert), seen)
    }

    /// Asks [`Op::Test`] of `keys`.
    fn test(&self, keys: &[u64], seen: &mut Vec<bool>) -> Result<(), StoreError> {
        ask_verdicts(self, Request::new(None, keys, Op::Test), seen)
    }

    /// Asks [`Op::Test`] of `keys`, as request `id`.
    fn test_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        seen: &mut Vec<bool>,
    ) -> Result<(), StoreError> {
        ask_verdicts(self, Request::new(Some(id), keys, Op::Test), seen)
    }

    /// Asks [`Op::TestLocated`] of `keys`.
    fn test_located(
        &self,
        keys: &[u64],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let req = Request::new(None, keys, Op::TestLocated)?;
        self.ask(req, &mut Answer { seen, originals })
    }

    /// Asks [`Op::TestLocated`] of `keys`, as request `id`.
    fn test_located_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let req = Request::new(Some(id), keys, Op::TestLocated)?;
        self.ask(req, &mut Answer { seen, originals })
    }

    /// Asks [`Op::TestAndInsertLocated`] of `keys` at `locs`.
    fn test_and_insert_located(
        &self,
        keys: &[u64],
        locs: &[Location],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let req = Request::new(None, keys, Op::TestAndInsertLocated(locs))?;
        self.ask(req, &mut Answer { seen, originals })
    }

    /// Asks [`Op::TestAndInsertLocated`] of `keys` at `locs`, as request `id`.
    fn test_and_insert_located_batch(
        &self,
        id: BatchId,
        keys: &[u64],
        locs: &[Location],
        seen: &mut Vec<bool>,
        originals: &mut Vec<Location>,
    ) -> Result<(), StoreError> {
        let req = Request::new(Some(id), keys, Op::TestAndInsertLocated(locs))?;
        self.ask(req, &mut Answer { seen, originals })
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
    fn a_located_insert_needs_one_location_a_key() {
        let loc = Location { file: 1, record: 1 };
        let one = [loc];
        let short = Request::new(None, &[1, 2], Op::TestAndInsertLocated(&one));
        assert!(matches!(short, Err(StoreError::Mismatch(_))));
        let store = MemStore::new(3);
        let (mut seen, mut originals) = (Vec::new(), Vec::new());
        assert!(store
            .test_and_insert_located(&[1, 2], &[loc], &mut seen, &mut originals)
            .is_err());
        assert!(store.is_empty(), "a refused request inserts nothing");
        store
            .test_and_insert_located(&[1, 1], &[loc, loc], &mut seen, &mut originals)
            .unwrap();
        assert_eq!(
            (seen, originals),
            (vec![false, true], vec![Location::UNKNOWN, loc])
        );
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
