//! The decision table: which documents and paragraphs are kept.
//!
//! | situation | decision |
//! |---|---|
//! | URL+title seen before | counted as a repeat; with `--doc-check url-title` the document key is tested |
//! | document key seen before (tested for every document by default) | document dropped whole, status `D` |
//! | long paragraph (raw text >= `--min-para-chars` chars) seen before | dropped |
//! | long paragraph new | kept, key inserted |
//! | short paragraph | buffered: kept or dropped with the next long paragraph |
//! | short paragraphs after the last long one | kept iff some long paragraph of the document was kept |
//! | document without any long paragraph | kept whole (unless its document key repeated) |
//! | document left with no paragraph | not written, status `E` |
//! | URL matches `--url-filter` | not written, status `U`, no store request |
//! | a bad record (not a document: a line that is not a JSON object...) | no store request; written as it is (status `B`) unless `--drop-bad-records` |
//! | a document without URL or title (JSON Lines) | no URL+title key; with `--doc-check url-title` its document key is always tested |
//! | `--doc-check none` | no URL+title key and no document key is asked: paragraphs only |
//! | a record that is neither a document nor bad (a WET `warcinfo` record) | no store request; written as it is, no `.dd` line |
//!
//! Near mode (`-n`) adds a fourth and fifth round: every word n-gram of the
//! documents still standing is *tested* (not inserted); a long paragraph is also
//! dropped when more than `--threshold` of its tokens are covered by n-grams seen
//! before (in the store, in an earlier document of the chunk, or earlier in the same
//! document); then the n-grams of the kept paragraphs are inserted. See
//! [`near`](self::near) for the rules.
//!
//! Store requests go in three rounds per chunk (URL+title keys, document keys,
//! paragraph keys). Each key kind has a hash space of its own, so this equals asking
//! key by key in document order, which is what makes the output independent of
//! chunking and of threads.

use crate::options::{DocCheck, Options};
use crate::plan::{ChunkPlan, DocKind};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use webdedup_store::{BatchId, Location, Store, StoreError};

/// Request ids a chunk may use: `decide` numbers its rounds from `seq` upwards.
pub const REQUESTS_PER_CHUNK: u64 = 8;

/// The round of near mode's inserts (its last request; the policy judges
/// nothing by its answers, so the runner may answer it unasked).
pub const NEAR_INSERT_ROUND: u64 = 4;

/// The identity of a chunk's first store request: the same for the same input file
/// (relative path) and chunk index in every run, so a remote store can recognise a
/// retried chunk (see [`BatchId`]).
pub fn chunk_identity(rel: &[u8], chunk: u64) -> BatchId {
    BatchId {
        stream: xxhash_rust::xxh3::xxh3_64(rel),
        seq: chunk * REQUESTS_PER_CHUNK,
    }
}

/// What happened to a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocStatus {
    /// Kept whole (`K`).
    Kept,
    /// `kept` of `total` paragraphs kept (`N/M`).
    Partial { kept: u32, total: u32 },
    /// Its content was seen before (`D`).
    Duplicate,
    /// Every paragraph was dropped (`E`).
    Emptied,
    /// Its URL matched the URL filter (`U`): dropped before any store request.
    UrlFiltered,
    /// Not a document (`B`): a bad record, written as it is unless `dropped`.
    BadRecord { dropped: bool },
    /// Not a document and not bad (a WET `warcinfo` record): written as it is, no
    /// `.dd` line.
    Other,
}

impl DocStatus {
    pub fn written(self) -> bool {
        matches!(
            self,
            DocStatus::Kept
                | DocStatus::Partial { .. }
                | DocStatus::BadRecord { dropped: false }
                | DocStatus::Other
        )
    }

    pub fn code(self) -> String {
        match self {
            DocStatus::Kept => "K".into(),
            DocStatus::Partial { kept, total } => format!("{kept}/{total}"),
            DocStatus::Duplicate => "D".into(),
            DocStatus::Emptied => "E".into(),
            DocStatus::UrlFiltered => "U".into(),
            DocStatus::BadRecord { .. } => "B".into(),
            DocStatus::Other => "-".into(),
        }
    }
}

