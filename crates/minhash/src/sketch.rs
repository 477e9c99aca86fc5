//! The signature: one-permutation hashing with optimal densification.
//!
//! Classic MinHash applies `k` independent permutations to every shingle and keeps
//! `k` minima: `k` hash evaluations per shingle. One-permutation hashing (Li, Owen
//! and Zhang 2012) hashes each shingle once: the hash picks one of `k` bins and a
//! value, and each bin keeps its smallest value. Bins that no shingle reached are
//! then filled by optimal densification (Shrivastava 2017): an empty bin `i` looks at
//! bins `probe(i, 1), probe(i, 2), ...` (a pseudo-random sequence that depends on
//! `i` and the attempt only, never on the data) and copies the value of the first
//! bin that a shingle reached. For two sets A and B, each bin of the two signatures
//! is equal with probability exactly J(A, B), the property LSH needs: the bin
//! decides on the first bin of its sequence that is non-empty for A ∪ B, whose
//! minimum is a uniformly random element of A ∪ B; both signatures copy it iff that
//! element is in A ∩ B.
//!
//! Pinned (never change; `describe` names the version `oph-v1`):
//!
//! * shingle hash `x` (64 bits, see `shingle`); its bin is `((x >> 32) * k) >> 32`
//!   and its value `x & 0xffff_ffff`;
//! * `probe(i, t)` for bin `i` and attempt `t = 1, 2, ...` is `((m >> 32) * k) >> 32`
//!   with `m` = xxh3-64, seed [`DENSIFY_SEED`], of the 8 little-endian bytes of
//!   `(i << 32) | t`;
//! * a set whose shingles all fall in one bin fills every bin with that bin's
//!   value (what the probes would find); after `2^32 - 1` fruitless attempts (never
//!   seen: the chance is `(1 - 1/k)^(2^32)`), an empty bin takes the next non-empty
//!   bin after it, cyclically.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The xxh3 seed of the densification probes: `"densify1"`. Pinned.
pub const DENSIFY_SEED: u64 = 0x6465_6e73_6966_7931;

/// Probes precomputed per bin: an empty bin finds a non-empty one within this many
/// attempts unless the set is much smaller than `k`.
const PRECOMPUTED_PROBES: usize = 16;

const EMPTY: u64 = u64::MAX;

/// One document's bins, reused from document to document. One per thread.
#[derive(Clone, Debug)]
pub struct Sketch {
    k: usize,
    /// The smallest value seen per bin, or `EMPTY`.
    mins: Vec<u64>,
    /// `probe(i, t)` for `t = 1..=PRECOMPUTED_PROBES`, row by row.
    probes: Vec<u16>,
}

impl Sketch {
    /// A sketch of `k` bins.
    ///
    /// # Panics
    /// If `k` is 0 or above 65,536.
    pub fn new(k: usize) -> Sketch {
        assert!((1..=1 << 16).contains(&k), "{k} bins out of 1..=65536");
        let mut probes = Vec::with_capacity(k * PRECOMPUTED_PROBES);
        for i in 0..k {
            for t in 1..=PRECOMPUTED_PROBES as u32 {
                probes.push(probe(i, t, k) as u16);
            }
        }
        Sketch {
            k,
            mins: vec![EMPTY; k],
            probes,
        }
    }

    pub fn bins(&self) -> usize {
        self.k
    }

    /// Starts a new set.
    #[inline]
    pub fn clear(&mut self) {
        self.mins.fill(EMPTY);
    }

    /// Adds the shingle hash `x`.
    #[inline]
    pub fn push(&mut self, x: u64) {
        let bin = bin_of(x >> 32, self.k);
        let v = x & 0xffff_ffff;
        let m = &mut self.mins[bin];
        *m = (*m).min(v);
    }

