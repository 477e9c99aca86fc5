//! Classic k-permutation MinHash, the reference the fast signature is measured
//! against (tests and the quality study; not used by the tools).
//!
//! Permutation `i` is emulated by a strong 64-bit mixer of the shingle hash XOR a
//! per-permutation seed (SplitMix64's finalizer over `x ^ s_i`, the `s_i` drawn from
//! SplitMix64 seeded with [`REFERENCE_SEED`]); value `i` of the signature is the
//! smallest low 32 bits over the set. That is `k` hash evaluations per shingle, each
//! an independent random function as far as any test can tell: the textbook
//! estimator, whose values agree with probability J independently of each other.

/// `"classic!"`.
pub const REFERENCE_SEED: u64 = 0x636c_6173_7369_6321;

pub use crate::sketch::mix64;

/// A SplitMix64 stream: deterministic pseudo-random 64-bit numbers for seeds and
/// synthetic data.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }
}

/// Classic MinHash of `k` permutations over shingle hashes.
#[derive(Clone, Debug)]
pub struct Classic {
    seeds: Vec<u64>,
}

impl Classic {
    pub fn new(k: usize) -> Classic {
        let mut s = SplitMix64(REFERENCE_SEED);
        Classic {
            seeds: (0..k).map(|_| s.next()).collect(),
        }
    }

    /// The signature of the set of `hashes` (None when empty).
    pub fn signature(&self, hashes: impl IntoIterator<Item = u64>) -> Option<Vec<u32>> {
        let mut mins = vec![u64::MAX; self.seeds.len()];
        let mut any = false;
        for x in hashes {
            any = true;
            for (m, &s) in mins.iter_mut().zip(&self.seeds) {
                *m = (*m).min(mix64(x ^ s) & 0xffff_ffff);
            }
        }
        any.then(|| mins.into_iter().map(|m| m as u32).collect())
    }
}
