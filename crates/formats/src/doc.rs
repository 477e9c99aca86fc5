//! Documents, whatever the format: what a format's reader tells the engine.
//!
//! The dedup policy sees documents made of paragraphs, with an id, a URL and a title
//! where the format has them; it never sees a format. Each document format has a
//! *reader* that walks a [`Chunk`](crate::chunk::Chunk) of its decompressed bytes
//! and tells a [`DocSink`] what it meets (documents, paragraphs as byte ranges,
//! their text), and a *writer* rule that puts decisions back into the same bytes:
//! the ranges a reader reports tile each document, so the output of a document is
//! the concatenation of the ranges that survive ([`DocSink`] says which survive
//! when). The formats and the dispatch to them are in [`read`](crate::read).

use crate::attrs::attr;
use crate::chunk::Issue;
use crate::whole_para::WholePara;
use std::borrow::Cow;
use std::ops::Range;

/// What a reader knows of a document besides its text.
#[derive(Clone, Copy, Debug)]
pub enum DocMeta<'a> {
    /// A vertical `<doc>` line's raw attribute text; values are read (and
    /// XML-unescaped) on demand. Missing `url` / `title` attributes read as empty,
    /// as the KNOT worker reads them, so every vertical document has a URL+title.
    Attrs(&'a [u8]),
    /// Fields a reader decoded (JSON Lines).
    Fields {
        id: Option<&'a str>,
        url: Option<&'a str>,
        title: Option<&'a str>,
    },
}

impl<'a> DocMeta<'a> {
    pub fn url(&self) -> Option<Cow<'a, str>> {
        match *self {
            DocMeta::Attrs(a) => Some(attr(a, b"url").unwrap_or_default()),
            DocMeta::Fields { url, .. } => url.map(Cow::Borrowed),
        }
    }

    pub fn title(&self) -> Option<Cow<'a, str>> {
        match *self {
            DocMeta::Attrs(a) => Some(attr(a, b"title").unwrap_or_default()),
            DocMeta::Fields { title, .. } => title.map(Cow::Borrowed),
        }
    }

    /// The document's id, where the format names documents (JSON Lines: the id
    /// field; `None` there means "use FILE:LINE"). Verticals have none here: their
    /// `.dd` lines are the KNOT worker's, without ids.
    pub fn id(&self) -> Option<&'a str> {
        match *self {
            DocMeta::Attrs(_) => None,
            DocMeta::Fields { id, .. } => id,
        }
    }

    /// Whether the format names documents (and so its `.dd` lines carry ids).
    pub fn named(&self) -> bool {
        matches!(self, DocMeta::Fields { .. })
    }
}