    /// Writes the signature (`k` values) into `out`, replacing its contents.
    /// Returns false, leaving `out` empty, when the set was empty.
    pub fn finish(&self, out: &mut Vec<u32>) -> bool {
        out.clear();
        let mut nonempty = self.mins.iter().filter(|&&m| m != EMPTY);
        let Some(&first) = nonempty.next() else {
            return false;
        };
        if nonempty.next().is_none() {
            out.resize(self.k, first as u32);
            return true;
        }
        out.reserve(self.k);
        for i in 0..self.k {
            let m = self.mins[i];
            let v = if m != EMPTY { m } else { self.densified(i) };
            out.push(v as u32);
        }
        true
    }

    /// The value an empty bin copies (at least two bins are non-empty).
    fn densified(&self, i: usize) -> u64 {
        let row = &self.probes[i * PRECOMPUTED_PROBES..(i + 1) * PRECOMPUTED_PROBES];
        for &j in row {
            let m = self.mins[j as usize];
            if m != EMPTY {
                return m;
            }
        }
        for t in PRECOMPUTED_PROBES as u32 + 1..u32::MAX {
            let m = self.mins[probe(i, t, self.k)];
            if m != EMPTY {
                return m;
            }
        }
        (1..self.k)
            .map(|d| self.mins[(i + d) % self.k])
            .find(|&m| m != EMPTY)
            .expect("at least two bins are non-empty")
    }
}

/// `(h * k) >> 32` for a 32-bit `h`: a bin in `0..k` (Lemire's multiply-shift range
/// reduction, no division).
#[inline]
fn bin_of(h: u64, k: usize) -> usize {
    ((h * k as u64) >> 32) as usize
}

/// The bin that empty bin `i` looks at on attempt `t`.
pub fn probe(i: usize, t: u32, k: usize) -> usize {
    let m = xxh3_64_with_seed(&(((i as u64) << 32) | t as u64).to_le_bytes(), DENSIFY_SEED);
    bin_of(m >> 32, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_set_has_no_signature() {
        let s = Sketch::new(8);
        let mut out = vec![1, 2];
        assert!(!s.finish(&mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn one_bin_fills_every_bin() {
        let mut s = Sketch::new(16);
        // Two hashes in the same bin: the smaller value wins everywhere.
        s.push(0x0000_0001_0000_0009);
        s.push(0x0000_0002_0000_0005);
        let mut out = Vec::new();
        assert!(s.finish(&mut out));
        assert_eq!(out, vec![5; 16]);
    }

    #[test]
    fn bins_take_minima_and_empty_bins_copy_a_non_empty_one() {
        let k = 64;
        let mut s = Sketch::new(k);
        let xs: Vec<u64> = (0..10u64)
            .map(|i| xxh3_64_with_seed(&i.to_le_bytes(), 7))
            .collect();
        for &x in &xs {
            s.push(x);
        }
        let mut out = Vec::new();
        assert!(s.finish(&mut out));
        for i in 0..k {
            let own: Vec<u32> = xs
                .iter()
                .filter(|&&x| bin_of(x >> 32, k) == i)
                .map(|&x| x as u32)
                .collect();
            if let Some(&m) = own.iter().min() {
                assert_eq!(out[i], m);
            } else {
                // The first probe that lands on a bin with shingles.
                let j = (1..)
                    .map(|t| probe(i, t, k))
                    .find(|&j| xs.iter().any(|&x| bin_of(x >> 32, k) == j))
                    .unwrap();
                let m = xs
                    .iter()
                    .filter(|&&x| bin_of(x >> 32, k) == j)
                    .map(|&x| x as u32)
                    .min()
                    .unwrap();
                assert_eq!(out[i], m, "bin {i} copies bin {j}");
            }
        }
    }

    #[test]
    fn precomputed_probes_equal_the_formula() {
        let s = Sketch::new(37);
        for i in 0..37 {
            for t in 1..=PRECOMPUTED_PROBES {
                assert_eq!(s.probes[i * PRECOMPUTED_PROBES + t - 1] as usize, probe(i, t as u32, 37));
            }
        }
    }
}
