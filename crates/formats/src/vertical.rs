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

use memchr::{memchr, memmem};
use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read};
use std::ops::Range;

/// A problem found in the input, at a line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub line: u64,
    pub kind: IssueKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IssueKind {
    OutsideDocument,
    StrayClose(String),
    MissingParaClose {
        opened: u64,
    },
    MissingDocClose {
        opened: u64,
    },
    NulByte,
    InvalidUtf8,
    LineTooLong {
        limit: usize,
    },
    ReadError(String),
    /// A record that is not a document (JSON Lines: not JSON, not an object, no
    /// text field, a text that is not a string): passed through, or dropped.
    BadRecord {
        reason: String,
        dropped: bool,
    },
    /// Stored data that cannot be decoded (a Parquet row group with a damaged
    /// page): the message says what became of it.
    Damaged(String),
    /// Bytes that are not a record where one was expected (a WET file: garbage
    /// between records, a record whose length is wrong): the message says what
    /// was skipped.
    Malformed(String),
}

impl IssueKind {
    /// A short stable name, for counting issues by kind.
    pub fn name(&self) -> &'static str {
        match self {
            IssueKind::OutsideDocument => "outside-document",
            IssueKind::StrayClose(_) => "stray-closing-tag",
            IssueKind::MissingParaClose { .. } => "missing-p-close",
            IssueKind::MissingDocClose { .. } => "missing-doc-close",
            IssueKind::NulByte => "nul-byte",
            IssueKind::InvalidUtf8 => "invalid-utf8",
            IssueKind::LineTooLong { .. } => "line-too-long",
            IssueKind::ReadError(_) => "read-error",
            IssueKind::BadRecord { .. } => "bad-record",
            IssueKind::Damaged(_) => "damaged",
            IssueKind::Malformed(_) => "malformed",
        }
    }
}

impl fmt::Display for IssueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IssueKind::OutsideDocument => write!(f, "line outside any <doc>: dropped"),
            IssueKind::StrayClose(name) => write!(f, "</{name}> without its opening tag: dropped"),
            IssueKind::MissingParaClose { opened } => {
                write!(f, "<p> opened at line {opened} is not closed: closed here")
            }
            IssueKind::MissingDocClose { opened } => {
                write!(
                    f,
                    "<doc> opened at line {opened} is not closed: closed here"
                )
            }
            IssueKind::NulByte => write!(f, "NUL byte in line: kept, ignored in keys"),
            IssueKind::InvalidUtf8 => write!(f, "invalid UTF-8: kept, read lossily for keys"),
            IssueKind::LineTooLong { limit } => {
                write!(f, "line longer than {limit} bytes: dropped")
            }
            IssueKind::ReadError(e) => write!(f, "read error, rest of the file lost: {e}"),
            IssueKind::BadRecord { reason, dropped } => write!(
                f,
                "{reason}: {}",
                if *dropped {
                    "record dropped (--drop-bad-records)"
                } else {
                    "record passed through unchanged"
                }
            ),
            IssueKind::Damaged(what) | IssueKind::Malformed(what) => f.write_str(what),
        }
    }
}

/// A piece of decompressed input that starts at a line start and ends just before a
/// `<doc` line (or at the end of the input); with [`Boundary::Line`], at a line end.
#[derive(Debug, Default)]
pub struct Chunk {
    pub data: Vec<u8>,
    /// Line number of the first line of `data` (1-based).
    pub first_line: u64,
    /// Byte offset of `data` in the decompressed input.
    pub offset: u64,
    /// Line numbers the reader dropped (too long), sorted; the parser skips them
    /// when numbering lines.
    pub skipped_lines: Vec<u64>,
    /// Problems the reader met (long lines, read errors).
    pub issues: Vec<Issue>,
    /// No data follows this chunk.
    pub last: bool,
    /// Bytes of input the reader dropped (lines too long) since the previous
    /// chunk: not in `data`, but read (a run's "MB in" counts them).
    pub dropped_bytes: u64,
    /// What formats that are not read as lines carry besides the bytes.
    pub extra: crate::doc::ChunkExtra,
}

/// Chunk buffers handed back once written, so that a long run reuses a few buffers
/// instead of mapping and faulting in a fresh one for every chunk.
#[derive(Debug, Default)]
pub struct BufferPool {
    /// Each buffer with the length it had when handed back: that much of its
    /// allocation holds initialized bytes, so a reader can fill it without zeroing.
    bufs: std::sync::Mutex<Vec<(Vec<u8>, usize)>>,
    max: usize,
}

