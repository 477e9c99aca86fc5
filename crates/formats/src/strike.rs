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
//! (with `Content-Length` and digests set again). Verticals and Parquet are not
//! written by this step yet ([`StrikeError::Unsupported`]).

use crate::jsonl::text_value_span;
use crate::read::DocFormat;
use std::fmt;
use std::ops::Range;

/// Why a document could not be written with its spans struck.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrikeError {
    /// The format has no writer for struck texts (its name).
    Unsupported(&'static str),
    /// The record's bytes do not hold the text where its format puts it.
    NoText(&'static str),
}

impl fmt::Display for StrikeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrikeError::Unsupported(name) => write!(
                f,
                "removing spans from {name} documents is not supported yet (JSON Lines and WET are)"
            ),
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

/// Whether documents of `format` can be written with spans struck: a run
/// checks its inputs' formats before it writes anything.
pub fn check_writable(format: &DocFormat) -> Result<(), StrikeError> {
    match format {
        DocFormat::Jsonl(_) | DocFormat::Wet { .. } => Ok(()),
        DocFormat::Vertical | DocFormat::Parquet(_) => Err(StrikeError::Unsupported(format.name())),
    }
}

/// Appends to `out` the document whose bytes are `raw` and whose text is `text`
/// (both as [`crate::texts::Text::Doc`] gives them), in `format`, with the
/// bytes of `spans` struck from its text. Returns whether anything was struck.
pub fn write_struck(
    format: &DocFormat,
    raw: &[u8],
    text: &str,
    spans: &[Range<usize>],
    out: &mut Vec<u8>,
) -> Result<bool, StrikeError> {
    if char_spans(text, spans).is_empty() {
        out.extend_from_slice(raw);
        return Ok(false);
    }
    check_writable(format)?;
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
        // Refused by `check_writable` above.
        DocFormat::Vertical | DocFormat::Parquet(_) => {}
    }
    Ok(true)
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
        assert!(write_struck(&format, raw, text, &[2..8], &mut out).unwrap());
        assert_eq!(out, b"{\"id\": 1,\"text\":\"ab zz\" , \"x\":[1]}\n");
        out.clear();
        assert!(!write_struck(&format, raw, text, &[], &mut out).unwrap());
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
        assert!(write_struck(&format, &raw, "one line\ntwo line", &[0..9], &mut out).unwrap());
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("Content-Length: 9\r\n"), "{s}");
        assert!(s.ends_with("\r\n\r\ntwo line\n\r\n\r\n"), "{s}");
    }

    #[test]
    fn vertical_is_refused_by_name() {
        let err = write_struck(
            &DocFormat::Vertical,
            b"<doc>\n",
            "a",
            &[0..1],
            &mut Vec::new(),
        );
        assert_eq!(err, Err(StrikeError::Unsupported("vertical")));
    }
}
