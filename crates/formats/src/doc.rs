//! Documents, whatever the format.
//!
//! The dedup policy sees documents made of paragraphs, with an id, a URL and a title
//! where the format has them; it never sees a format. Each document format has a
//! *reader* that walks a [`Chunk`] of its decompressed bytes and tells a
//! [`DocSink`] what it meets (documents, paragraphs as byte ranges, their text),
//! and a *writer* rule that puts decisions back into the same bytes: the ranges a
//! reader reports tile each document, so the output of a document is the
//! concatenation of the ranges that survive ([`DocSink`] says which survive when).
//!
//! | format | chunk boundary | document | paragraph | written back |
//! |---|---|---|---|---|
//! | [`vertical`](crate::vertical) | before a `<doc` line | `<doc>`..`</doc>` | `<p>`..`</p>` (or an implicit one) | kept lines byte for byte |
//! | [`jsonl`](crate::jsonl) | any line start | one JSON line | a non-blank line of the text field | the line with its text value's kept lines, every other byte as read |
//!
//! A new format is one reader (a module with a `parse_chunk` driving a
//! [`DocSink`], a variant of [`DocFormat`] and, if it can be recognised, a rule in
//! [`sniff`]) and, when its bytes are not a concatenation of kept ranges, one
//! writer; every command that reads documents gains it.

use crate::vertical::{self, Chunk, ChunkReader};
use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::ops::Range;
use std::sync::Arc;

pub use crate::vertical::{Issue, IssueKind};

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
            DocMeta::Attrs(a) => Some(vertical::attr(a, b"url").unwrap_or_default()),
            DocMeta::Fields { url, .. } => url.map(Cow::Borrowed),
        }
    }

    pub fn title(&self) -> Option<Cow<'a, str>> {
        match *self {
            DocMeta::Attrs(a) => Some(vertical::attr(a, b"title").unwrap_or_default()),
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
    /// A problem with the input.
    fn issue(&mut self, issue: Issue);
}

/// Feeds a [`DocSink`] from the vertical reader's events.
struct FromVertical<'s, S>(&'s mut S);

impl<S: DocSink> vertical::Sink for FromVertical<'_, S> {
    #[inline]
    fn doc_start(&mut self, header: Range<usize>, line: u64, attrs: &[u8]) {
        self.0.doc_start(header, line, &DocMeta::Attrs(attrs))
    }
    #[inline]
    fn structure(&mut self, range: Range<usize>) {
        self.0.structure(range)
    }
    #[inline]
    fn para_start(&mut self, start: usize, line: u64, implicit: bool) {
        self.0.para_start(start, line, implicit)
    }
    #[inline]
    fn word(&mut self, word: &[u8], glued: bool, line: u64) {
        self.0.word(word, glued, line)
    }
    #[inline]
    fn para_end(&mut self, end: usize) {
        self.0.para_end(end)
    }
    #[inline]
    fn doc_end(&mut self, close: Option<Range<usize>>) {
        self.0.doc_end(close)
    }
    #[inline]
    fn issue(&mut self, issue: Issue) {
        self.0.issue(issue)
    }
}

/// A document format with its reading options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocFormat {
    Vertical,
    Jsonl(Arc<crate::jsonl::JsonlOptions>),
}

