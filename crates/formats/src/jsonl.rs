//! JSON Lines documents (dolma, RedPajama, The Pile): one JSON object a line.
//!
//! * **Document**: a line holding a JSON object. Its text is the string at
//!   `--text-field` (default `text`); id, URL and title come from their fields
//!   (defaults `id`; `url`, else `metadata.url`; `title`, else `metadata.title`).
//!   A dotted path (`metadata.url`) reaches into nested objects.
//! * **Paragraph**: a line of the text (split at `\n`). A `\r` just before the `\n`
//!   belongs to the line break, not to the paragraph (`\r\n` texts give the same
//!   paragraphs as `\n` ones). A line that is empty or only whitespace is not a
//!   paragraph: it stays in the text as part of the break between its neighbours.
//! * **Written back**: a document kept whole is its line exactly as read. Otherwise
//!   the text value is replaced in place: the kept paragraphs, each exactly as it
//!   was escaped in the input, joined by the break (line end and blank lines) that
//!   followed the first of each pair; the bytes before the first paragraph and
//!   after the last (the other fields, a trailing newline of the text) are kept as
//!   read. No other byte of the line changes: nothing is re-serialised.
//!
//! Bad records (a line that is not JSON, not an object, without the text field or
//! whose text is not a string) are reported with their line and passed through
//! unchanged, or dropped when the user asks. Invalid UTF-8 is reported, read as
//! U+FFFD for keys and kept byte for byte. Blank lines between records are dropped
//! silently (as blank lines outside documents of a vertical).
//!
//! Parsing uses `serde_json` over the whole line (so a record is valid JSON or is
//! reported), visiting only the wanted fields: the text value is taken as a
//! borrowed `RawValue` (its byte span, nothing copied) and the other fields are
//! skipped without building values. The text span is then split into lines and
//! unescaped here in one pass, since the writer needs every line's span in the
//! escaped bytes, which no JSON library reports.

use crate::chunk::{Chunk, Issue, IssueKind};
use crate::doc::{DocMeta, DocSink};
use crate::fields::JsonlOptions;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use std::fmt;
use std::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Text,
    Id(usize),
    Url(usize),
    Title(usize),
}

/// The wanted fields as a tree of keys.
#[derive(Debug, Default)]
struct Node {
    children: Vec<(String, Node)>,
    /// Where this field's value goes, when it is wanted itself.
    slot: Option<Slot>,
}

impl Node {
    fn add(&mut self, path: &[String], slot: Slot) {
        let Some((first, rest)) = path.split_first() else {
            self.slot.get_or_insert(slot);
            return;
        };
        let i = match self.children.iter().position(|(k, _)| k == first) {
            Some(i) => i,
            None => {
                self.children.push((first.clone(), Node::default()));
                self.children.len() - 1
            }
        };
        self.children[i].1.add(rest, slot);
    }

    /// Forgets what was found at and below this node.
    fn clear(&self, found: &mut Found) {
        match self.slot {
            Some(Slot::Text) => found.text = None,
            Some(Slot::Id(i)) => found.id[i] = None,
            Some(Slot::Url(i)) => found.url[i] = None,
            Some(Slot::Title(i)) => found.title[i] = None,
            None => {}
        }
        for (_, c) in &self.children {
            c.clear(found);
        }
    }
}

/// The wanted fields of `o` as a tree of keys.
fn tree(o: &JsonlOptions) -> Node {
    let mut root = Node::default();
    root.add(&o.text.0, Slot::Text);
    for (slot, paths) in [
        (Slot::Id as fn(usize) -> Slot, &o.id),
        (Slot::Url, &o.url),
        (Slot::Title, &o.title),
    ] {
        for (i, p) in paths.iter().enumerate() {
            root.add(&p.0, slot(i));
        }
    }
    root
}

