//! LSH banding: `B` bands of `R` signature values each, every band one 64-bit key.
//!
//! Two documents whose shingle sets have Jaccard similarity `s` agree on one
//! signature value with probability `s`, on a whole band with `s^R`, and share at
//! least one band with probability `1 - (1 - s^R)^B` ([`Banding::probability`]):
//! an S-curve that rises steepest around the threshold `(1/B)^(1/R)`
//! ([`Banding::threshold`]).
//!
//! Band `b` covers signature values `b*R .. (b+1)*R`. Its key is xxh3-64 of those
//! values as little-endian `u32`s, seeded with `KeyKind::MinHashBand`'s seed plus `b`
//! (so equal values in two different bands give different keys). Pinned.

use webdedup_text::KeyKind;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The largest number of rows a band may have.
pub const MAX_ROWS: usize = 64;

/// `B` bands of `R` rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Banding {
    pub bands: usize,
    pub rows: usize,
}

impl Banding {
    /// The Jaccard similarity at which the S-curve is steepest, `(1/B)^(1/R)`: pairs
    /// above it are likely to share a band, pairs below it unlikely.
    pub fn threshold(&self) -> f64 {
        (1.0 / self.bands as f64).powf(1.0 / self.rows as f64)
    }

    /// The probability that two documents of Jaccard similarity `s` share at least
    /// one band: `1 - (1 - s^R)^B`.
    pub fn probability(&self, s: f64) -> f64 {
        1.0 - (1.0 - s.powi(self.rows as i32)).powi(self.bands as i32)
    }

    /// Signature values the bands use (`B * R`, the first ones).
    pub fn values(&self) -> usize {
        self.bands * self.rows
    }

    /// Appends the `B` band keys of `signature` to `out`.
    ///
    /// # Panics
    /// If the signature is shorter than `B * R` or `R > MAX_ROWS` (a programming
    /// error: settings are checked when they are made).
    pub fn keys(&self, signature: &[u32], out: &mut Vec<u64>) {
        assert!(self.rows <= MAX_ROWS && signature.len() >= self.values());
        let mut buf = [0u8; 4 * MAX_ROWS];
        let bytes = &mut buf[..4 * self.rows];
        for (b, band) in signature
            .chunks_exact(self.rows)
            .take(self.bands)
            .enumerate()
        {
            for (dst, v) in bytes.chunks_exact_mut(4).zip(band) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
            out.push(band_key(b, bytes));
        }
    }
}

/// The key of band `b` whose values are `bytes` (little-endian `u32`s).
#[inline]
fn band_key(b: usize, bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(bytes, KeyKind::MinHashBand.seed().wrapping_add(b as u64))
}

/// The share of positions where two signatures agree; None when they are empty.
/// Panics if they differ in length (they come from different settings).
#[track_caller]
fn agreement<T: PartialEq>(a: &[T], b: &[T]) -> Option<f64> {
    assert_eq!(
        a.len(),
        b.len(),
        "signatures of different lengths cannot be compared"
    );
    if a.is_empty() {
        return None;
    }
    let equal = a.iter().zip(b).filter(|(x, y)| x == y).count();
    Some(equal as f64 / a.len() as f64)
}

/// The Jaccard similarity estimated from two signatures of the same settings: the
/// fraction of positions where they agree (unbiased; standard error about
/// `sqrt(J (1 - J) / k)` for `k` values).
///
/// # Panics
/// If the signatures differ in length (they come from different settings).
pub fn estimate_jaccard(a: &[u32], b: &[u32]) -> f64 {
    agreement(a, b).unwrap_or(0.0)
}

/// The Jaccard similarity estimated from the low 8 bits of two signatures' values
/// (what stream mode's `--verify` keeps per kept document: 1 byte a value), corrected
/// for chance agreement: `(f - 1/256) / (1 - 1/256)`, with `f` the share of equal
/// bytes, floored at 0. The quality study found no loss against full values at 8 bits.
///
/// # Panics
/// If the signatures differ in length.
pub fn estimate_jaccard_low8(a: &[u8], b: &[u8]) -> f64 {
    let Some(f) = agreement(a, b) else {
        return 0.0;
    };
    let chance = 1.0 / 256.0;
    ((f - chance) / (1.0 - chance)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_and_probability() {
        let b = Banding { bands: 14, rows: 8 };
        assert!((b.threshold() - 0.7191).abs() < 1e-4);
        assert!(
            (b.probability(b.threshold()) - (1.0 - (1.0 - 1.0 / 14.0f64).powi(14))).abs() < 1e-12
        );
        assert_eq!(b.probability(0.0), 0.0);
        assert_eq!(b.probability(1.0), 1.0);
    }

    #[test]
    fn keys_differ_by_band_and_by_value() {
        let b = Banding { bands: 3, rows: 2 };
        let mut k = Vec::new();
        b.keys(&[7, 7, 7, 7, 7, 7, 9], &mut k);
        assert_eq!(k.len(), 3);
        // Same values, different bands: different keys.
        assert!(k[0] != k[1] && k[1] != k[2] && k[0] != k[2]);
        let mut k2 = Vec::new();
        b.keys(&[7, 7, 7, 8, 7, 7], &mut k2);
        assert_eq!(k[0], k2[0]);
        assert_ne!(k[1], k2[1]);
        assert_eq!(k[2], k2[2]);
        // The key of band b is xxh3 of its values, seeded by the kind's seed + b.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&7u32.to_le_bytes());
        bytes.extend_from_slice(&8u32.to_le_bytes());
        assert_eq!(
            k2[1],
            xxh3_64_with_seed(&bytes, KeyKind::MinHashBand.seed() + 1)
        );
    }

    #[test]
    fn estimate_counts_equal_positions() {
        assert_eq!(estimate_jaccard(&[1, 2, 3, 4], &[1, 2, 0, 4]), 0.75);
        assert_eq!(estimate_jaccard(&[], &[]), 0.0);
    }

    #[test]
    fn low8_estimate_is_corrected_for_chance() {
        assert_eq!(estimate_jaccard_low8(&[1, 2, 3, 4], &[1, 2, 3, 4]), 1.0);
        assert_eq!(estimate_jaccard_low8(&[1, 2], &[3, 4]), 0.0);
        let half = estimate_jaccard_low8(&[1, 2], &[1, 4]);
        assert!((half - (0.5 - 1.0 / 256.0) / (1.0 - 1.0 / 256.0)).abs() < 1e-12);
    }
}
