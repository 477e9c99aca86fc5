//! Outputs of the formats that are not a concatenation of kept bytes (Parquet,
//! WET), and `--mark`'s attributes files.
//!
//! [`render`](crate::render) writes every format's kept bytes; for Parquet and
//! WET those bytes are the material, not the output: a Parquet row group is
//! encoded again from the kept rows with their kept text, a WET record gets a
//! new `Content-Length`. Both take the span each entry of the plan took in the
//! rendered bytes ([`render_spans`](crate::render::render_spans)).
//!
//! With `--mark` nothing is removed: the output is the input (Parquet rows all
//! kept with their texts as read, WET records as read), and the decisions go to
//! an attributes file in dolma's layout, one JSON line per record of the input,
//! in order: `{"id": ID, "attributes": {"webdedup_duplicate_paragraphs":
//! [[START, END, 1.0], ...], "webdedup_duplicate_document": [[0, LEN, 1.0]]}}`,
//! offsets in characters (Unicode scalar values) of the document's text: the JSON
//! text value, the Parquet text value, the WET record's block, and for a vertical
//! the text `webdedup to-jsonl` makes of it (paragraphs joined by `\n`). A
//! paragraph span covers the paragraph's line without its line break; the
//! document span is there when the document as a whole is not written
//! (duplicate, emptied, URL-filtered). Records that are not documents get a line
//! with empty lists, so the file stays aligned with the documents. Substring mode
//! adds `"webdedup_repeated_spans": [[START, END, 1.0], ...]`, the characters of
//! each removed stretch (from its first unit's first character to its last
//! unit's last).

use crate::plan::{ChunkPlan, DocKind};
use crate::policy::substr::decide::doc_units;
use crate::policy::{Decisions, DocStatus};
use std::io;
use std::ops::Range;
use webdedup_formats::chunk::Chunk;
use webdedup_formats::parquet::RowSlice;
use webdedup_formats::parquet_out::{encode_slice, KeptRows, RowGroupOut};
use webdedup_formats::wet::{write_record, RecordInfo};

/// The attributes' names, shared with `batch substr` (the paragraph spans, the
/// spans substring mode removes, a document dropped whole).
pub use webdedup_formats::strike::{DOCUMENT_ATTRIBUTE, PARAGRAPH_ATTRIBUTE, SPANS_ATTRIBUTE};
/// MinHash `--clusters`: the name of the document's cluster (its kept document).
pub const CLUSTER_ATTRIBUTE: &str = "webdedup_minhash_cluster";

fn internal(what: &str) -> io::Error {
    io::Error::other(format!("internal: {what}"))
}

/// Appends the attributes lines of a chunk to `out` (see the module docs); `name`
/// is the input's relative path, naming records without ids (`NAME:LINE`).
pub fn attributes(
    plan: &ChunkPlan,
    dec: &Decisions,
    name: &str,
    clusters: Option<&[Option<String>]>,
    out: &mut Vec<u8>,
) {
    let spans = !plan.token_chars.is_empty() || !dec.cut_units.is_empty();
    let chars_known =
        plan.para_chars.len() == plan.paras.len() && plan.doc_chars.len() == plan.docs.len();
    // Numbers go through `itoa` (a line has a few; `write!` costs more than the rest).
    let mut num = itoa::Buffer::new();
    for (i, doc) in plan.docs.iter().enumerate() {
        out.extend_from_slice(b"{\"id\":");
        // Serialising a string into a Vec cannot fail.
        let _ = match &doc.id {
            Some(r) => serde_json::to_writer(&mut *out, plan.meta_of(r)),
            None => serde_json::to_writer(&mut *out, &format!("{name}:{}", doc.line)),
        };
        out.extend_from_slice(b",\"attributes\":{\"");
        out.extend_from_slice(PARAGRAPH_ATTRIBUTE.as_bytes());
        out.extend_from_slice(b"\":[");
        let status = dec.docs.get(i).copied().unwrap_or(DocStatus::Other);
        let document = doc.kind == DocKind::Document && chars_known;
        if document {
            let mut first = true;
            for j in doc.paras.clone().filter(|&j| !dec.keep_para[j]) {
                let c = &plan.para_chars[j];
                push_span(out, &mut num, &mut first, c.start, c.end);
            }
        }
        out.extend_from_slice(b"],\"");
        out.extend_from_slice(DOCUMENT_ATTRIBUTE.as_bytes());
        out.extend_from_slice(b"\":[");
        if document && !status.written() {
            out.extend_from_slice(b"[0,");
            out.extend_from_slice(num.format(plan.doc_chars[i]).as_bytes());
            out.extend_from_slice(b",1.0]");
        }
        out.push(b']');
        if let Some(Some(c)) = clusters.map(|c| &c[i]) {
            // A span over the whole text, its value the cluster's name.
            out.extend_from_slice(b",\"");
            out.extend_from_slice(CLUSTER_ATTRIBUTE.as_bytes());
            out.extend_from_slice(b"\":[[0,");
            let chars = if chars_known { plan.doc_chars[i] } else { 0 };
            out.extend_from_slice(num.format(chars).as_bytes());
            out.push(b',');
            let _ = serde_json::to_writer(&mut *out, c);
            out.push(b']');
            out.push(b']');
        }
        if spans {
            repeated_spans(plan, dec, i, &mut num, out);
        }
        out.extend_from_slice(b"}}\n");
    }
}

