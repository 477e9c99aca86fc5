//! Writes the kept bytes of a chunk, and its lines of the `.dd` document list.
//!
//! The writer of every format: a document's pieces tile its bytes (see
//! [`Piece`](crate::plan::Piece)), so a written document is the concatenation of
//! its surviving pieces, which keeps every byte of the input that is not dropped.

use crate::plan::{ChunkPlan, DocKind, DOC_LEVEL};
use crate::policy::{Decisions, DocStatus};
use crate::report::ChunkStats;
use std::ops::Range;
use webdedup_formats::vertical::escape_attr;
use webdedup_store::Location;

/// Feedback mode: where the `.dropped` text of a chunk goes, and how its
/// paragraphs are numbered.
pub struct DroppedOut<'a> {
    pub out: &'a mut Vec<u8>,
    /// The input file's id (`policy::file_id`).
    pub file: u64,
    /// Record number of the chunk's first paragraph (from 1).
    pub first_record: u64,
}

/// The `<t>DROPPED\tORIGINAL</f>` line written before a dropped paragraph in
/// feedback mode (the seed's format; file ids in 16 hex digits).
pub fn feedback_header(dropped: Location, original: Location, out: &mut Vec<u8>) {
    use std::io::Write;
    let _ = writeln!(
        out,
        "<t>{:016x}:{}\t{:016x}:{}</f>",
        dropped.file, dropped.record, original.file, original.record
    );
}

/// Whether dropped paragraph `j` of a document with `status` gets a feedback
/// reference: every paragraph of a duplicate document, and long paragraphs
/// otherwise (short ones rode along with a long one and have no original of
/// their own, as in the seed).
pub fn carries_reference(plan: &ChunkPlan, status: DocStatus, j: usize) -> bool {
    status != DocStatus::UrlFiltered && (status == DocStatus::Duplicate || plan.paras[j].long)
}

/// Where the `.dd` lines of a chunk go.
pub struct DdOut<'a> {
    pub out: &'a mut Vec<u8>,
    /// The input's name (its relative path): documents of formats with ids but
    /// without one of their own are named `NAME:LINE`.
    pub name: &'a str,
}

/// Appends the kept content of the chunk to `out` (byte for byte as read) and, when
/// `dd` is given, one `<dd url=".." title=".." status=".."/>` line per document
/// (`<dd id=".." url=".." ...` for formats that name documents, JSON Lines).
/// With `dropped`, every paragraph dropped as a duplicate is appended there, byte for
/// byte, after a [`feedback_header`] (except short paragraphs that rode along with
/// a long one: their original is not known, as in the seed); a paragraph whose
/// bytes do not end a line (a line of a JSON text) gets a newline.
pub fn render(
    data: &[u8],
    plan: &ChunkPlan,
    dec: &Decisions,
    out: &mut Vec<u8>,
    dd: Option<DdOut>,
    dropped: Option<DroppedOut>,
    stats: &mut ChunkStats,
) {
    render_spans(data, plan, dec, Some(out), dd, dropped, stats, None)
}

/// [`render`], also pushing to `spans` where each entry of the plan (document or
/// other record) went in `out` (an empty range when it was not written): the
/// writers of Parquet and WET rebuild rows and records from them. Without `out`
/// nothing is rendered but the `.dd`, `dropped` and the counts (`--mark` writes
/// the input itself), and `spans` stays as it was.
#[allow(clippy::too_many_arguments)]
pub fn render_spans(
    data: &[u8],
    plan: &ChunkPlan,
    dec: &Decisions,
    mut out: Option<&mut Vec<u8>>,
    mut dd: Option<DdOut>,
    mut dropped: Option<DroppedOut>,
    stats: &mut ChunkStats,
    mut spans: Option<&mut Vec<std::ops::Range<usize>>>,
) {
    for (i, &status) in dec.docs.iter().enumerate().take(plan.docs.len()) {
        let from = out.as_ref().map_or(0, |o| o.len());
        render_entry(
            data,
            plan,
            dec,
            i,
            status,
            out.as_deref_mut(),
            &mut dd,
            &mut dropped,
            stats,
        );
        if let (Some(s), Some(o)) = (spans.as_deref_mut(), out.as_ref()) {
            s.push(from..o.len());
        }
    }
    stats.docs_unverified += dec.pairs.iter().filter(|p| p.unverified).count() as u64;
}

