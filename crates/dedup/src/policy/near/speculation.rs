//! A chunk judged ahead of its turn, and checked in it (near mode with several
//! threads, `runner::ahead`).
//!
//! Ahead of its turn a chunk is judged whole against the store as it was then
//! (its n-gram tests corrected by the chunks that had passed the gate, its exact
//! rounds asked as tests): [`Speculation`] keeps every input and result. In its
//! turn the chunk is decided again, its exact rounds and tests answered as a
//! one-thread run's; a document whose inputs are the same as ahead takes its
//! results from ahead, the others are judged again.
//!
//! A document's verdicts and the n-grams it inserts depend on (1) its exact
//! answers (document key, paragraph keys), (2) the answers of its n-grams and
//! (3) for its n-grams not seen in the store, where an earlier document of the
//! chunk inserted them first (`kept_earlier`). (1) and (2) are compared
//! directly. For (3) the turn keeps the keys whose first insertion in the chunk
//! so far is not the one ahead ("dirty" keys, with their true paragraph, or none):
//! a document that stands inserts exactly what it did ahead, so only a document
//! judged again can make a key dirty, by inserting it where ahead it did not
//! (or not where it did). For any other key, the first insertion before a
//! document is ahead's when ahead's first insertion in the whole chunk lies
//! before that document. A document stands only if none of its n-grams is
//! dirty, which takes in every later document that looks up a key a re-judged
//! one changed: so the verdicts and the insert round are a one-thread run's.
//! Record numbers are not known ahead, so feedback mode (`-f`) judges in the
//! turn only.

use super::key_paras::KeyParas;
use super::{KeptFilter, NearScratch};
use crate::plan::ChunkPlan;
use crate::policy::{Decisions, DocStatus};
use std::ops::Range;
use webdedup_store::Location;

/// A dirty key inserted by no document so far.
const NOT_KEPT: u32 = u32::MAX;

/// What judging a chunk ahead of its turn saw and decided.
#[derive(Default)]
pub(crate) struct Speculation {
    /// Filled by the judging ahead, for the chunk planned now.
    pub(super) valid: bool,
    /// Per document: dropped whole by its document key.
    doc_seen: Vec<bool>,
    /// Per paragraph: an exact duplicate.
    exact_dup: Vec<bool>,
    /// Per n-gram: the answer judged with.
    seen: Vec<bool>,
    /// Per document: its n-grams.
    doc_ngrams: Vec<Range<usize>>,
    /// The results: per paragraph, per document, and the insert round.
    keep_para: Vec<bool>,
    para_dup: Vec<bool>,
    originals: Vec<Location>,
    docs: Vec<DocStatus>,
    insert: Vec<u64>,
    insert_locs: Vec<Location>,
    /// Per document: its n-grams in `insert`.
    segments: Vec<Range<usize>>,
    /// Where each n-gram inserted was inserted first, and a filter over them.
    chunk_kept: KeyParas,
    kept_filter: KeptFilter,
}

/// The turn's check of a [`Speculation`]: the keys whose first insertion so far
/// differs from ahead's.
#[derive(Default)]
pub(crate) struct Check {
    pub(super) on: bool,
    dirty: KeyParas,
    dirty_filter: KeptFilter,
    any_dirty: bool,
    /// The keys the document judged again inserts.
    now: KeyParas,
    /// The first paragraph of the document being judged.
    doc_start: u32,
}

impl Check {
    /// The paragraph a dirty key was inserted with first ([`NOT_KEPT`]: none).
    #[inline]
    fn dirty_para(&self, k: u64) -> Option<u32> {
        if !self.any_dirty || !self.dirty_filter.may_hold(k) {
            return None;
        }
        self.dirty.get(k)
    }

    #[inline]
    fn is_dirty(&self, k: u64) -> bool {
        self.dirty_para(k).is_some()
    }
}

impl NearScratch {
    /// Before a chunk's turn: the decision now made is kept, to be checked in
    /// the turn.
    pub fn speculate(&mut self) {
        self.speculating = true;
        self.spec.valid = false;
    }

    /// The decision ahead is over (`kept`: it ran to its end).
    pub fn end_speculation(&mut self, kept: bool) {
        self.speculating = false;
        self.spec.valid &= kept;
    }

    /// After the exact rounds and the n-gram tests: the inputs of judging.
    pub(crate) fn note_inputs(&mut self, doc_seen: &[bool]) {
        let c = &mut self.check;
        c.on = !self.speculating && self.spec.valid;
        c.now.clear(16);
        if self.speculating {
            let s = &mut self.spec;
            s.doc_seen.clear();
            s.doc_seen.extend_from_slice(doc_seen);
            s.exact_dup.clone_from(&self.para_dup);
            s.seen.clone_from(&self.seen);
            s.doc_ngrams.clone_from(&self.doc_ngrams);
        } else if c.on {
            c.dirty.clear(64);
            c.any_dirty = false;
        }
    }

