//! A block's located keys (feedback and MinHash on a hash server): each key with
//! its first-seen location's code in one packed slot, about 8 bytes at a million
//! documents where a key and a code beside it took 12.
//!
//! A block's keys are `q * blocks + block`, so a slot need not say the block: the
//! table works on the quotient `q` (54 bits for 1,999 blocks), spread by a
//! bijection. Its home is `x * capacity >> bits` (monotone in `x`, as in
//! [`crate::table`]) and the slot keeps only the rest of `x` that the home leaves
//! (the top `rest` bits of the product's low word: `bits - log2(capacity)` bits),
//! beside the code, packed in as many bytes as both need.
//!
//! Ordered linear probing as in [`crate::table`], and home slots recovered as in
//! Cleary's compact hash table (1984): a bit per home says whether some key has it
//! (a side bitmap, which does not move when slots shift), and a bit per slot marks
//! the first key of each home's run. The n-th run of a cluster belongs to the n-th
//! marked home of the cluster, so a lookup walks back to its cluster's start and
//! counts. Every key is kept whole (its rest and home give it back exactly): a
//! "seen" is never a guess.
//!
//! A code's widths are the table's too: a location whose place index or record
//! needs more bits than the table has rebuilds it wider (rarely: the widths only
//! grow, a bit at a time).

use crate::location_codes::Code;
use crate::table::{capacity_for, has_room, GROWTH_DIV, M1, M1_INV, M2, M2_INV};
use crate::zeroed::{occupied_bytes, Zeroed};

/// A key's quotient within its block, spread over `bits` bits by a bijection.
#[derive(Clone, Copy, Debug)]
struct Quotient {
    block: u64,
    blocks: u64,
    bits: u32,
    mask: u64,
    /// At least half of `bits`: an xorshift that is its own inverse.
    shift: u32,
}

impl Quotient {
    fn new(block: u32, blocks: u32) -> Self {
        let bits = 64 - (31 - blocks.leading_zeros());
        Quotient {
            block: block as u64,
            blocks: blocks as u64,
            bits,
            mask: u64::MAX >> (64 - bits),
            shift: bits.div_ceil(2),
        }
    }

    /// The spread quotient of `key`, a key of this block.
    #[inline]
    fn spread(&self, key: u64) -> u64 {
        debug_assert_eq!(key % self.blocks, self.block);
        let mut x = key / self.blocks;
        x ^= x >> self.shift;
        x = x.wrapping_mul(M1) & self.mask;
        x ^= x >> self.shift;
        x = x.wrapping_mul(M2) & self.mask;
        x ^ x >> self.shift
    }

    /// The key whose spread quotient is `x`.
    fn key(&self, mut x: u64) -> u64 {
        x ^= x >> self.shift;
        x = x.wrapping_mul(M2_INV) & self.mask;
        x ^= x >> self.shift;
        x = x.wrapping_mul(M1_INV) & self.mask;
        x ^= x >> self.shift;
        x * self.blocks + self.block
    }
}

/// A table's geometry: homes, slots, and the fields of a slot, low to high: the
/// run-start bit, the code (place index, then record), the rest. The slots and the
/// homes' bitmap share one array of words: the slots' bytes and 16 zero bytes,
/// then the bitmap from word `homes_at` (one allocation a table, whose page fit
/// counts the bitmap: apart, a server's bitmaps were 0.56 MB of small blocks in
/// the C heap at 1M MinHash documents).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shape {
    capacity: usize,
    slots: usize,
    homes_at: usize,
    words: usize,
    rest: u32,
    place_bits: u32,
    record_bits: u32,
    width: usize,
    /// The low `8 * width` bits.
    mask: u128,
}

impl Shape {
    /// A shape of at least `capacity` homes: as many more as fill the last page
    /// of its slots (at 1M MinHash documents that page was 2.6% of a table).
    fn new(capacity: usize, quotient_bits: u32, (place_bits, record_bits): (u32, u32)) -> Self {
        let rest = quotient_bits - capacity.ilog2();
        let width = (1 + place_bits + record_bits + rest).div_ceil(8) as usize;
        let bytes = |capacity| Self::words_for(capacity, width).1 * 8;
        let pages = occupied_bytes(bytes(capacity));
        let mut capacity = capacity.max((pages - 16) / width * 64 / 65);
        while bytes(capacity) > pages {
            capacity -= 1;
        }
        while bytes(capacity + 1) <= pages {
            capacity += 1;
        }
        // A larger capacity leaves the rest fewer bits, never more: `width` holds it.
        let rest = quotient_bits - capacity.ilog2();
        let (homes_at, words) = Self::words_for(capacity, width);
        Shape {
            capacity,
            slots: Self::slots_for(capacity),
            homes_at,
            words,
            rest,
            place_bits,
            record_bits,
            width,
            mask: u128::MAX >> (128 - 8 * width),
        }
    }