/// Entry `i` of the plan (see [`render`]).
#[allow(clippy::too_many_arguments)]
fn render_entry(
    data: &[u8],
    plan: &ChunkPlan,
    dec: &Decisions,
    i: usize,
    status: DocStatus,
    out: Option<&mut Vec<u8>>,
    dd: &mut Option<DdOut>,
    dropped: &mut Option<DroppedOut>,
    stats: &mut ChunkStats,
) {
    let doc = &plan.docs[i];
    // Records that are not documents and not bad (a WET `warcinfo`): written
    // as they are, no `.dd` line, not counted.
    if doc.kind == DocKind::Other {
        if let Some(out) = out {
            for piece in &plan.pieces[doc.pieces.clone()] {
                out.extend_from_slice(&data[piece.range.clone()]);
            }
        }
        return;
    }
    if let Some(dd) = dd.as_mut() {
        dd_line(plan, i, status, dd);
    }
    if let DocKind::BadRecord { dropped } = doc.kind {
        stats.bad_records += 1;
        if let (false, Some(out)) = (dropped, out) {
            for piece in &plan.pieces[doc.pieces.clone()] {
                out.extend_from_slice(&data[piece.range.clone()]);
            }
        }
        return;
    }
    stats.docs += 1;
    if !dec.cuts.is_empty() {
        count_cuts(plan, doc.pieces.clone(), &dec.cuts, stats);
    }
    stats.url_title_repeats += dec.url_title_repeat[i] as u64;
    let paras = &plan.paras[doc.paras.clone()];
    stats.paras += paras.len() as u64;
    stats.long_paras += paras.iter().filter(|p| p.long).count() as u64;
    match status {
        DocStatus::Kept => stats.docs_kept_whole += 1,
        DocStatus::Partial { .. } => stats.docs_partial += 1,
        DocStatus::Duplicate => stats.docs_duplicate += 1,
        DocStatus::Emptied => stats.docs_emptied += 1,
        DocStatus::UrlFiltered => stats.docs_url_filtered += 1,
        DocStatus::BadRecord { .. } | DocStatus::Other => {}
    }
    if let (Some(d), true) = (dropped.as_mut(), status != DocStatus::UrlFiltered) {
        for piece in &plan.pieces[doc.pieces.clone()] {
            let j = piece.para as usize;
            if piece.para == DOC_LEVEL || piece.sep || dec.keep_para[j] {
                continue;
            }
            if carries_reference(plan, status, j) {
                let here = Location {
                    file: d.file,
                    record: d.first_record + j as u64,
                };
                feedback_header(here, dec.originals[j], d.out);
            }
            let bytes = &data[piece.range.clone()];
            d.out.extend_from_slice(bytes);
            if !bytes.ends_with(b"\n") {
                d.out.push(b'\n');
            }
        }
    }
    if status.written() {
        if let Some(out) = out {
            // A separator is written between two written paragraphs only.
            let last_kept = doc.paras.clone().rev().find(|&j| dec.keep_para[j]);
            for piece in &plan.pieces[doc.pieces.clone()] {
                let j = piece.para as usize;
                let written = piece.para == DOC_LEVEL
                    || (dec.keep_para[j] && (!piece.sep || last_kept.is_some_and(|l| j < l)));
                if written && piece.para == DOC_LEVEL {
                    out.extend_from_slice(&data[piece.range.clone()]);
                } else if written {
                    write_cut(data, piece.range.clone(), &dec.cuts, out);
                }
            }
        }
        stats.paras_kept += dec.keep_para[doc.paras.clone()]
            .iter()
            .filter(|&&k| k)
            .count() as u64;
    }
}

/// Substring mode: the cuts in the document whose pieces are `pieces` (cuts never
/// cross documents), counted as spans and bytes removed.
fn count_cuts(
    plan: &ChunkPlan,
    pieces: Range<usize>,
    cuts: &[Range<usize>],
    stats: &mut ChunkStats,
) {
    let (Some(first), Some(last)) = (
        plan.pieces.get(pieces.start),
        plan.pieces[..pieces.end].last(),
    ) else {
        return;
    };
    let (start, end) = (first.range.start, last.range.end);
    let from = cuts.partition_point(|c| c.end <= start);
    for c in cuts[from..].iter().take_while(|c| c.start < end) {
        stats.substr_spans += 1;
        stats.substr_bytes += (c.end - c.start) as u64;
    }
}

/// The bytes `range` of `data` without the parts `cuts` (sorted, not
/// overlapping) covers: a paragraph of substring mode.
fn write_cut(data: &[u8], range: Range<usize>, cuts: &[Range<usize>], out: &mut Vec<u8>) {
    let first = cuts.partition_point(|c| c.end <= range.start);
    let mut at = range.start;
    for c in cuts[first..].iter().take_while(|c| c.start < range.end) {
        if c.start > at {
            out.extend_from_slice(&data[at..c.start]);
        }
        at = at.max(c.end);
    }
    if at < range.end {
        out.extend_from_slice(&data[at..range.end]);
    }
}

/// The `.dd` line of document `i`.
fn dd_line(plan: &ChunkPlan, i: usize, status: DocStatus, dd: &mut DdOut) {
    let doc = &plan.docs[i];
    let out = &mut *dd.out;
    out.extend_from_slice(b"<dd ");
    if doc.named {
        out.extend_from_slice(b"id=\"");
        match &doc.id {
            Some(id) => escape_attr(plan.meta_of(id), out),
            None => escape_attr(&format!("{}:{}", dd.name, doc.line), out),
        }
        out.extend_from_slice(b"\" ");
    }
    out.extend_from_slice(b"url=\"");
    escape_attr(plan.meta_of(&doc.url), out);
    out.extend_from_slice(b"\" title=\"");
    escape_attr(plan.meta_of(&doc.title), out);
    out.extend_from_slice(b"\" status=\"");
    out.extend_from_slice(status.code().as_bytes());
    out.extend_from_slice(b"\"/>\n");
}
