//! The SimHash core: a 64-bit fingerprint from weighted 64-bit feature hashes, and the
//! Hamming distance between fingerprints.
//!
//! Pinned rule (Charikar 2002, as in seomoz/simhash-cpp): bit `i` of the fingerprint is
//! 1 iff the total weight of the features whose hash has bit `i` set is strictly
//! greater than the total weight of those whose hash has it clear. Ties give 0, and
//! no features at all give 0.

/// Byte `j` of `SPREAD[b]` is bit `j` of `b`: adding `SPREAD[byte]` to a u64 adds 1
/// to eight byte-wide counters at once.
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 0;
        while j < 8 {
            t[b] |= (((b >> j) & 1) as u64) << (8 * j);
            j += 1;
        }
        b += 1;
    }
    t
};

/// Accumulates weighted feature hashes into a fingerprint. Reusable via [`clear`].
///
/// Unit-weight pushes are counted eight bits at a time in byte-wide counters
/// (flushed every 255 pushes), which is several times faster than 64 separate adds.
///
/// [`clear`]: Accumulator::clear
#[derive(Clone, Debug)]
pub struct Accumulator {
    /// Per bit, the weight of the features with that bit set (flushed part).
    ones: [u64; 64],
    /// Byte counters of unflushed unit pushes: byte `j` of `small[i]` counts bit `8i+j`.
    small: [u64; 8],
    pending: u32,
    /// Total weight pushed.
    total: u64,
}

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator {
            ones: [0; 64],
            small: [0; 8],
            pending: 0,
            total: 0,
        }
    }
}

impl Accumulator {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    #[inline]
    fn flush(&mut self) {
        for (i, s) in self.small.iter_mut().enumerate() {
            let mut v = *s;
            for j in 0..8 {
                self.ones[8 * i + j] += v & 0xff;
                v >>= 8;
            }
            *s = 0;
        }
        self.pending = 0;
    }

    /// Adds one occurrence of a feature (weight 1). Pushing the same hash `c` times is
    /// the same as weight `c` (weight = count).
    #[inline]
    pub fn push(&mut self, hash: u64) {
        for (i, s) in self.small.iter_mut().enumerate() {
            *s += SPREAD[((hash >> (8 * i)) & 0xff) as usize];
        }
        self.total += 1;
        self.pending += 1;
        if self.pending == 255 {
            self.flush();
        }
    }

    /// Adds each of `hashes` with weight 1: the same counts, so the same fingerprint,
    /// as [`push`](Self::push) one by one. Sixteen at a time go through a tree of
    /// carry-save adders (Harley and Seal's population count, done per bit position):
    /// about 75 logic operations and one byte spread per 16 features instead of 16
    /// byte spreads.
    pub fn push_all(&mut self, hashes: &[u64]) {
        /// Carry-save adder: (carries, sums) of three bit vectors.
        #[inline(always)]
        fn csa(a: u64, b: u64, c: u64) -> (u64, u64) {
            let u = a ^ b;
            ((a & b) | (u & c), u ^ c)
        }
        /// Adds the eight bit vectors `d` to the digits (ones, twos, fours): the
        /// carry out of the fours (eights), then the new digits.
        #[inline(always)]
        fn csa8(ones: u64, twos: u64, fours: u64, d: &[u64]) -> (u64, u64, u64, u64) {
            let (twos_a, o) = csa(ones, d[0], d[1]);
            let (twos_b, o) = csa(o, d[2], d[3]);
            let (fours_a, t) = csa(twos, twos_a, twos_b);
            let (twos_a, o) = csa(o, d[4], d[5]);
            let (twos_b, o) = csa(o, d[6], d[7]);
            let (fours_b, t) = csa(t, twos_a, twos_b);
            let (eights, f) = csa(fours, fours_a, fours_b);
            (eights, o, t, f)
        }
        let mut blocks = hashes.chunks_exact(16);
        // Bit i of `ones`, `twos`, `fours`, `eights` are the binary digits of the
        // count at position i not yet in the counters; each carry out of `eights`
        // (a set bit of `sixteens`) is 16 more.
        let (mut ones, mut twos, mut fours, mut eights) = (0u64, 0u64, 0u64, 0u64);
        let mut sixteens_small = [0u64; 8];
        let mut sixteens_pending = 0u32;
        for d in &mut blocks {
            let (eights_a, o, t, f) = csa8(ones, twos, fours, &d[..8]);
            let (eights_b, o, t, f) = csa8(o, t, f, &d[8..]);
            let (sixteens, e) = csa(eights, eights_a, eights_b);
            (ones, twos, fours, eights) = (o, t, f, e);
            for (i, s) in sixteens_small.iter_mut().enumerate() {
                *s += SPREAD[((sixteens >> (8 * i)) & 0xff) as usize];
            }
            sixteens_pending += 1;
            if sixteens_pending == 255 {
                self.add_byte_counters(&mut sixteens_small, 16);
                sixteens_pending = 0;
            }
        }
        self.add_byte_counters(&mut sixteens_small, 16);
        for (plane, weight) in [(ones, 1), (twos, 2), (fours, 4), (eights, 8)] {
            let mut bits = plane;
            while bits != 0 {
                self.ones[bits.trailing_zeros() as usize] += weight;
                bits &= bits - 1;
            }
        }
        self.total += (hashes.len() - blocks.remainder().len()) as u64;
        for &h in blocks.remainder() {
            self.push(h);
        }
    }

