//! The embedded store: one [`Table`] per block, each behind its own lock.
//!
//! Sharding by block keeps every growth small (a block holds 1/1999 of the keys, so
//! no insert ever waits for a large rehash) and lets many threads (server
//! connections) work on different blocks at once.

use crate::table::{mix, Table};
use crate::{block_of, Store, StoreError, DEFAULT_BLOCKS};
use parking_lot::Mutex;

pub struct MemStore {
    blocks: u32,
    shards: Box<[Mutex<Table>]>,
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
        let shards = (0..blocks).map(|_| Mutex::new(Table::with_capacity(per_block))).collect();
        MemStore { blocks, shards }
    }

    pub fn contains(&self, key: u64) -> bool {
        self.shards[block_of(key, self.blocks) as usize].lock().contains(key)
    }

    /// The keys of one block, sorted.
    pub fn block_keys(&self, block: u32) -> Vec<u64> {
        let mut keys: Vec<u64> = self.shards[block as usize].lock().keys().collect();
        keys.sort_unstable();
        keys
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            // A stale pointer only makes a useless prefetch: prefetches never fault.
            // try_lock keeps a busy shard from stalling the batch.
            if let Some(t) = self.shards[block_of(key, self.blocks) as usize].try_lock() {
                let p = t.home_ptr(mix(key));
                unsafe { core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }
}

impl Store for MemStore {
    fn test_and_insert(&self, keys: &[u64], seen: &mut Vec<bool>) -> Result<(), StoreError> {
        seen.clear();
        seen.reserve(keys.len());
        for &k in keys.iter().take(PREFETCH_DISTANCE) {
            self.prefetch(k);
        }
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&ahead) = keys.get(i + PREFETCH_DISTANCE) {
                self.prefetch(ahead);
            }
            let shard = &self.shards[block_of(key, self.blocks) as usize];
            seen.push(shard.lock().test_and_insert(key));
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().len() as u64).sum()
    }

    fn memory_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().memory_bytes() as u64).sum()
    }

    fn blocks(&self) -> u32 {
        self.blocks
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
        assert_eq!(news.iter().sum::<usize>(), 20_000, "each key is new exactly once");
        assert_eq!(s.len(), 20_000);
    }
}
