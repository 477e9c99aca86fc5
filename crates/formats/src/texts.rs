//! Whole documents as id and text, for readers that want no paragraphs (SimHash,
//! the quality studies), read by the project's one reader of each format
//! ([`DocFormat`]) under the same rules as `webdedup dedup`.
//!
//! A document's text is its words joined by a space (glued words by none), its
//! paragraphs joined by a space in a vertical and by `\n` in the other formats (a
//! Parquet or WET text's non-blank lines, the lines `webdedup dedup` keys). Its id:
//! a vertical's `id` attribute, else its `url` (a document with neither is
//! reported and skipped); the id field or column, or the WARC-Record-ID, else
//! `FILE:LINE` (`FILE:ROW`, `FILE:OFFSET`).
//!
//! The items of a file cover its decompressed bytes in order ([`Text::Doc`]'s and
//! [`Text::Other`]'s `raw`), so a reader can write the file back without the
//! documents it drops. Parquet documents have no bytes of their own (their `raw`
//! is their text).

use crate::attrs::attr;
use crate::chunk::{Issue, DEFAULT_CHUNK_BYTES};
use crate::doc::{DocMeta, DocSink};
use crate::input::{Compression, InputFile};
use crate::problems::Problems;
use crate::read::{DocFormat, ReadSettings};
use std::io::{self, BufRead, BufReader, Read};
use std::ops::Range;
use std::path::Path;

/// One item of an input file, in order.
pub enum Text<'a> {
    /// A document.
    Doc {
        id: String,
        text: &'a str,
        line: u64,
        raw: &'a [u8],
    },
    /// Anything else (structure between documents, skipped bad records, headers).
    Other { raw: &'a [u8] },
}

