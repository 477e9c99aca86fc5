//! A map from n-gram keys to paragraph numbers for one document or one chunk:
//! open addressing over a flat array, emptied in constant time.
//!
//! Near mode asks it once or twice for every n-gram; std's `HashMap` spent more
//! there than the n-gram's store request. Keys are uniform hashes already, so
//! their low bits are the home slot. Each slot carries the generation it was
//! written in: emptying the map starts a new generation, and the array is only
//! written again when it grows.

/// Key -> paragraph, first insertion wins.
#[derive(Default)]
pub(crate) struct KeyParas {
    slots: Vec<Slot>,
    mask: usize,
    len: usize,
    generation: u32,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    key: u64,
    para: u32,
    generation: u32,
}

impl KeyParas {
    /// Empties the map, sized for about `expected` keys (it grows beyond).
    pub(crate) fn clear(&mut self, expected: usize) {
        let capacity = (expected * 2).next_power_of_two().max(64);
        self.len = 0;
        if self.slots.len() < capacity {
            self.slots.clear();
            self.slots.resize(capacity, Slot::default());
            self.generation = 0;
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Slots of 2^32 generations ago would look current: wipe them.
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
        self.mask = capacity - 1;
    }

    /// The paragraph `key` was inserted with, if it was.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u32> {
        let mut i = key as usize & self.mask;
        loop {
            let s = self.slots.get(i)?;
            if s.generation != self.generation {
                return None;
            }
            if s.key == key {
                return Some(s.para);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The paragraph `key` was inserted with before; else inserts it with `para`.
    #[inline]
    pub(crate) fn get_or_insert(&mut self, key: u64, para: u32) -> Option<u32> {
        let (i, found) = self.probe_for_insert(key);
        if found {
            return Some(self.slots[i].para);
        }
        self.fill(i, key, para);
        None
    }

    /// Sets `key`'s paragraph to `para`, inserted or not before.
    #[inline]
    pub(crate) fn set(&mut self, key: u64, para: u32) {
        let (i, found) = self.probe_for_insert(key);
        if found {
            self.slots[i].para = para;
        } else {
            self.fill(i, key, para);
        }
    }

    /// The slot holding `key` (true), or the empty one it would take (false),
    /// with room for one more key.
    #[inline]
    fn probe_for_insert(&mut self, key: u64) -> (usize, bool) {
        if (self.len + 1) * 2 > self.mask + 1 {
            self.grow();
        }
        let mut i = key as usize & self.mask;
        loop {
            let s = &self.slots[i];
            if s.generation != self.generation {
                return (i, false);
            }
            if s.key == key {
                return (i, true);
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline]
    fn fill(&mut self, i: usize, key: u64, para: u32) {
        self.slots[i] = Slot {
            key,
            para,
            generation: self.generation,
        };
        self.len += 1;
    }

    /// Doubles the slots in use, inserting the current keys again.
    fn grow(&mut self) {
        let current = self.generation;
        let live: Vec<Slot> = self
            .slots
            .get(..=self.mask)
            .unwrap_or_default()
            .iter()
            .filter(|s| s.generation == current && current != 0)
            .copied()
            .collect();
        self.clear(self.mask + 1);
        for s in live {
            self.get_or_insert(s.key, s.para);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_insertion_wins_and_clearing_forgets() {
        let mut m = KeyParas::default();
        m.clear(4);
        assert_eq!(m.get_or_insert(7, 1), None);
        assert_eq!(m.get_or_insert(7, 2), Some(1));
        // Same home slot (low bits), another key.
        assert_eq!(m.get_or_insert(7 + 1024, 3), None);
        assert_eq!(m.get(7 + 1024), Some(3));
        assert_eq!(m.get(8), None);
        m.clear(4);
        assert_eq!(m.get(7), None);
        assert_eq!(m.get_or_insert(7, 4), None);
        m.set(7, 5);
        m.set(9, 6);
        assert_eq!((m.get(7), m.get(9)), (Some(5), Some(6)));
    }

    #[test]
    fn grows_past_its_expected_size_keeping_every_key() {
        let mut m = KeyParas::default();
        m.clear(1);
        let keys: Vec<u64> = (0..10_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(m.get_or_insert(k, i as u32), None);
        }
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(m.get(k), Some(i as u32));
        }
    }
}