/// What one line holds of the wanted fields.
#[derive(Default)]
struct Found {
    /// The text value's span in the line (with its quotes), or why it is unusable.
    text: Option<Result<Range<usize>, &'static str>>,
    id: Vec<Option<String>>,
    url: Vec<Option<String>>,
    title: Vec<Option<String>>,
}

impl Found {
    fn reset(&mut self, o: &JsonlOptions) {
        self.text = None;
        for (v, n) in [
            (&mut self.id, o.id.len()),
            (&mut self.url, o.url.len()),
            (&mut self.title, o.title.len()),
        ] {
            v.clear();
            v.resize(n, None);
        }
    }

    fn first(v: &[Option<String>]) -> Option<&str> {
        v.iter().flatten().next().map(String::as_str)
    }
}

/// Visits a JSON value at a node of the wanted tree (an object: its wanted keys).
struct NodeSeed<'n, 'f> {
    node: &'n Node,
    found: &'f mut Found,
    /// Address of the line's first byte: text spans are offsets from it.
    base: usize,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(child) = map.next_key_seed(KeySeed(self.node))? {
            let Some(child) = child else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            match child.slot {
                // A key given twice: the last value wins, as for Python's `json`,
                // serde_json's `Value` and most readers of the output (and the
                // text rewritten in place is then the one they see).
                Some(Slot::Text) => {
                    let raw: &'de serde_json::value::RawValue = map.next_value()?;
                    let s = raw.get();
                    self.found.text = Some(if s.starts_with('"') {
                        let start = s.as_ptr() as usize - self.base;
                        Ok(start..start + s.len())
                    } else {
                        Err("is not a string")
                    });
                }
                Some(slot) => {
                    let v: Scalar = map.next_value()?;
                    let (list, i) = match slot {
                        Slot::Id(i) => (&mut self.found.id, i),
                        Slot::Url(i) => (&mut self.found.url, i),
                        Slot::Title(i) => (&mut self.found.title, i),
                        Slot::Text => unreachable!("handled above"),
                    };
                    list[i] = v.0;
                }
                None => {
                    // A repeated object replaces the earlier one whole.
                    child.clear(self.found);
                    map.next_value_seed(NodeSeed {
                        node: child,
                        found: &mut *self.found,
                        base: self.base,
                    })?
                }
            }
        }
        Ok(())
    }

    // A value where an object was hoped for: the fields below it are missing.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Matches a key against a node's children without allocating.
struct KeySeed<'n>(&'n Node);

impl<'de, 'n> DeserializeSeed<'de> for KeySeed<'n> {
    type Value = Option<&'n Node>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'n> Visitor<'de> for KeySeed<'n> {
    type Value = Option<&'n Node>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, k: &str) -> Result<Self::Value, E> {
        Ok(self.0.children.iter().find(|(c, _)| c == k).map(|(_, n)| n))
    }
}

/// A metadata value: strings as they are, numbers as written; anything else is
/// missing.
struct Scalar(Option<String>);

