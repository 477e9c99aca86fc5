//! The embedded store: one [`Table`] per block, each behind its own lock.
//!
//! Sharding by block keeps every growth small (a block holds 1/1999 of the keys, so
//! no insert ever waits for a large rehash) and lets many threads (server
//! connections) work on different blocks at once.

use crate::located::LocatedTable;
use crate::location_codes::{Code, LocationCodes};
use crate::table::Table;
use crate::{Answer, BlockMap, Location, Op, Request, Store, StoreError, DEFAULT_BLOCKS};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// A block's keys: plain, or with their first-seen locations once the block has
/// had a located request (its plain keys then have an unknown location).
enum BlockTable {
    Plain(Table),
    Located(LocatedTable),
}

impl BlockTable {
    #[inline]
    fn test_and_insert(&mut self, key: u64) -> bool {
        match self {
            BlockTable::Plain(t) => t.test_and_insert(key),
            BlockTable::Located(t) => t.test_and_insert(key, Code::UNKNOWN).is_some(),
        }
    }

    fn contains(&self, key: u64) -> bool {
        match self {
            BlockTable::Plain(t) => t.contains(key),
            BlockTable::Located(t) => t.contains(key),
        }
    }

    /// The located table of block `block` of `blocks`, made from the plain one
    /// the first time.
    fn located(&mut self, block: u32, blocks: u32) -> &mut LocatedTable {
        if let BlockTable::Plain(t) = self {
            *self = BlockTable::Located(LocatedTable::from_keys(block, blocks, t.keys()));
        }
        match self {
            BlockTable::Located(t) => t,
            BlockTable::Plain(_) => unreachable!("made located above"),
        }
    }

    /// The code of `key` if present (unknown for a plain table's).
    fn get_code(&self, key: u64) -> Option<Code> {
        match self {
            BlockTable::Plain(t) => t.contains(key).then_some(Code::UNKNOWN),
            BlockTable::Located(t) => t.get_code(key),
        }
    }

    fn keys_into(&self, out: &mut Vec<u64>) {
        match self {
            BlockTable::Plain(t) => out.extend(t.keys()),
            BlockTable::Located(t) => t.for_each(|k, _| out.push(k)),
        }
    }

    fn len(&self) -> usize {
        match self {
            BlockTable::Plain(t) => t.len(),
            BlockTable::Located(t) => t.len(),
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            BlockTable::Plain(t) => t.memory_bytes(),
            BlockTable::Located(t) => t.memory_bytes(),
        }
    }

    /// Where a plain table's slots are and how many homes they have (for
    /// prefetching; none for a located one).
    fn layout(&self) -> (*const u64, usize) {
        match self {
            BlockTable::Plain(t) => t.layout(),
            BlockTable::Located(_) => (std::ptr::null(), 0),
        }
    }
}

/// A block's table, plus where its slots are, readable without the lock for
/// prefetching (a stale value only makes a useless prefetch).
struct Shard {
    table: Mutex<BlockTable>,
    slots: AtomicPtr<u64>,
    capacity: AtomicUsize,
}

impl Shard {
    fn new(table: Table) -> Self {
        let (slots, capacity) = table.layout();
        Shard {
            table: Mutex::new(BlockTable::Plain(table)),
            slots: AtomicPtr::new(slots as *mut u64),
            capacity: AtomicUsize::new(capacity),
        }
    }

    /// Publishes where the table is now (it may have grown) for prefetching.
    fn publish(&self, t: &BlockTable) {
        let (slots, capacity) = t.layout();
        self.slots.store(slots as *mut u64, Ordering::Relaxed);
        self.capacity.store(capacity, Ordering::Relaxed);
    }

    #[inline]
    fn test_and_insert(&self, key: u64) -> bool {
        let mut t = self.table.lock();
        let seen = t.test_and_insert(key);
        if !seen {
            self.publish(&t);
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
            if let BlockTable::Located(t) = &*shard.table.lock() {
                t.for_each(|k, code| {
                    if code != Code::UNKNOWN {
                        f(k, files.location(code))
                    }
                });
            }
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
            let block = self.map.block(k);
            let shard = &self.shards[block as usize];
            let mut t = shard.table.lock();
            t.located(block, self.map.blocks()).restore(k, code);
            shard.publish(&t);
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
        self.shards[block as usize].table.lock().keys_into(out);
    }

    /// Drops every key of `block` (migration: the block was handed to its new
    /// owner), returning how many there were.
    pub fn clear_block(&self, block: u32) -> u64 {
        let shard = &self.shards[block as usize];
        let mut t = shard.table.lock();
        let n = t.len() as u64;
        *t = BlockTable::Plain(Table::with_capacity(0));
        shard.publish(&t);
        n
    }

    /// Number of keys in `block`.
    pub fn block_len(&self, block: u32) -> u64 {
        self.shards[block as usize].table.lock().len() as u64
    }

    /// The keys of one block, sorted.
    pub fn block_keys(&self, block: u32) -> Vec<u64> {
        let mut keys = Vec::new();
        self.block_keys_into(block, &mut keys);
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
            let c = self.shards[self.map.block(k) as usize]
                .table
                .lock()
                .get_code(k);
            out.push(c.is_some(), files.location(c.unwrap_or_default()));
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
            let block = self.map.block(k);
            let shard = &self.shards[block as usize];
            let mut t = shard.table.lock();
            let r = t.located(block, self.map.blocks()).test_and_insert(k, code);
            shard.publish(&t);
            out.push(r.is_some(), files.location(r.unwrap_or_default()));
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