/// The store's answers for one chunk, turned into decisions.
#[derive(Debug, Default)]
pub struct Decisions {
    pub docs: Vec<DocStatus>,
    /// One per paragraph of the plan.
    pub keep_para: Vec<bool>,
    /// One per document: its URL+title was seen before.
    pub url_title_repeat: Vec<bool>,
    /// Feedback mode: one per paragraph, where a dropped paragraph's original was
    /// first seen ([`Location::UNKNOWN`] for kept paragraphs and short ones that
    /// rode along).
    pub originals: Vec<Location>,
    /// MinHash mode: the dropped documents and their originals, in order.
    pub pairs: Vec<Pair>,
    /// Substring mode: byte ranges of the chunk's data left out of the written
    /// paragraphs, in order, not overlapping.
    pub cuts: Vec<std::ops::Range<usize>>,
    /// Substring mode: the units (indexes into the plan's tokens) of each removed
    /// stretch, in order (`--mark` names them by their characters).
    pub cut_units: Vec<std::ops::Range<usize>>,
    /// Substring mode with feedback: the first copy of each of [`Self::cut_units`]
    /// (`policy::substr::decide::first_copy`; [`Location::UNKNOWN`] if not known).
    pub cut_originals: Vec<Location>,
}

impl Decisions {
    /// Empty decisions sized for `plan`: nothing kept, no original known.
    fn clear_for(&mut self, plan: &ChunkPlan) {
        self.docs.clear();
        self.keep_para.clear();
        self.keep_para.resize(plan.paras.len(), false);
        self.originals.clear();
        self.originals.resize(plan.paras.len(), Location::UNKNOWN);
        self.url_title_repeat.clear();
        self.url_title_repeat.resize(plan.docs.len(), false);
        self.pairs.clear();
        self.cuts.clear();
        self.cut_units.clear();
        self.cut_originals.clear();
    }
}

/// MinHash mode: a dropped document and its original, for the pairs report.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// The dropped document's index in the chunk plan.
    pub doc: usize,
    /// The original's name (its id, or `REL:LINE`), or `-` when not known.
    pub original: String,
    /// The estimated Jaccard similarity, when both signatures were at hand.
    pub jaccard: Option<f64>,
    /// `--verify` was asked for but the original's signature was not at hand:
    /// dropped on the band match alone (counted in the run's figures).
    pub unverified: bool,
}

/// Reusable buffers of MinHash mode's [`minhash::decide`].
#[derive(Default)]
pub struct MinHashScratch {
    /// The chunk's kept band keys (uniform hashes: not hashed again).
    pub(super) local: HashMap<u64, Location, BuildHasherDefault<near::KeyHasher>>,
    pub(super) owners: Vec<Location>,
    pub(super) insert_keys: Vec<u64>,
    pub(super) insert_locs: Vec<Location>,
}

/// What a chunk's store requests need besides its plan.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChunkContext {
    /// The identity of the chunk's first request ([`chunk_identity`]).
    pub id: BatchId,
    /// Feedback mode: the input file's id ([`file_id`]).
    pub file: u64,
    /// Feedback mode: the record number of the chunk's first paragraph in its
    /// file (records count from 1).
    pub first_record: u64,
}

/// The id of an input file in feedback references: xxh3-64 of its path relative
/// to the input directory.
pub fn file_id(rel: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(rel)
}

/// Asks `store` about `keys` as request `id` (answers in `seen`); with `feedback`,
/// the keys' locations go along and their originals come back.
fn test_and_insert(
    store: &dyn Store,
    id: BatchId,
    keys: &[u64],
    feedback: Option<(&[Location], &mut Vec<Location>)>,
    seen: &mut Vec<bool>,
) -> Result<(), StoreError> {
    match feedback {
        Some((locs, originals)) => {
            store.test_and_insert_located_batch(id, keys, locs, seen, originals)
        }
        None => store.test_and_insert_batch(id, keys, seen),
    }
}

/// Reusable buffers for [`decide`].
#[derive(Default)]
pub struct Scratch {
    keys: Vec<u64>,
    locs: Vec<Location>,
    seen: Vec<bool>,
    originals: Vec<Location>,
    doc_seen: Vec<bool>,
    doc_original: Vec<Location>,
    pub(crate) near: near::NearScratch,
    minhash: MinHashScratch,
    pub(crate) substr: substr::decide::SubstrScratch,
}