    /// Adds `weight` times the byte counters `small` (as in [`flush`](Self::flush))
    /// to the per-bit weights, and clears them.
    fn add_byte_counters(&mut self, small: &mut [u64; 8], weight: u64) {
        for (i, s) in small.iter_mut().enumerate() {
            let mut v = *s;
            for j in 0..8 {
                self.ones[8 * i + j] += (v & 0xff) * weight;
                v >>= 8;
            }
            *s = 0;
        }
    }

    /// Adds a feature with an explicit weight.
    #[inline]
    pub fn push_weighted(&mut self, hash: u64, weight: u64) {
        for (i, o) in self.ones.iter_mut().enumerate() {
            *o += ((hash >> i) & 1) * weight;
        }
        self.total += weight;
    }

    /// Total weight pushed so far (0 for an empty document).
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The fingerprint of what was pushed.
    #[inline]
    pub fn finish(&self) -> u64 {
        let mut a = self.clone();
        a.flush();
        let mut h = 0u64;
        for (i, &o) in a.ones.iter().enumerate() {
            // set weight > clear weight  <=>  o > total - o  <=>  2o > total
            h |= ((2 * o > a.total) as u64) << i;
        }
        h
    }
}

/// SimHash over `(feature hash, weight)` pairs.
pub fn simhash_weighted<I: IntoIterator<Item = (u64, u64)>>(features: I) -> u64 {
    let mut acc = Accumulator::new();
    for (h, w) in features {
        acc.push_weighted(h, w);
    }
    acc.finish()
}

/// SimHash over feature hashes, each occurrence weighing 1.
pub fn simhash(features: &[u64]) -> u64 {
    let mut acc = Accumulator::new();
    for &h in features {
        acc.push(h);
    }
    acc.finish()
}

/// Number of differing bits.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// The fingerprint as PostgreSQL `bigint` (the same 64 bits, two's complement).
#[inline]
pub fn to_signed(h: u64) -> i64 {
    h as i64
}

/// The four 16-bit parts, most significant first (as the source system's `SplitSimHash`).
#[inline]
pub fn parts(h: u64) -> [u16; 4] {
    [
        (h >> 48) as u16,
        (h >> 32) as u16,
        (h >> 16) as u16,
        h as u16,
    ]
}

/// Inverse of [`parts`].
#[inline]
pub fn from_parts(p: [u16; 4]) -> u64 {
    ((p[0] as u64) << 48) | ((p[1] as u64) << 32) | ((p[2] as u64) << 16) | p[3] as u64
}

