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
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in (0..50).chain([255, 256, 511, 1000]) {
            let feats: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                })
                .collect();
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
