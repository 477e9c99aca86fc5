//! Writes the kept bytes of a chunk, and its lines of the `.dd` document list.

use crate::plan::{ChunkPlan, DOC_LEVEL};
use crate::policy::{Decisions, DocStatus};
use crate::report::ChunkStats;
use webdedup_formats::vertical::{attr, escape_attr};

/// Appends the kept content of the chunk to `out` (byte for byte as read) and, when
/// `dd` is given, one `<dd url=".." title=".." status=".."/>` line per document.
pub fn render(
    data: &[u8],
    plan: &ChunkPlan,
    dec: &Decisions,
    out: &mut Vec<u8>,
    mut dd: Option<&mut Vec<u8>>,
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
