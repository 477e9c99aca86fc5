//! Substring mode's decisions for one chunk: every live document's picked window
//! keys asked test-and-insert in one request, in document order (so the verdicts
//! equal asking document by document), then each document's removed stretches as
//! cuts in the chunk's data ([`Decisions::cuts`]).
//!
//! A paragraph all of whose units are removed is dropped as a paragraph (so the
//! format's separators go with it, as in paragraph mode); in the others the cuts
//! are left out of its bytes when it is written. A document with cuts is partly
//! kept (`N/M`, N its paragraphs left); one left with nothing is emptied (`E`).
//!
//! In feedback mode (`-f`) each key goes with its window's location, so the store
//! keeps each key's first copy: [`first_copy`] of the document's line and the
//! window's first character, and every removed stretch learns the first copy of
//! its first window ([`Decisions::cut_originals`]).

use super::{removed_tokens, window_keys, winnow, SubstrParams};
use crate::plan::{ChunkPlan, DocKind};
use crate::policy::{ChunkContext, Decisions, DocStatus};
use std::ops::Range;
use webdedup_store::{Location, Store, StoreError};

/// Reusable buffers of substring mode.
#[derive(Default)]
pub struct SubstrScratch {
    windows: Vec<u64>,
    picked: Vec<u32>,
    /// Every live document's picks (token indexes in its document) and keys.
    selected: Vec<u32>,
    keys: Vec<u64>,
    /// Per entry of the plan: its picks in `selected` / `keys`.
    per_doc: Vec<Range<usize>>,
    seen: Vec<bool>,
    removed: Vec<Range<usize>>,
    /// Feedback mode: each key's window's location, and the store's first copies.
    locs: Vec<Location>,
    originals: Vec<Location>,
}

/// Where a window is, in a store's location: its file, and in the record the
/// document's line (high 32 bits) and the window's first character in the
/// document's text (low 32 bits; `--mark`'s offsets).
pub fn first_copy(file: u64, line: u64, char: u32) -> Location {
    Location {
        file,
        record: line << 32 | u64::from(char),
    }
}

/// The line and character [`first_copy`] packed into `loc`'s record.
pub fn line_and_char(loc: Location) -> (u64, u32) {
    (loc.record >> 32, loc.record as u32)
}

/// The units of a document (its paragraphs' units are contiguous).
pub fn doc_units(plan: &ChunkPlan, paras: Range<usize>) -> Range<usize> {
    if paras.is_empty() {
        return 0..0;
    }
    plan.paras[paras.start].tokens.start as usize..plan.paras[paras.end - 1].tokens.end as usize
}

/// A document's windows: the key of every window of its `units` into `windows`,
/// and the positions robust winnowing picks (unit indexes in the document) into
/// `picked`: what it asks, `windows[p]` for each `p` of `picked`. Batch mode's
/// hash phase asks nothing but lists the same picks.
pub fn pick_windows(
    plan: &ChunkPlan,
    units: Range<usize>,
    params: SubstrParams,
    windows: &mut Vec<u64>,
    picked: &mut Vec<u32>,
) {
    window_keys(&plan.tokens[units], params.k, windows);
    winnow(windows, params.w, picked);
}

/// The character of its document's text where the window picked at `p` (of the
/// document's `units`) starts: the low half of its [`first_copy`] (0 when the plan
/// holds no characters: planned without marks).
pub fn window_char(plan: &ChunkPlan, units: Range<usize>, p: u32) -> u32 {
    let chars = plan.token_chars.get(units).unwrap_or_default();
    chars.get(p as usize).map_or(0, |c| c.start)
}

/// Decides the chunk (see the module docs).
pub fn decide(
    plan: &ChunkPlan,
    ctx: ChunkContext,
    store: &dyn Store,
    params: SubstrParams,
    feedback: bool,
    s: &mut SubstrScratch,
    out: &mut Decisions,
) -> Result<(), StoreError> {
    out.clear_for(plan);
    s.selected.clear();
    s.keys.clear();
    s.per_doc.clear();
    s.locs.clear();
    for doc in &plan.docs {
        let start = s.keys.len();
        if doc.live() {
            let units = doc_units(plan, doc.paras.clone());
            pick_windows(plan, units.clone(), params, &mut s.windows, &mut s.picked);
            s.selected.extend_from_slice(&s.picked);
            let windows = &s.windows;
            s.keys.extend(s.picked.iter().map(|&p| windows[p as usize]));
            if feedback {
                s.locs.extend(
                    s.picked.iter().map(|&p| {
                        first_copy(ctx.file, doc.line, window_char(plan, units.clone(), p))
                    }),
                );
            }
        }
        s.per_doc.push(start..s.keys.len());
    }
    if feedback {
        store.test_and_insert_located_batch(
            ctx.id,
            &s.keys,
            &s.locs,
            &mut s.seen,
            &mut s.originals,
        )?;
    } else {
        store.test_and_insert_batch(ctx.id, &s.keys, &mut s.seen)?;
    }

    for (i, doc) in plan.docs.iter().enumerate() {
        if let DocKind::BadRecord { dropped } = doc.kind {
            out.docs.push(DocStatus::BadRecord { dropped });
            continue;
        }
        if !doc.live() {
            out.docs.push(DocStatus::UrlFiltered);
            continue;
        }
        let picks = s.per_doc[i].clone();
        let units = doc_units(plan, doc.paras.clone());
        removed_tokens(
            &s.selected[picks.clone()],
            &s.seen[picks.clone()],
            params,
            &plan.token_len[units.clone()],
            &mut s.removed,
        );
        let keep = &mut out.keep_para[doc.paras.clone()];
        keep.fill(true);
        if s.removed.is_empty() {
            out.docs.push(DocStatus::Kept);
            continue;
        }
        for r in &s.removed {
            let (a, b) = (units.start + r.start, units.start + r.end);
            out.cut_units.push(a..b);
            if feedback {
                // A stretch starts with a seen window's first token: that window's
                // first copy is the stretch's.
                let first = s.selected[picks.clone()]
                    .iter()
                    .zip(&s.originals[picks.clone()])
                    .find(|(&p, _)| p as usize == r.start)
                    .map_or(Location::UNKNOWN, |(_, &o)| o);
                out.cut_originals.push(first);
            }
            let cut = plan.token_bytes[a].start..plan.token_bytes[b - 1].end;
            match out.cuts.last_mut() {
                // A vertical's units of one line share it.
                Some(last) if cut.start <= last.end => last.end = last.end.max(cut.end),
                _ => out.cuts.push(cut),
            }
            for (k, j) in doc.paras.clone().enumerate() {
                let t = &plan.paras[j].tokens;
                if !t.is_empty() && a <= t.start as usize && t.end as usize <= b {
                    keep[k] = false;
                }
            }
        }
        let total = keep.len() as u32;
        let kept = keep.iter().filter(|&&k| k).count() as u32;
        out.docs.push(if kept == 0 {
            DocStatus::Emptied
        } else {
            DocStatus::Partial { kept, total }
        });
    }
    Ok(())
}