    /// At the end of the decision ahead: keeps its results. In the turn: the
    /// check is over (a chunk is checked once).
    pub(crate) fn note_results(&mut self, out: &Decisions) {
        if self.speculating {
            let s = &mut self.spec;
            s.keep_para.clone_from(&out.keep_para);
            s.originals.clone_from(&out.originals);
            s.docs.clone_from(&out.docs);
            s.para_dup.clone_from(&self.para_dup);
            s.insert.clone_from(&self.insert);
            s.insert_locs.clone_from(&self.insert_locs);
            s.segments.clone_from(&self.segments);
            std::mem::swap(&mut s.chunk_kept, &mut self.chunk_kept);
            std::mem::swap(&mut s.kept_filter, &mut self.kept_filter);
            s.valid = true;
        } else {
            self.check.on = false;
            self.spec.valid = false;
        }
    }

    /// In the turn: whether document `d` (not dropped whole) stands as judged
    /// ahead (see the module doc).
    pub(crate) fn stands(&self, plan: &ChunkPlan, d: usize) -> bool {
        let (s, c) = (&self.spec, &self.check);
        if !c.on || s.doc_seen[d] {
            return false;
        }
        let paras = plan.docs[d].paras.clone();
        let grams = self.doc_ngrams[d].clone();
        s.exact_dup[paras.clone()] == self.para_dup[paras]
            && s.doc_ngrams[d] == grams
            && s.seen[grams.clone()] == self.seen[grams.clone()]
            && !(c.any_dirty && self.keys[grams].iter().any(|&k| c.is_dirty(k)))
    }

    /// In the turn: document `d` stands ([`Self::stands`]): its results are the
    /// ones ahead.
    pub(crate) fn stand(&mut self, plan: &ChunkPlan, d: usize, out: &mut Decisions) {
        let s = &self.spec;
        let paras = plan.docs[d].paras.clone();
        out.keep_para[paras.clone()].copy_from_slice(&s.keep_para[paras.clone()]);
        out.originals[paras.clone()].copy_from_slice(&s.originals[paras.clone()]);
        self.para_dup[paras.clone()].copy_from_slice(&s.para_dup[paras]);
        out.docs.push(s.docs[d]);
        let seg = s.segments[d].clone();
        self.segments[d] = self.insert.len()..self.insert.len() + seg.len();
        self.insert.extend_from_slice(&s.insert[seg.clone()]);
        self.insert_locs.extend_from_slice(&s.insert_locs[seg]);
    }

    /// In the turn, before document `d` is judged again.
    pub(crate) fn start_doc(&mut self, plan: &ChunkPlan, d: usize) {
        if self.check.on {
            self.check.doc_start = plan.docs[d].paras.start as u32;
            self.check.now.clear(16);
        }
    }

    /// Where an earlier document of the chunk (or an earlier paragraph of the
    /// one being kept) inserted `k` first, as the turn has it.
    #[inline]
    pub(super) fn kept_earlier_checked(&self, k: u64) -> Option<u32> {
        let (s, c) = (&self.spec, &self.check);
        if let Some(p) = c.now.get(k) {
            return Some(p);
        }
        if let Some(p) = c.dirty_para(k) {
            return (p != NOT_KEPT).then_some(p);
        }
        if !s.kept_filter.may_hold(k) {
            return None;
        }
        s.chunk_kept.get(k).filter(|&p| p < c.doc_start)
    }

    /// In the turn: document `d`'s paragraph `j` inserts `k` (judged again).
    #[inline]
    pub(super) fn insert_checked(&mut self, k: u64, j: u32) {
        let c = &mut self.check;
        c.now.get_or_insert(k, j);
        let s = &self.spec;
        let ahead = s
            .kept_filter
            .may_hold(k)
            .then(|| s.chunk_kept.get(k))
            .flatten();
        if c.is_dirty(k) || ahead != Some(j) {
            Self::make_dirty(c, k, j);
        }
    }

    /// In the turn, after document `d` was judged again (or dropped whole): the
    /// keys it inserted ahead but not now are dirty.
    pub(crate) fn end_doc(&mut self, d: usize) {
        if !self.check.on {
            return;
        }
        let (s, c) = (&self.spec, &mut self.check);
        for &k in &s.insert[s.segments[d].clone()] {
            if c.now.get(k).is_none() && !c.is_dirty(k) {
                Self::make_dirty(c, k, NOT_KEPT);
            }
        }
        c.now.clear(16);
    }

    fn make_dirty(c: &mut Check, k: u64, para: u32) {
        if !c.any_dirty {
            // Cleared when first needed: most chunks make no key dirty.
            c.dirty_filter.clear();
            c.any_dirty = true;
        }
        c.dirty.set(k, para);
        c.dirty_filter.add(k);
    }
}
