//! SimHash near-duplicate documents: a 64-bit fingerprint per document
//! ([`tokenize::Fingerprinter`]: tokens, shingles, weights, the pinned hash), all
//! pairs within `k` differing bits ([`search`], permuted tables), clusters and
//! dedup ([`cluster`]), an index kept between batches ([`index`]), and the
//! `webdedup simhash` / `similar` commands ([`run`]).
//!
//! ```
//! use webdedup_simhash::core::hamming;
//! use webdedup_simhash::tokenize::{Fingerprinter, Settings};
//! let mut f = Fingerprinter::new(Settings::default());
//! let a = f.fingerprint("the quick brown fox jumps over the lazy dog near the river bank today").unwrap();
//! let b = f.fingerprint("the quick brown fox jumps over the lazy dog near the river bank now").unwrap();
//! let c = f.fingerprint("completely different words about cooking pasta with tomato sauce and basil").unwrap();
//! assert!(hamming(a, b) < hamming(a, c)); // near texts, near fingerprints
//! ```
pub mod cluster;
pub mod core;
pub mod fingerprints;
pub mod index;
pub mod input;
pub mod item;
pub mod run;
pub mod search;
#[cfg(test)]
mod test_rng;
pub mod tokenize;

pub use run::{
    run_simhash, run_similar, simhash_outcome, similar_outcome, SimhashOptions, SimilarOptions,
};
