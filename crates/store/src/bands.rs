//! The compact embedded store of MinHash band keys: 8 bytes a slot, exact.
//!
//! A MinHash run on the embedded store keeps every kept document's band keys in
//! its side store anyway (a file, by the document's *ordinal*: the order it was
//! kept in), and every key it stores is located at the ordinal of the document
//! that inserted it first. So a slot need not hold the key: it holds the top 32
//! bits of the mixed key (a *fingerprint*) and that ordinal plus one,
//! `fp << 32 | ord + 1`, in ordered linear probing like [`crate::table`] (home slot
//! `fp * capacity >> 32`, monotone; slots sorted by value, so the slots of one
//! fingerprint sit together, by ordinal).
//!
//! A fingerprint match is only a candidate: the side store says whether that
//! document's band keys hold the key ([`BandOwners::owns`]), comparing all 64 bits.
//! The first confirmed candidate in ordinal order is the key's first inserter (a
//! kept document inserts all its band keys, so a document kept earlier that holds
//! the key would have inserted it first), so answers and owners are exactly those
//! of [`crate::MemStore`], for any key set. Within a block (key % blocks) a lookup
//! meets a foreign fingerprint with probability about keys-in-block / 2^32, and
//! only then reads a record it did not need.
//!
//! A document's keys are inserted in one located batch (its slots may be there
//! before all its keys are: within the batch, a key counts as present only if the
//! batch inserted it). Locations given to and returned by this store are ordinals
//! ([`ordinal_location`]); keys without one cannot be stored (plain
//! `test_and_insert` is refused), nor listed (no snapshot: the side store is what
//! a run's band keys are rebuilt from).

