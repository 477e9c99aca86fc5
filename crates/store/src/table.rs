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

const MIN_CAPACITY: usize = 64;
/// Grow when the load would pass this.
const MAX_LOAD_NUM: usize = 92;
/// Grow by 1/GROWTH_DIV: small steps keep the load (and the bytes a key) high.
const GROWTH_DIV: usize = 8;

const M1: u64 = 0xff51_afd7_ed55_8ccd;
const M2: u64 = 0xc4ce_b9fe_1a85_ec53;
const M1_INV: u64 = mul_inverse(M1);
const M2_INV: u64 = mul_inverse(M2);

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
    slots: Vec<u64>,
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
fn home(h: u64, capacity: usize) -> usize {
    ((h as u128 * capacity as u128) >> 64) as usize
}

fn tail_for(capacity: usize) -> usize {
    16 + capacity / 64
}

impl Table {
    /// A table that holds `keys` keys before its first growth.
    pub(crate) fn with_capacity(keys: usize) -> Self {
        let capacity = (keys * 100 / MAX_LOAD_NUM + 1).max(MIN_CAPACITY);
        Table { slots: vec![0; capacity + tail_for(capacity)], capacity, len: 0, has_zero: false }
    }

    pub(crate) fn len(&self) -> usize {
        self.len + self.has_zero as usize
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.capacity() * 8
    }

    /// Address of the home slot of `key`, for a prefetch before the real access.
    #[inline]
    pub(crate) fn home_ptr(&self, h: u64) -> *const u64 {
        self.slots.as_ptr().wrapping_add(home(h, self.capacity))
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
            let mut i = home(h, self.capacity);
            let n = self.slots.len();
            while i < n {
                let s = self.slots[i];
                if s == h {
                    return true;
                }
                if s == 0 || s > h {
                    break;
                }
                i += 1;
            }
            if (self.len + 1) * 100 <= self.capacity * MAX_LOAD_NUM {
                if let Some(empty) = self.slots[i..].iter().position(|&s| s == 0) {
                    let j = i + empty;
                    self.slots.copy_within(i..j, i + 1);
                    self.slots[i] = h;
                    self.len += 1;
                    return false;
                }
            }
            // Too full, or the last cluster reached the end of the array.
            self.grow();
        }
    }

    pub(crate) fn contains(&self, key: u64) -> bool {
        if key == 0 {
            return self.has_zero;
        }
        let h = mix(key);
        let mut i = home(h, self.capacity);
        while i < self.slots.len() {
            let s = self.slots[i];
            if s == h {
                return true;
            }
            if s == 0 || s > h {
                return false;
            }
            i += 1;
        }
        false
    }

    fn grow(&mut self) {
        let mut capacity = (self.capacity + self.capacity / GROWTH_DIV).max(MIN_CAPACITY);
        loop {
            if let Some(slots) = Self::rebuild(&self.slots, capacity) {
                self.slots = slots;
                self.capacity = capacity;
                return;
            }
            capacity += capacity / GROWTH_DIV;
        }
    }

    /// Places the sorted values of `old` into a fresh array of `capacity` homes; None
    /// if the tail overflows (then a larger capacity is tried).
    fn rebuild(old: &[u64], capacity: usize) -> Option<Vec<u64>> {
        let mut slots = vec![0u64; capacity + tail_for(capacity)];
        let mut next = 0usize;
        for &h in old.iter().filter(|&&h| h != 0) {
            let pos = home(h, capacity).max(next);
            if pos >= slots.len() {
                return None;
            }
            slots[pos] = h;
            next = pos + 1;
        }
        Some(slots)
    }

    /// Every key, in no particular order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        let zero = self.has_zero.then_some(0u64);
        zero.into_iter().chain(self.slots.iter().filter(|&&h| h != 0).map(|&h| unmix(h)))
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
}
