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
//! The store is asked twice per chunk: one test-only round for the n-grams that can
//! decide a verdict (those belonging to the long paragraphs of the documents still
//! standing that are not exact duplicates), one insert round for the n-grams of kept
//! paragraphs that neither the store nor an earlier document of the chunk holds.
//! Between the two, documents are judged one by one in order, with the n-grams kept
//! by earlier documents of the chunk in a local set: so the verdicts equal asking
//! the store document by document, and outputs do not depend on chunking.

mod key_paras;
mod speculation;

use crate::options::{NearOptions, NearRules};
use crate::plan::{ngram_key, ChunkPlan};
pub(crate) use key_paras::KeyParas;
use speculation::{Check, Speculation};
use std::hash::Hasher;
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

/// Reusable buffers of near mode.
#[derive(Default)]
pub struct NearScratch {
    /// Exact verdict per paragraph (filled by `decide`), then near verdicts added.
    pub(crate) para_dup: Vec<bool>,
    /// Every n-gram of the documents asked about, document by document.
    keys: Vec<u64>,
    /// Per n-gram of `keys`: whether the store held it (false when not tested).
    seen: Vec<bool>,
    /// Per n-gram of `keys` (feedback mode): the store's location of a seen one.
    originals: Vec<Location>,
    /// The test round: the n-grams that can decide a verdict, their answers.
    tested: Vec<u64>,
    tested_seen: Vec<bool>,
    tested_originals: Vec<Location>,
    /// Per document: its n-grams in `keys` (empty when not asked).
    doc_ngrams: Vec<Range<usize>>,
    /// `keys` were built ahead of the chunk's turn ([`Self::build_ahead`]).
    prebuilt: bool,
    /// Per document: its n-grams in `keys` as built ahead.
    built: Vec<Range<usize>>,
    /// Per document: its n-grams in `insert`.
    segments: Vec<Range<usize>>,
    /// The chunk judged ahead of its turn, and its check in the turn
    /// ([`speculation`]).
    spec: Speculation,
    check: Check,
    /// The decision being made is the one ahead of the turn.
    speculating: bool,
    /// N-grams kept by earlier documents of this chunk, with their paragraphs.
    chunk_kept: KeyParas,
    /// A filter over `chunk_kept`'s keys: most n-grams were not kept earlier in
    /// the chunk, and a bit here is found far faster than a miss in the map.
    kept_filter: KeptFilter,
    /// N-grams met earlier in the current document, with their paragraphs.
    in_doc: KeyParas,
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
    /// Ahead of the chunk's turn (several threads, see `runner::ahead`): builds
    /// the n-grams of the documents for which `live(i)` holds, kept for the
    /// turn's [`Self::test_round`], and lays into `ahead` every n-gram the test
    /// round may ask, in its order: those of the long paragraphs with tokens (the
    /// round asks those of the documents and paragraphs the turn leaves standing).
    pub fn build_ahead(
        &mut self,
        plan: &ChunkPlan,
        live: impl Fn(usize) -> bool,
        n: usize,
        ahead: &mut Vec<u64>,
    ) {
        self.build_keys(plan, live, n);
        self.built.clone_from(&self.doc_ngrams);
        self.prebuilt = true;
        ahead.clear();
        let long = |j: usize| plan.paras[j].long && !plan.paras[j].tokens.is_empty();
        for r in paras_ngrams(plan, &self.doc_ngrams, n, long) {
            ahead.extend_from_slice(&self.keys[r]);
        }
    }

    /// Forgets n-grams built ahead ([`Self::build_ahead`]) for an earlier chunk.
    pub fn forget_ahead(&mut self) {
        self.prebuilt = false;
        self.spec.valid = false;
    }

    /// The n-grams of the documents for which `ask(i)` holds, into `keys`.
    fn build_keys(&mut self, plan: &ChunkPlan, ask: impl Fn(usize) -> bool, n: usize) {
        self.keys.clear();
        self.doc_ngrams.clear();
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
    }

    /// Round 4: the n-grams of the documents for which `ask(i)` holds (built
    /// ahead for a superset of them, or now), and a test of those that can decide
    /// a verdict ([`judged`]).
    pub fn test_round(
        &mut self,
        plan: &ChunkPlan,
        ask: impl Fn(usize) -> bool,
        n: usize,
        store: &dyn Store,
        id: BatchId,
        located: bool,
    ) -> Result<(), StoreError> {
        if self.prebuilt {
            // Judged ahead, the chunk is decided again in its turn.
            self.prebuilt = self.speculating;
            self.doc_ngrams.clear();
            let built = self.built.iter().enumerate();
            let asked = built.map(|(i, r)| if ask(i) { r.clone() } else { r.start..r.start });
            self.doc_ngrams.extend(asked);
        } else {
            self.build_keys(plan, ask, n);
        }
        // Most chunks keep far fewer n-grams than they have; the map grows if not.
        self.chunk_kept.clear(self.keys.len() / 4);
        self.kept_filter.clear();
        self.insert.clear();
        self.insert_locs.clear();
        self.segments.clear();
        self.segments.resize(plan.docs.len(), 0..0);
        self.tested.clear();
        let para_dup = &self.para_dup;
        for r in paras_ngrams(plan, &self.doc_ngrams, n, |j| judged(plan, para_dup, j)) {
            self.tested.extend_from_slice(&self.keys[r]);
        }
        // With an id: a retried chunk (restore) is answered as its first attempt
        // was, before that attempt's insert round added its own n-grams.
        let (seen, originals) = (&mut self.tested_seen, &mut self.tested_originals);
        if located {
            store.test_located_batch(id, &self.tested, seen, originals)?;
        } else {
            originals.clear();
            store.test_batch(id, &self.tested, seen)?;
        }
        self.spread_answers(plan, n, located);
        Ok(())
    }

