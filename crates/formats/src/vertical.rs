//! The vertical format: one token per line, structures as tag lines.
//!
//! A *structure line* is `<name attrs>`, `</name>` or `<name attrs/>` (name
//! `[A-Za-z_][A-Za-z0-9_.:-]*`, optional trailing spaces); every other line is a
//! *token line*, whose word is its first tab-separated column. `<doc>...</doc>` is a
//! document, `<p>...</p>` a paragraph, `<g/>` glue (no space between the neighbouring
//! tokens). Other structures travel with the enclosing paragraph; outside a paragraph
//! they belong to the document. Tokens inside a document but outside any `<p>` form an
//! implicit paragraph, ended by the next `<p>`, `</doc>` or `<doc>`.
//!
//! Reading is in two steps, both streaming:
//! * [`ChunkReader`] cuts the (decompressed) input into chunks of about a fixed size
//!   that always end just before a `<doc` line, so documents never straddle chunks.
//! * [`parse_chunk`] walks a chunk's lines once and tells a [`Sink`] what it meets, as
//!   byte ranges into the chunk and borrowed words: no allocation per line or token.
//!
//! # Malformed input (the rules)
//! | problem | what happens |
//! |---|---|
//! | line outside any document (before the first `<doc>`, between documents) | dropped, reported (blank lines dropped silently) |
//! | closing tag without its opening (`</p>`, `</doc>`) | dropped, reported |
//! | `<p>` not closed before `<p>`, `</doc>`, `<doc>` or the end | closed there, reported |
//! | `<doc>` not closed before the next `<doc>` or the end (a `<doc>` inside a `<doc>`) | closed there, reported |
//! | NUL bytes | reported; the line is kept (NUL is a control, dropped from keys by `loose`) |
//! | invalid UTF-8 | reported by the key builder; the line is kept byte for byte, its text read lossily |
//! | a line longer than the limit (default 8 MiB) | dropped, reported |
//! | read error (truncated or corrupt compressed stream, I/O error) | what was read is processed, the rest of the file is lost, reported |
//!
//! Nothing is ever rewritten: a kept document without `</doc>` is written without one.

use crate::chunk::{Chunk, Issue, IssueKind};
use crate::doc::{count_chars, DocMeta, DocSink};
use crate::whole_para::WholePara;
use lines::{Kernel, Line, Lines};
use memchr::memchr;
use std::ops::Range;

mod lines;
mod whole;

pub use crate::attrs::{attr, attr_pairs, attr_raw, escape_attr, unescape};

/// What a structure line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag<'a> {
    /// `<name attrs>`; `attrs` is the raw text between the name and `>`.
    Open { name: &'a [u8], attrs: &'a [u8] },
    /// `<name attrs/>`.
    Empty { name: &'a [u8], attrs: &'a [u8] },
    /// `</name>`.
    Close { name: &'a [u8] },
}

#[inline]
fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

#[inline]
fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')
}

/// Classifies a line (without its newline): Some(tag) for a structure line, None for
/// a token line.
pub fn parse_tag(line: &[u8]) -> Option<Tag<'_>> {
    if line.first() != Some(&b'<') {
        return None;
    }
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b' ' | b'\r') {
        end -= 1;
    }
    if end < 3 || line[end - 1] != b'>' {
        return None;
    }
    let inner = &line[1..end - 1];
    let (closing, inner) = match inner.first() {
        Some(b'/') => (true, &inner[1..]),
        _ => (false, inner),
    };
    if inner.is_empty() || !is_name_start(inner[0]) {
        return None;
    }
    let name_len = inner
        .iter()
        .position(|&b| !is_name_char(b))
        .unwrap_or(inner.len());
    let name = &inner[..name_len];
    let rest = &inner[name_len..];
    if closing {
        return if rest.iter().all(|&b| b == b' ' || b == b'\t') {
            Some(Tag::Close { name })
        } else {
            None
        };
    }
    let (empty, rest) = match rest.last() {
        Some(b'/') => (true, &rest[..rest.len() - 1]),
        _ => (false, rest),
    };
    if !rest.is_empty() && !matches!(rest[0], b' ' | b'\t') {
        return None;
    }
    if empty {
        Some(Tag::Empty { name, attrs: rest })
    } else {
        Some(Tag::Open { name, attrs: rest })
    }
}

