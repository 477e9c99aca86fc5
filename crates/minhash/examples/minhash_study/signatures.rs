//! The signatures the study compares (the crate's, optimal densification,
//! classic k-permutation), their band keys and the LSH candidate pairs.

use rayon::prelude::*;
use std::collections::HashMap;
use webdedup_minhash::reference::Classic;
use webdedup_minhash::{
    estimate_jaccard, mix64, Banding, MinHasher, Normalization, Params, Shingler, Shingling,
};
use webdedup_study::Doc;

/// Signatures of every document, in input order (None = no shingle).
pub(crate) type Sigs = Vec<Option<Vec<u32>>>;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Method {
    /// The crate's signature: one permutation, densified by rehashing rounds.
    Fss,
    /// One permutation, optimal densification (copying).
    Od,
    /// Classic k-permutation MinHash (`reference::Classic`).
    Classic,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::Fss => "fss",
            Method::Od => "od",
            Method::Classic => "classic",
        })
    }
}

/// One-permutation hashing with optimal densification (Shrivastava, ICML 2017):
/// the same first round as the crate's sketch; an empty bin i then copies the bin
/// probe(i, 1), probe(i, 2), ... that the first round filled.
pub(crate) struct Densified {
    pub(crate) k: usize,
}

impl Densified {
    fn probe(&self, i: usize, t: u64) -> usize {
        let m = mix64(((i as u64) << 32 | t) ^ 0x6465_6e73_6966_7931);
        (((m >> 32) * self.k as u64) >> 32) as usize
    }

    pub(crate) fn signature(&self, xs: impl IntoIterator<Item = u64>) -> Option<Vec<u32>> {
        let k = self.k;
        let mut mins = vec![u64::MAX; k];
        for x in xs {
            let b = (((x >> 32) * k as u64) >> 32) as usize;
            mins[b] = mins[b].min(x & 0xffff_ffff);
        }
        let filled = mins.iter().filter(|&&m| m != u64::MAX).count();
        if filled == 0 {
            return None;
        }
        Some(
            (0..k)
                .map(|i| {
                    if mins[i] != u64::MAX {
                        return mins[i] as u32;
                    }
                    (1..)
                        .map(|t| mins[self.probe(i, t)])
                        .find(|&m| m != u64::MAX)
                        .unwrap() as u32
                })
                .collect(),
        )
    }
}

/// Signatures of every document (None = no shingle).
pub(crate) fn signatures(
    docs: &[Doc],
    method: Method,
    shingling: Shingling,
    norm: Normalization,
    hashes: usize,
) -> Sigs {
    let params = Params {
        shingling,
        norm,
        hashes,
        bands: 1,
        rows: 1,
        verify_hashes: 0,
    };
    let from_hashes = |sig: &(dyn Fn(&[u64]) -> Option<Vec<u32>> + Sync)| -> Sigs {
        docs.par_iter()
            .map_init(
                || (Shingler::new(shingling, norm), Vec::new()),
                |(s, v), d| {
                    v.clear();
                    s.for_each(d.text.as_bytes(), |h| v.push(h));
                    sig(v)
                },
            )
            .collect()
    };
    match method {
        Method::Fss => docs
            .par_iter()
            .map_init(
                || MinHasher::new(params).unwrap(),
                |m, d| m.signature(d.text.as_bytes()).map(|s| s.to_vec()),
            )
            .collect(),
        Method::Classic => {
            let c = Classic::new(hashes);
            from_hashes(&|v| c.signature(v.iter().copied()))
        }
        Method::Od => {
            let o = Densified { k: hashes };
            from_hashes(&|v| o.signature(v.iter().copied()))
        }
    }
}

/// Band keys of every document.
pub(crate) fn band_keys(sigs: &Sigs, b: Banding) -> Vec<Vec<u64>> {
    sigs.par_iter()
        .map(|s| {
            let mut k = Vec::new();
            if let Some(s) = s {
                b.keys(s, &mut k);
            }
            k
        })
        .collect()
}

/// Pairs (i < j) sharing at least one band key, sorted; None when there are more
/// than `cap`.
pub(crate) fn candidates(keys: &[Vec<u64>], bands: usize, cap: usize) -> Option<Vec<(u32, u32)>> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for b in 0..bands {
        let mut by: HashMap<u64, Vec<u32>> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            if let Some(&key) = k.get(b) {
                by.entry(key).or_default().push(i as u32);
            }
        }
        for m in by.values() {
            for x in 0..m.len() {
                for y in x + 1..m.len() {
                    out.push((m[x], m[y]));
                }
            }
            if out.len() > 4 * cap {
                out.sort_unstable();
                out.dedup();
                if out.len() > cap {
                    return None;
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

pub(crate) fn est(sigs: &Sigs, i: u32, j: u32) -> f64 {
    match (&sigs[i as usize], &sigs[j as usize]) {
        (Some(a), Some(b)) => estimate_jaccard(a, b),
        _ => 0.0,
    }
}

/// The sorted, distinct shingle hashes of every document.
pub(crate) fn shingle_sets(
    docs: &[Doc],
    shingling: Shingling,
    norm: Normalization,
) -> Vec<Vec<u64>> {
    docs.par_iter()
        .map_init(
            || Shingler::new(shingling, norm),
            |s, d| {
                let mut v = Vec::new();
                s.for_each(d.text.as_bytes(), |h| v.push(h));
                v.sort_unstable();
                v.dedup();
                v
            },
        )
        .collect()
}
