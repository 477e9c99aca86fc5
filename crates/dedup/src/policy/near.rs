//! Near-duplicate paragraphs by word n-grams: onion's method, chunk-batched.
//!
//! Within a document, a window of `--ngram` tokens slides over the token sequence
//! (windows cross paragraph boundaries). An n-gram *belongs* to the paragraph of
//! its last token, as in onion, which reads a document as one token stream. It is
//! *seen* if its key is in the store, or was inserted by an earlier document of the
//! same chunk, or occurred earlier in the same document. A long paragraph is a near
//! duplicate when more than `--threshold` of its tokens are covered by seen n-grams
//! belonging to it or to paragraphs before it. The n-grams belonging to kept
//! paragraphs are inserted.
//!
//! The store is asked twice per chunk: one test-only round for every n-gram of the
//! documents still standing, one insert round for the n-grams of kept paragraphs.
//! Between the two, documents are judged one by one in order, with the n-grams kept
//! by earlier documents of the chunk in a local set: so the verdicts equal asking
//! the store document by document, and outputs do not depend on chunking.

use crate::options::{NearOptions, NearRules};
use crate::plan::{ngram_key, ChunkPlan};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use webdedup_store::{BatchId, Location, Store, StoreError};

/// Keys are already uniform hashes: hashing them again would only cost time.
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }
}

type KeyMap = HashMap<u64, Location, BuildHasherDefault<KeyHasher>>;

/// Reusable buffers of near mode.
#[derive(Default)]
pub struct NearScratch {
    /// Exact verdict per paragraph (filled by `decide`), then near verdicts added.
    pub(crate) para_dup: Vec<bool>,
    keys: Vec<u64>,
    seen: Vec<bool>,
    originals: Vec<Location>,
    /// Per document: its n-grams in `keys` (empty when not asked).
    doc_ngrams: Vec<Range<usize>>,
    /// N-grams kept by earlier documents of this chunk, with their locations.
    chunk_kept: KeyMap,
    /// N-grams met earlier in the current document.
    in_doc: KeyMap,
    covered: Vec<bool>,
    votes: Vec<Location>,
    /// The insert round: keys and their locations.
    insert: Vec<u64>,
    insert_locs: Vec<Location>,
    ignored: Vec<bool>,
    ignored_locs: Vec<Location>,
}

/// The token range of a document (its paragraphs' tokens are contiguous).
fn doc_tokens(plan: &ChunkPlan, paras: Range<usize>) -> Range<usize> {
    if paras.is_empty() {
        return 0..0;
    }
    plan.paras[paras.start].tokens.start as usize..plan.paras[paras.end - 1].tokens.end as usize
}

impl NearScratch {
    /// Round 4: tests every n-gram of the documents for which `ask(i)` holds.
    pub fn test_round(
        &mut self,
        plan: &ChunkPlan,
        ask: impl Fn(usize) -> bool,
        n: usize,
        store: &dyn Store,
        id: BatchId,
        located: bool,
    ) -> Result<(), StoreError> {
        self.keys.clear();
        self.doc_ngrams.clear();
        self.chunk_kept.clear();
        self.insert.clear();
        self.insert_locs.clear();
        for (i, doc) in plan.docs.iter().enumerate() {
            let start = self.keys.len();
            if ask(i) {
                let t = doc_tokens(plan, doc.paras.clone());
                if t.len() >= n {
                    self.keys.extend(plan.tokens[t].windows(n).map(ngram_key));
                }
            }
            self.doc_ngrams.push(start..self.keys.len());
        }
        // With an id: a retried chunk (restore) is answered as its first attempt
        // was, before that attempt's insert round added its own n-grams.
        if located {
            store.test_located_batch(id, &self.keys, &mut self.seen, &mut self.originals)
        } else {
            self.originals.clear();
            store.test_batch(id, &self.keys, &mut self.seen)
        }
    }

    /// Judges the long paragraphs of document `d` that are not exact duplicates:
    /// sets `para_dup` (and, in feedback mode, `originals`) for near duplicates.
    #[allow(clippy::too_many_arguments)]
    pub fn judge_doc(
        &mut self,
        plan: &ChunkPlan,
        d: usize,
        opts: &NearOptions,
        record_of: impl Fn(usize) -> Location,
        originals: &mut [Location],
    ) {
        let n = opts.ngram;
        let doc = &plan.docs[d];
        let t = doc_tokens(plan, doc.paras.clone());
        let ngrams = self.doc_ngrams[d].clone();
        self.in_doc.clear();
        self.covered.clear();
        self.covered.resize(t.len(), false);
        for j in doc.paras.clone() {
            let p = &plan.paras[j];
            let (tokens, grams) = para_ngrams(plan, j, t.start, n, ngrams.len());
            let (pa, pb) = (tokens.start, tokens.end);
            self.votes.clear();
            for g in grams {
                let k = self.keys[ngrams.start + g];
                let from_store = self.seen[ngrams.start + g];
                let earlier = self
                    .chunk_kept
                    .get(&k)
                    .or_else(|| self.in_doc.get(&k))
                    .copied();
                if from_store || earlier.is_some() {
                    self.covered[g..g + n].fill(true);
                    let o = if from_store {
                        self.originals
                            .get(ngrams.start + g)
                            .copied()
                            .unwrap_or(Location::UNKNOWN)
                    } else {
                        earlier.unwrap_or(Location::UNKNOWN)
                    };
                    self.votes.push(o);
                }
                self.in_doc.entry(k).or_insert_with(|| record_of(j));
            }
            if !p.long || self.para_dup[j] || pb == pa {
                continue;
            }
            let covered = self.covered[pa..pb].iter().filter(|&&c| c).count();
            let near_dup = match opts.rules {
                NearRules::Webdedup => covered as f64 > opts.threshold * (pb - pa) as f64,
                // onion keeps its threshold in a `float` and compares the share.
                NearRules::Onion => {
                    covered as f64 / (pb - pa) as f64 > opts.threshold as f32 as f64
                }
            };
            if near_dup {
                self.para_dup[j] = true;
                originals[j] = most_common(&mut self.votes);
            }
        }
    }

