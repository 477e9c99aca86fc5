//! The embedded store: one [`Table`] per block, each behind its own lock.
//!
//! Sharding by block keeps every growth small (a block holds 1/1999 of the keys, so
//! no insert ever waits for a large rehash) and lets many threads (server
//! connections) work on different blocks at once.

use crate::location_codes::LocationCodes;
use crate::table::Table;
use crate::{Answer, BlockMap, Location, Op, Request, Store, StoreError, DEFAULT_BLOCKS};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// A block's table, plus where its slots are, readable without the lock for
/// prefetching (a stale value only makes a useless prefetch).
struct Shard {
    table: Mutex<Table>,
    slots: AtomicPtr<u64>,
    capacity: AtomicUsize,
}

impl Shard {
    fn new(table: Table) -> Self {
        let (slots, capacity) = table.layout();
        Shard {
            table: Mutex::new(table),
            slots: AtomicPtr::new(slots as *mut u64),
            capacity: AtomicUsize::new(capacity),
        }
    }

    #[inline]
    fn test_and_insert(&self, key: u64) -> bool {
        let mut t = self.table.lock();
        let seen = t.test_and_insert(key);
        if !seen {
            // The table may have grown: publish its new place for prefetching.
            let (slots, capacity) = t.layout();
            self.slots.store(slots as *mut u64, Ordering::Relaxed);
            self.capacity.store(capacity, Ordering::Relaxed);
        }
        seen
    }
}

pub struct MemStore {
    map: BlockMap,
    shards: Box<[Shard]>,
    /// Located keys: the codes of their locations (32 bits beside the key).
    files: Mutex<LocationCodes>,
}

/// How many keys ahead of the current one a batch prefetches.
const PREFETCH_DISTANCE: usize = 8;

impl Default for MemStore {
    fn default() -> Self {
        MemStore::new(DEFAULT_BLOCKS)
    }
}

impl MemStore {
    pub fn new(blocks: u32) -> Self {
        Self::with_capacity(blocks, 0)
    }

    /// A store preallocated for about `keys` keys in all.
    pub fn with_capacity(blocks: u32, keys: usize) -> Self {
        assert!(blocks > 0, "a store needs at least one block");
        let per_block = keys / blocks as usize;
        let shards = (0..blocks)
            .map(|_| Shard::new(Table::with_capacity(per_block)))
            .collect();
        MemStore {
            map: BlockMap::new(blocks),
            shards,
            files: Mutex::new(LocationCodes::default()),
        }
    }

    /// A store made of one loaded table per block.
    pub(crate) fn from_tables(blocks: u32, tables: Vec<Table>) -> Self {
        assert_eq!(tables.len(), blocks as usize);
        MemStore {
            map: BlockMap::new(blocks),
            shards: tables.into_iter().map(Shard::new).collect(),
            files: Mutex::new(LocationCodes::default()),
        }
    }

    /// Every key with a known first-seen location, block by block (what a hash
    /// server saves beside its snapshot, [`crate::locations`]).
    pub fn for_each_location(&self, mut f: impl FnMut(u64, Location)) {
        let files = self.files.lock();
        for shard in self.shards.iter() {
            shard
                .table
                .lock()
                .for_each_payload(|k, p| f(k, files.location(p)));
        }
    }

