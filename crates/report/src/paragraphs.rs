//! Paragraphs as `webdedup dedup` numbers them: every paragraph of every document
//! of an input file, from 1 (feedback mode's `FILE:REC` references name them so),
//! read by the project's one reader of each format; and the paragraph a `.dropped`
//! file holds after a reference, read by the same reader.

use anyhow::{Context, Result};
use std::io::{BufRead, BufReader};
use std::ops::Range;
use std::path::Path;
use webdedup_formats::chunk::{Chunk, Issue, DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES};
use webdedup_formats::doc::{DocMeta, DocSink};
use webdedup_formats::input::InputFile;
use webdedup_formats::read::{DocFormat, ReadSettings};

/// Hands each paragraph's text (its words joined by a space, glued ones by
/// none) with its number to `each`, until `each` says stop.
struct Texts<F> {
    text: String,
    record: u64,
    each: F,
    done: bool,
}

impl<F: FnMut(u64, &str) -> bool> DocSink for Texts<F> {
    fn doc_start(&mut self, _header: Range<usize>, _line: u64, _meta: &DocMeta<'_>) {}
    fn structure(&mut self, _range: Range<usize>) {}
    fn para_start(&mut self, _start: usize, _line: u64, _implicit: bool) {
        self.text.clear();
    }
    fn word(&mut self, word: &[u8], glued: bool, _line: u64) {
        if !glued && !self.text.is_empty() {
            self.text.push(' ');
        }
        match std::str::from_utf8(word) {
            Ok(w) => self.text.push_str(w),
            Err(_) => self.text.push_str(&String::from_utf8_lossy(word)),
        }
    }
    fn para_end(&mut self, _end: usize) {
        self.record += 1;
        if !self.done {
            self.done = !(self.each)(self.record, &self.text);
        }
    }
    fn doc_end(&mut self, _close: Option<Range<usize>>) {}
    fn issue(&mut self, _issue: Issue) {}
}

impl<F> Texts<F> {
    fn new(each: F) -> Texts<F> {
        Texts {
            text: String::new(),
            record: 0,
            each,
            done: false,
        }
    }
}

/// Calls `each(record, text)` for the paragraphs of the input file `path` (its
/// format sniffed, the default fields), in order, until it returns false.
pub fn each_paragraph(path: &Path, each: impl FnMut(u64, &str) -> bool) -> Result<()> {
    let (stream, compression) = webdedup_formats::input::open_input(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut stream = BufReader::with_capacity(1 << 16, stream);
    let head = stream
        .fill_buf()
        .with_context(|| format!("cannot read {}", path.display()))?;
    let format = ReadSettings::default().resolve(head);
    let file = InputFile {
        path: path.to_owned(),
        rel: path.to_owned(),
    };
    let mut reader = format
        .reader(
            &file,
            stream,
            compression,
            DEFAULT_CHUNK_BYTES,
            DEFAULT_MAX_LINE_BYTES,
        )
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut sink = Texts::new(each);
    while let Some(chunk) = reader.next_chunk() {
        format.parse(&chunk, &mut sink);
        if sink.done {
            break;
        }
    }
    Ok(())
}

/// The text of the paragraph a `.dropped` body (the lines after its reference)
/// holds, read as the run's reader of `format` read it; `None` if it holds none.
pub fn dropped_text(format: &DocFormat, body: &[u8]) -> Option<String> {
    let (doc, format) = format.dropped_as_document(body);
    let chunk = Chunk {
        data: doc,
        first_line: 1,
        last: true,
        ..Default::default()
    };
    let mut first = None;
    format.parse(
        &chunk,
        &mut Texts::new(|_, text: &str| {
            first = Some(text.to_owned());
            false
        }),
    );
    first
}

/// The format of the input a `.dropped` file's paragraphs were read from, by the
/// name of its kept output beside it (`STEM.dedup.EXT`; a vertical's is
/// `REL.dedup`, or `REL.dedup.gz` compressed).
pub fn format_of_output(name: &str) -> DocFormat {
    let tail = name.rsplit_once(".dedup").map_or("", |(_, t)| t);
    if tail.contains("jsonl") || tail.contains("json") {
        DocFormat::Jsonl(Default::default())
    } else if tail.contains("parquet") {
        DocFormat::Parquet(Default::default())
    } else if tail.contains("wet") || tail.contains("warc") {
        DocFormat::Wet { drop_bad: false }
    } else {
        DocFormat::Vertical
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_numbered_across_documents() {
        let text = "{\"text\":\"one\\n\\ntwo words\"}\n{\"text\":\"three\"}\n";
        let (_t, p) = crate::temp_file("a.jsonl", text);
        let mut seen = Vec::new();
        each_paragraph(&p, |r, t| {
            seen.push((r, t.to_owned()));
            true
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                (1, "one".into()),
                (2, "two words".into()),
                (3, "three".into())
            ]
        );
        let mut first = Vec::new();
        each_paragraph(&p, |r, _| {
            first.push(r);
            false
        })
        .unwrap();
        assert_eq!(first, [1]);
    }

    #[test]
    fn dropped_bodies_in_each_format() {
        let jsonl = format_of_output("part-0.dedup.jsonl.gz");
        assert_eq!(jsonl.name(), "jsonl");
        assert_eq!(
            dropped_text(&jsonl, b"caf\\u00e9 \\\"x\\\"\n").as_deref(),
            Some("caf\u{e9} \"x\"")
        );
        let vert = format_of_output("part.vert.dedup");
        assert_eq!(vert.name(), "vertical");
        assert_eq!(format_of_output("part.vert.dedup.gz").name(), "vertical");
        assert_eq!(
            dropped_text(&vert, b"<p>\nHello\nworld\n</p>\n").as_deref(),
            Some("Hello world")
        );
        assert_eq!(format_of_output("p.dedup.parquet").name(), "parquet");
        assert_eq!(dropped_text(&jsonl, b""), None);
    }
}