impl<'de> serde::Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_str<E>(self, s: &str) -> Result<Scalar, E> {
                Ok(Scalar(Some(s.to_owned())))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(Some(v.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(Some(v.to_string())))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(Some(v.to_string())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
                Ok(Scalar(None))
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Scalar, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Scalar, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// One line of a text value: its content and its line break, as spans of the
/// escaped bytes, and its unescaped text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextLine {
    /// The line's content (without the break) in the escaped bytes.
    pub content: Range<usize>,
    /// Its unescaped text: in the buffer [`split_text`] fills when `owned`; else
    /// the line has no escape and its text is its content (nothing is copied).
    pub text: Range<usize>,
    pub owned: bool,
    /// A `\r` ends the line: it belongs to the break (one more character before
    /// the next line), not to the line.
    pub cr: bool,
}

impl TextLine {
    /// The unescaped text of the line, given what [`split_text`] read and filled.
    #[inline]
    pub fn text<'a>(&self, raw: &'a str, text: &'a str) -> &'a str {
        if self.owned {
            &text[self.text.clone()]
        } else {
            &raw[self.text.clone()]
        }
    }
}

/// Decodes the four hex digits at `raw[i..i + 4]`.
fn hex4(raw: &[u8], i: usize) -> Option<u32> {
    let digits = raw.get(i..i + 4)?;
    let s = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// The character of the escape at `raw[i]` (a backslash) and its length. Lone
/// surrogates (`\ud800` without its pair) become U+FFFD.
fn escape_at(raw: &[u8], i: usize) -> (char, usize) {
    let c = match raw.get(i + 1) {
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'u') => {
            let Some(hi) = hex4(raw, i + 2) else {
                return ('\u{fffd}', 2);
            };
            if (0xd800..0xdc00).contains(&hi) && raw.get(i + 6..i + 8) == Some(b"\\u") {
                if let Some(lo) = hex4(raw, i + 8).filter(|lo| (0xdc00..0xe000).contains(lo)) {
                    let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                    return (char::from_u32(c).unwrap_or('\u{fffd}'), 12);
                }
            }
            return (char::from_u32(hi).unwrap_or('\u{fffd}'), 6);
        }
        Some(&b) => b as char, // `"`, `\`, `/`
        None => return ('\u{fffd}', 1),
    };
    (c, 2)
}

/// Splits the escaped contents of a JSON string (`raw`, between its quotes; valid
/// UTF-8) into lines at `\n` (a `\r` before it belongs to the break). The text of
/// a line with escapes is unescaped into `text` (cleared first); a line without
/// any is its own text (most lines: their bytes are not copied).
pub fn split_text(raw: &str, text: &mut String, lines: &mut Vec<TextLine>) {
    text.clear();
    lines.clear();
    let bytes = raw.as_bytes();
    let (mut i, mut line_raw) = (0, 0);
    // Where the current line's text starts in `text`, once an escape in it made
    // it unescaped there.
    let mut owned: Option<usize> = None;
    // Where a `\r` decoded last began (raw, text), while nothing follows it yet.
    let mut cr: Option<(usize, usize)> = None;
    while i < bytes.len() {
        let next = memchr::memchr(b'\\', &bytes[i..]).map_or(bytes.len(), |k| i + k);
        if next > i {
            if owned.is_some() {
                text.push_str(&raw[i..next]);
            }
            cr = None;
            i = next;
            continue;
        }
        let (c, len) = escape_at(bytes, i);
        if c == '\n' {
            lines.push(match owned {
                Some(start) => {
                    let (end_raw, end_txt) = cr.unwrap_or((i, text.len()));
                    TextLine {
                        content: line_raw..end_raw,
                        text: start..end_txt,
                        owned: true,
                        cr: cr.is_some(),
                    }
                }
                None => TextLine {
                    content: line_raw..i,
                    text: line_raw..i,
                    owned: false,
                    cr: false,
                },
            });
            cr = None;
            owned = None;
            line_raw = i + len;
        } else {
            if owned.is_none() {
                // The line's first escape: its text so far is its raw bytes.
                owned = Some(text.len());
                text.push_str(&raw[line_raw..i]);
            }
            cr = (c == '\r').then_some((i, text.len()));
            text.push(c);
        }
        i += len;
    }
    lines.push(TextLine {
        content: line_raw..bytes.len(),
        text: owned.map_or(line_raw..bytes.len(), |start| start..text.len()),
        owned: owned.is_some(),
        cr: false,
    });
}

/// Character offsets of the lines of a text (`--mark`), counted once each, in
/// order: the unescaped lines, each break one character (`\n`), or two (`\r\n`).
struct LineChars {
    /// The next line not counted yet, and the characters before it.
    next: usize,
    before: u64,
}

impl LineChars {
    /// The characters before line `i` (not before the last line asked).
    fn start(&mut self, i: usize, lines: &[TextLine], raw: &str, text: &str) -> u64 {
        while self.next < i {
            let l = &lines[self.next];
            self.before += chars_of(l.text(raw, text)) + l.cr as u64 + 1;
            self.next += 1;
        }
        self.before
    }
}

fn chars_of(s: &str) -> u64 {
    bytecount::num_chars(s.as_bytes()) as u64
}

/// Whether a line of text is a paragraph (not empty or only whitespace). Most
/// lines start with a visible ASCII character: that settles it without `trim`.
#[inline]
fn is_paragraph(line: &str) -> bool {
    match line.as_bytes().first() {
        Some(&b) if b.is_ascii_graphic() => true,
        _ => !line.trim().is_empty(),
    }
}

/// Maps positions in a lossily decoded line back to the original bytes: each
/// invalid sequence became one U+FFFD (3 bytes). Positions given are never inside
/// a replacement (they are at ASCII bytes or just after a character).
struct LossyMap {
    /// (position after a replacement in the lossy text, the same in the original).
    marks: Vec<(usize, usize)>,
}

impl LossyMap {
    fn new(line: &[u8]) -> LossyMap {
        let (mut lossy, mut orig) = (0, 0);
        let mut marks = Vec::new();
        for chunk in line.utf8_chunks() {
            lossy += chunk.valid().len();
            orig += chunk.valid().len();
            if !chunk.invalid().is_empty() {
                lossy += 3;
                orig += chunk.invalid().len();
                marks.push((lossy, orig));
            }
        }
        LossyMap { marks }
    }

    fn back(&self, p: usize) -> usize {
        match self.marks.iter().rev().find(|m| m.0 <= p) {
            Some(&(l, o)) => o + (p - l),
            None => p,
        }
    }
}

/// Reusable buffers of the JSON Lines reader.
struct Scratch {
    tree: Node,
    found: Found,
    text: String,
    lines: Vec<TextLine>,
    paras: Vec<usize>,
}

/// Walks the lines of `chunk` (whole JSON lines), telling `sink` about documents.
pub fn parse_chunk<S: DocSink>(chunk: &Chunk, opts: &JsonlOptions, sink: &mut S) {
    for issue in &chunk.issues {
        sink.issue(issue.clone());
    }
    let mut sc = Scratch {
        tree: tree(opts),
        found: Found::default(),
        text: String::new(),
        lines: Vec::new(),
        paras: Vec::new(),
    };
    let data = &chunk.data[..];
    let mut skipped = chunk.skipped_lines.iter().peekable();
    let mut line_no = chunk.first_line;
    let mut start = 0;
    while start < data.len() {
        while skipped.peek() == Some(&&line_no) {
            skipped.next();
            line_no += 1;
        }
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i + 1);
        record(data, start..end, line_no, opts, &mut sc, sink);
        line_no += 1;
        start = end;
    }
}

