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
//!
//! Store requests go in three rounds per chunk (URL+title keys, document keys,
//! paragraph keys). Each key kind has a hash space of its own, so this equals asking
//! key by key in document order, which is what makes the output independent of
//! chunking and of threads.

use crate::options::{DocCheck, Options};
use crate::plan::ChunkPlan;
use webdedup_store::{BatchId, Store, StoreError};

/// Request ids a chunk may use: `decide` numbers its rounds from `seq` upwards.
pub const REQUESTS_PER_CHUNK: u64 = 8;

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
}

impl DocStatus {
    pub fn written(self) -> bool {
        matches!(self, DocStatus::Kept | DocStatus::Partial { .. })
    }

    pub fn code(self) -> String {
        match self {
            DocStatus::Kept => "K".into(),
            DocStatus::Partial { kept, total } => format!("{kept}/{total}"),
            DocStatus::Duplicate => "D".into(),
            DocStatus::Emptied => "E".into(),
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
}

/// Reusable buffers for [`decide`].
#[derive(Default)]
pub struct Scratch {
    keys: Vec<u64>,
    seen: Vec<bool>,
    doc_seen: Vec<bool>,
}

/// Asks the store about the chunk's keys and decides what is kept.
pub fn decide(
    plan: &ChunkPlan,
    id: BatchId,
    store: &dyn Store,
    opts: &Options,
    s: &mut Scratch,
    out: &mut Decisions,
) -> Result<(), StoreError> {
    out.docs.clear();
    out.keep_para.clear();
    out.keep_para.resize(plan.paras.len(), false);

    // Round 1: URL+title keys, every document.
    s.keys.clear();
    s.keys.extend(plan.docs.iter().map(|d| d.url_title_key));
    let round = |n: u64| BatchId {
        stream: id.stream,
        seq: id.seq + n,
    };
    store.test_and_insert_batch(round(0), &s.keys, &mut out.url_title_repeat)?;

    // Round 2: document keys.
    s.keys.clear();
    let tested = |i: usize| opts.doc_check == DocCheck::All || out.url_title_repeat[i];
    s.keys.extend(
        plan.docs
            .iter()
            .enumerate()
            .filter(|(i, _)| tested(*i))
            .map(|(_, d)| d.doc_key),
    );
    store.test_and_insert_batch(round(1), &s.keys, &mut s.seen)?;
    s.doc_seen.clear();
    let mut answers = s.seen.iter();
    for i in 0..plan.docs.len() {
        s.doc_seen
            .push(tested(i) && *answers.next().expect("one answer per tested document"));
    }

    // Round 3: long paragraphs of the documents not dropped whole.
    s.keys.clear();
    for (doc, &dup) in plan.docs.iter().zip(&s.doc_seen) {
        if !dup {
            s.keys.extend(
                plan.paras[doc.paras.clone()]
                    .iter()
                    .filter(|p| p.long)
                    .map(|p| p.key),
            );
        }
    }
    store.test_and_insert_batch(round(2), &s.keys, &mut s.seen)?;

    let mut answers = s.seen.iter();
    for (doc, &dup) in plan.docs.iter().zip(&s.doc_seen) {
        if dup {
            out.docs.push(DocStatus::Duplicate);
            continue;
        }
        let paras = &plan.paras[doc.paras.clone()];
        let keep = &mut out.keep_para[doc.paras.clone()];
        let mut buffered_from = 0;
        let mut any_long = false;
        let mut any_long_kept = false;
        for (i, p) in paras.iter().enumerate() {
            if !p.long {
                continue;
            }
            let kept = !*answers.next().expect("one answer per long paragraph");
            any_long = true;
            any_long_kept |= kept;
            // The short paragraphs buffered before it share its fate.
            keep[buffered_from..=i].fill(kept);
            buffered_from = i + 1;
        }
        keep[buffered_from..].fill(any_long_kept || !any_long);
        let total = paras.len() as u32;
        let kept = keep.iter().filter(|&&k| k).count() as u32;
        out.docs.push(if kept == total {
            DocStatus::Kept
        } else if kept == 0 {
            DocStatus::Emptied
        } else {
            DocStatus::Partial { kept, total }
        });
    }
    Ok(())
}
