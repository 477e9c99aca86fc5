//! Byte spans struck from a document's text, and the document written back in
//! its own format without them: the one output step of the substring modes
//! (ExactSubstr's suffix array, the streaming winnowing mode).
//!
//! The text is the one [`crate::texts`] reads (a JSON Lines or Parquet text
//! value's non-blank lines joined by `\n`, a WET block's alike); spans are byte
//! offsets in it. A span that cuts a UTF-8 character is widened to the whole
//! character, so the written text stays valid UTF-8 (a suffix array works on
//! bytes and may end a repeat inside a character).
//!
//! A document with no span is written exactly as read. One with spans: a JSON
//! Lines record gets its text value replaced in place (the other bytes of the
//! line as read), a WET conversion record gets the struck text as its block
//! (with `Content-Length` and digests set again), a vertical loses the token
//! lines of the words lying wholly inside a span (a paragraph left with none
//! goes whole, with its tags; every other line as read), and a Parquet row gets
//! the struck text in its text column, the row group encoded again with the
//! input's schema ([`StruckRows`]; the other columns as read).

use crate::jsonl::text_value_span;
use crate::parquet::RowSlice;
use crate::parquet_out::{encode_slice, KeptRows, RowGroupOut};
use crate::read::DocFormat;
use crate::texts::Layout;
use std::fmt;
use std::io;
use std::ops::Range;

/// `--mark`'s attributes (dolma's layout, character offsets of the text): the
/// paragraphs dropped whole, the spans struck, a document dropped whole.
pub const PARAGRAPH_ATTRIBUTE: &str = "webdedup_duplicate_paragraphs";
pub const SPANS_ATTRIBUTE: &str = "webdedup_repeated_spans";
pub const DOCUMENT_ATTRIBUTE: &str = "webdedup_duplicate_document";

/// Why a document could not be written with its spans struck.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrikeError {
    /// The format's documents are not written one by one (Parquet rows go
    /// through [`StruckRows`]).
    NotBytes(&'static str),
    /// The record's bytes do not hold the text where its format puts it.
    NoText(&'static str),
}

impl fmt::Display for StrikeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrikeError::NotBytes(name) => {
                write!(f, "internal: {name} documents are written by row group")
            }
            StrikeError::NoText(what) => write!(f, "record has no {what}"),
        }
    }
}

impl std::error::Error for StrikeError {}

