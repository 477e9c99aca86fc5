//! A flat set of u64 keys: ordered linear probing (Amble & Knuth).
//!
//! Keys are stored mixed by a bijection (`mix`), and the home slot of a mixed value
//! `h` is `h * capacity >> 64`, which is monotone in `h`. Every insertion keeps the
//! non-empty slots sorted by `h` across the whole array, so:
//! * an unsuccessful lookup stops at the first larger value (as cheap as a successful
//!   one in plain linear probing, which is what makes a 92% load affordable),
//! * growing is a single linear merge pass over an already sorted array, no random
//!   access, no per-key hashing,
//! * the array never wraps around: a tail of spare slots absorbs the last cluster.
//!
//! 8 bytes a slot at 80-92% load gives 8.7-10 bytes a key. Mixed value 0 is the
//! empty marker; it only comes from key 0, which is kept as a flag.

use crate::zeroed::Zeroed;

pub(crate) const MIN_CAPACITY: usize = 16;
/// Grow when the load would pass this.
pub(crate) const MAX_LOAD_NUM: usize = 92;
/// Grow by 1/GROWTH_DIV: small steps keep the load (and the bytes a key) high.
pub(crate) const GROWTH_DIV: usize = 8;

pub(crate) const M1: u64 = 0xff51_afd7_ed55_8ccd;
pub(crate) const M2: u64 = 0xc4ce_b9fe_1a85_ec53;
pub(crate) const M1_INV: u64 = mul_inverse(M1);
pub(crate) const M2_INV: u64 = mul_inverse(M2);

/// Multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
const fn mul_inverse(a: u64) -> u64 {
    let mut x = a;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

/// murmur3's fmix64: a bijection that spreads structured keys (sequential numbers
/// from a test or a foreign client) over the table.
#[inline]
pub(crate) fn mix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(M1);
    k ^= k >> 33;
    k = k.wrapping_mul(M2);
    k ^= k >> 33;
    k
}

#[inline]
pub(crate) fn unmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(M2_INV);
    h ^= h >> 33;
    h = h.wrapping_mul(M1_INV);
    h ^= h >> 33;
    h
}

#[derive(Debug)]
pub(crate) struct Table {
    slots: Zeroed,
    capacity: usize,
    len: usize,
    has_zero: bool,
}

impl Default for Table {
    fn default() -> Self {
        Table::with_capacity(0)
    }
}

#[inline]
pub(crate) fn home(h: u64, capacity: usize) -> usize {
    ((h as u128 * capacity as u128) >> 64) as usize
}

/// Empty slots for `capacity` homes plus the spare tail that absorbs the last
/// cluster.
pub(crate) fn empty_slots(capacity: usize) -> Zeroed {
    Zeroed::new(capacity + 16 + capacity / 64)
}

/// The homes a table needs to hold `keys` keys before its first growth.
pub(crate) fn capacity_for(keys: usize) -> usize {
    (keys * 100 / MAX_LOAD_NUM + 1).max(MIN_CAPACITY)
}

/// Whether a table of `capacity` homes holding `len` values may take one more.
#[inline]
pub(crate) fn has_room(len: usize, capacity: usize) -> bool {
    (len + 1) * 100 <= capacity * MAX_LOAD_NUM
}

/// Puts `v` at slot `i`, shifting the values from `i` on one slot right into the
/// first empty slot: that slot's index, or None if none follows (grow first).
#[inline]
pub(crate) fn shift_in(slots: &mut [u64], i: usize, v: u64) -> Option<usize> {
    let j = i + slots.get(i..)?.iter().position(|&s| s == 0)?;
    slots.copy_within(i..j, i + 1);
    slots[i] = v;
    Some(j)
}

/// The sorted values of `old` (0: empty, skipped) and their payloads (none if
/// `old_payload` is empty) in fresh arrays, each value at its `home` or right after
/// the one before, at the first capacity from `capacity` up (by steps of
/// 1/GROWTH_DIV) whose tail holds the last cluster: the slots, payloads and that
/// capacity. One linear pass a capacity tried: growing, or a snapshot's bulk load.
pub(crate) fn rebuild(
    old: &[u64],
    old_payload: &[u32],
    mut capacity: usize,
    home: impl Fn(u64, usize) -> usize,
) -> (Zeroed, Zeroed<u32>, usize) {
    'capacity: loop {
        let mut slots = empty_slots(capacity);
        let mut payload = match old_payload.is_empty() {
            true => Zeroed::empty(),
            false => Zeroed::new(slots.len()),
        };
        let mut next = 0usize;
        for (i, &h) in old.iter().enumerate().filter(|(_, &h)| h != 0) {
            let pos = home(h, capacity).max(next);
            if pos >= slots.len() {
                capacity += capacity / GROWTH_DIV;
                continue 'capacity;
            }
            slots[pos] = h;
            if !old_payload.is_empty() {
                payload[pos] = old_payload[i];
            }
            next = pos + 1;
        }
        return (slots, payload, capacity);
    }
}

impl Table {
    /// A table that holds `keys` keys before its first growth.
    pub(crate) fn with_capacity(keys: usize) -> Self {
        let capacity = capacity_for(keys);
        Table {
            slots: empty_slots(capacity),
            capacity,
            len: 0,
            has_zero: false,
        }
    }