/// Reads the documents of `path` (its decompressed `stream`, as the input layer
/// opened it with `compression`) in `format`, handing each item to `f`. Problems
/// are reported to `problems` and skipped.
pub fn read_texts<R: Read>(
    path: &Path,
    format: &DocFormat,
    stream: R,
    compression: Compression,
    max_line_bytes: usize,
    problems: &Problems,
    f: &mut impl FnMut(Text<'_>),
) -> io::Result<()> {
    let file = InputFile {
        path: path.to_path_buf(),
        rel: path.to_path_buf(),
    };
    let mut reader = format.reader(
        &file,
        stream,
        compression,
        DEFAULT_CHUNK_BYTES,
        max_line_bytes,
    )?;
    let mut text = String::new();
    while let Some(chunk) = reader.next_chunk() {
        let mut sink = WholeTexts {
            data: &chunk.data,
            path,
            at: format.at(),
            paragraphs_apart: !matches!(format, DocFormat::Vertical),
            problems,
            f: &mut *f,
            covered: 0,
            doc: None,
            text: &mut text,
        };
        format.parse(&chunk, &mut sink);
        let n = chunk.data.len();
        if sink.covered < n {
            (sink.f)(Text::Other {
                raw: &chunk.data[sink.covered..n],
            });
        }
    }
    Ok(())
}

/// Reads the documents of the file at `path` (`-`: standard input) as whole
/// texts ([`read_texts`]): opened through the input layer, in the format `read`
/// names or its first decompressed bytes suggest. A file that cannot be opened or
/// read is reported to `problems`, and what could not be read skipped.
pub fn read_file_texts(
    path: &Path,
    read: &ReadSettings,
    max_line_bytes: usize,
    problems: &Problems,
    f: &mut impl FnMut(Text<'_>),
) {
    let res = crate::open_input(path).and_then(|(stream, compression)| {
        let mut stream = BufReader::with_capacity(1 << 18, stream);
        let format = read.resolve(stream.fill_buf()?);
        read_texts(
            path,
            &format,
            stream,
            compression,
            max_line_bytes,
            problems,
            f,
        )
    });
    if let Err(e) = res {
        problems.report(path, None, format_args!("cannot read: {e}"));
    }
}

/// The document open in a [`WholeTexts`].
struct OpenDoc {
    start: usize,
    end: usize,
    line: u64,
    /// `None`: a vertical document without `id` or `url` (skipped).
    id: Option<String>,
    invalid_utf8: bool,
}

/// Turns a format reader's events into [`Text`]s that cover the chunk byte for
/// byte.
struct WholeTexts<'a, F> {
    data: &'a [u8],
    path: &'a Path,
    /// How a position is named in messages (`row `, `offset `).
    at: &'static str,
    /// Paragraphs joined by `\n` (every format but verticals, whose paragraphs
    /// are joined by a space).
    paragraphs_apart: bool,
    problems: &'a Problems,
    f: &'a mut F,
    /// Bytes of `data` already handed out.
    covered: usize,
    doc: Option<OpenDoc>,
    text: &'a mut String,
}

impl<F: FnMut(Text<'_>)> WholeTexts<'_, F> {
    /// Hands out the bytes before `start` not yet handed out, as `Other`.
    fn gap_until(&mut self, start: usize) {
        if self.covered < start {
            (self.f)(Text::Other {
                raw: &self.data[self.covered..start],
            });
            self.covered = start;
        }
    }

    fn id_of(&self, meta: &DocMeta<'_>, line: u64) -> Option<String> {
        match *meta {
            DocMeta::Attrs(a) => attr(a, b"id")
                .or_else(|| attr(a, b"url"))
                .map(|v| v.into_owned()),
            DocMeta::Fields { id, .. } => Some(match id {
                Some(id) => id.to_string(),
                None => format!("{}:{line}", self.path.display()),
            }),
        }
    }
}

impl<F: FnMut(Text<'_>)> DocSink for WholeTexts<'_, F> {
    fn doc_start(&mut self, header: Range<usize>, line: u64, meta: &DocMeta<'_>) {
        self.gap_until(header.start);
        self.text.clear();
        self.doc = Some(OpenDoc {
            start: header.start,
            end: header.end,
            line,
            id: self.id_of(meta, line),
            invalid_utf8: false,
        });
    }

    fn structure(&mut self, range: Range<usize>) {
        if let Some(d) = &mut self.doc {
            d.end = d.end.max(range.end);
        }
    }

    fn para_start(&mut self, _start: usize, _line: u64, _implicit: bool) {
        if self.paragraphs_apart && !self.text.is_empty() {
            self.text.push('\n');
        }
    }

    fn word(&mut self, word: &[u8], glued: bool, _line: u64) {
        if !glued && !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push(' ');
        }
        match std::str::from_utf8(word) {
            Ok(w) => self.text.push_str(w),
            Err(_) => {
                self.text.push_str(&String::from_utf8_lossy(word));
                if let Some(d) = &mut self.doc {
                    d.invalid_utf8 = true;
                }
            }
        }
    }

    fn para_end(&mut self, end: usize) {
        if let Some(d) = &mut self.doc {
            d.end = d.end.max(end);
        }
    }

    fn doc_end(&mut self, close: Option<Range<usize>>) {
        let Some(mut d) = self.doc.take() else { return };
        if let Some(r) = close {
            d.end = d.end.max(r.end);
        }
        let raw = &self.data[d.start..d.end];
        self.covered = self.covered.max(d.end);
        if d.invalid_utf8 {
            self.problems.report_at(
                self.path,
                self.at,
                Some(d.line),
                "invalid UTF-8 in document (replaced by U+FFFD)",
            );
        }
        match d.id {
            Some(id) => (self.f)(Text::Doc {
                id,
                text: self.text,
                line: d.line,
                raw,
            }),
            None => {
                self.problems.report_at(
                    self.path,
                    self.at,
                    Some(d.line),
                    "document has neither id nor url attribute (skipped)",
                );
                (self.f)(Text::Other { raw });
            }
        }
    }

    fn passthrough(&mut self, range: Range<usize>, _line: u64, _dropped: bool) {
        self.gap_until(range.start);
        if range.end > self.covered {
            (self.f)(Text::Other {
                raw: &self.data[self.covered..range.end],
            });
            self.covered = range.end;
        }
    }

    fn issue(&mut self, issue: Issue) {
        self.problems
            .report_at(self.path, self.at, Some(issue.line), &issue.kind);
    }
}