/// Sorts `spans`, merges overlapping and touching ones and drops empty ones.
pub fn merge_spans(spans: &mut Vec<Range<usize>>) {
    spans.retain(|s| s.start < s.end);
    spans.sort_unstable_by_key(|s| (s.start, s.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for s in spans.drain(..) {
        match merged.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => merged.push(s),
        }
    }
    *spans = merged;
}

/// `spans` merged ([`merge_spans`]), cut to the text's length and widened to
/// whole characters of `text`.
pub fn char_spans(text: &str, spans: &[Range<usize>]) -> Vec<Range<usize>> {
    let n = text.len();
    let mut out: Vec<Range<usize>> = spans
        .iter()
        .map(|s| {
            let mut a = s.start.min(n);
            let mut b = s.end.min(n);
            while !text.is_char_boundary(a) {
                a -= 1;
            }
            while !text.is_char_boundary(b) {
                b += 1;
            }
            a..b
        })
        .collect();
    merge_spans(&mut out);
    out
}

/// `text` without the bytes of `spans` (widened to whole characters).
pub fn struck_text(text: &str, spans: &[Range<usize>]) -> String {
    let spans = char_spans(text, spans);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in &spans {
        out.push_str(&text[at..s.start]);
        at = s.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Appends to `out` the document whose bytes are `raw`, text `text` and (a
/// vertical's) layout `layout` (as [`crate::texts::read_texts_to`] gives them),
/// in `format`, with the bytes of `spans` struck from its text. Returns whether
/// anything was struck. Parquet rows are written by [`StruckRows`].
pub fn write_struck(
    format: &DocFormat,
    raw: &[u8],
    text: &str,
    spans: &[Range<usize>],
    layout: &Layout,
    out: &mut Vec<u8>,
) -> Result<bool, StrikeError> {
    if let DocFormat::Parquet(_) = format {
        return Err(StrikeError::NotBytes(format.name()));
    }
    if char_spans(text, spans).is_empty() {
        out.extend_from_slice(raw);
        return Ok(false);
    }
    if let DocFormat::Vertical = format {
        return Ok(write_vertical(raw, &char_spans(text, spans), layout, out));
    }
    let kept = struck_text(text, spans);
    match format {
        DocFormat::Jsonl(opts) => {
            let line = std::str::from_utf8(raw).map_err(|_| StrikeError::NoText("UTF-8 line"))?;
            let value =
                text_value_span(line, opts).ok_or(StrikeError::NoText("string text field"))?;
            out.extend_from_slice(&raw[..value.start]);
            // Serialising a string cannot fail.
            let _ = serde_json::to_writer(&mut *out, &kept);
            out.extend_from_slice(&raw[value.end..]);
        }
        DocFormat::Wet { .. } => {
            const BLANK: &[u8] = b"\r\n\r\n";
            let header_len = memchr::memmem::find(raw, BLANK)
                .map(|i| i + BLANK.len())
                .ok_or(StrikeError::NoText("WARC header"))?;
            let mut record = Vec::with_capacity(header_len + kept.len() + 5);
            record.extend_from_slice(&raw[..header_len]);
            record.extend_from_slice(kept.as_bytes());
            if !kept.is_empty() {
                record.push(b'\n');
            }
            record.extend_from_slice(BLANK);
            // Writing into a Vec without gzip cannot fail.
            let _ = crate::wet::write_record(&record, header_len, true, false, out);
        }
        // Written above.
        DocFormat::Vertical | DocFormat::Parquet(_) => {}
    }
    Ok(true)
}

/// A vertical document without the token lines of the words wholly inside
/// `spans` (merged, sorted) and without the paragraphs left with no word.
/// Returns whether a line was struck.
fn write_vertical(raw: &[u8], spans: &[Range<usize>], layout: &Layout, out: &mut Vec<u8>) -> bool {
    let mut next = 0;
    let struck: Vec<bool> = layout
        .words
        .iter()
        .map(|w| {
            while spans.get(next).is_some_and(|s| s.end < w.text.end) {
                next += 1;
            }
            spans
                .get(next)
                .is_some_and(|s| s.start <= w.text.start && w.text.end <= s.end)
        })
        .collect();
    // The byte ranges of `raw` left out, in order: a paragraph whole, or its
    // struck words' lines.
    let mut gone: Vec<Range<usize>> = Vec::new();
    let mut in_paras = vec![false; layout.words.len()];
    for p in &layout.paras {
        let words = p.words.clone();
        in_paras[words.clone()].iter_mut().for_each(|b| *b = true);
        if !words.is_empty() && struck[words.clone()].iter().all(|&s| s) {
            gone.push(p.raw.clone());
        } else {
            gone.extend(
                words
                    .filter(|&i| struck[i])
                    .map(|i| layout.words[i].raw.clone()),
            );
        }
    }
    // Words outside any paragraph (none in a well-formed vertical).
    gone.extend(
        (0..struck.len())
            .filter(|&i| struck[i] && !in_paras[i])
            .map(|i| layout.words[i].raw.clone()),
    );
    merge_spans(&mut gone);
    let mut at = 0;
    for g in &gone {
        out.extend_from_slice(&raw[at..g.start]);
        at = g.end;
    }
    out.extend_from_slice(&raw[at..]);
    !gone.is_empty()
}

/// A Parquet chunk's rows with their struck texts, gathered document by
/// document and encoded when the chunk ends: every row kept, the text column
/// rebuilt where a text changed, the other columns as read.
#[derive(Debug, Default)]
pub struct StruckRows {
    /// The new texts, end to end.
    texts: Vec<u8>,
    /// Row number (from 1, as the reader numbers rows) and its new text in `texts`.
    new: Vec<(u64, Range<usize>)>,
}

impl StruckRows {
    /// Row `row`'s text `text` with `spans` struck; returns whether anything was.
    pub fn push(&mut self, row: u64, text: &str, spans: &[Range<usize>]) -> bool {
        if char_spans(text, spans).is_empty() {
            return false;
        }
        let start = self.texts.len();
        self.texts
            .extend_from_slice(struck_text(text, spans).as_bytes());
        self.new.push((row, start..self.texts.len()));
        true
    }

    /// The rows of `slice` (the chunk whose documents were pushed) as they go
    /// to the output; ready for the next chunk after.
    pub fn encode(&mut self, slice: &RowSlice) -> io::Result<RowGroupOut> {
        let mut new = vec![None; slice.rows];
        for (row, r) in self.new.drain(..) {
            let i = row.checked_sub(slice.first_row).map(|i| i as usize);
            match i.and_then(|i| new.get_mut(i)) {
                Some(slot) => *slot = Some(r),
                None => {
                    return Err(io::Error::other(format!(
                        "internal: row {row} is not in its chunk"
                    )))
                }
            }
        }
        let kept = KeptRows {
            keep: &vec![true; slice.rows],
            text: &self.texts,
            new: &new,
        };
        let out = encode_slice(slice, kept);
        self.texts.clear();
        out
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one span is the case tested
mod tests {
    use super::*;
    use crate::fields::JsonlOptions;
    use std::sync::Arc;

    #[test]
    fn spans_merge_and_widen_to_characters() {
        let mut s = vec![5..7, 0..2, 1..3, 3..4, 9..9];
        merge_spans(&mut s);
        assert_eq!(s, vec![0..4, 5..7]);
        // "é" is two bytes (1..3): a span ending inside it takes it whole.
        assert_eq!(char_spans("aéb", &[0..2]), vec![0..3]);
        assert_eq!(char_spans("aéb", &[2..10]), vec![1..4]);
        assert_eq!(struck_text("aébcd", &[2..3, 4..5]), "abd");
    }

    #[test]
    fn jsonl_record_keeps_its_other_bytes() {
        let format = DocFormat::Jsonl(Arc::new(JsonlOptions::default()));
        let raw = b"{\"id\": 1,\"text\":\"ab\\u00e9 \\\"q\\\" zz\" , \"x\":[1]}\n";
        let text = "ab\u{e9} \"q\" zz";
        let mut out = Vec::new();
        let none = Layout::default();
        assert!(write_struck(&format, raw, text, &[2..8], &none, &mut out).unwrap());
        assert_eq!(out, b"{\"id\": 1,\"text\":\"ab zz\" , \"x\":[1]}\n");
        out.clear();
        assert!(!write_struck(&format, raw, text, &[], &none, &mut out).unwrap());
        assert_eq!(out, raw);
    }

    #[test]
    fn wet_record_gets_new_length() {
        let block = b"one line\ntwo line\n";
        let mut raw = format!(
            "WARC/1.0\r\nWARC-Type: conversion\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        raw.extend_from_slice(block);
        raw.extend_from_slice(b"\r\n\r\n");
        let mut out = Vec::new();
        let format = DocFormat::Wet { drop_bad: false };
        let none = Layout::default();
        assert!(write_struck(
            &format,
            &raw,
            "one line\ntwo line",
            &[0..9],
            &none,
            &mut out
        )
        .unwrap());
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("Content-Length: 9\r\n"), "{s}");
        assert!(s.ends_with("\r\n\r\ntwo line\n\r\n\r\n"), "{s}");
    }

    #[test]
    fn vertical_loses_struck_lines_and_emptied_paragraphs() {
        let raw = b"<doc id=\"a\">\n<p>\none\tx\ntwo\n</p>\n<p>\nthree\n<g/>\n.\n</p>\n</doc>\n";
        let mut texts = Vec::new();
        let problems = crate::problems::Problems::quiet();
        let source = crate::texts::Source {
            path: std::path::Path::new("a.vert"),
            format: &DocFormat::Vertical,
            stream: &raw[..],
            compression: crate::input::Compression::None,
        };
        crate::texts::read_texts_to(source, 1 << 20, &problems, &mut Collect(&mut texts)).unwrap();
        let (text, layout) = &texts[0];
        assert_eq!(text, "one two three.");
        let write = |spans: &[Range<usize>]| {
            let mut out = Vec::new();
            write_struck(&DocFormat::Vertical, raw, text, spans, layout, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        // "two" whole and "thr" of "three": one line goes.
        assert_eq!(
            write(&[4..11]),
            "<doc id=\"a\">\n<p>\none\tx\n</p>\n<p>\nthree\n<g/>\n.\n</p>\n</doc>\n"
        );
        // Every word of the first paragraph: it goes with its tags.
        assert_eq!(
            write(&[0..8]),
            "<doc id=\"a\">\n<p>\nthree\n<g/>\n.\n</p>\n</doc>\n"
        );
        assert_eq!(write(&[]).as_bytes(), raw);
    }

    /// The documents' texts and layouts.
    struct Collect<'a>(&'a mut Vec<(String, Layout)>);

    impl crate::texts::TextSink for Collect<'_> {
        fn text(&mut self, t: crate::texts::Text<'_>, layout: &Layout) {
            if let crate::texts::Text::Doc { text, .. } = t {
                self.0.push((text.to_owned(), layout.clone()));
            }
        }
    }
}
