//! Writes the kept bytes of a chunk, and its lines of the `.dd` document list.

use crate::plan::{ChunkPlan, DOC_LEVEL};
use crate::policy::{Decisions, DocStatus};
use crate::report::ChunkStats;
use webdedup_formats::vertical::{attr, escape_attr};
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

/// Appends the kept content of the chunk to `out` (byte for byte as read) and, when
/// `dd` is given, one `<dd url=".." title=".." status=".."/>` line per document.
/// With `dropped`, every paragraph dropped as a duplicate is appended there, byte for
/// byte, after a [`feedback_header`] (except short paragraphs that rode along with
/// a long one: their original is not known, as in the seed).
pub fn render(
    data: &[u8],
    plan: &ChunkPlan,
    dec: &Decisions,
    out: &mut Vec<u8>,
    mut dd: Option<&mut Vec<u8>>,
    mut dropped: Option<DroppedOut>,
    stats: &mut ChunkStats,
) {
    for (i, (doc, &status)) in plan.docs.iter().zip(&dec.docs).enumerate() {
        stats.docs += 1;
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
        }
        if let (Some(d), true) = (dropped.as_mut(), status != DocStatus::UrlFiltered) {
            for piece in &plan.pieces[doc.pieces.clone()] {
                let j = piece.para as usize;
                if piece.para == DOC_LEVEL || dec.keep_para[j] {
                    continue;
                }
                if carries_reference(plan, status, j) {
                    let here = Location {
                        file: d.file,
                        record: d.first_record + j as u64,
                    };
                    feedback_header(here, dec.originals[j], d.out);
                }
                d.out.extend_from_slice(&data[piece.range.clone()]);
            }
        }
        if status.written() {
            for piece in &plan.pieces[doc.pieces.clone()] {
                if piece.para == DOC_LEVEL || dec.keep_para[piece.para as usize] {
                    out.extend_from_slice(&data[piece.range.clone()]);
                }
            }
            stats.paras_kept += dec.keep_para[doc.paras.clone()]
                .iter()
                .filter(|&&k| k)
                .count() as u64;
        }
        if let Some(dd) = dd.as_deref_mut() {
            let attrs = &data[doc.attrs.clone()];
            dd.extend_from_slice(b"<dd url=\"");
            escape_attr(&attr(attrs, b"url").unwrap_or_default(), dd);
            dd.extend_from_slice(b"\" title=\"");
            escape_attr(&attr(attrs, b"title").unwrap_or_default(), dd);
            dd.extend_from_slice(b"\" status=\"");
            dd.extend_from_slice(status.code().as_bytes());
            dd.extend_from_slice(b"\"/>\n");
        }
    }
}