    /// Slots for `capacity` homes: room for the last clusters to run past them.
    fn slots_for(capacity: usize) -> usize {
        capacity + 16 + capacity / 64
    }

    /// Where the homes' bitmap starts and the words of the array, for `capacity`
    /// homes and slots of `width` bytes.
    fn words_for(capacity: usize, width: usize) -> (usize, usize) {
        let homes_at = (Self::slots_for(capacity) * width + 16).div_ceil(8);
        (homes_at, homes_at + capacity.div_ceil(64))
    }

    fn code_shift(&self) -> u32 {
        1 + self.place_bits + self.record_bits
    }

    fn fits(&self, code: Code) -> bool {
        let (p, r) = code.widths();
        p <= self.place_bits && r <= self.record_bits
    }

    /// The home and rest of spread quotient `x`.
    #[inline]
    fn place(&self, x: u64, bits: u32) -> (usize, u64) {
        let p = ((x << (64 - bits)) as u128) * self.capacity as u128;
        ((p >> 64) as usize, (p as u64) >> (64 - self.rest))
    }

    /// The spread quotient at `home` with `rest`: the one multiple of
    /// `capacity << (64 - bits)` in the range the rest's bits leave open.
    fn spread(&self, home: usize, rest: u64, bits: u32) -> u64 {
        let low = (home as u128) << 64 | (rest as u128) << (64 - self.rest);
        let step = (self.capacity as u128) << (64 - bits);
        low.div_ceil(step) as u64
    }

    fn entry(&self, rest: u64, code: Code, start: bool) -> u128 {
        let field = (code.place as u128) << self.record_bits | code.record as u128;
        (rest as u128) << self.code_shift() | field << 1 | start as u128
    }

    fn rest_of(&self, e: u128) -> u64 {
        (e >> self.code_shift()) as u64
    }

    fn code_of(&self, e: u128) -> Code {
        let field = e >> 1;
        Code {
            place: ((field >> self.record_bits) & ((1u128 << self.place_bits) - 1)) as u32,
            record: (field & ((1u128 << self.record_bits) - 1)) as u64,
        }
    }
}

/// Where a key that is not there would go.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Gap {
    /// First of a run for a home that had none.
    NewRun,
    /// Before the first key of its home's run (which then starts with it).
    RunHead,
    /// Inside or at the end of its home's run.
    InRun,
}

pub(crate) struct LocatedTable {
    quotient: Quotient,
    shape: Shape,
    /// `shape.slots` slots of `shape.width` bytes, and 16 zero bytes (a slot is
    /// read as 16 bytes; the slot past the last reads empty); then, from word
    /// `shape.homes_at`, a bit per home: whether some key has it.
    cells: Zeroed<u64>,
    len: usize,
}

impl LocatedTable {
    /// An empty table of block `block` of `blocks` for about `keys` keys.
    #[cfg(test)]
    fn new(block: u32, blocks: u32, keys: usize) -> Self {
        let quotient = Quotient::new(block, blocks);
        Self::empty(
            quotient,
            Shape::new(capacity_for(keys), quotient.bits, (0, 0)),
        )
    }

    fn empty(quotient: Quotient, shape: Shape) -> Self {
        LocatedTable {
            quotient,
            shape,
            cells: Zeroed::new(shape.words),
            len: 0,
        }
    }

    /// The table of block `block` of `blocks` holding `keys` (no location known).
    pub(crate) fn from_keys(block: u32, blocks: u32, keys: impl Iterator<Item = u64>) -> Self {
        let quotient = Quotient::new(block, blocks);
        let mut spread: Vec<u64> = keys.map(|k| quotient.spread(k)).collect();
        spread.sort_unstable();
        let shape = Shape::new(capacity_for(spread.len()), quotient.bits, (0, 0));
        Self::build(quotient, shape, spread.len(), |f| {
            spread.iter().for_each(|&x| f(x, Code::UNKNOWN))
        })
    }