impl BufferPool {
    /// A pool that keeps at most `max` buffers.
    pub fn new(max: usize) -> std::sync::Arc<Self> {
        std::sync::Arc::new(BufferPool {
            bufs: Default::default(),
            max,
        })
    }

    /// Hands a buffer back (its content is dropped, its allocation kept).
    pub fn give(&self, mut buf: Vec<u8>) {
        let initialized = buf.len();
        buf.clear();
        if let Ok(mut bufs) = self.bufs.lock() {
            if bufs.len() < self.max {
                bufs.push((buf, initialized));
            }
        }
    }

    /// An empty buffer, and how many bytes of its allocation are initialized.
    pub(crate) fn take(&self) -> (Vec<u8>, usize) {
        self.bufs
            .lock()
            .ok()
            .and_then(|mut b| b.pop())
            .unwrap_or_default()
    }
}

pub const DEFAULT_CHUNK_BYTES: usize = 4 << 20;

/// Where a [`ChunkReader`] may end a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Boundary {
    /// Just before a `<doc` line (verticals: documents span many lines).
    #[default]
    DocLine,
    /// At any line start (JSON Lines: a line is a document).
    Line,
}
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 << 20;

/// Cuts a stream into [`Chunk`]s at document starts.
pub struct ChunkReader<R> {
    inner: R,
    target: usize,
    max_line: usize,
    pending: Vec<u8>,
    /// How many bytes from the start of `pending`'s allocation are initialized (at
    /// least its length, at most its capacity): `fill` zeroes only past them.
    initialized: usize,
    /// Line number of the first line in `pending`.
    pending_line: u64,
    pending_offset: u64,
    pending_skipped: Vec<u64>,
    pending_issues: Vec<Issue>,
    /// Bytes of overlong lines dropped since the last chunk.
    pending_dropped: u64,
    /// Newlines counted in `pending[..counted_upto]`, for numbering skipped lines.
    counted_upto: usize,
    counted_lines: u64,
    /// Start of the last (unfinished) line in `pending`.
    tail_start: usize,
    /// Skipping the rest of an overlong line (its number).
    skipping: Option<u64>,
    /// Where `fill` dropped an overlong line since the last search for a chunk
    /// end: the bytes from there on are new to the search.
    dropped_at: Option<usize>,
    /// Bytes looked at by searches for a chunk end (tests check it stays linear).
    #[cfg(test)]
    searched: u64,
    eof: bool,
    done: bool,
    /// A read error that came after some bytes of a fill: reported by the next one.
    read_error: Option<io::Error>,
    pool: Option<std::sync::Arc<BufferPool>>,
    boundary: Boundary,
}