/// Receives what [`parse_chunk`] finds. Ranges are byte ranges of the chunk's data
/// (whole lines with their newlines). Within a document the calls come in order and
/// the ranges given to `structure`, `para_*` and `doc_end` tile the document's lines,
/// except lines dropped (and reported) as malformed.
pub trait Sink {
    /// A document starts: its header line.
    fn doc_start(&mut self, header: Range<usize>, line: u64, attrs: &[u8]);
    /// Lines of the document outside any paragraph (kept with the document).
    fn structure(&mut self, range: Range<usize>);
    /// A paragraph starts at byte `start` (explicit `<p>`, or an implicit one).
    fn para_start(&mut self, start: usize, line: u64, implicit: bool);
    /// A word of the current paragraph; `glued` means no space before it.
    fn word(&mut self, word: &[u8], glued: bool, line: u64);
    /// The current paragraph ends before byte `end`.
    fn para_end(&mut self, end: usize);
    /// The document ends; `close` is its `</doc>` line, if it has one.
    fn doc_end(&mut self, close: Option<Range<usize>>);
    /// A problem with the input.
    fn issue(&mut self, issue: Issue);
    /// Whether the sink takes a paragraph's words whole where it can be given
    /// so ([`whole_para`](Self::whole_para)).
    fn takes_whole_paras(&self) -> bool {
        false
    }
    /// All the words of the paragraph just started, in place of its `word` calls
    /// (only to a sink that [takes them](Self::takes_whole_paras)).
    fn whole_para(&mut self, para: &WholePara<'_>) {
        for (word, glued, line) in para.words() {
            self.word(word, glued, line);
        }
    }
}

#[derive(Clone, Copy)]
enum Para {
    None,
    /// Lines outside a paragraph without a token yet, from this byte.
    Segment(usize),
    Implicit,
    Explicit {
        opened: u64,
    },
}

struct State {
    in_doc: Option<u64>,
    para: Para,
    glue: bool,
}

impl State {
    /// Ends whatever paragraph or segment is open, before byte `at`.
    fn close_para<S: Sink>(&mut self, sink: &mut S, at: usize, line: u64) {
        match self.para {
            Para::None => {}
            Para::Segment(start) => sink.structure(start..at),
            Para::Implicit => sink.para_end(at),
            Para::Explicit { opened } => {
                sink.issue(Issue {
                    line,
                    kind: IssueKind::MissingParaClose { opened },
                });
                sink.para_end(at);
            }
        }
        self.para = Para::None;
    }

    fn close_doc<S: Sink>(&mut self, sink: &mut S, at: usize, line: u64) {
        if let Some(opened) = self.in_doc.take() {
            self.close_para(sink, at, line);
            sink.issue(Issue {
                line,
                kind: IssueKind::MissingDocClose { opened },
            });
            sink.doc_end(None);
        }
    }
}

/// Walks the lines of `chunk`, telling `sink` about documents, paragraphs and words.
/// A document still open at the end of the chunk is closed there (it is malformed:
/// chunks end just before a `<doc` line or at the end of the input).
pub fn parse_chunk<S: Sink>(chunk: &Chunk, sink: &mut S) {
    parse_chunk_with(chunk, sink, Kernel::detect())
}