    /// A table of `shape` (grown until its tail holds the last cluster) holding
    /// the `len` entries `each` gives, ascending: one linear placement pass.
    fn build(
        quotient: Quotient,
        mut shape: Shape,
        len: usize,
        each: impl Fn(&mut dyn FnMut(u64, Code)),
    ) -> Self {
        loop {
            let mut t = Self::empty(quotient, shape);
            let (mut next, mut last_home, mut fits) = (0, usize::MAX, true);
            each(&mut |x, code| {
                let (home, rest) = shape.place(x, quotient.bits);
                let pos = home.max(next);
                fits &= pos < shape.slots;
                if !fits {
                    return;
                }
                let start = home != last_home;
                t.set(pos, shape.entry(rest, code, start));
                if start {
                    t.homes_mut()[home / 64] |= 1 << (home % 64);
                }
                (next, last_home) = (pos + 1, home);
            });
            if fits {
                t.len = len;
                return t;
            }
            let capacity = shape.capacity + shape.capacity / GROWTH_DIV;
            shape = Shape::new(
                capacity,
                quotient.bits,
                (shape.place_bits, shape.record_bits),
            );
        }
    }

    /// Slot `i` (`shape.slots`: the empty one past the last).
    #[inline]
    fn get(&self, i: usize) -> u128 {
        assert!(i <= self.shape.slots, "slot {i} out of range");
        // SAFETY: the 16 bytes from slot `i`'s start, `i <= slots`, are inside
        // the array (16 bytes follow the last slot's start).
        let raw = unsafe {
            std::ptr::read_unaligned(self.slot_ptr().add(i * self.shape.width).cast::<u128>())
        };
        u128::from_le(raw) & self.shape.mask
    }

    #[inline]
    fn set(&mut self, i: usize, e: u128) {
        assert!(i < self.shape.slots, "slot {i} out of range");
        let mask = self.shape.mask;
        // SAFETY: as in `get`; `&mut self` makes the access exclusive.
        unsafe {
            let p = self.slot_ptr_mut().add(i * self.shape.width).cast::<u128>();
            let old = u128::from_le(std::ptr::read_unaligned(p));
            std::ptr::write_unaligned(p, ((old & !mask) | e).to_le());
        }
    }

    fn slot_ptr(&self) -> *const u8 {
        self.cells.as_ptr().cast()
    }

    fn slot_ptr_mut(&mut self) -> *mut u8 {
        self.cells.as_mut_ptr().cast()
    }

    fn homes(&self) -> &[u64] {
        &self.cells[self.shape.homes_at..]
    }

    fn homes_mut(&mut self) -> &mut [u64] {
        &mut self.cells[self.shape.homes_at..]
    }

    fn is_home(&self, home: usize) -> bool {
        self.homes()[home / 64] >> (home % 64) & 1 == 1
    }

    /// How many homes in `from..to` some key has.
    fn homes_in(&self, from: usize, to: usize) -> usize {
        let (mut n, mut i) = (0, from);
        while i < to {
            let take = (to - i).min(64 - i % 64);
            let word = self.homes()[i / 64] >> (i % 64);
            let kept = if take == 64 {
                word
            } else {
                word & ((1 << take) - 1)
            };
            n += kept.count_ones() as usize;
            i += take;
        }
        n
    }

    /// The first home from `from` on that some key has.
    fn next_home(&self, from: usize) -> usize {
        let homes = self.homes();
        let mut w = from / 64;
        let mut word = homes[w] & (u64::MAX << (from % 64));
        while word == 0 {
            w += 1;
            word = homes[w];
        }
        w * 64 + word.trailing_zeros() as usize
    }

    /// Where the key at `home` with `rest` is: Ok(its slot), or Err(the slot it
    /// would take and how).
    fn locate(&self, home: usize, rest: u64) -> Result<usize, (usize, Gap)> {
        if self.get(home) == 0 {
            return Err((home, Gap::NewRun));
        }
        let mut start = home;
        while start > 0 && self.get(start - 1) != 0 {
            start -= 1;
        }
        // The runs of the cluster's homes before `home` come first, in order.
        let before = self.homes_in(start, home);
        let (mut i, mut runs) = (start, 0);
        loop {
            let e = self.get(i);
            if e == 0 || (e & 1 == 1 && runs == before) {
                break;
            }
            runs += (e & 1) as usize;
            i += 1;
        }
        if !self.is_home(home) {
            return Err((i, Gap::NewRun));
        }
        let head = i;
        loop {
            let e = self.get(i);
            if i > head && (e == 0 || e & 1 == 1) {
                return Err((i, Gap::InRun));
            }
            let r = self.shape.rest_of(e);
            if r == rest {
                return Ok(i);
            }
            if r > rest {
                let gap = if i == head { Gap::RunHead } else { Gap::InRun };
                return Err((i, gap));
            }
            i += 1;
        }
    }