impl<R: Read> ChunkReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_sizes(inner, DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES)
    }

    pub fn with_sizes(inner: R, target: usize, max_line: usize) -> Self {
        ChunkReader {
            inner,
            target: target.max(1),
            max_line: max_line.max(1),
            pending: Vec::new(),
            initialized: 0,
            pending_line: 1,
            pending_offset: 0,
            pending_skipped: Vec::new(),
            pending_issues: Vec::new(),
            pending_dropped: 0,
            counted_upto: 0,
            counted_lines: 0,
            tail_start: 0,
            skipping: None,
            dropped_at: None,
            #[cfg(test)]
            searched: 0,
            eof: false,
            done: false,
            read_error: None,
            pool: None,
            boundary: Boundary::DocLine,
        }
    }

    /// Ends chunks at `boundary` (the default: before `<doc` lines).
    pub fn with_boundary(mut self, boundary: Boundary) -> Self {
        self.boundary = boundary;
        self
    }

    /// Takes buffers for new chunks from `pool` (give chunks' data back to it).
    pub fn with_pool(mut self, pool: std::sync::Arc<BufferPool>) -> Self {
        if self.pending.is_empty() {
            // The first chunk too goes into a reused buffer (a file's first chunk
            // is most of a small file).
            (self.pending, self.initialized) = pool.take();
        }
        self.pool = Some(pool);
        self
    }

    /// The next chunk, or None after the last one. A read error ends the input: the
    /// chunk then carries a `ReadError` issue and is the last.
    pub fn next_chunk(&mut self) -> Option<Chunk> {
        if self.done {
            return None;
        }
        let mut search_from = 0usize;
        self.dropped_at = None;
        loop {
            if self.pending.len() >= self.target {
                let from = search_from.max(self.target.saturating_sub(1));
                #[cfg(test)]
                {
                    self.searched += self.pending.len().saturating_sub(from) as u64;
                }
                let split = match self.boundary {
                    Boundary::DocLine => find_doc_start(&self.pending, from),
                    Boundary::Line => memchr(b'\n', &self.pending[from..]).map(|i| from + i + 1),
                };
                if let Some(split) = split {
                    return Some(self.emit(split, false));
                }
                // Resume the search where it stopped (minus a partial match), never
                // from the start of the open last line again: a line of hundreds of
                // megabytes would be searched again on every read, in time growing
                // with the square of its length.
                search_from = resume_at(self.pending.len());
            }
            if self.eof {
                let n = self.pending.len();
                return Some(self.emit(n, true));
            }
            self.fill();
            // An overlong line dropped: the bytes from its start on are new (and
            // `pending` may be shorter than where the search stopped).
            if let Some(at) = self.dropped_at.take() {
                search_from = search_from.min(resume_at(at));
            }
        }
    }

    fn line_at(&mut self, pos: usize) -> u64 {
        self.counted_lines += bytecount::count(&self.pending[self.counted_upto..pos], b'\n') as u64;
        self.counted_upto = pos;
        self.pending_line + self.counted_lines + self.pending_skipped.len() as u64
    }

    /// Reads more input into `pending`, enforcing the line-length limit. Reads are
    /// never longer than the limit, so an overlong line is always caught either as
    /// the open tail of `pending` or as the first line a read completes.
    fn fill(&mut self) {
        // No more than the chunk still needs (but 64 KiB at least): chunks then end
        // little past `target`, and a pooled buffer, initialized up to the length of
        // the chunk it held, takes the next chunk without zeroing (see `emit`).
        let wanted = self.target.saturating_sub(self.pending.len()).max(64 << 10);
        let read_size = (1usize << 20).min(wanted).min(self.max_line);
        let mut old = self.pending.len();
        let got = match self.read_error.take() {
            Some(e) => Err(e),
            None => self.read_up_to(read_size),
        };
        match got {
            Ok(n) => {
                self.pending.truncate(old + n);
                self.eof = n == 0;
            }
            Err(e) => {
                self.pending.truncate(old);
                let line = self.line_at(old);
                self.pending_issues.push(Issue {
                    line,
                    kind: IssueKind::ReadError(e.to_string()),
                });
                self.eof = true;
            }
        }
        if let Some(line) = self.skipping {
            // Drop bytes up to and including the newline that ends the long line.
            match memchr(b'\n', &self.pending[old..]) {
                Some(i) => {
                    self.pending_dropped += i as u64 + 1;
                    self.pending.drain(old..old + i + 1);
                    self.skipping = None;
                    self.pending_skipped.push(line);
                }
                None => {
                    self.pending_dropped += (self.pending.len() - old) as u64;
                    self.pending.truncate(old);
                    if self.eof {
                        self.pending_skipped.push(line);
                        self.skipping = None;
                    }
                    return;
                }
            }
        }
        // A line completed by this read: the first newline in the new bytes.
        while let Some(i) = memchr(b'\n', &self.pending[old..]) {
            let nl = old + i;
            if nl - self.tail_start <= self.max_line {
                break;
            }
            let line = self.line_at(self.tail_start);
            self.pending_issues.push(Issue {
                line,
                kind: IssueKind::LineTooLong {
                    limit: self.max_line,
                },
            });
            self.pending_skipped.push(line);
            self.pending_dropped += (nl + 1 - self.tail_start) as u64;
            self.pending.drain(self.tail_start..nl + 1);
            self.note_drop();
            old = self.tail_start;
        }
        if let Some(i) = memchr::memrchr(b'\n', &self.pending[old..]) {
            self.tail_start = old + i + 1;
        }
        // The line still open at the end of `pending`.
        if self.pending.len() - self.tail_start > self.max_line {
            let line = self.line_at(self.tail_start);
            self.pending_issues.push(Issue {
                line,
                kind: IssueKind::LineTooLong {
                    limit: self.max_line,
                },
            });
            self.pending_dropped += (self.pending.len() - self.tail_start) as u64;
            self.pending.truncate(self.tail_start);
            self.note_drop();
            if self.eof {
                self.pending_skipped.push(line);
            } else {
                self.skipping = Some(line);
            }
        }
    }

    /// Notes that the bytes of `pending` from `tail_start` on were dropped.
    fn note_drop(&mut self) {
        let at = self
            .dropped_at
            .map_or(self.tail_start, |d| d.min(self.tail_start));
        self.dropped_at = Some(at);
    }

    /// Appends up to `size` bytes to `pending`, reading until they are all there or
    /// the input ends: a decompressor returns far less than `size` a read, and the
    /// space is zeroed once per fill, not once per read. Returns how many bytes came
    /// (0 at the end of the input). An error after some bytes came is kept for the
    /// next fill, so those bytes are handled first, as if read alone.
    fn read_up_to(&mut self, size: usize) -> io::Result<usize> {
        let old = self.pending.len();
        let want = old + size;
        if want <= self.initialized {
            // SAFETY: `initialized` never exceeds the capacity, and the bytes below
            // it were written before (zeroed here, or earlier input of this
            // allocation, see `emit`); truncating or clearing a `Vec<u8>` leaves
            // its memory as it was, so they are still initialized `u8`s.
            unsafe { self.pending.set_len(want) };
        } else {
            // Zeroes from `old` on: every byte up to `want` is then initialized
            // (a reallocation keeps the bytes below `old`).
            self.pending.resize(want, 0);
            self.initialized = want;
        }
        let mut got = 0;
        while got < size {
            match self.inner.read(&mut self.pending[old + got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if got == 0 => {
                    self.pending.truncate(old);
                    return Err(e);
                }
                Err(e) => {
                    self.read_error = Some(e);
                    break;
                }
            }
        }
        self.pending.truncate(old + got);
        Ok(got)
    }

    fn emit(&mut self, split: usize, last: bool) -> Chunk {
        let (mut rest, mut initialized) = self.pool.as_ref().map(|p| p.take()).unwrap_or_default();
        let capacity = rest.capacity();
        rest.extend_from_slice(&self.pending[split..]);
        if rest.capacity() != capacity {
            // Reallocated: count only what was just written.
            initialized = 0;
        }
        self.initialized = initialized.max(rest.len());
        self.pending.truncate(split);
        let data = std::mem::replace(&mut self.pending, rest);
        let first_line = self.pending_line;
        let lines_in_data = bytecount::count(&data, b'\n') as u64;
        // Skipped lines belong to this chunk if they are numbered before its end.
        let end_line = first_line + lines_in_data;
        let mut skipped = Vec::new();
        let mut keep = Vec::new();
        for l in self.pending_skipped.drain(..) {
            if l <= end_line + skipped.len() as u64 || last {
                skipped.push(l);
            } else {
                keep.push(l);
            }
        }
        self.pending_skipped = keep;
        let chunk = Chunk {
            first_line,
            offset: self.pending_offset,
            skipped_lines: skipped,
            issues: std::mem::take(&mut self.pending_issues),
            last,
            dropped_bytes: std::mem::take(&mut self.pending_dropped),
            data,
            extra: Default::default(),
        };
        self.pending_line = first_line + lines_in_data + chunk.skipped_lines.len() as u64;
        self.pending_offset += chunk.data.len() as u64;
        self.counted_upto = 0;
        self.counted_lines = 0;
        self.tail_start -= split.min(self.tail_start);
        self.done = last;
        chunk
    }
}