/// [`parse_chunk`] with the line walk's kernel chosen (the tests force the scalar one).
pub(crate) fn parse_chunk_with<S: Sink>(chunk: &Chunk, sink: &mut S, kernel: Kernel) {
    for issue in &chunk.issues {
        sink.issue(issue.clone());
    }
    let data = &chunk.data[..];
    let check_nul = memchr(0, data).is_some();
    let mut skipped = chunk.skipped_lines.iter().peekable();
    let mut st = State {
        in_doc: None,
        para: Para::None,
        glue: false,
    };
    let mut line_no = chunk.first_line;
    let n = data.len();
    let whole_paras = sink.takes_whole_paras();
    let mut glues = Vec::new();
    let mut lines = Lines::new(data, kernel);
    while let Some(Line { text, word_end }) = lines.next() {
        while skipped.peek() == Some(&&line_no) {
            skipped.next();
            line_no += 1;
        }
        let (start, nl) = (text.start, text.end);
        let end = (nl + 1).min(n);
        let line = &data[text];
        if check_nul && memchr(0, line).is_some() {
            sink.issue(Issue {
                line: line_no,
                kind: IssueKind::NulByte,
            });
        }
        handle_line(&mut st, sink, line, word_end - start, start, end, line_no);
        line_no += 1;
        if whole_paras && matches!(st.para, Para::Explicit { opened } if opened + 1 == line_no) {
            let Some(w) = whole::scan(data, end, &mut glues, kernel) else {
                continue;
            };
            // A line dropped as too long inside would shift the numbers after it.
            if skipped.peek().is_some_and(|&&s| s < line_no + w.lines) {
                continue;
            }
            sink.whole_para(&WholePara {
                body: &data[w.body],
                glues: &glues,
                first_line: line_no,
                words: w.words,
                raw_chars: w.raw_chars,
            });
            sink.para_end(w.close_end);
            st.para = Para::None;
            line_no += w.lines;
            lines.resume_at(w.close_end);
        }
    }
    while skipped.peek() == Some(&&line_no) {
        skipped.next();
        line_no += 1;
    }
    st.close_doc(sink, n, line_no);
}

#[inline]
fn handle_line<S: Sink>(
    st: &mut State,
    sink: &mut S,
    line: &[u8],
    word_len: usize,
    start: usize,
    end: usize,
    line_no: u64,
) {
    let tag = match line.first() {
        // The three structures of almost every line that starts with '<'.
        Some(b'<') => match line {
            b"<g/>" => Some(Tag::Empty {
                name: b"g",
                attrs: b"",
            }),
            b"<p>" => Some(Tag::Open {
                name: b"p",
                attrs: b"",
            }),
            b"</p>" => Some(Tag::Close { name: b"p" }),
            _ => parse_tag(line),
        },
        _ => None,
    };
    let Some(tag) = tag else {
        // A token line: its word is the first tab-separated column.
        let word = &line[..word_len];
        let word = word.strip_suffix(b"\r").unwrap_or(word);
        if st.in_doc.is_none() {
            if !line.iter().all(|b| b.is_ascii_whitespace()) {
                sink.issue(Issue {
                    line: line_no,
                    kind: IssueKind::OutsideDocument,
                });
            }
            return;
        }
        if word.first().is_none_or(|b| b.is_ascii_whitespace())
            && word.iter().all(|b| b.is_ascii_whitespace())
        {
            // A blank line: part of whatever is open, never a word.
            if let Para::None = st.para {
                st.para = Para::Segment(start);
            }
            return;
        }
        match st.para {
            Para::None => {
                sink.para_start(start, line_no, true);
                st.para = Para::Implicit;
            }
            Para::Segment(seg) => {
                sink.para_start(seg, line_no, true);
                st.para = Para::Implicit;
            }
            Para::Implicit | Para::Explicit { .. } => {}
        }
        sink.word(word, std::mem::take(&mut st.glue), line_no);
        return;
    };
    match tag {
        Tag::Open {
            name: b"doc",
            attrs,
        } => {
            st.close_doc(sink, start, line_no);
            st.in_doc = Some(line_no);
            st.glue = false;
            sink.doc_start(start..end, line_no, attrs);
        }
        _ if st.in_doc.is_none() => {
            let kind = match tag {
                Tag::Close { name } => {
                    IssueKind::StrayClose(String::from_utf8_lossy(name).into_owned())
                }
                _ => IssueKind::OutsideDocument,
            };
            sink.issue(Issue {
                line: line_no,
                kind,
            });
        }
        Tag::Close { name: b"doc" } => {
            st.close_para(sink, start, line_no);
            st.in_doc = None;
            sink.doc_end(Some(start..end));
        }
        Tag::Open { name: b"p", .. } => {
            st.close_para(sink, start, line_no);
            st.glue = false;
            sink.para_start(start, line_no, false);
            st.para = Para::Explicit { opened: line_no };
        }
        Tag::Close { name: b"p" } => match st.para {
            Para::Explicit { .. } => {
                sink.para_end(end);
                st.para = Para::None;
            }
            _ => {
                // Keep the ranges contiguous: whatever is open ends before the dropped line.
                st.close_para(sink, start, line_no);
                sink.issue(Issue {
                    line: line_no,
                    kind: IssueKind::StrayClose("p".into()),
                });
            }
        },
        _ => {
            if let Tag::Empty { name: b"g", .. } = tag {
                st.glue = true;
            }
            if let Para::None = st.para {
                st.para = Para::Segment(start);
            }
        }
    }
}

