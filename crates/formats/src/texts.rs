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
//! is their text); [`TextSink::chunk_end`] hands over each chunk read, whose
//! rows a writer encodes again. A vertical document also comes with its
//! [`Layout`]: which token line each word of its text stands for, and its
//! paragraphs, so a writer can strike words from it line by line.

use crate::attrs::attr;
use crate::chunk::{Chunk, Issue, DEFAULT_CHUNK_BYTES};
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

/// A word of a vertical document: its bytes in the document's text and the
/// token line it stands for (with its line break) in the document's `raw`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordLine {
    pub text: Range<usize>,
    pub raw: Range<usize>,
}

/// A paragraph of a vertical document: its bytes in the document's `raw` (its
/// `<p>` and `</p>` lines with it) and its words (indices in [`Layout::words`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParaLines {
    pub raw: Range<usize>,
    pub words: Range<usize>,
}

/// Where the text of a vertical document comes from in its bytes (empty for
/// the other formats).
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub words: Vec<WordLine>,
    pub paras: Vec<ParaLines>,
}

/// Where [`read_texts_to`] hands its items.
pub trait TextSink {
    /// The next item of the file; `layout` is a vertical document's.
    fn text(&mut self, t: Text<'_>, layout: &Layout);
    /// Every item of `chunk` has been handed over.
    fn chunk_end(&mut self, _chunk: &Chunk) {}
}

/// A closure as a [`TextSink`] that wants neither layouts nor chunks.
struct Items<F>(F);

impl<F: FnMut(Text<'_>)> TextSink for Items<F> {
    fn text(&mut self, t: Text<'_>, _layout: &Layout) {
        (self.0)(t)
    }
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
    let source = Source {
        path,
        format,
        stream,
        compression,
    };
    read_texts_to(source, max_line_bytes, problems, &mut Items(f))
}

/// An input file being read: its path, its format, its decompressed bytes (as
/// the input layer opened it with `compression`).
pub struct Source<'a, R> {
    pub path: &'a Path,
    pub format: &'a DocFormat,
    pub stream: R,
    pub compression: Compression,
}

/// [`read_texts`] into a [`TextSink`]: vertical documents with their layouts,
/// and the end of every chunk.
pub fn read_texts_to<R: Read>(
    source: Source<'_, R>,
    max_line_bytes: usize,
    problems: &Problems,
    sink: &mut impl TextSink,
) -> io::Result<()> {
    let Source {
        path,
        format,
        stream,
        compression,
    } = source;
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
    let mut layout = Layout::default();
    let vertical = matches!(format, DocFormat::Vertical);
    while let Some(chunk) = reader.next_chunk() {
        let mut whole = WholeTexts {
            data: &chunk.data,
            path,
            at: format.at(),
            vertical,
            problems,
            f: &mut *sink,
            covered: 0,
            doc: None,
            text: &mut text,
            layout: &mut layout,
        };
        format.parse(&chunk, &mut whole);
        let n = chunk.data.len();
        if whole.covered < n {
            whole.other(whole.covered..n);
        }
        sink.chunk_end(&chunk);
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
    /// A vertical's open paragraph: where it starts in the chunk, its first word.
    para: Option<(usize, usize)>,
}

/// Turns a format reader's events into [`Text`]s that cover the chunk byte for
/// byte.
struct WholeTexts<'a, F> {
    data: &'a [u8],
    path: &'a Path,
    /// How a position is named in messages (`row `, `offset `).
    at: &'static str,
    /// A vertical: paragraphs joined by a space (by `\n` in every other
    /// format), words and paragraphs recorded in `layout`.
    vertical: bool,
    problems: &'a Problems,
    f: &'a mut F,
    /// Bytes of `data` already handed out.
    covered: usize,
    doc: Option<OpenDoc>,
    text: &'a mut String,
    layout: &'a mut Layout,
}

impl<F: TextSink> WholeTexts<'_, F> {
    /// Hands out `range` of the data as `Other`.
    fn other(&mut self, range: Range<usize>) {
        let none = Layout::default();
        self.f.text(
            Text::Other {
                raw: &self.data[range],
            },
            &none,
        );
    }

    /// Hands out the bytes before `start` not yet handed out, as `Other`.
    fn gap_until(&mut self, start: usize) {
        if self.covered < start {
            self.other(self.covered..start);
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

impl<F: TextSink> DocSink for WholeTexts<'_, F> {
    fn doc_start(&mut self, header: Range<usize>, line: u64, meta: &DocMeta<'_>) {
        self.gap_until(header.start);
        self.text.clear();
        self.layout.words.clear();
        self.layout.paras.clear();
        self.doc = Some(OpenDoc {
            start: header.start,
            end: header.end,
            line,
            id: self.id_of(meta, line),
            invalid_utf8: false,
            para: None,
        });
    }

    fn structure(&mut self, range: Range<usize>) {
        if let Some(d) = &mut self.doc {
            d.end = d.end.max(range.end);
        }
    }

    fn para_start(&mut self, start: usize, _line: u64, _implicit: bool) {
        if !self.vertical && !self.text.is_empty() {
            self.text.push('\n');
        }
        if let (true, Some(d)) = (self.vertical, &mut self.doc) {
            d.para = Some((start, self.layout.words.len()));
        }
    }

    fn word(&mut self, word: &[u8], glued: bool, _line: u64) {
        if !glued && !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push(' ');
        }
        let from = self.text.len();
        match std::str::from_utf8(word) {
            Ok(w) => self.text.push_str(w),
            Err(_) => {
                self.text.push_str(&String::from_utf8_lossy(word));
                if let Some(d) = &mut self.doc {
                    d.invalid_utf8 = true;
                }
            }
        }
        if let (true, Some(d)) = (self.vertical, &self.doc) {
            // A vertical's word is a slice of its token line in the data.
            let at = (word.as_ptr() as usize).wrapping_sub(self.data.as_ptr() as usize);
            if at <= self.data.len() && d.start <= at {
                let line = line_around(self.data, at);
                self.layout.words.push(WordLine {
                    text: from..self.text.len(),
                    raw: line.start - d.start..line.end - d.start,
                });
            }
        }
    }

    fn para_end(&mut self, end: usize) {
        if let Some(d) = &mut self.doc {
            d.end = d.end.max(end);
            if let Some((start, first)) = d.para.take() {
                self.layout.paras.push(ParaLines {
                    raw: start - d.start..end - d.start,
                    words: first..self.layout.words.len(),
                });
            }
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
            Some(id) => self.f.text(
                Text::Doc {
                    id,
                    text: self.text,
                    line: d.line,
                    raw,
                },
                self.layout,
            ),
            None => {
                self.problems.report_at(
                    self.path,
                    self.at,
                    Some(d.line),
                    "document has neither id nor url attribute (skipped)",
                );
                self.other(d.start..d.end);
            }
        }
    }

    fn passthrough(&mut self, range: Range<usize>, _line: u64, _dropped: bool) {
        self.gap_until(range.start);
        if range.end > self.covered {
            self.other(self.covered..range.end);
            self.covered = range.end;
        }
    }

    fn issue(&mut self, issue: Issue) {
        self.problems
            .report_at(self.path, self.at, Some(issue.line), &issue.kind);
    }
}

/// The line of `data` holding byte `at`, with its line break.
fn line_around(data: &[u8], at: usize) -> Range<usize> {
    let start = memchr::memrchr(b'\n', &data[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i + 1);
    start..end
}