/// Parses exactly 16 hexadecimal digits (either case).
pub fn parse_hex(s: &str) -> Option<u64> {
    if s.len() != 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// 16 lowercase hexadecimal digits.
pub fn to_hex(h: u64) -> String {
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    #[test]
    fn seomoz_vector() {
        // seomoz/simhash-cpp test: features 0xABCD, 0xBCDE, 0xCDEF, weight 1 -> 0xADCF.
        assert_eq!(simhash(&[0xABCD, 0xBCDE, 0xCDEF]), 0xADCF);
        assert_eq!(
            simhash_weighted([(0xABCD, 1), (0xBCDE, 1), (0xCDEF, 1)]),
            0xADCF
        );
    }

    #[test]
    fn ties_and_empty_give_zero() {
        assert_eq!(simhash(&[]), 0);
        assert_eq!(simhash(&[u64::MAX, 0]), 0);
        assert_eq!(simhash(&[u64::MAX]), u64::MAX);
        // A weight outvotes several light features.
        assert_eq!(simhash_weighted([(0xF0, 3), (0x0F, 1), (0x0F, 1)]), 0xF0);
    }

    #[test]
    fn weight_equals_repetition() {
        let hs = [
            0x1234_5678_9abc_def0u64,
            0x0fed_cba9_8765_4321,
            0xdead_beef_0000_ffff,
        ];
        let rep: Vec<u64> = vec![hs[0], hs[0], hs[0], hs[1], hs[2], hs[2]];
        assert_eq!(
            simhash(&rep),
            simhash_weighted([(hs[0], 3), (hs[1], 1), (hs[2], 2)])
        );
    }

    #[test]
    fn matches_naive_definition() {
        // Independent +1/-1 counter implementation, on pseudo-random data.
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for n in (0..50).chain([255, 256, 511, 1000]) {
            let feats: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let mut v = [0i64; 64];
            for &f in &feats {
                for (i, c) in v.iter_mut().enumerate() {
                    *c += if f >> i & 1 == 1 { 1 } else { -1 };
                }
            }
            let naive = v
                .iter()
                .enumerate()
                .fold(0u64, |h, (i, &c)| h | ((c > 0) as u64) << i);
            assert_eq!(simhash(&feats), naive);
        }
    }

    #[test]
    fn push_all_equals_pushes() {
        let mut rng = XorShift(0x1234_5678_9abc_def0);
        let mut next = || rng.next_u64();
        // Lengths around the block size and the counters' flush points, dense and
        // sparse bits, repeats.
        for n in [
            0,
            1,
            15,
            16,
            17,
            33,
            255,
            256,
            4079,
            4080,
            4081,
            4096 + 7,
            20_000,
        ] {
            let hashes: Vec<u64> = (0..n)
                .map(|i| match i % 5 {
                    0 => u64::MAX,
                    1 => next() & next(),
                    _ => next(),
                })
                .collect();
            let mut one_by_one = Accumulator::new();
            let mut all = Accumulator::new();
            for (i, &h) in hashes.iter().enumerate() {
                one_by_one.push(h);
                if i == 3 {
                    all.push(h); // mixed with single pushes
                }
            }
            all.push_all(&hashes[..3.min(n)]);
            all.push_all(&hashes[4.min(n)..]);
            let (mut a, mut b) = (one_by_one.clone(), all.clone());
            a.flush();
            b.flush();
            assert_eq!((a.ones, a.total), (b.ones, b.total), "n={n}");
            assert_eq!(one_by_one.finish(), all.finish(), "n={n}");
        }
    }

    #[test]
    fn byte_counters_flush_correctly() {
        // More than 255 pushes of one value, mixed with weighted pushes.
        let mut a = Accumulator::new();
        for _ in 0..1000 {
            a.push(0xff00_ff00_ff00_ff00);
        }
        a.push_weighted(0x00ff_00ff_00ff_00ff, 999);
        assert_eq!(a.finish(), 0xff00_ff00_ff00_ff00);
        a.push_weighted(0x00ff_00ff_00ff_00ff, 2);
        assert_eq!(a.finish(), 0x00ff_00ff_00ff_00ff);
        a.clear();
        assert_eq!(a.finish(), 0);
    }

    #[test]
    fn hamming_parts_signed_hex() {
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
        let h = 0x8123_4567_89ab_cdefu64;
        assert_eq!(parts(h), [0x8123, 0x4567, 0x89ab, 0xcdef]);
        assert_eq!(from_parts(parts(h)), h);
        assert_eq!(to_signed(h), -9141386507638288913);
        assert_eq!(to_hex(0xADCF), "000000000000adcf");
        assert_eq!(parse_hex("8123456789ABcdef"), Some(h));
        assert_eq!(parse_hex("123"), None);
        assert_eq!(parse_hex("+123456789abcdef"), None);
    }
}