/// Feeds a [`DocSink`] from the vertical reader's events. With character offsets
/// wanted, it counts them in the text a vertical document stands for: the one
/// `webdedup to-jsonl` makes of it ([`convert`](crate::convert): paragraphs
/// joined by `\n`, words by a space unless glued).
pub(crate) struct FromVertical<'s, S> {
    sink: &'s mut S,
    chars: bool,
    len: u64,
    para_from: u64,
    para_has_word: bool,
}

impl<'s, S: DocSink> FromVertical<'s, S> {
    pub(crate) fn new(sink: &'s mut S) -> Self {
        let chars = sink.wants_chars();
        FromVertical {
            sink,
            chars,
            len: 0,
            para_from: 0,
            para_has_word: false,
        }
    }
}

impl<S: DocSink> Sink for FromVertical<'_, S> {
    #[inline]
    fn doc_start(&mut self, header: Range<usize>, line: u64, attrs: &[u8]) {
        self.len = 0;
        self.sink.doc_start(header, line, &DocMeta::Attrs(attrs))
    }
    #[inline]
    fn structure(&mut self, range: Range<usize>) {
        self.sink.structure(range)
    }
    #[inline]
    fn para_start(&mut self, start: usize, line: u64, implicit: bool) {
        if self.chars {
            if self.len > 0 {
                self.len += 1;
            }
            self.para_from = self.len;
            self.para_has_word = false;
        }
        self.sink.para_start(start, line, implicit)
    }
    #[inline]
    fn word(&mut self, word: &[u8], glued: bool, line: u64) {
        if self.chars {
            if self.para_has_word && !glued {
                self.len += 1;
            }
            self.len += count_chars(word);
            self.para_has_word = true;
        }
        self.sink.word(word, glued, line)
    }
    #[inline]
    fn para_end(&mut self, end: usize) {
        self.sink.para_end(end);
        if self.chars {
            self.sink.para_chars(self.para_from..self.len);
        }
    }
    #[inline]
    fn doc_end(&mut self, close: Option<Range<usize>>) {
        if self.chars {
            self.sink.text_chars(self.len);
        }
        self.sink.doc_end(close)
    }
    #[inline]
    fn issue(&mut self, issue: Issue) {
        self.sink.issue(issue)
    }
    fn takes_whole_paras(&self) -> bool {
        self.sink.takes_whole_paras()
    }
    fn whole_para(&mut self, para: &WholePara<'_>) {
        // The paragraph's characters are its raw text's.
        if self.chars && para.words > 0 {
            self.len += para.raw_chars as u64;
            self.para_has_word = true;
        }
        self.sink.whole_para(para)
    }
}

#[cfg(test)]
mod tests;