    /// Queues the n-grams of document `d`'s kept paragraphs (`keep`, one per
    /// paragraph of the document) for insertion, and remembers them for the
    /// documents after it in the chunk.
    pub fn keep_doc(
        &mut self,
        plan: &ChunkPlan,
        d: usize,
        n: usize,
        keep: &[bool],
        record_of: impl Fn(usize) -> Location,
    ) {
        let doc = &plan.docs[d];
        let t = doc_tokens(plan, doc.paras.clone());
        let ngrams = self.doc_ngrams[d].clone();
        for (i, j) in doc.paras.clone().enumerate() {
            if !keep[i] {
                continue;
            }
            for g in para_ngrams(plan, j, t.start, n, ngrams.len()).1 {
                let k = self.keys[ngrams.start + g];
                let loc = record_of(j);
                self.insert.push(k);
                self.insert_locs.push(loc);
                self.chunk_kept.entry(k).or_insert(loc);
            }
        }
    }

    /// Round 5: inserts the kept n-grams.
    pub fn insert_round(
        &mut self,
        store: &dyn Store,
        id: BatchId,
        located: bool,
    ) -> Result<(), StoreError> {
        let feedback = located.then_some((&self.insert_locs[..], &mut self.ignored_locs));
        super::test_and_insert(store, id, &self.insert, feedback, &mut self.ignored)
    }
}

/// Paragraph `j`'s tokens, counted from its document's first token `doc_start`,
/// and the n-grams (of `n` tokens; the document has `count`) whose last token
/// lies in it.
fn para_ngrams(
    plan: &ChunkPlan,
    j: usize,
    doc_start: usize,
    n: usize,
    count: usize,
) -> (Range<usize>, Range<usize>) {
    let p = &plan.paras[j];
    let tokens = p.tokens.start as usize - doc_start..p.tokens.end as usize - doc_start;
    let first = (tokens.start + 1).saturating_sub(n);
    let last = (tokens.end + 1).saturating_sub(n);
    (tokens, first..last.min(count))
}

/// The location most n-grams point to (ties: the earliest in the paragraph);
/// unknown locations only count when there is nothing else.
fn most_common(votes: &mut [Location]) -> Location {
    let mut best = Location::UNKNOWN;
    let mut best_count = 0;
    for (i, v) in votes.iter().enumerate() {
        if *v == Location::UNKNOWN {
            continue;
        }
        if votes[..i].contains(v) {
            continue;
        }
        let c = votes[i..].iter().filter(|w| *w == v).count();
        if c > best_count {
            best = *v;
            best_count = c;
        }
    }
    best
}

/// `--smooth`: a run of kept paragraphs of at most `max_stub` tokens in all, lying
/// between dropped paragraphs (or a dropped paragraph and the document's edge), is
/// dropped too. A document with nothing dropped is left alone.
pub fn smooth(plan: &ChunkPlan, paras: Range<usize>, keep: &mut [bool], max_stub: usize) {
    let len = keep.len();
    let mut i = 0;
    while i < len {
        if !keep[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < len && keep[i] {
            i += 1;
        }
        let dropped_before = start > 0;
        let dropped_after = i < len;
        if !(dropped_before || dropped_after) {
            continue;
        }
        let tokens: usize = (start..i)
            .map(|k| plan.paras[paras.start + k].tokens.len())
            .sum();
        if tokens <= max_stub {
            keep[start..i].fill(false);
        }
    }
}

/// onion's smoothing (`--near-rules onion`): every run of kept paragraphs of at most
/// `max_stub` tokens in all is dropped when it lies between dropped paragraphs or
/// the document's edges, which count as dropped neighbours; so a whole document of
/// at most `max_stub` tokens is dropped even when nothing in it was seen. One pass
/// in order, on the verdicts before smoothing.
pub fn smooth_onion(plan: &ChunkPlan, paras: Range<usize>, keep: &mut [bool], max_stub: usize) {
    let mut run_start = 0;
    let mut run_tokens = 0;
    for i in 0..=keep.len() {
        if i == keep.len() || !keep[i] {
            if run_tokens <= max_stub {
                keep[run_start..i].fill(false);
            }
            run_start = i + 1;
            run_tokens = 0;
        } else {
            run_tokens += plan.paras[paras.start + i].tokens.len();
        }
    }
}