use crate::table::{
    capacity_for, empty_slots, has_room, mix, rebuild, shift_in, GROWTH_DIV, MIN_CAPACITY,
};
use crate::zeroed::Zeroed;
use crate::{Answer, BlockMap, Location, Op, Request, Store, StoreError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The file id of an ordinal location (no input file has it).
pub const ORDINAL_FILE: u64 = u64::MAX;
/// The most ordinals (documents) a store can locate: the ordinal plus one is 32 bits.
pub const MAX_ORDINALS: u64 = u32::MAX as u64;

/// The location of kept document `ord` (its ordinal plus one as the record, so
/// never [`Location::UNKNOWN`]).
pub fn ordinal_location(ord: u32) -> Location {
    Location {
        file: ORDINAL_FILE,
        record: ord as u64 + 1,
    }
}

/// The ordinal an [`ordinal_location`] names.
pub fn location_ordinal(loc: Location) -> Option<u32> {
    (loc.file == ORDINAL_FILE && (1..=MAX_ORDINALS).contains(&loc.record))
        .then(|| (loc.record - 1) as u32)
}

/// Where the band keys of kept documents are: the side store.
pub trait BandOwners: Send + Sync {
    /// Whether kept document `ord` has band key `key` (all 64 bits compared).
    fn owns(&self, ord: u32, key: u64) -> Result<bool, StoreError>;
}

const FP_MASK: u64 = !0 << 32;

#[inline]
fn fp_of(key: u64) -> u64 {
    mix(key) & FP_MASK
}

/// The home slot of a slot value: by its fingerprint alone, so every slot of one
/// fingerprint starts its search at the same place.
#[inline]
fn home(v: u64, capacity: usize) -> usize {
    (((v & FP_MASK) as u128 * capacity as u128) >> 64) as usize
}

/// One block's slots (see the module docs). Value 0 is the empty marker (a slot
/// always has an ordinal plus one in its low half).
pub(crate) struct FpTable {
    slots: Zeroed,
    capacity: usize,
    len: usize,
}

impl FpTable {
    pub(crate) fn with_capacity(keys: usize) -> Self {
        let capacity = capacity_for(keys);
        FpTable {
            slots: empty_slots(capacity),
            capacity,
            len: 0,
        }
    }

    /// The ordinal of the first slot, in order, of fingerprint `fp` whose document
    /// `confirm` accepts.
    fn find(
        &self,
        fp: u64,
        mut confirm: impl FnMut(u32) -> Result<bool, StoreError>,
    ) -> Result<Option<u32>, StoreError> {
        let last = fp | u32::MAX as u64;
        let mut i = home(fp, self.capacity);
        while i < self.slots.len() {
            let s = self.slots[i];
            if s == 0 || s > last {
                break;
            }
            if s >= fp {
                let ord = (s as u32).wrapping_sub(1);
                if confirm(ord)? {
                    return Ok(Some(ord));
                }
            }
            i += 1;
        }
        Ok(None)
    }

    /// Adds slot `fp | ord + 1` (not present).
    fn insert(&mut self, fp: u64, ord: u32) {
        let v = fp | (ord as u64 + 1);
        loop {
            let mut i = home(v, self.capacity);
            let n = self.slots.len();
            while i < n && self.slots[i] != 0 && self.slots[i] < v {
                i += 1;
            }
            if has_room(self.len, self.capacity) && shift_in(&mut self.slots, i, v).is_some() {
                self.len += 1;
                return;
            }
            self.grow();
        }
    }

    fn grow(&mut self) {
        let capacity = (self.capacity + self.capacity / GROWTH_DIV).max(MIN_CAPACITY);
        (self.slots, _, self.capacity) = rebuild(&self.slots, &[], capacity, home);
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.bytes()
    }
}

/// The compact embedded store of band keys (see the module docs): one
/// [`FpTable`] per block, each behind its own lock, confirming fingerprints
/// against `owners`.
pub struct BandStore {
    map: BlockMap,
    shards: Box<[Mutex<FpTable>]>,
    owners: Arc<dyn BandOwners>,
}

impl BandStore {
    /// A store of `blocks` blocks with room for about `keys` keys in all.
    pub fn with_capacity(blocks: u32, keys: usize, owners: Arc<dyn BandOwners>) -> Self {
        assert!(blocks > 0, "a store needs at least one block");
        let per_block = keys / blocks as usize;
        BandStore {
            map: BlockMap::new(blocks),
            shards: (0..blocks)
                .map(|_| Mutex::new(FpTable::with_capacity(per_block)))
                .collect(),
            owners,
        }
    }

    /// The first inserter of `key` in `t`, confirmed.
    fn owner(&self, t: &FpTable, key: u64) -> Result<Option<u32>, StoreError> {
        t.find(fp_of(key), |ord| self.owners.owns(ord, key))
    }
}

fn not_ordinal(loc: Location) -> StoreError {
    StoreError::Unsupported(format!(
        "the band-key store locates keys by side-store ordinals, not {:016x}:{}",
        loc.file, loc.record
    ))
}

impl BandStore {
    /// Each key's presence and first inserter, inserting nothing.
    fn test_located_all(&self, keys: &[u64], out: &mut Answer) -> Result<(), StoreError> {
        out.clear();
        for &key in keys {
            let t = self.shards[self.map.block(key) as usize].lock();
            let found = self.owner(&t, key)?;
            out.push(
                found.is_some(),
                found.map_or(Location::UNKNOWN, ordinal_location),
            );
        }
        Ok(())
    }

    /// Tests and inserts each key at its ordinal location (one a key, checked by
    /// [`crate::Request::new`]).
    fn insert_located_all(
        &self,
        keys: &[u64],
        locs: &[Location],
        out: &mut Answer,
    ) -> Result<(), StoreError> {
        out.clear();
        // A document of this batch may be partly inserted when its next key is
        // asked about: its record already holds every band key, so for its slots
        // "owns" means "inserted in this batch" (every ordinal's keys come in one
        // batch). Other documents are complete.
        let ords: Vec<u32> = locs
            .iter()
            .map(|&l| location_ordinal(l).ok_or_else(|| not_ordinal(l)))
            .collect::<Result<_, _>>()?;
        let mut in_batch: Vec<u32> = ords.clone();
        in_batch.sort_unstable();
        in_batch.dedup();
        let mut inserted: HashMap<u64, u32> = HashMap::new();
        for (&key, &ord) in keys.iter().zip(&ords) {
            let mut t = self.shards[self.map.block(key) as usize].lock();
            let first = t.find(fp_of(key), |o| {
                if in_batch.binary_search(&o).is_ok() {
                    Ok(inserted.get(&key) == Some(&o))
                } else {
                    self.owners.owns(o, key)
                }
            })?;
            match first {
                Some(first) => out.push(true, ordinal_location(first)),
                None => {
                    t.insert(fp_of(key), ord);
                    inserted.insert(key, ord);
                    out.push(false, Location::UNKNOWN);
                }
            }
        }
        Ok(())
    }
}

impl Store for BandStore {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let keys = req.keys();
        match req.op() {
            Op::TestAndInsert => Err(StoreError::Unsupported(
                "band keys without the documents that own them".into(),
            )),
            Op::Test => {
                let (seen, originals) = (&mut *out.seen, &mut Vec::new());
                self.test_located_all(keys, &mut Answer { seen, originals })
            }
            Op::TestLocated => self.test_located_all(keys, out),
            Op::TestAndInsertLocated(locs) => self.insert_located_all(keys, locs, out),
        }
    }

    fn len(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().len() as u64).sum()
    }

    fn memory_bytes(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.lock().memory_bytes() as u64)
            .sum()
    }

    fn blocks(&self) -> u32 {
        self.map.blocks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::unmix;
    use crate::MemStore;

    /// Band keys by ordinal, in memory (the side store's part these tests need).
    #[derive(Default)]
    struct Owners(Mutex<HashMap<u32, Vec<u64>>>);

    impl BandOwners for Owners {
        fn owns(&self, ord: u32, key: u64) -> Result<bool, StoreError> {
            Ok(self.0.lock().get(&ord).is_some_and(|b| b.contains(&key)))
        }
    }

    /// Keys whose mixed values share their top 32 bits (and, with one block, one
    /// table) are told apart by the confirmation, and each keeps its own owner.
    #[test]
    fn equal_fingerprints_are_told_apart_by_their_owners() {
        let fp = 0xdead_beef_u64 << 32;
        let keys: Vec<u64> = (1..=4u64).map(|low| unmix(fp | (low * 7919))).collect();
        assert!(keys.iter().all(|&k| fp_of(k) == fp));
        let owners = Arc::new(Owners::default());
        let store = BandStore::with_capacity(1, 0, owners.clone());
        let (mut seen, mut orig) = (Vec::new(), Vec::new());
        // Document 0 inserts keys[0], document 1 keys[1] and keys[2].
        owners.0.lock().insert(0, vec![keys[0]]);
        owners.0.lock().insert(1, vec![keys[1], keys[2]]);
        store
            .test_and_insert_located(
                &[keys[0], keys[1], keys[2]],
                &[
                    ordinal_location(0),
                    ordinal_location(1),
                    ordinal_location(1),
                ],
                &mut seen,
                &mut orig,
            )
            .unwrap();
        assert_eq!(seen, [false, false, false], "same fingerprint, other keys");
        assert_eq!(store.len(), 3);
        store
            .test_located(&[keys[2], keys[0], keys[3]], &mut seen, &mut orig)
            .unwrap();
        assert_eq!(seen, [true, true, false]);
        assert_eq!(orig[0], ordinal_location(1));
        assert_eq!(orig[1], ordinal_location(0));
        assert_eq!(orig[2], Location::UNKNOWN);
        // Document 2 holds keys[1] (already owned by 1) and keys[3] (new).
        owners.0.lock().insert(2, vec![keys[1], keys[3]]);
        store
            .test_and_insert_located(
                &[keys[1], keys[3]],
                &[ordinal_location(2), ordinal_location(2)],
                &mut seen,
                &mut orig,
            )
            .unwrap();
        assert_eq!(seen, [true, false]);
        assert_eq!(orig[0], ordinal_location(1), "the first inserter owns it");
        assert_eq!(store.len(), 4);
    }

    /// On random keys with collisions forced (few fingerprint bits used), every
    /// answer and owner equals the plain embedded store's.
    #[test]
    fn answers_equal_the_plain_store() {
        let owners = Arc::new(Owners::default());
        let bands = BandStore::with_capacity(7, 0, owners.clone());
        let plain = MemStore::new(7);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut s1, mut o1, mut s2, mut o2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for ord in 0..1000u32 {
            // Mixed values in a narrow range (64 fingerprints), plus repeats of keys
            // of earlier documents.
            let mut keys: Vec<u64> = (0..6)
                .map(|_| unmix((next() % 64) << 32 | next() >> 40))
                .collect();
            if ord > 0 {
                let earlier = owners.0.lock()[&(next() as u32 % ord)].clone();
                keys.push(earlier[0]);
            }
            owners.0.lock().insert(ord, keys.clone());
            let locs = vec![ordinal_location(ord); keys.len()];
            bands.test_located(&keys, &mut s1, &mut o1).unwrap();
            plain.test_located(&keys, &mut s2, &mut o2).unwrap();
            assert_eq!((&s1, &o1), (&s2, &o2));
            bands
                .test_and_insert_located(&keys, &locs, &mut s1, &mut o1)
                .unwrap();
            plain
                .test_and_insert_located(&keys, &locs, &mut s2, &mut o2)
                .unwrap();
            assert_eq!((&s1, &o1), (&s2, &o2), "document {ord}");
        }
        assert_eq!(bands.len(), plain.len());
        // 8 bytes a slot; the plain located table's quotiented slots are as
        // small here (small records), plus a bit a home.
        assert!(bands.memory_bytes() <= plain.memory_bytes());
    }

    #[test]
    fn keys_without_ordinals_are_refused() {
        let store = BandStore::with_capacity(3, 0, Arc::new(Owners::default()));
        let mut seen = Vec::new();
        assert!(store.test_and_insert(&[1], &mut seen).is_err());
        let loc = Location { file: 5, record: 1 };
        assert!(store
            .test_and_insert_located(&[1], &[loc], &mut seen, &mut Vec::new())
            .is_err());
    }
}