    /// Lays the test round's answers on the n-grams they were asked for.
    fn spread_answers(&mut self, plan: &ChunkPlan, n: usize, located: bool) {
        self.seen.clear();
        self.seen.resize(self.keys.len(), false);
        self.originals.clear();
        if located {
            self.originals.resize(self.keys.len(), Location::UNKNOWN);
        }
        let mut answer = 0;
        let para_dup = &self.para_dup;
        for at in paras_ngrams(plan, &self.doc_ngrams, n, |j| judged(plan, para_dup, j)) {
            let answers = answer..answer + at.len();
            self.seen[at.clone()].copy_from_slice(&self.tested_seen[answers.clone()]);
            if located {
                self.originals[at].copy_from_slice(&self.tested_originals[answers.clone()]);
            }
            answer = answers.end;
        }
        debug_assert_eq!(answer, self.tested.len(), "one answer per tested n-gram");
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
        self.in_doc.clear(ngrams.len());
        self.covered.clear();
        self.covered.resize(t.len(), false);
        for j in doc.paras.clone() {
            let (tokens, grams) = para_ngrams(plan, j, t.start, n, ngrams.len());
            let (pa, pb) = (tokens.start, tokens.end);
            self.votes.clear();
            let judged = judged(plan, &self.para_dup, j);
            for g in grams {
                let k = self.keys[ngrams.start + g];
                // Met earlier in the document: its first place there.
                let in_doc = self.in_doc.get_or_insert(k, j as u32);
                // Only a judged paragraph's own n-grams can change a verdict.
                if !judged {
                    continue;
                }
                let o = if self.seen[ngrams.start + g] {
                    let o = self.originals.get(ngrams.start + g).copied();
                    Some(o.unwrap_or(Location::UNKNOWN))
                } else {
                    self.kept_earlier(k)
                        .or(in_doc)
                        .map(|p| record_of(p as usize))
                };
                if let Some(o) = o {
                    self.covered[g..g + n].fill(true);
                    self.votes.push(o);
                }
            }
            if !judged {
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

    /// Where an earlier document of the chunk kept n-gram `k`, if one did.
    #[inline]
    fn kept_earlier(&self, k: u64) -> Option<u32> {
        if self.check.on {
            return self.kept_earlier_checked(k);
        }
        if !self.kept_filter.may_hold(k) {
            return None;
        }
        self.chunk_kept.get(k)
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
        let first = self.insert.len();
        for (i, j) in doc.paras.clone().enumerate() {
            if !keep[i] {
                continue;
            }
            // An n-gram the store or an earlier kept paragraph of the chunk holds
            // is not inserted: the store would only say it was there.
            for g in para_ngrams(plan, j, t.start, n, ngrams.len()).1 {
                let k = self.keys[ngrams.start + g];
                if self.seen[ngrams.start + g] || self.kept_earlier(k).is_some() {
                    continue;
                }
                self.insert.push(k);
                self.insert_locs.push(record_of(j));
                if self.check.on {
                    self.insert_checked(k, j as u32);
                } else {
                    self.chunk_kept.get_or_insert(k, j as u32);
                    self.kept_filter.add(k);
                }
            }
        }
        self.segments[d] = first..self.insert.len();
        self.end_doc(d);
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

/// Where in a chunk's n-grams (`doc_ngrams`: each document's, empty when not
/// built) lie those of each paragraph `pick(j)` chooses, document by document.
fn paras_ngrams<'a>(
    plan: &'a ChunkPlan,
    doc_ngrams: &'a [Range<usize>],
    n: usize,
    pick: impl Fn(usize) -> bool + Copy + 'a,
) -> impl Iterator<Item = Range<usize>> + 'a {
    let docs = plan.docs.iter().zip(doc_ngrams);
    docs.filter(|(_, g)| !g.is_empty())
        .flat_map(move |(doc, g)| {
            let (t, g) = (doc_tokens(plan, doc.paras.clone()), g.clone());
            doc.paras.clone().filter(move |&j| pick(j)).map(move |j| {
                let grams = para_ngrams(plan, j, t.start, n, g.len()).1;
                g.start + grams.start..g.start + grams.end
            })
        })
}

/// Whether paragraph `j` is judged by its n-grams: a long paragraph with tokens
/// that is not an exact duplicate (`para_dup`). Only its n-grams are tested.
fn judged(plan: &ChunkPlan, para_dup: &[bool], j: usize) -> bool {
    let p = &plan.paras[j];
    p.long && !para_dup[j] && !p.tokens.is_empty()
}

/// A one-hash bit filter over a chunk's kept n-grams (keys are uniform hashes:
/// their top bits pick the bit). 4M bits (512 KB) keep false hits near 10% for
/// the n-grams a 4 MB chunk keeps.
struct KeptFilter {
    bits: Vec<u64>,
}

impl KeptFilter {
    const BITS_LOG2: u32 = 22;

    fn clear(&mut self) {
        self.bits.clear();
        self.bits.resize(1 << (Self::BITS_LOG2 - 6), 0);
    }

    #[inline]
    fn bit(k: u64) -> (usize, u64) {
        let b = (k >> (64 - Self::BITS_LOG2)) as usize;
        (b >> 6, 1 << (b & 63))
    }

    #[inline]
    fn add(&mut self, k: u64) {
        let (w, m) = Self::bit(k);
        self.bits[w] |= m;
    }

    #[inline]
    fn may_hold(&self, k: u64) -> bool {
        let (w, m) = Self::bit(k);
        self.bits.get(w).is_some_and(|b| b & m != 0)
    }
}

impl Default for KeptFilter {
    fn default() -> Self {
        let mut f = KeptFilter { bits: Vec::new() };
        f.clear();
        f
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