    /// Where the probe for mixed value `h` ends: Ok(its slot), or Err(the slot it
    /// would take: the first empty or larger one, or the array's end).
    #[inline]
    fn probe(&self, h: u64) -> Result<usize, usize> {
        let mut i = home(h, self.capacity);
        while i < self.slots.len() {
            let s = self.slots[i];
            if s == h {
                return Ok(i);
            }
            if s == 0 || s > h {
                return Err(i);
            }
            i += 1;
        }
        Err(i)
    }

    /// Inserts `h` (absent) at slot `i`, where its probe ended; false if the
    /// table must grow first (too full, or the last cluster reached the end of
    /// the array).
    #[inline]
    fn place(&mut self, i: usize, h: u64) -> bool {
        if !has_room(self.len, self.capacity) || shift_in(&mut self.slots, i, h).is_none() {
            return false;
        }
        self.len += 1;
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.len + self.has_zero as usize
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.bytes()
    }

    /// Where the slots are and how many homes they have (for prefetching).
    pub(crate) fn layout(&self) -> (*const u64, usize) {
        (self.slots.as_ptr(), self.capacity)
    }

    /// Inserts `key`; returns true if it was already present.
    #[inline]
    pub(crate) fn test_and_insert(&mut self, key: u64) -> bool {
        if key == 0 {
            return std::mem::replace(&mut self.has_zero, true);
        }
        self.test_and_insert_mixed(mix(key))
    }

    #[inline]
    pub(crate) fn test_and_insert_mixed(&mut self, h: u64) -> bool {
        debug_assert_ne!(h, 0);
        loop {
            match self.probe(h) {
                Ok(_) => return true,
                Err(i) if self.place(i, h) => return false,
                Err(_) => self.grow(),
            }
        }
    }

    pub(crate) fn contains(&self, key: u64) -> bool {
        if key == 0 {
            return self.has_zero;
        }
        self.probe(mix(key)).is_ok()
    }

    fn grow(&mut self) {
        let capacity = (self.capacity + self.capacity / GROWTH_DIV).max(MIN_CAPACITY);
        (self.slots, _, self.capacity) = rebuild(&self.slots, &[], capacity, home);
    }

    /// A table holding the mixed values `sorted` (ascending, no zero) plus key 0 if
    /// `has_zero`, with room for about `spare` more keys before its first growth.
    /// One linear placement pass: the sorted bulk load of a snapshot.
    pub(crate) fn from_sorted_mixed(sorted: &[u64], has_zero: bool, spare: usize) -> Self {
        debug_assert!(sorted.windows(2).all(|w| w[0] < w[1]));
        let (slots, _, capacity) = rebuild(sorted, &[], capacity_for(sorted.len() + spare), home);
        Table {
            slots,
            capacity,
            len: sorted.len(),
            has_zero,
        }
    }

    /// Every key, in no particular order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        let zero = self.has_zero.then_some(0u64);
        zero.into_iter()
            .chain(self.slots.iter().filter(|&&h| h != 0).map(|&h| unmix(h)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn mix_is_a_bijection() {
        for k in [0u64, 1, 2, 42, u64::MAX, 0x8000_0000_0000_0000, 1999 * 7] {
            assert_eq!(unmix(mix(k)), k);
        }
        assert_eq!(mix(0), 0);
    }

    #[test]
    fn sequential_keys_and_zero() {
        let mut t = Table::default();
        for k in 0..100_000u64 {
            assert!(!t.test_and_insert(k), "key {k} new");
        }
        for k in 0..100_000u64 {
            assert!(t.test_and_insert(k), "key {k} seen");
            assert!(t.contains(k));
        }
        assert!(!t.contains(100_000));
        assert_eq!(t.len(), 100_000);
        let keys: HashSet<u64> = t.keys().collect();
        assert_eq!(keys.len(), 100_000);
        assert!(keys.contains(&0) && keys.contains(&99_999));
    }

    #[test]
    fn stays_sorted_and_dense() {
        let mut t = Table::default();
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t.test_and_insert(x);
        }
        let vals: Vec<u64> = t.slots.iter().copied().filter(|&h| h != 0).collect();
        assert!(vals.windows(2).all(|w| w[0] < w[1]), "slots sorted");
        let load = t.len as f64 / t.capacity as f64;
        assert!(load > 0.75 && load <= 0.92, "load {load}");
    }

    proptest::proptest! {
        #[test]
        fn behaves_like_a_hash_set(keys in proptest::collection::vec(proptest::num::u64::ANY.prop_map(|k| k % 5000), 0..3000)) {
            let mut t = Table::default();
            let mut model = HashSet::new();
            for k in keys {
                proptest::prop_assert_eq!(t.test_and_insert(k), !model.insert(k));
            }
            proptest::prop_assert_eq!(t.len(), model.len());
        }
    }
    use proptest::strategy::Strategy;

    #[test]
    fn bulk_load_equals_inserts() {
        let keys: Vec<u64> = (0..10_000u64).map(|i| i * 7919 + 3).collect();
        let mut mixed: Vec<u64> = keys.iter().map(|&k| mix(k)).collect();
        mixed.sort_unstable();
        let mut t = Table::from_sorted_mixed(&mixed, true, 100);
        assert_eq!(t.len(), 10_001);
        for &k in &keys {
            assert!(t.contains(k));
        }
        assert!(t.contains(0) && !t.contains(4));
        assert!(!t.test_and_insert(4));
        assert!(t.test_and_insert(3));
        let empty = Table::from_sorted_mixed(&[], false, 0);
        assert_eq!(empty.len(), 0);
    }
}