    /// Restores saved first-seen locations (a snapshot's sidecar, a journal's
    /// located records): each key is inserted if absent, and gets its location
    /// where it has none; a location already known stays (the first inserter's).
    pub fn restore_locations(&self, keys: &[u64], locs: &[Location]) -> Result<(), StoreError> {
        crate::check_locations(keys, locs)?;
        let mut files = self.files.lock();
        for (&k, &loc) in keys.iter().zip(locs) {
            let code = files.code(loc);
            let shard = &self.shards[self.map.block(k) as usize];
            let mut t = shard.table.lock();
            t.restore_payload(k, code);
            let (slots, capacity) = t.layout();
            shard.slots.store(slots as *mut u64, Ordering::Relaxed);
            shard.capacity.store(capacity, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Inserts `keys` (journal replay), returning how many were new.
    pub fn insert_all(&self, keys: &[u64]) -> u64 {
        let mut new = 0;
        for &key in keys {
            new += !self.shards[self.map.block(key) as usize].test_and_insert(key) as u64;
        }
        new
    }

    pub fn contains(&self, key: u64) -> bool {
        self.shards[self.map.block(key) as usize]
            .table
            .lock()
            .contains(key)
    }

    /// The keys of one block, in no particular order, into `out` (cleared first).
    pub(crate) fn block_keys_into(&self, block: u32, out: &mut Vec<u64>) {
        out.clear();
        out.extend(self.shards[block as usize].table.lock().keys());
    }

    /// Drops every key of `block` (migration: the block was handed to its new
    /// owner), returning how many there were.
    pub fn clear_block(&self, block: u32) -> u64 {
        let shard = &self.shards[block as usize];
        let mut t = shard.table.lock();
        let n = t.len() as u64;
        *t = Table::with_capacity(0);
        let (slots, capacity) = t.layout();
        shard.slots.store(slots as *mut u64, Ordering::Relaxed);
        shard.capacity.store(capacity, Ordering::Relaxed);
        n
    }

    /// Number of keys in `block`.
    pub fn block_len(&self, block: u32) -> u64 {
        self.shards[block as usize].table.lock().len() as u64
    }

    /// The keys of one block, sorted.
    pub fn block_keys(&self, block: u32) -> Vec<u64> {
        let mut keys: Vec<u64> = self.shards[block as usize].table.lock().keys().collect();
        keys.sort_unstable();
        keys
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let shard = &self.shards[self.map.block(key) as usize];
            let slots = shard.slots.load(Ordering::Relaxed);
            let capacity = shard.capacity.load(Ordering::Relaxed);
            let p = slots.wrapping_add(crate::table::home(crate::table::mix(key), capacity));
            // SAFETY: a prefetch is only a hint; it never faults, even on a stale address.
            unsafe {
                core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// `seen` (cleared first) gets `verdict(key)` for each key in order, the slot
    /// of the key [`PREFETCH_DISTANCE`] ahead prefetched meanwhile.
    fn each_prefetched(&self, keys: &[u64], seen: &mut Vec<bool>, verdict: impl Fn(u64) -> bool) {
        seen.clear();
        seen.reserve(keys.len());
        for &k in keys.iter().take(PREFETCH_DISTANCE) {
            self.prefetch(k);
        }
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&ahead) = keys.get(i + PREFETCH_DISTANCE) {
                self.prefetch(ahead);
            }
            seen.push(verdict(key));
        }
    }

    /// Each key's presence and first-seen location, inserting nothing.
    fn test_located_all(&self, keys: &[u64], out: &mut Answer) {
        out.clear();
        let files = self.files.lock();
        for &k in keys {
            let p = self.shards[self.map.block(k) as usize]
                .table
                .lock()
                .get_payload(k);
            out.push(p.is_some(), files.location(p.unwrap_or(0)));
        }
    }

    /// Tests and inserts each key with its location (one a key, checked by
    /// [`crate::Request::new`]).
    fn insert_located_all(&self, keys: &[u64], locs: &[Location], out: &mut Answer) {
        out.clear();
        // One lock for the file table per batch; block locks are taken inside it,
        // always in this order, so no two batches can wait on each other.
        let mut files = self.files.lock();
        for (&k, &loc) in keys.iter().zip(locs) {
            let code = files.code(loc);
            let shard = &self.shards[self.map.block(k) as usize];
            let mut t = shard.table.lock();
            t.keep_payloads();
            let r = t.test_and_insert_payload(k, code);
            let (slots, capacity) = t.layout();
            shard.slots.store(slots as *mut u64, Ordering::Relaxed);
            shard.capacity.store(capacity, Ordering::Relaxed);
            out.push(r.is_some(), files.location(r.unwrap_or(0)));
        }
    }
}

impl Store for MemStore {
    /// Exact mode's inner loop: [`Op::TestAndInsert`] goes straight to the
    /// prefetching loop (one match a request, nothing more a key).
    #[inline]
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let keys = req.keys();
        match req.op() {
            Op::TestAndInsert => self.each_prefetched(keys, out.seen, |key| {
                self.shards[self.map.block(key) as usize].test_and_insert(key)
            }),
            Op::Test => self.each_prefetched(keys, out.seen, |key| self.contains(key)),
            Op::TestLocated => self.test_located_all(keys, out),
            Op::TestAndInsertLocated(locs) => self.insert_located_all(keys, locs, out),
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.table.lock().len() as u64)
            .sum()
    }

    /// The tables and the locations' codes.
    fn memory_bytes(&self) -> u64 {
        let tables: u64 = self
            .shards
            .iter()
            .map(|s| s.table.lock().memory_bytes() as u64)
            .sum();
        tables + self.files.lock().bytes() as u64
    }

    fn blocks(&self) -> u32 {
        self.map.blocks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_is_sequential_including_repeats_inside_it() {
        let s = MemStore::new(7);
        let mut seen = Vec::new();
        s.test_and_insert(&[5, 9, 5, 12, 9], &mut seen).unwrap();
        assert_eq!(seen, vec![false, false, true, false, true]);
        s.test_and_insert(&[12, 13], &mut seen).unwrap();
        assert_eq!(seen, vec![true, false]);
        assert_eq!(s.len(), 4);
        assert_eq!(s.block_keys(5), vec![5, 12]);
        assert!(s.contains(13) && !s.contains(14));
    }

    #[test]
    fn concurrent_inserts_count_each_key_once() {
        let s = std::sync::Arc::new(MemStore::new(31));
        let news: Vec<usize> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let s = s.clone();
                    sc.spawn(move || {
                        let keys: Vec<u64> = (0..20_000u64).collect();
                        let mut seen = Vec::new();
                        s.test_and_insert(&keys, &mut seen).unwrap();
                        seen.iter().filter(|&&x| !x).count()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            news.iter().sum::<usize>(),
            20_000,
            "each key is new exactly once"
        );
        assert_eq!(s.len(), 20_000);
    }
}
