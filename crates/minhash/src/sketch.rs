//! The signature: one permutation, densified by rehashing rounds.
//!
//! Classic MinHash applies `k` independent permutations to every shingle and keeps
//! `k` minima: `k` hash evaluations per shingle. One-permutation hashing (Li, Owen
//! and Zhang 2012) hashes each shingle once: the hash picks one of `k` bins and a
//! value, and each bin keeps its smallest value. A document with fewer shingles
//! than about `k ln k` leaves bins empty; they are filled the way of *Fast
//! Similarity Sketching* (Dahlgaard, Knudsen and Thorup, FOCS 2017): more rounds, in
//! which every shingle is hashed again into one more bin, until no bin is empty. A
//! bin keeps the entry of the earliest round that reached it (the smallest value
//! among that round's), so the rounds after the first change nothing in a bin that
//! was already filled, and long documents need only the first round: one hash per
//! shingle.
//!
//! For two sets A and B, bin `j` of their signatures is equal with probability
//! exactly J(A, B): its entry is the (round, value) minimum over A ∪ B, which is a
//! uniformly random element of A ∪ B (shingles are exchangeable under the hash);
//! both sketches hold it iff it is in A ∩ B. Unlike densification by copying
//! non-empty bins (Shrivastava 2017; measured in the quality study), short
//! documents get fresh, independent values in the rounds after the first, so their
//! estimates are as precise as classic MinHash's and band collisions follow
//! `1 - (1 - s^R)^B` at every size.
//!
//! Pinned (never change; [`crate::Params::describe`] names the version `fss-v1`),
//! for the 64-bit shingle hash `x` and `k` bins:
//!
//! * `h_0 = x`; `h_i = mix64(x + i * 0x9e3779b97f4a7c15)` for `i >= 1` (wrapping;
//!   the `i`-th output of SplitMix64 seeded with `x`; [`mix64`] is its finalizer);
//! * round `i < k` puts the shingle in bin `((h_i >> 32) * k) >> 32`; round
//!   `k <= i < 2k` in bin `((((h_k >> 32) * k) >> 32) + i - k) mod k` (after these
//!   `k` rounds every shingle has visited every bin, so no bin stays empty);
//! * its value there is `h_i & 0xffff_ffff`;
//! * signature value `j` is the value of the earliest round that reached bin `j`
//!   (the smallest, if several shingles did in that round).

/// SplitMix64's increment.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

const EMPTY: u64 = u64::MAX;

/// The SplitMix64 finalizer (Stafford's variant 13): a bijection of 64-bit words
/// that mixes every input bit into every output bit.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One document's bins, reused from document to document. One per thread.
#[derive(Clone, Debug)]
pub struct Sketch {
    k: usize,
    /// Per bin: `round << 32 | value` of its entry, or `EMPTY`.
    mins: Vec<u64>,
    /// Bins holding an entry.
    filled: usize,
    /// The shingle hashes of the document, for the rounds after the first.
    xs: Vec<u64>,
}

impl Sketch {
    /// A sketch of `k` bins.
    ///
    /// # Panics
    /// If `k` is 0 or above 2^24.
    pub fn new(k: usize) -> Sketch {
        assert!((1..=1 << 24).contains(&k), "{k} bins out of 1..=2^24");
        Sketch {
            k,
            mins: vec![EMPTY; k],
            filled: 0,
            xs: Vec::new(),
        }
    }

    pub fn bins(&self) -> usize {
        self.k
    }

    /// Starts a new set.
    #[inline]
    pub fn clear(&mut self) {
        self.mins.fill(EMPTY);
        self.filled = 0;
        self.xs.clear();
    }

    /// Adds the shingle hash `x` (the first round).
    #[inline]
    pub fn push(&mut self, x: u64) {
        self.xs.push(x);
        let bin = bin_of(x, self.k);
        let m = &mut self.mins[bin];
        self.filled += (*m == EMPTY) as usize;
        *m = (*m).min(x & 0xffff_ffff);
    }