/// Receives what a format's reader finds in a chunk. Ranges are byte ranges of the
/// chunk's data. Within a document the calls come in order, and the ranges given
/// to `doc_start`, `structure`, `separator`, `para_*` and `doc_end` tile the
/// document's bytes (except lines a reader drops as malformed, and reports):
///
/// * the header, `structure` and `doc_end` ranges are the document's own bytes,
///   written whenever the document is written;
/// * a paragraph's bytes (`para_start` .. `para_end`) are written when it is kept;
/// * a `separator` lies between two paragraphs and is written only when a
///   paragraph before it and one after it are both written (the line break between
///   two lines of a JSON text value: dropping the last line must not leave one).
pub trait DocSink {
    /// A document starts; `header` is its first bytes (its `<doc>` line).
    fn doc_start(&mut self, header: Range<usize>, line: u64, meta: &DocMeta<'_>);
    /// Bytes of the document outside any paragraph (kept with the document).
    fn structure(&mut self, range: Range<usize>);
    /// Bytes between the paragraph before and the one after (see the trait docs).
    fn separator(&mut self, range: Range<usize>) {
        self.structure(range)
    }
    /// A paragraph starts at byte `start` (explicit, or an implicit one).
    fn para_start(&mut self, start: usize, line: u64, implicit: bool);
    /// Text of the current paragraph: a word, or a run of words separated by
    /// whitespace (a JSON text line comes whole). `glued`: no space before it.
    fn word(&mut self, word: &[u8], glued: bool, line: u64);
    /// [`word`](Self::word) for text the reader has checked to be UTF-8 (JSON
    /// Lines): a sink may then skip its own check.
    #[inline]
    fn word_str(&mut self, word: &str, glued: bool, line: u64) {
        self.word(word.as_bytes(), glued, line)
    }
    /// Whether the sink takes a paragraph's words whole where a reader can give
    /// them so ([`whole_para`](Self::whole_para)).
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
    /// The current paragraph ends before byte `end`.
    fn para_end(&mut self, end: usize);
    /// The document ends; `close` is its last bytes (`</doc>`), if it has them.
    fn doc_end(&mut self, close: Option<Range<usize>>);
    /// A record that is not a document (a line that is not a JSON object...): its
    /// bytes, written as they are where they stand unless `dropped` (the user asked
    /// to drop bad records). The reason comes as an [`issue`](Self::issue).
    fn passthrough(&mut self, range: Range<usize>, line: u64, dropped: bool) {
        let _ = (range, line, dropped);
    }
    /// A record that is not a document and not bad either (a WET file's
    /// `warcinfo` record): written as it is where it stands.
    fn other(&mut self, range: Range<usize>, line: u64) {
        self.passthrough(range, line, false)
    }
    /// A problem with the input.
    fn issue(&mut self, issue: Issue);
    /// Whether the sink wants character offsets (`--mark`): readers then call
    /// [`para_chars`](Self::para_chars) after each `para_end` and
    /// [`text_chars`](Self::text_chars) before each `doc_end`.
    fn wants_chars(&self) -> bool {
        false
    }
    /// The paragraph just ended spans these characters (Unicode scalar values) of
    /// the document's text.
    fn para_chars(&mut self, chars: Range<u64>) {
        let _ = chars;
    }
    /// The document's text has this many characters.
    fn text_chars(&mut self, len: u64) {
        let _ = len;
    }
}

/// Counts characters (Unicode scalar values; an invalid UTF-8 sequence counts as
/// the one U+FFFD a lossy reading makes of it) from a start position up to
/// positions given in increasing order.
pub struct CharCounter {
    pos: usize,
    chars: u64,
}

impl CharCounter {
    pub fn new(start: usize) -> Self {
        CharCounter {
            pos: start,
            chars: 0,
        }
    }

    /// Characters from the start to `to` (not before the last position asked).
    pub fn at(&mut self, data: &[u8], to: usize) -> u64 {
        if to > self.pos {
            self.chars += count_chars(&data[self.pos..to]);
            self.pos = to;
        }
        self.chars
    }

    /// [`at`](Self::at) in text known to be UTF-8 (no validation again).
    pub fn at_str(&mut self, text: &str, to: usize) -> u64 {
        if to > self.pos {
            self.chars += count_utf8_chars(&text.as_bytes()[self.pos..to]);
            self.pos = to;
        }
        self.chars
    }
}

/// The characters of valid UTF-8: every byte that does not continue a character
/// starts one. `bytecount` counts them with SIMD (`--mark` counts every byte of
/// every text once; a plain byte loop was a tenth of a JSON Lines run).
fn count_utf8_chars(bytes: &[u8]) -> u64 {
    bytecount::num_chars(bytes) as u64
}

/// The characters of `bytes` read lossily as UTF-8.
pub fn count_chars(bytes: &[u8]) -> u64 {
    match std::str::from_utf8(bytes) {
        Ok(_) => count_utf8_chars(bytes),
        Err(_) => String::from_utf8_lossy(bytes).chars().count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_characters_reads_invalid_utf8_as_one_replacement_each() {
        assert_eq!(count_chars("a\u{e9}\u{1f600}".as_bytes()), 3);
        assert_eq!(count_chars(b"a\xffb"), 3);
    }

    #[test]
    fn counting_characters_agrees_with_chars_at_every_length_and_start() {
        // Long enough for the vector loops, and every cut through a multi-byte
        // character, from every start a counter may resume at.
        let text = "plain ascii \u{e9}t\u{e9} \u{1f600} \u{4e2d}\u{6587} ".repeat(20);
        for from in (0..40).filter(|&i| text.is_char_boundary(i)) {
            let mut counter = CharCounter::new(from);
            for to in (from..text.len()).filter(|&i| text.is_char_boundary(i)) {
                assert_eq!(
                    counter.at_str(&text, to),
                    text[from..to].chars().count() as u64
                );
            }
        }
    }
}