/// Where a search for a chunk end that found none in `pending[..len]` resumes: a
/// match of `\n<doc` and the byte after it may straddle `len`.
fn resume_at(len: usize) -> usize {
    len.saturating_sub(5)
}

/// Position of the first line at or after `from` (a line start found by looking for
/// the preceding newline) that opens a document.
fn find_doc_start(buf: &[u8], from: usize) -> Option<usize> {
    let finder = memmem::Finder::new(b"\n<doc");
    let mut at = from;
    while let Some(i) = finder.find(&buf[at..]) {
        let start = at + i + 1;
        match buf.get(start + 4) {
            Some(b' ' | b'\t' | b'>' | b'/' | b'\r' | b'\n') => return Some(start),
            Some(_) => at = start,
            None => return None,
        }
    }
    None
}

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

/// The raw (still escaped) value of attribute `name` in `attrs`. Values may be
/// double-quoted, single-quoted or bare.
pub fn attr_raw<'a>(attrs: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    attr_pairs(attrs).find(|(k, _)| *k == name).map(|(_, v)| v)
}

/// Every attribute of `attrs` in order, as (name, raw value); a bare attribute
/// without a value has an empty value.
pub fn attr_pairs(attrs: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let n = attrs.len();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < n && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return None;
        }
        let key_start = i;
        while i < n && attrs[i] != b'=' && !attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &attrs[key_start..i];
        while i < n && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n || attrs[i] != b'=' {
            // A bare attribute without a value.
            return Some((key, &attrs[i..i]));
        }
        i += 1;
        while i < n && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        let value = match attrs.get(i) {
            Some(&q @ (b'"' | b'\'')) => {
                let start = i + 1;
                let len = memchr(q, &attrs[start..]).unwrap_or(n - start);
                i = (start + len + 1).min(n);
                &attrs[start..start + len]
            }
            _ => {
                let start = i;
                while i < n && !attrs[i].is_ascii_whitespace() {
                    i += 1;
                }
                &attrs[start..i]
            }
        };
        Some((key, value))
    })
}