/// Asks the store about the chunk's keys and decides what is kept: the paragraph
/// modes (exact, near). MinHash mode has its own ([`minhash::decide`]);
/// `engine::decide` picks by the mode.
pub fn decide(
    plan: &ChunkPlan,
    ctx: ChunkContext,
    store: &dyn Store,
    opts: &Options,
    s: &mut Scratch,
    out: &mut Decisions,
) -> Result<(), StoreError> {
    debug_assert!(opts.minhash().is_none(), "MinHash mode has its own decide");
    out.pairs.clear();
    out.cuts.clear();
    out.docs.clear();
    out.keep_para.clear();
    out.keep_para.resize(plan.paras.len(), false);
    out.originals.clear();
    out.originals.resize(plan.paras.len(), Location::UNKNOWN);
    let id = ctx.id;
    let round = |n: u64| BatchId {
        stream: id.stream,
        seq: id.seq + n,
    };
    let located = opts.feedback();
    let record_of = |para: usize| Location {
        file: ctx.file,
        record: ctx.first_record + para as u64,
    };
    let live = |i: usize| plan.docs[i].live();
    // With `--doc-check none` the URL+title key would decide nothing: not asked.
    // onion's rules judge by n-grams alone: no document or paragraph key is asked
    // (the rounds stay, empty, so request numbering does not depend on the rules).
    let onion = opts.onion_rules();
    let asks_url_title =
        |i: usize| live(i) && plan.docs[i].has_url_title && opts.doc_check != DocCheck::None;

    // Round 1: URL+title keys of every document the URL filter let through (that
    // has a URL and a title).
    s.keys.clear();
    s.keys.extend(
        (0..plan.docs.len())
            .filter(|&i| asks_url_title(i))
            .map(|i| plan.docs[i].url_title_key),
    );
    store.test_and_insert_batch(round(0), &s.keys, &mut s.seen)?;
    out.url_title_repeat.clear();
    let mut answers = s.seen.iter();
    for i in 0..plan.docs.len() {
        out.url_title_repeat
            .push(asks_url_title(i) && *answers.next().expect("one answer per URL+title key"));
    }

    // Round 2: document keys.
    s.keys.clear();
    s.locs.clear();
    let tested = |i: usize| {
        live(i)
            && !onion
            && match opts.doc_check {
                DocCheck::All => true,
                DocCheck::UrlTitle => out.url_title_repeat[i] || !plan.docs[i].has_url_title,
                DocCheck::None => false,
            }
    };
    for (i, d) in plan.docs.iter().enumerate() {
        if tested(i) {
            s.keys.push(d.doc_key);
            // A document is located by its first paragraph: its paragraphs then
            // correspond one to one with the original's (same normalized texts).
            s.locs.push(record_of(d.paras.start));
        }
    }
    let feedback = located.then_some((&s.locs[..], &mut s.originals));
    test_and_insert(store, round(1), &s.keys, feedback, &mut s.seen)?;
    s.doc_seen.clear();
    s.doc_original.clear();
    let mut answers = s.seen.iter().zip(
        s.originals
            .iter()
            .chain(std::iter::repeat(&Location::UNKNOWN)),
    );
    for i in 0..plan.docs.len() {
        let (seen, orig) = if tested(i) {
            let (a, o) = answers.next().expect("one answer per tested document");
            (*a, *o)
        } else {
            (false, Location::UNKNOWN)
        };
        s.doc_seen.push(seen);
        s.doc_original.push(orig);
    }

    // Round 3: long paragraphs of the documents not dropped whole.
    s.keys.clear();
    s.locs.clear();
    for (i, doc) in plan.docs.iter().enumerate() {
        if live(i) && !s.doc_seen[i] && !onion {
            for (j, p) in plan.paras[doc.paras.clone()].iter().enumerate() {
                if p.long {
                    s.keys.push(p.key);
                    s.locs.push(record_of(doc.paras.start + j));
                }
            }
        }
    }
    let feedback = located.then_some((&s.locs[..], &mut s.originals));
    test_and_insert(store, round(2), &s.keys, feedback, &mut s.seen)?;

    // Exact verdicts per paragraph (long ones: seen before; the rest: false).
    let mut para_dup = std::mem::take(&mut s.near.para_dup);
    para_dup.clear();
    para_dup.resize(plan.paras.len(), false);
    {
        let mut k = 0;
        for (i, doc) in plan.docs.iter().enumerate() {
            if live(i) && !s.doc_seen[i] && !onion {
                for j in doc.paras.clone() {
                    if plan.paras[j].long {
                        para_dup[j] = s.seen[k];
                        if located && s.seen[k] {
                            out.originals[j] = s.originals[k];
                        }
                        k += 1;
                    }
                }
            }
        }
    }

    s.near.para_dup = para_dup;
    if let Some(n) = opts.near() {
        let doc_seen = &s.doc_seen;
        s.near.test_round(
            plan,
            |i| live(i) && !doc_seen[i],
            n.ngram,
            store,
            round(3),
            located,
        )?;
        s.near.note_inputs(&s.doc_seen);
    }

    for (i, doc) in plan.docs.iter().enumerate() {
        match doc.kind {
            DocKind::BadRecord { dropped } => {
                out.docs.push(DocStatus::BadRecord { dropped });
                continue;
            }
            DocKind::Other => {
                out.docs.push(DocStatus::Other);
                continue;
            }
            DocKind::Document => {}
        }
        if !live(i) {
            out.docs.push(DocStatus::UrlFiltered);
            continue;
        }
        if s.doc_seen[i] {
            out.docs.push(DocStatus::Duplicate);
            if located && s.doc_original[i] != Location::UNKNOWN {
                let o = s.doc_original[i];
                for (n, j) in doc.paras.clone().enumerate() {
                    out.originals[j] = Location {
                        file: o.file,
                        record: o.record + n as u64,
                    };
                }
            }
            s.near.end_doc(i);
            continue;
        }
        if let Some(n) = opts.near() {
            // Judged ahead of the turn (several threads): only what changed.
            if s.near.stands(plan, i) {
                s.near.stand(plan, i, out);
                continue;
            }
            s.near.start_doc(plan, i);
            s.near.judge_doc(plan, i, n, record_of, &mut out.originals);
        }
        let paras = &plan.paras[doc.paras.clone()];
        let keep = &mut out.keep_para[doc.paras.clone()];
        let dup = &s.near.para_dup[doc.paras.clone()];
        if let Some(n) = opts.near().filter(|_| onion) {
            for (k, d) in keep.iter_mut().zip(dup) {
                *k = !d;
            }
            if n.smooth {
                near::smooth_onion(plan, doc.paras.clone(), keep, n.max_stub);
            }
            // onion drops a document's tags, so the document, when none of the
            // paragraphs it keeps has a token.
            if !paras
                .iter()
                .zip(keep.iter())
                .any(|(p, &k)| k && !p.tokens.is_empty())
            {
                keep.fill(false);
            }
            s.near.keep_doc(plan, i, n.ngram, keep, record_of);
            out.docs.push(doc_status(keep));
            continue;
        }
        let mut buffered_from = 0;
        let mut any_long = false;
        let mut any_long_kept = false;
        for (k, p) in paras.iter().enumerate() {
            if !p.long {
                continue;
            }
            let kept = !dup[k];
            any_long = true;
            any_long_kept |= kept;
            // The short paragraphs buffered before it share its fate.
            keep[buffered_from..=k].fill(kept);
            buffered_from = k + 1;
        }
        keep[buffered_from..].fill(any_long_kept || !any_long);
        if let Some(n) = opts.near() {
            if n.smooth {
                near::smooth(plan, doc.paras.clone(), keep, n.max_stub);
            }
            s.near.keep_doc(plan, i, n.ngram, keep, record_of);
        }
        out.docs.push(doc_status(keep));
    }

    if opts.near().is_some() {
        s.near.note_results(out);
        s.near
            .insert_round(store, round(NEAR_INSERT_ROUND), located)?;
    }
    Ok(())
}

pub mod minhash;

/// A judged document's status from its paragraphs' fates.
fn doc_status(keep: &[bool]) -> DocStatus {
    let total = keep.len() as u32;
    let kept = keep.iter().filter(|&&k| k).count() as u32;
    if kept == total {
        DocStatus::Kept
    } else if kept == 0 {
        DocStatus::Emptied
    } else {
        DocStatus::Partial { kept, total }
    }
}

pub mod near;
pub mod substr;