impl DocFormat {
    pub fn name(&self) -> &'static str {
        match self {
            DocFormat::Vertical => "vertical",
            DocFormat::Jsonl(_) => "jsonl",
        }
    }

    /// Where chunks may end: documents never straddle two chunks.
    pub fn boundary(&self) -> vertical::Boundary {
        match self {
            DocFormat::Vertical => vertical::Boundary::DocLine,
            DocFormat::Jsonl(_) => vertical::Boundary::Line,
        }
    }

    /// Cuts a decompressed stream of this format into chunks of whole documents.
    pub fn chunk_reader<R: Read>(
        &self,
        r: R,
        chunk_bytes: usize,
        max_line: usize,
    ) -> ChunkReader<R> {
        ChunkReader::with_sizes(r, chunk_bytes, max_line).with_boundary(self.boundary())
    }

    /// Walks `chunk`, telling `sink` about its documents.
    #[inline]
    pub fn parse<S: DocSink>(&self, chunk: &Chunk, sink: &mut S) {
        match self {
            DocFormat::Vertical => vertical::parse_chunk(chunk, &mut FromVertical(sink)),
            DocFormat::Jsonl(o) => crate::jsonl::parse_chunk(chunk, o, sink),
        }
    }

    /// A paragraph as feedback mode writes it to `.dropped` (its bytes as read,
    /// ending with a newline), made into a document of this format again, so
    /// `webdedup check` reads it with the run's reader.
    pub fn dropped_as_document(&self, body: &[u8]) -> (Vec<u8>, DocFormat) {
        match self {
            DocFormat::Vertical => {
                let mut doc = b"<doc>\n".to_vec();
                doc.extend_from_slice(body);
                doc.extend_from_slice(b"</doc>\n");
                (doc, DocFormat::Vertical)
            }
            DocFormat::Jsonl(_) => {
                // One escaped text line a line (the dropped paragraph, then the
                // short ones that rode along with the next dropped one): joined
                // into one text again.
                let body = body.strip_suffix(b"\n").unwrap_or(body);
                let mut doc = b"{\"text\":\"".to_vec();
                for (i, line) in body.split(|&b| b == b'\n').enumerate() {
                    if i > 0 {
                        doc.extend_from_slice(b"\\n");
                    }
                    doc.extend_from_slice(line);
                }
                doc.extend_from_slice(b"\"}\n");
                (
                    doc,
                    DocFormat::Jsonl(Arc::new(crate::jsonl::JsonlOptions::default())),
                )
            }
        }
    }
}

/// The format a user names (`--input-format`), or `Auto`: sniffed per file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FormatChoice {
    #[default]
    Auto,
    Vertical,
    Jsonl,
}

impl FormatChoice {
    pub fn name(self) -> &'static str {
        match self {
            FormatChoice::Auto => "auto",
            FormatChoice::Vertical => "vertical",
            FormatChoice::Jsonl => "jsonl",
        }
    }
}

impl fmt::Display for FormatChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for FormatChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(FormatChoice::Auto),
            "vertical" | "vert" => Ok(FormatChoice::Vertical),
            "jsonl" | "json" => Ok(FormatChoice::Jsonl),
            other => Err(format!(
                "unknown input format '{other}' (expected auto, vertical or jsonl)"
            )),
        }
    }
}

/// How documents are read: the format (or `Auto`) and the options of each format.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReadSettings {
    pub choice: FormatChoice,
    pub jsonl: Arc<crate::jsonl::JsonlOptions>,
}

impl ReadSettings {
    /// The format of a file whose decompressed content starts with `head`.
    pub fn resolve(&self, head: &[u8]) -> DocFormat {
        let choice = match self.choice {
            FormatChoice::Auto => sniff(head),
            c => c,
        };
        match choice {
            FormatChoice::Jsonl => DocFormat::Jsonl(self.jsonl.clone()),
            _ => DocFormat::Vertical,
        }
    }

    /// Settings that change keys or outputs, one `name=value` a line, empty for
    /// the defaults (so records of runs made before formats existed still match).
    pub fn describe(&self) -> String {
        if *self == ReadSettings::default() {
            return String::new();
        }
        format!("input-format={}\n{}", self.choice, self.jsonl.describe())
    }
}

/// The format a decompressed stream's first bytes suggest: `{` JSON Lines, anything
/// else (`<doc`, or nothing) vertical, the historical default. Leading whitespace
/// and a UTF-8 byte order mark are skipped.
pub fn sniff(head: &[u8]) -> FormatChoice {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => FormatChoice::Jsonl,
        _ => FormatChoice::Vertical,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing() {
        assert_eq!(sniff(b"\n  {\"text\":1}"), FormatChoice::Jsonl);
        assert_eq!(sniff(b"\xef\xbb\xbf{}"), FormatChoice::Jsonl);
        assert_eq!(sniff(b"<doc id=\"1\">"), FormatChoice::Vertical);
        assert_eq!(sniff(b""), FormatChoice::Vertical);
        assert_eq!(sniff(b"word\n"), FormatChoice::Vertical);
        let s = ReadSettings::default();
        assert_eq!(s.resolve(b"{"), DocFormat::Jsonl(s.jsonl.clone()));
        let v = ReadSettings {
            choice: FormatChoice::Vertical,
            ..Default::default()
        };
        assert_eq!(v.resolve(b"{"), DocFormat::Vertical);
        assert_eq!(s.describe(), "");
        assert!(v.describe().starts_with("input-format=vertical\n"));
    }
}