/// The value of attribute `name`, XML entities unescaped (`&amp;` `&lt;` `&gt;`
/// `&quot;` `&apos;` and numeric references); invalid UTF-8 read lossily.
pub fn attr<'a>(attrs: &'a [u8], name: &[u8]) -> Option<Cow<'a, str>> {
    attr_raw(attrs, name).map(unescape)
}

/// Unescapes XML entities; unknown or malformed entities are kept as written.
pub fn unescape(raw: &[u8]) -> Cow<'_, str> {
    let s = String::from_utf8_lossy(raw);
    if !s.contains('&') {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest: &str = &s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        let decoded = after.find(';').filter(|&semi| semi <= 12).and_then(|semi| {
            let ent = &after[1..semi];
            let c = match ent {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => ent
                    .strip_prefix("#x")
                    .or_else(|| ent.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse::<u32>().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, semi))
        });
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Escapes a value for a double-quoted XML attribute.
pub fn escape_attr(value: &str, out: &mut Vec<u8>) {
    // Runs without a special byte are copied whole (most values have none).
    let mut rest = value.as_bytes();
    while let Some(i) = rest
        .iter()
        .position(|b| matches!(b, b'&' | b'"' | b'<' | b'>'))
    {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(match rest[i] {
            b'&' => b"&amp;",
            b'"' => b"&quot;",
            b'<' => b"&lt;",
            _ => b"&gt;",
        });
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
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
    let mut start = 0usize;
    let n = data.len();
    while start < n {
        while skipped.peek() == Some(&&line_no) {
            skipped.next();
            line_no += 1;
        }
        let (len, word_len) = line_and_word_len(&data[start..]);
        let nl = start + len;
        let end = (nl + 1).min(n);
        let line = &data[start..nl];
        if check_nul && memchr(0, line).is_some() {
            sink.issue(Issue {
                line: line_no,
                kind: IssueKind::NulByte,
            });
        }
        handle_line(&mut st, sink, line, word_len, start, end, line_no);
        line_no += 1;
        start = end;
    }
    while skipped.peek() == Some(&&line_no) {
        skipped.next();
        line_no += 1;
    }
    st.close_doc(sink, n, line_no);
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Bit 7 of each byte of the result is set where `x` has byte `b`, exactly for the
/// first such byte (bytes above it may be false positives, which callers ignore by
/// taking only the lowest set bit).
#[inline]
fn bytes_equal(x: u64, b: u8) -> u64 {
    let y = x ^ (LO * b as u64);
    y.wrapping_sub(LO) & !y & HI
}

/// Length of the line at the start of `rest` (without its newline) and of its first
/// tab-separated column. Most lines are one short word, so up to 64 bytes are read 8
/// at a time as integers (SWAR): a SIMD search would cost more to set up than the
/// line is long. Longer lines fall back to memchr.
#[inline]
fn line_and_word_len(rest: &[u8]) -> (usize, usize) {
    let mut off = 0;
    let mut tab = usize::MAX;
    while off < 64 {
        let Some(head) = rest.get(off..).and_then(|r| r.first_chunk::<8>()) else {
            break;
        };
        let x = u64::from_le_bytes(*head);
        if tab == usize::MAX {
            let t = bytes_equal(x, b'\t');
            if t != 0 {
                tab = off + (t.trailing_zeros() / 8) as usize;
            }
        }
        let nl = bytes_equal(x, b'\n');
        if nl != 0 {
            let len = off + (nl.trailing_zeros() / 8) as usize;
            return (len, tab.min(len));
        }
        off += 8;
    }
    let tail = &rest[off..];
    let len = off
        + if tail.len() < 8 {
            tail.iter().position(|&b| b == b'\n')
        } else {
            memchr(b'\n', tail)
        }
        .unwrap_or(tail.len());
    if tab == usize::MAX {
        tab = memchr(b'\t', &rest[off..len]).map_or(len, |i| off + i);
    }
    (len, tab.min(len))
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

#[cfg(test)]
mod tests;