/// Substring mode: `,"webdedup_repeated_spans":[[START, END, 1.0], ...]`, the
/// characters of document `i`'s removed stretches.
fn repeated_spans(
    plan: &ChunkPlan,
    dec: &Decisions,
    i: usize,
    num: &mut itoa::Buffer,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(SPANS_ATTRIBUTE.as_bytes());
    out.extend_from_slice(b"\":[");
    let units = doc_units(plan, plan.docs[i].paras.clone());
    let mut first = true;
    for r in dec
        .cut_units
        .iter()
        .filter(|r| units.start <= r.start && r.end <= units.end && !r.is_empty())
    {
        let (Some(a), Some(b)) = (
            plan.token_chars.get(r.start),
            plan.token_chars.get(r.end - 1),
        ) else {
            continue;
        };
        push_span(out, num, &mut first, a.start, b.end);
    }
    out.push(b']');
}

/// One `[START,END,1.0]` span of an attribute's list, after a comma unless first.
fn push_span(out: &mut Vec<u8>, num: &mut itoa::Buffer, first: &mut bool, start: u32, end: u32) {
    out.extend_from_slice(if *first { b"[" } else { b",[" });
    out.extend_from_slice(num.format(start).as_bytes());
    out.push(b',');
    out.extend_from_slice(num.format(end).as_bytes());
    out.extend_from_slice(b",1.0]");
    *first = false;
}

/// The rows of a Parquet chunk as they go to the output: the written ones, the
/// text of a partly kept one rebuilt from its `spans` in `rendered` (all rows as
/// read with `mark`). Runs in the worker threads.
pub fn parquet_rows(
    chunk: &Chunk,
    plan: &ChunkPlan,
    dec: &Decisions,
    rendered: &[u8],
    spans: &[Range<usize>],
    mark: bool,
) -> io::Result<RowGroupOut> {
    let Some(slice) = chunk.extra.get::<RowSlice>() else {
        return Err(internal("a Parquet chunk without its rows"));
    };
    let n = slice.rows;
    if mark {
        let as_read = KeptRows {
            keep: &vec![true; n],
            text: &[],
            new: &vec![None; n],
        };
        return encode_slice(slice, as_read);
    }
    if plan.docs.len() != n && n > 0 {
        // A slice whose rows were lost (reported) has no entries: nothing to write.
        if plan.docs.is_empty() {
            return Ok(RowGroupOut::Empty);
        }
        return Err(internal("Parquet rows and planned documents differ"));
    }
    let keep: Vec<bool> = dec.docs.iter().map(|s| s.written()).collect();
    let new: Vec<Option<Range<usize>>> = dec
        .docs
        .iter()
        .zip(spans)
        .map(|(s, span)| matches!(s, DocStatus::Partial { .. }).then(|| span.clone()))
        .collect();
    let kept = KeptRows {
        keep: &keep,
        text: rendered,
        new: &new,
    };
    encode_slice(slice, kept)
}

/// The records of a WET chunk as they go to the output, appended to `out`: the
/// written ones, a partly kept one with its kept lines and a corrected
/// `Content-Length` (all records as read with `mark`); each its own gzip member
/// with `gzip`. Runs in the worker threads.
#[allow(clippy::too_many_arguments)]
pub fn wet_records(
    chunk: &Chunk,
    dec: &Decisions,
    rendered: &[u8],
    spans: &[Range<usize>],
    mark: bool,
    gzip: bool,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let Some(records) = chunk.extra.get::<Vec<RecordInfo>>() else {
        return Err(internal("a WET chunk without its records"));
    };
    if records.len() != spans.len() {
        return Err(internal("WET records and planned documents differ"));
    }
    for ((rec, span), status) in records.iter().zip(spans).zip(&dec.docs) {
        if mark {
            write_record(
                &chunk.data[rec.range.clone()],
                rec.header_len,
                false,
                gzip,
                out,
            )?;
        } else if !span.is_empty() {
            let changed = matches!(status, DocStatus::Partial { .. });
            write_record(&rendered[span.clone()], rec.header_len, changed, gzip, out)?;
        }
    }
    Ok(())
}