    /// Writes the signature (`k` values) into `out`, replacing its contents.
    /// Returns false, leaving `out` empty, when the set was empty.
    pub fn finish(&mut self, out: &mut Vec<u32>) -> bool {
        out.clear();
        if self.xs.is_empty() {
            return false;
        }
        if self.filled < self.k {
            self.more_rounds();
        }
        out.extend(self.mins.iter().map(|&m| m as u32));
        true
    }

    /// Rounds 1, 2, ... until every bin holds an entry.
    #[cold]
    fn more_rounds(&mut self) {
        // Repeats would only be hashed again: a document of one word repeated a
        // million times has one shingle.
        self.xs.sort_unstable();
        self.xs.dedup();
        let k = self.k as u64;
        for round in 1..2 * k {
            for &x in &self.xs {
                let h = mix64(x.wrapping_add(round.wrapping_mul(GOLDEN)));
                let bin = if round < k {
                    bin_of(h, self.k)
                } else {
                    let first = bin_of(mix64(x.wrapping_add(k.wrapping_mul(GOLDEN))), self.k);
                    (first + (round - k) as usize) % self.k
                };
                let m = &mut self.mins[bin];
                self.filled += (*m == EMPTY) as usize;
                *m = (*m).min(round << 32 | (h & 0xffff_ffff));
            }
            if self.filled == self.k {
                return;
            }
        }
        debug_assert_eq!(self.filled, self.k, "the last k rounds visit every bin");
    }
}

/// The bin of hash `h` among `k`: `((h >> 32) * k) >> 32` (Lemire's multiply-shift
/// range reduction of the high half; the low half is the value).
#[inline]
fn bin_of(h: u64, k: usize) -> usize {
    (((h >> 32) * k as u64) >> 32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(k: usize, xs: &[u64]) -> Option<Vec<u32>> {
        let mut s = Sketch::new(k);
        xs.iter().for_each(|&x| s.push(x));
        let mut out = vec![];
        s.finish(&mut out).then_some(out)
    }

    /// The pinned definition, written the slow and obvious way.
    fn by_definition(k: usize, xs: &[u64]) -> Vec<u32> {
        let h = |x: u64, i: u64| {
            if i == 0 {
                x
            } else {
                mix64(x.wrapping_add(i.wrapping_mul(GOLDEN)))
            }
        };
        let mut best = vec![(u64::MAX, u64::MAX); k];
        for i in 0..2 * k as u64 {
            for &x in xs {
                let bin = if i < k as u64 {
                    bin_of(h(x, i), k)
                } else {
                    (bin_of(h(x, k as u64), k) + (i - k as u64) as usize) % k
                };
                best[bin] = best[bin].min((i, h(x, i) & 0xffff_ffff));
            }
        }
        best.iter().map(|&(_, v)| v as u32).collect()
    }

    #[test]
    fn empty_set_has_no_signature() {
        assert_eq!(signature(8, &[]), None);
    }

    #[test]
    fn equals_the_definition_for_every_size() {
        let mut seed = 1u64;
        for k in [1, 2, 7, 64, 112] {
            for n in [1, 2, 3, 10, 50, 200, 1000] {
                let xs: Vec<u64> = (0..n)
                    .map(|_| {
                        seed += 1;
                        mix64(seed)
                    })
                    .collect();
                assert_eq!(
                    signature(k, &xs).unwrap(),
                    by_definition(k, &xs),
                    "k {k} n {n}"
                );
            }
        }
    }

    #[test]
    fn repeats_and_order_do_not_matter() {
        let xs: Vec<u64> = (1..=20u64).map(mix64).collect();
        let mut twice: Vec<u64> = xs.iter().chain(xs.iter()).copied().collect();
        twice.reverse();
        assert_eq!(signature(64, &xs), signature(64, &twice));
        // One shingle repeated many times.
        let many = vec![12345u64; 100_000];
        assert_eq!(signature(112, &many), signature(112, &[12345]));
    }

    #[test]
    fn a_sketch_is_reusable() {
        let mut s = Sketch::new(16);
        let mut a = vec![];
        s.push(mix64(1));
        s.finish(&mut a);
        s.clear();
        s.push(mix64(2));
        let mut b = vec![];
        s.finish(&mut b);
        assert_eq!(Some(b), signature(16, &[mix64(2)]));
        assert_ne!(Some(a), signature(16, &[mix64(2)]));
    }
}