    /// Puts the key at `home` with `rest` and `code` at slot `i` (where its
    /// lookup ended), shifting the slots from `i` on to the next empty one; false
    /// if the table must grow first.
    fn put(&mut self, i: usize, gap: Gap, (home, rest): (usize, u64), code: Code) -> bool {
        if !has_room(self.len, self.shape.capacity) {
            return false;
        }
        let mut j = i;
        while j < self.shape.slots && self.get(j) != 0 {
            j += 1;
        }
        if j >= self.shape.slots {
            return false;
        }
        let w = self.shape.width;
        // SAFETY: slots `i..j` move one slot up, into slot `j < slots` at most:
        // inside the slots' bytes.
        unsafe {
            let p = self.slot_ptr_mut();
            std::ptr::copy(p.add(i * w), p.add((i + 1) * w), (j - i) * w);
        }
        match gap {
            Gap::NewRun => self.homes_mut()[home / 64] |= 1 << (home % 64),
            Gap::RunHead => self.set(i + 1, self.get(i + 1) & !1),
            Gap::InRun => {}
        }
        self.set(i, self.shape.entry(rest, code, gap != Gap::InRun));
        self.len += 1;
        true
    }

    /// Inserts `key` with `code` if new: None; if present, Some(its code).
    pub(crate) fn test_and_insert(&mut self, key: u64, code: Code) -> Option<Code> {
        if !self.shape.fits(code) {
            self.widen(code);
        }
        let x = self.quotient.spread(key);
        loop {
            let at = self.shape.place(x, self.quotient.bits);
            match self.locate(at.0, at.1) {
                Ok(i) => return Some(self.shape.code_of(self.get(i))),
                Err((i, gap)) if self.put(i, gap, at, code) => return None,
                Err(_) => self.reshape(self.shape.capacity + self.shape.capacity / GROWTH_DIV),
            }
        }
    }

    /// The code of `key` if present.
    pub(crate) fn get_code(&self, key: u64) -> Option<Code> {
        let (home, rest) = self
            .shape
            .place(self.quotient.spread(key), self.quotient.bits);
        if !self.is_home(home) {
            return None;
        }
        let i = self.locate(home, rest).ok()?;
        Some(self.shape.code_of(self.get(i)))
    }

    pub(crate) fn contains(&self, key: u64) -> bool {
        self.get_code(key).is_some()
    }

    /// Gives `key` `code` where it has none (unknown), inserting it if absent:
    /// restoring saved locations, the first one recorded stays.
    pub(crate) fn restore(&mut self, key: u64, code: Code) {
        if self.test_and_insert(key, code) != Some(Code::UNKNOWN) || code == Code::UNKNOWN {
            return;
        }
        let (home, rest) = self
            .shape
            .place(self.quotient.spread(key), self.quotient.bits);
        if let Ok(i) = self.locate(home, rest) {
            let start = self.get(i) & 1 == 1;
            self.set(i, self.shape.entry(rest, code, start));
        }
    }

    /// Makes the codes' fields wide enough for `code`.
    fn widen(&mut self, code: Code) {
        let (p, r) = code.widths();
        let shape = Shape::new(
            self.shape.capacity,
            self.quotient.bits,
            (p.max(self.shape.place_bits), r.max(self.shape.record_bits)),
        );
        *self = Self::build(self.quotient, shape, self.len, |f| self.each_spread(f));
    }

    /// Rebuilds the table with `capacity` homes (or more, if its tail needs).
    fn reshape(&mut self, capacity: usize) {
        let s = self.shape;
        let shape = Shape::new(capacity, self.quotient.bits, (s.place_bits, s.record_bits));
        *self = Self::build(self.quotient, shape, self.len, |f| self.each_spread(f));
    }

    /// Calls `f(spread quotient, code)` for every key, ascending. The n-th run of
    /// the table belongs to its n-th home.
    fn each_spread(&self, f: &mut dyn FnMut(u64, Code)) {
        let (mut home, mut next) = (0, 0);
        for i in 0..self.shape.slots {
            let e = self.get(i);
            if e == 0 {
                continue;
            }
            if e & 1 == 1 {
                home = self.next_home(next);
                next = home + 1;
            }
            let x = self
                .shape
                .spread(home, self.shape.rest_of(e), self.quotient.bits);
            f(x, self.shape.code_of(e));
        }
    }

