//! Stream-mode decisions (MinHash, SimHash), their dropped-documents score, and
//! how scores are printed.

use crate::signatures::{est, Sigs};
use std::collections::HashMap;
use webdedup_study::Score;

/// Stream-mode decisions: for each document, None (kept) or Some(original), the
/// first earlier kept document sharing a band key whose estimate reaches `verify`
/// (without `verify`, the first one).
pub(crate) fn stream_minhash(
    keys: &[Vec<u64>],
    sigs: &Sigs,
    verify: Option<f64>,
) -> Vec<Option<u32>> {
    stream_verified(keys, |d, o| verify.is_none_or(|j| est(sigs, d, o) >= j))
}

/// Stream-mode decisions with any check: the original of document `d` is the
/// first earlier kept document `o` sharing a band key with `verified(d, o)`
/// (each candidate checked once).
pub(crate) fn stream_verified(
    keys: &[Vec<u64>],
    mut verified: impl FnMut(u32, u32) -> bool,
) -> Vec<Option<u32>> {
    let mut owner: HashMap<u64, u32> = HashMap::new();
    let mut out = Vec::with_capacity(keys.len());
    for (d, k) in keys.iter().enumerate() {
        let mut original = None;
        let mut tried = Vec::new();
        for key in k {
            if let Some(&o) = owner.get(key) {
                if !tried.contains(&o) {
                    tried.push(o);
                    if verified(d as u32, o) {
                        original = Some(o);
                        break;
                    }
                }
            }
        }
        if original.is_none() {
            for &key in k {
                owner.entry(key).or_insert(d as u32);
            }
        }
        out.push(original);
    }
    out
}

/// SimHash stream decisions: drop when within k of an earlier kept document.
pub(crate) fn stream_simhash(fps: &[Option<u64>], k: u32) -> Vec<Option<u32>> {
    let mut kept: Vec<(u64, u32)> = Vec::new();
    let mut out = Vec::with_capacity(fps.len());
    for (d, f) in fps.iter().enumerate() {
        let original = f.and_then(|f| {
            kept.iter()
                .find(|(g, _)| (f ^ g).count_ones() <= k)
                .map(|&(_, o)| o)
        });
        if original.is_none() {
            if let Some(f) = f {
                kept.push((*f, d as u32));
            }
        }
        out.push(original);
    }
    out
}

/// What the `--show` settings produced: signatures, band keys, verified pairs.
pub(crate) struct Shown {
    pub(crate) sigs: Sigs,
    pub(crate) keys: Vec<Vec<u64>>,
    pub(crate) pairs: Vec<(u32, u32)>,
}

pub(crate) struct Truth {
    pub(crate) pairs: Vec<(u32, u32)>,
    /// Partners of each document.
    pub(crate) adj: Vec<Vec<u32>>,
    pub(crate) sets: Vec<Vec<u64>>,
}

/// Dropped-documents score (see the module docs) and the share of drops whose
/// named original is a true partner; `doc_ok` filters documents (per language).
pub(crate) fn score_dropped(
    t: &Truth,
    decisions: &[Option<u32>],
    doc_ok: impl Fn(usize) -> bool,
) -> (Score, f64) {
    let kept: Vec<bool> = decisions.iter().map(|d| d.is_none()).collect();
    let mut s = Score::default();
    let (mut drops, mut orig_ok) = (0usize, 0usize);
    for (d, dec) in decisions.iter().enumerate() {
        if !doc_ok(d) {
            continue;
        }
        let droppable = t.adj[d]
            .iter()
            .any(|&e| (e as usize) < d && kept[e as usize]);
        match (dec, droppable) {
            (Some(_), true) => s.tp += 1,
            (Some(_), false) => s.fp += 1,
            (None, true) => s.fn_ += 1,
            (None, false) => {}
        }
        if let Some(o) = dec {
            drops += 1;
            orig_ok += t.adj[d].contains(o) as usize;
        }
    }
    let share = if drops == 0 {
        1.0
    } else {
        orig_ok as f64 / drops as f64
    };
    (s, share)
}

pub(crate) fn prf(s: &Score) -> String {
    format!("{:.3}/{:.3}/**{:.3}**", s.p(), s.r(), s.f1())
}

pub(crate) fn prf_short(s: &Score) -> String {
    format!("{:.2}/{:.2}/{:.2}", s.p(), s.r(), s.f1())
}
