//! Input cut into chunks of whole documents, and the problems met on the way.
//!
//! Every format's reader hands the engine [`Chunk`]s: decompressed bytes that never
//! split a document, numbered by line (or row, or offset), with the problems the
//! reader met ([`Issue`]). Line formats are cut by [`ChunkReader`] (at a line
//! start, or just before a `<doc` line for verticals); Parquet and WET cut their
//! own chunks and carry what their parser needs besides the bytes in
//! [`Chunk::extra`]. Nothing here names a format: the dispatcher
//! ([`read`](crate::read)) knows them all.

use memchr::{memchr, memmem};
use std::any::Any;
use std::fmt;
use std::io::{self, Read};

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
    /// What a format that is not read as lines carries besides the bytes (its
    /// reader puts it here, its parser and writer read it back).
    pub extra: Extra,
}

/// A value only the format that made a chunk knows the type of (Parquet: the
/// chunk's rows; WET: where each record lies): the chunk core stays free of every
/// format, and a chunk of another format simply has none of it.
#[derive(Default)]
pub struct Extra(Option<Box<dyn Any + Send + Sync>>);

impl Extra {
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Extra(Some(Box::new(value)))
    }

    /// The value, if there is one of type `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_ref()?.downcast_ref()
    }

    /// The value itself, if there is one of type `T`.
    pub fn take<T: Any>(self) -> Option<Box<T>> {
        self.0?.downcast().ok()
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Extra(..)"
        } else {
            "Extra(None)"
        })
    }
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
    pub(crate) searched: u64,
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
            if self.pending.capacity() == 0 {
                self.pending
                    .reserve_exact(self.target.saturating_add(1 << 20));
            }
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
        // Nothing follows the last chunk: its reader takes no buffer, which then
        // stays in the pool for the next file.
        let pool = self.pool.as_ref().filter(|_| !last);
        let (mut rest, mut initialized) = pool.map(|p| p.take()).unwrap_or_default();
        if pool.is_some() && rest.capacity() == 0 {
            // A new buffer for the pool: sized once for a whole chunk (which ends
            // a little past `target`), not grown by doubling and copying.
            rest.reserve_exact(self.target.saturating_add(1 << 20));
        }
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