/// The span of the text value (with its quotes) in a record `line`, as the
/// reader finds it; `None` when the line is not a record with a string there.
/// For writers that replace the text of a record already read
/// ([`crate::strike`]).
pub fn text_value_span(line: &str, opts: &JsonlOptions) -> Option<Range<usize>> {
    let tree = tree(opts);
    let mut found = Found::default();
    found.reset(opts);
    let mut de = serde_json::Deserializer::from_str(line);
    NodeSeed {
        node: &tree,
        found: &mut found,
        base: line.as_ptr() as usize,
    }
    .deserialize(&mut de)
    .ok()?;
    found.text?.ok()
}

/// One line: a document, a bad record, or a blank line (dropped).
fn record<S: DocSink>(
    data: &[u8],
    range: Range<usize>,
    line_no: u64,
    opts: &JsonlOptions,
    sc: &mut Scratch,
    sink: &mut S,
) {
    let bytes = &data[range.clone()];
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let lossy;
    // SIMD check: every record line is validated once, here (the paragraphs are
    // pieces of this valid text).
    let (line, map) = match simdutf8::basic::from_utf8(bytes) {
        Ok(s) => (s, None),
        Err(_) => {
            sink.issue(Issue {
                line: line_no,
                kind: IssueKind::InvalidUtf8,
            });
            lossy = String::from_utf8_lossy(bytes).into_owned();
            (lossy.as_str(), Some(LossyMap::new(bytes)))
        }
    };
    let bad = |sink: &mut S, reason: String| {
        sink.issue(Issue {
            line: line_no,
            kind: IssueKind::BadRecord {
                reason,
                dropped: opts.drop_bad,
            },
        });
        sink.passthrough(range.clone(), line_no, opts.drop_bad);
    };
    if !line.trim_start().starts_with('{') {
        return bad(sink, "not a JSON object".into());
    }
    sc.found.reset(opts);
    let mut de = serde_json::Deserializer::from_str(line);
    let parsed = NodeSeed {
        node: &sc.tree,
        found: &mut sc.found,
        base: line.as_ptr() as usize,
    }
    .deserialize(&mut de)
    .and_then(|_| de.end());
    if let Err(e) = parsed {
        return bad(sink, format!("not JSON ({e})"));
    }
    let span = match &sc.found.text {
        None => return bad(sink, format!("no field '{}'", opts.text)),
        Some(Err(why)) => return bad(sink, format!("field '{}' {why}", opts.text)),
        Some(Ok(span)) => span.clone(),
    };
    // The escaped contents, between the quotes.
    let inner = span.start + 1..span.end - 1;
    let raw = &line[inner.clone()];
    split_text(raw, &mut sc.text, &mut sc.lines);
    sc.paras.clear();
    sc.paras
        .extend((0..sc.lines.len()).filter(|&i| is_paragraph(sc.lines[i].text(raw, &sc.text))));
    // Offsets in the line (lossy or not) -> offsets in the chunk's bytes.
    let at = |p: usize| range.start + map.as_ref().map_or(p, |m| m.back(p));
    let meta = DocMeta::Fields {
        id: Found::first(&sc.found.id),
        url: Found::first(&sc.found.url),
        title: Found::first(&sc.found.title),
    };
    // Characters of the text (`--mark`): the unescaped lines, each `\n` one more.
    let chars = sink.wants_chars();
    let mut counter = LineChars { next: 0, before: 0 };
    // Every line with its break, but the last has none (a text has at least one line).
    let text_len =
        |counter: &mut LineChars| counter.start(sc.lines.len(), &sc.lines, raw, &sc.text) - 1;
    let Some((&first, &last)) = sc.paras.first().zip(sc.paras.last()) else {
        sink.doc_start(range.clone(), line_no, &meta);
        if chars {
            sink.text_chars(text_len(&mut counter));
        }
        sink.doc_end(None);
        return;
    };
    let content = |i: usize| {
        let c = &sc.lines[i].content;
        at(inner.start + c.start)..at(inner.start + c.end)
    };
    sink.doc_start(range.start..content(first).start, line_no, &meta);
    let mut prev_end = None;
    for &i in &sc.paras {
        let c = content(i);
        if let Some(e) = prev_end {
            sink.separator(e..c.start);
        }
        let text = sc.lines[i].text(raw, &sc.text);
        sink.para_start(c.start, line_no, true);
        // The line was checked to be UTF-8 (or read lossily).
        sink.word_str(text, false, line_no);
        sink.para_end(c.end);
        if chars {
            let a = counter.start(i, &sc.lines, raw, &sc.text);
            let b = a + chars_of(text);
            sink.para_chars(a..b);
            // Counted: the next line starts after this one's break.
            counter.next = i + 1;
            counter.before = b + sc.lines[i].cr as u64 + 1;
        }
        prev_end = Some(c.end);
    }
    if chars {
        sink.text_chars(text_len(&mut counter));
    }
    sink.doc_end(Some(content(last).end..range.end));
}

#[cfg(test)]
mod tests;