    /// Calls `f(key, code)` for every key, in slot order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, Code)) {
        self.each_spread(&mut |x, code| f(self.quotient.key(x), code));
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.cells.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn code(place: u32, record: u64) -> Code {
        Code { place, record }
    }

    #[test]
    fn a_spread_quotient_gives_its_key_back() {
        for blocks in [1u32, 2, 7, 1999, 1 << 20, u32::MAX] {
            let q = Quotient::new(0, blocks);
            for k in [0u64, 1, 12345, u64::MAX / 3, u64::MAX] {
                let k = k - k % blocks as u64;
                let x = q.spread(k);
                assert!(x <= q.mask, "{blocks} {k}");
                assert_eq!(q.key(x), k, "{blocks} {k}");
            }
        }
    }

    #[test]
    fn a_slot_is_eight_bytes_at_a_million_documents() {
        // 1,999 blocks, about 5,800 band keys a block, records below 2^20.
        let shape = Shape::new(capacity_for(5_800), 54, (0, 20));
        assert_eq!((shape.rest, shape.width), (42, 8));
    }

    /// Checks `t` against `model` (key -> code): every key found with its code,
    /// the count, and the keys listed.
    fn check(t: &LocatedTable, model: &HashMap<u64, Code>) {
        assert_eq!(t.len(), model.len());
        for (&k, &c) in model {
            assert_eq!(t.get_code(k), Some(c), "key {k}");
        }
        let mut listed = HashMap::new();
        t.for_each(|k, c| assert!(listed.insert(k, c).is_none(), "key {k} listed twice"));
        assert_eq!(&listed, model);
    }

    proptest::proptest! {
        // 64 cases of up to 2,500 operations: a few seconds in a debug build.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn behaves_like_a_map_of_first_codes(
            ops in proptest::collection::vec((0u64..3000, 0u32..5, 0u64..3000), 0..2500),
            blocks in proptest::sample::select(vec![1u32, 3, 1999]),
        ) {
            let block = 1 % blocks;
            let mut t = LocatedTable::new(block, blocks, 0);
            let mut model = HashMap::new();
            for (i, &(k, place, record)) in ops.iter().enumerate() {
                // Keys of the block, spread wide; some codes unknown, some wide.
                let q = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 12;
                let key = q * blocks as u64 + block as u64;
                let c = match i % 7 {
                    0 => Code::UNKNOWN,
                    1 => code(place << 20, record << 20 | 1),
                    _ => code(place, record + 1),
                };
                let want = model.get(&key).copied();
                proptest::prop_assert_eq!(t.test_and_insert(key, c), want);
                model.entry(key).or_insert(c);
                let next = key + blocks as u64;
                proptest::prop_assert_eq!(t.contains(next), model.contains_key(&next));
            }
            check(&t, &model);
        }
    }

    #[test]
    fn many_keys_in_one_block_grow_and_stay_exact() {
        let blocks = 1999;
        let mut t = LocatedTable::new(5, blocks, 0);
        let mut model = HashMap::new();
        let mut x = 0x1234_5678_9abc_def0u64;
        for i in 0..60_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x >> 12) * 1999 + 5;
            let c = code(0, i % 1_000_000 + 1);
            assert_eq!(t.test_and_insert(key, c), model.get(&key).copied());
            model.entry(key).or_insert(c);
            // Neighbours in the block's key space are not there.
            let next = key + 1999;
            assert_eq!(t.contains(next), model.contains_key(&next));
        }
        check(&t, &model);
        let load = t.len() as f64 / t.shape.capacity as f64;
        assert!(load > 0.75 && load <= 0.92, "load {load}");
    }

    #[test]
    fn restoring_keeps_the_first_code_and_fills_unknown_ones() {
        let mut t = LocatedTable::from_keys(2, 7, [2u64, 9, 16].into_iter());
        assert_eq!(t.get_code(9), Some(Code::UNKNOWN));
        t.restore(9, code(3, 4));
        t.restore(9, code(1, 1));
        t.restore(23, code(0, 5));
        assert_eq!(t.get_code(9), Some(code(3, 4)));
        assert_eq!(t.get_code(23), Some(code(0, 5)));
        assert_eq!(t.get_code(30), None);
        assert_eq!(t.len(), 4);
    }
}
