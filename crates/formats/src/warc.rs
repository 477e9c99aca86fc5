//! WARC (0.17, 1.0, 1.1) and ARC (v1, v2) reading with record offsets, and WARC
//! record writing.
//!
//! [`ArchiveReader`] reads a file record by record, whatever its layout: one gzip
//! member per record (the usual `.warc.gz`), a whole-file gzip stream, or
//! uncompressed. For each record it gives its offset and length in the file (the
//! gzip member for compressed files, as CDX indexes need them), its parsed headers,
//! the first bytes of its block (enough for the HTTP headers) and, on request, the
//! SHA-1 of its payload. Bodies are streamed: memory per record is bounded by
//! [`PREFIX_MAX`] whatever the record size.
//!
//! Bad input is reported as [`Item::Problem`] with the byte offset and reason, and
//! reading resumes at the next record where one can be found: garbage between
//! records (next `WARC/` line, next gzip member, next ARC header line), a
//! Content-Length that does not match the record (the record is still returned,
//! marked `mis_sized`), corrupt or truncated gzip members, truncated records.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use flate2::bufread::GzDecoder;
use sha1::{Digest, Sha1};

use crate::arc::{self, ArcHeader};
use crate::warc_out::base32;
use webdedup_text::shown::{escape_controls, quote_bytes};

/// Bytes of a record's block kept in memory ([`Record::block_prefix`]).
pub const PREFIX_MAX: usize = 1 << 20;
/// Largest WARC header block accepted.
const HEADER_MAX: usize = 1 << 20;
const BUF: usize = 1 << 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Warc,
    Arc,
}

/// When to compute the SHA-1 of the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DigestMode {
    #[default]
    Never,
    /// When the record has no `WARC-Payload-Digest` header (and for ARC records).
    IfMissing,
    Always,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    pub digest: DigestMode,
}

/// One record, as read.
#[derive(Debug, Clone)]
pub struct Record {
    pub format: Format,
    /// Offset of the record in the file; for gzip files, of its gzip member.
    pub offset: u64,
    /// Length for an index: the gzip member's length, or (uncompressed) header plus
    /// block, without the blank lines that follow. 0 for records sharing a member.
    pub length: u64,
    /// Where the next record starts: after the gzip member, or after the blank lines
    /// (and after any garbage skipped behind a mis-sized record).
    pub end: u64,
    /// For gzip files: the record is exactly one gzip member (it can be replaced).
    pub own_member: bool,
    /// The record was read from a gzip member.
    pub gzip: bool,
    /// Raw header bytes: WARC version line to blank line included; ARC header line.
    pub header: Vec<u8>,
    /// Header fields in order (ARC records get WARC-style names).
    pub fields: Vec<(String, String)>,
    pub arc: Option<ArcHeader>,
    /// Declared block length.
    pub content_length: u64,
    /// Block bytes actually present.
    pub block_read: u64,
    /// The first `min(block, PREFIX_MAX)` bytes of the block (or of the reader's
    /// block limit).
    pub block_prefix: Vec<u8>,
    /// Length of the HTTP header (status line to blank line) at the start of the
    /// block, when the block is parsed as HTTP (response, revisit, request of an
    /// http(s) URI).
    pub http_len: Option<usize>,
    /// SHA-1 of the payload (block after the HTTP header), when computed.
    pub payload_sha1: Option<[u8; 20]>,
    /// The record's Content-Length did not match the data (reported separately).
    pub mis_sized: bool,
    /// A recoverable problem in the record's header (reported after the record).
    pub warning: Option<String>,
}

impl Record {
    /// The first header field named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `WARC-Type` (ARC records: `response`, or `warcinfo` for the version block).
    pub fn rec_type(&self) -> &str {
        self.header("WARC-Type").unwrap_or("")
    }

    /// The target URI, without the `<...>` some WARC 1.0 writers put around it.
    pub fn target_uri(&self) -> &str {
        let u = self.header("WARC-Target-URI").unwrap_or("");
        u.strip_prefix('<')
            .and_then(|u| u.strip_suffix('>'))
            .unwrap_or(u)
    }

    /// The capture date as a 14-digit timestamp (the first 14 digits of WARC-Date,
    /// zero-padded as warcio does for dates without seconds).
    pub fn timestamp14(&self) -> String {
        if let Some(a) = &self.arc {
            return a.date.clone();
        }
        self.header("WARC-Date")
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_digit())
            .take(14)
            .collect()
    }

    /// The payload digest: the `WARC-Payload-Digest` header, else the computed one as
    /// `sha1:BASE32`.
    pub fn payload_digest(&self) -> Option<String> {
        match self.header("WARC-Payload-Digest") {
            Some(d) if !d.is_empty() => Some(d.to_string()),
            _ => self.payload_sha1.map(|h| format!("sha1:{}", base32(&h))),
        }
    }

    /// The HTTP header bytes, when parsed as HTTP.
    pub fn http_header_bytes(&self) -> Option<&[u8]> {
        self.http_len.map(|n| &self.block_prefix[..n])
    }

    /// The HTTP status code (the token after the protocol, `HTTP/x.y`), when parsed
    /// as HTTP.
    pub fn http_status(&self) -> Option<&str> {
        let h = self.http_header_bytes()?;
        let line_end = memchr::memchr(b'\n', h).unwrap_or(h.len());
        let line = std::str::from_utf8(&h[..line_end])
            .ok()?
            .trim_end_matches('\r');
        let mut it = line.splitn(3, ' ');
        it.next()?;
        it.next().map(|s| s.trim())
    }

    /// An HTTP header value (case-insensitive name), when parsed as HTTP.
    pub fn http_header(&self, name: &str) -> Option<String> {
        let h = self.http_header_bytes()?;
        let text = String::from_utf8_lossy(h);
        text.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// What [`ArchiveReader::next_item`] found.
#[derive(Debug)]
pub enum Item {
    Record(Box<Record>),
    /// A problem at a byte offset of the file; reading goes on where it can.
    Problem {
        offset: u64,
        reason: String,
    },
}

/// How many line breaks come first in `head` (the blank lines between records).
fn leading_blanks(head: &[u8]) -> usize {
    head.iter()
        .take_while(|b| **b == b'\r' || **b == b'\n')
        .count()
}

/// The format a file's first record says: ARC files start with `filedesc://`.
fn format_of(head: &[u8]) -> Format {
    if head.starts_with(b"filedesc://") {
        Format::Arc
    } else {
        Format::Warc
    }
}

/// A byte stream that counts what it hands out.
struct Counted {
    inner: BufReader<File>,
    pos: u64,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        crate::input::count_bytes_read(n);
        Ok(n)
    }
}

impl BufRead for Counted {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
        self.pos += amt as u64;
        crate::input::count_bytes_read(amt);
    }
}

impl Counted {
    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        self.inner.seek(SeekFrom::Start(pos))?;
        self.pos = pos;
        Ok(())
    }
}

type Member = BufReader<GzDecoder<Counted>>;

/// Reads the records of one WARC or ARC file.
pub struct ArchiveReader {
    path: PathBuf,
    file: File,
    src: Option<Counted>,
    member: Option<Member>,
    member_start: u64,
    member_records: u32,
    gzip: bool,
    format: Option<Format>,
    pending: VecDeque<Item>,
    done: bool,
    opts: ReadOptions,
    multi_reported: bool,
    /// Bytes of a block kept in memory ([`PREFIX_MAX`] unless set).
    prefix_max: usize,
}

enum ParseError {
    /// Not a record here (reason).
    Garbage(String),
    /// Read error (including corrupt gzip data).
    Io(io::Error),
}

impl From<io::Error> for ParseError {
    fn from(e: io::Error) -> Self {
        ParseError::Io(e)
    }
}

impl ArchiveReader {
    pub fn open(path: &Path, opts: ReadOptions) -> io::Result<ArchiveReader> {
        ArchiveReader::from_file(File::open(path)?, path, opts)
    }

    /// Reads an open file (`path` names it in messages): a decompressed copy of
    /// a zstd WET file, for instance.
    pub fn from_file(file: File, path: &Path, opts: ReadOptions) -> io::Result<ArchiveReader> {
        let mut src = Counted {
            inner: BufReader::with_capacity(BUF, file.try_clone()?),
            pos: 0,
        };
        let head = src.fill_buf()?;
        let gzip = head.starts_with(&[0x1f, 0x8b]);
        let mut pending = VecDeque::new();
        let mut done = false;
        if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            pending.push_back(Item::Problem {
                offset: 0,
                reason: "zstd-compressed WARC files are not supported (decompress or recompress with gzip)".into(),
            });
            done = true;
        }
        Ok(ArchiveReader {
            path: path.to_owned(),
            file,
            src: Some(src),
            member: None,
            member_start: 0,
            member_records: 0,
            gzip,
            format: None,
            pending,
            done,
            opts,
            multi_reported: false,
            prefix_max: PREFIX_MAX,
        })
    }

    /// Keeps up to `bytes` of each block in memory instead of [`PREFIX_MAX`]
    /// (readers that need whole blocks: WET).
    pub fn with_block_limit(mut self, bytes: usize) -> Self {
        self.prefix_max = bytes;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// The format, once the first record has been seen.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// The next record or problem; `None` at the end of the file.
    pub fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some(it) = self.pending.pop_front() {
                if let Item::Record(r) = &it {
                    if let Some(w) = &r.warning {
                        let offset = r.offset;
                        self.pending.push_front(Item::Problem {
                            offset,
                            reason: w.clone(),
                        });
                    }
                }
                return Some(it);
            }
            if self.done {
                return None;
            }
            if self.gzip {
                self.step_gzip();
            } else {
                self.step_plain();
            }
        }
    }

    fn problem(&mut self, offset: u64, reason: String) {
        self.pending.push_back(Item::Problem { offset, reason });
    }

    /// Fills the input's buffer: the offset of its first byte, or `None` (the
    /// reader done) at the end of the input or after reporting a read error.
    fn filled(&mut self) -> Option<u64> {
        let Some(src) = self.src.as_mut() else {
            self.done = true;
            return None;
        };
        let start = src.pos;
        match src.fill_buf() {
            Ok([]) => self.done = true,
            Ok(_) => return Some(start),
            Err(e) => {
                self.problem(start, format!("read error: {e}"));
                self.done = true;
            }
        }
        None
    }

    fn step_plain(&mut self) {
        let Some(start) = self.filled() else { return };
        let src = self.src.as_mut().expect("filled");
        let head = src.inner.buffer();
        let blanks = leading_blanks(head);
        if blanks > 0 {
            src.consume(blanks);
            return;
        }
        let fmt = *self.format.get_or_insert(format_of(head));
        let opts = self.opts;
        let src = self.src.as_mut().expect("checked");
        let mut body_start = 0;
        match parse_record(src, fmt, opts, self.prefix_max, &mut body_start) {
            Ok(mut rec) => {
                let content_end = src.pos;
                let body_start = start + body_start;
                rec.offset = start;
                rec.length = content_end - start;
                let truncated = rec.block_read < rec.content_length;
                let mut next_ok = true;
                let mut switch_to_gzip = false;
                if !truncated {
                    let _ = skip_blank_lines(src);
                    next_ok = match src.fill_buf() {
                        Ok([0x1f, 0x8b, 0x08, ..]) => {
                            // Uncompressed then gzip records (concatenated files).
                            switch_to_gzip = true;
                            true
                        }
                        Ok(b) => b.is_empty() || starts_record(fmt, b),
                        Err(_) => true,
                    };
                }
                rec.own_member = true;
                // A Content-Length past the end of the file: either the file is cut
                // short in this record, or the length is wrong and records follow
                // inside what it claims (they must not be hidden): look for one.
                let next = if truncated {
                    self.resync(body_start.max(start + 1), fmt)
                } else {
                    None
                };
                if truncated && next.is_none() {
                    rec.mis_sized = true;
                    rec.end = content_end;
                    let (cl, got) = (rec.content_length, rec.block_read);
                    self.pending.push_back(Item::Record(Box::new(rec)));
                    self.problem(start, format!("truncated record: Content-Length {cl} but the file ends after {got} bytes"));
                    self.done = true;
                } else if let Some(n) = next {
                    rec.mis_sized = true;
                    rec.end = n;
                    let (cl, got) = (rec.content_length, rec.block_read);
                    self.pending.push_back(Item::Record(Box::new(rec)));
                    self.problem(start, format!("Content-Length {cl} runs past the end of the file ({got} bytes of block follow) but a record starts inside it: Content-Length probably wrong; resuming at offset {n}"));
                    self.seek_plain(next);
                } else if !next_ok {
                    rec.mis_sized = true;
                    let next = self.resync(body_start.max(start + 1), fmt);
                    rec.end = next.unwrap_or(content_end);
                    self.pending.push_back(Item::Record(Box::new(rec)));
                    let reason = match next {
                        Some(n) => format!(
                            "record is not followed by a blank line and the next record: Content-Length probably wrong; resuming at offset {n}"
                        ),
                        None => "record is not followed by a blank line and the next record: Content-Length probably wrong; no further record found".into(),
                    };
                    self.problem(start, reason);
                    self.seek_plain(next);
                } else {
                    rec.end = self.src.as_ref().map(|s| s.pos).unwrap_or(content_end);
                    self.pending.push_back(Item::Record(Box::new(rec)));
                    self.gzip = switch_to_gzip;
                }
            }
            Err(ParseError::Garbage(reason)) => {
                let next = self.resync(start + 1, fmt);
                let tail = match next {
                    Some(n) => format!("skipped to the next record at offset {n}"),
                    None => "no further record found".into(),
                };
                self.problem(start, format!("{reason}; {tail}"));
                self.seek_plain(next);
            }
            Err(ParseError::Io(e)) => {
                self.problem(start, format!("read error: {e}"));
                self.done = true;
            }
        }
    }

    fn seek_plain(&mut self, next: Option<u64>) {
        match (next, self.src.as_mut()) {
            (Some(n), Some(src)) => {
                if let Err(e) = src.seek_to(n) {
                    let reason = format!("seek error: {e}");
                    self.problem(n, reason);
                    self.done = true;
                }
            }
            _ => self.done = true,
        }
    }

    /// The next offset at or after `from` where a record starts: a header line or a
    /// gzip member, whichever comes first; switches between plain and gzip reading
    /// accordingly (so a gzip WARC behind garbage, or mixed files, are read).
    fn resync(&mut self, from: u64, fmt: Format) -> Option<u64> {
        let (pos, gzip) = find_next(&self.file, from, fmt)?;
        self.gzip = gzip;
        Some(pos)
    }

    fn step_gzip(&mut self) {
        if self.member.is_none() {
            let Some(start) = self.filled() else { return };
            let src = self.src.as_ref().expect("filled");
            if !src.inner.buffer().starts_with(&[0x1f, 0x8b]) {
                let why = "not a gzip member (garbage between members?)";
                self.skip_damage(start, why, "skipped to");
                return;
            }
            self.member_start = start;
            self.member_records = 0;
            let src = self.src.take().expect("checked");
            self.member = Some(BufReader::with_capacity(BUF, GzDecoder::new(src)));
        }
        let member_start = self.member_start;
        let dec = self.member.as_mut().expect("set above");
        let head = match dec.fill_buf() {
            Ok(b) => b,
            Err(e) => return self.corrupt_member(e),
        };
        if head.is_empty() {
            return self.finish_member();
        }
        let blanks = leading_blanks(head);
        if blanks > 0 {
            dec.consume(blanks);
            return;
        }
        let fmt = *self.format.get_or_insert(format_of(head));
        let (opts, prefix_max) = (self.opts, self.prefix_max);
        let dec = self.member.as_mut().expect("set above");
        let mut body_start = 0;
        match parse_record(dec, fmt, opts, prefix_max, &mut body_start) {
            Ok(mut rec) => {
                let truncated = rec.block_read < rec.content_length;
                if let Err(e) = skip_blank_lines(dec) {
                    return self.corrupt_member(e);
                }
                let at_end = match dec.fill_buf() {
                    Ok(b) => b.is_empty(),
                    Err(e) => return self.corrupt_member(e),
                };
                rec.offset = member_start;
                rec.gzip = true;
                if at_end && self.member_records == 0 {
                    let end = dec.get_ref().get_ref().pos;
                    rec.own_member = true;
                    rec.length = end - member_start;
                    rec.end = end;
                } else {
                    rec.own_member = false;
                    rec.length = 0;
                    rec.end = member_start;
                    if !self.multi_reported {
                        self.multi_reported = true;
                        self.problem(
                            member_start,
                            "gzip member holds several records (whole-file gzip?): no record in it can be addressed by offset and length; recompress with one record per member (warcio recompress)".into(),
                        );
                    }
                }
                self.member_records += 1;
                if truncated {
                    rec.mis_sized = true;
                    let (cl, got) = (rec.content_length, rec.block_read);
                    self.pending.push_back(Item::Record(Box::new(rec)));
                    self.problem(member_start, format!("record is shorter than its Content-Length {cl}: its gzip member ends after {got} bytes of block"));
                } else {
                    self.pending.push_back(Item::Record(Box::new(rec)));
                }
                if at_end {
                    self.finish_member();
                }
            }
            Err(ParseError::Garbage(reason)) => {
                self.problem(member_start, format!("gzip member does not hold a record here: {reason}; rest of the member skipped"));
                let dec = self.member.as_mut().expect("set above");
                match io::copy(dec, &mut io::sink()) {
                    Ok(_) => self.finish_member(),
                    Err(e) => self.corrupt_member(e),
                }
            }
            Err(ParseError::Io(e)) => self.corrupt_member(e),
        }
    }

    fn finish_member(&mut self) {
        if let Some(m) = self.member.take() {
            self.src = Some(m.into_inner().into_inner());
        }
    }

    fn corrupt_member(&mut self, e: io::Error) {
        let start = self.member_start;
        self.finish_member();
        let why = format!("corrupt or truncated gzip member ({e})");
        self.skip_damage(start, &why, "resuming at");
    }

    /// Reports the damage `why` at `start` and reads on from the next record after
    /// it (`going_on` says how, in the message), if there is one.
    fn skip_damage(&mut self, start: u64, why: &str, going_on: &str) {
        let next = self.resync(start + 1, self.format.unwrap_or(Format::Warc));
        let tail = match next {
            Some(n) => format!("{going_on} the next record at offset {n}"),
            None => "no further record found".into(),
        };
        self.problem(start, format!("{why}; {tail}"));
        self.seek_plain(next);
    }
}

/// Whether `line` begins a record of this format.
fn starts_record(fmt: Format, line: &[u8]) -> bool {
    match fmt {
        Format::Warc => {
            line.starts_with(b"WARC/") && line.get(5).is_some_and(|b| b.is_ascii_digit())
        }
        Format::Arc => {
            let end = memchr::memchr(b'\n', line).unwrap_or(line.len());
            arc::looks_like_header(&line[..end])
        }
    }
}

fn skip_blank_lines(r: &mut impl BufRead) -> io::Result<()> {
    loop {
        let b = r.fill_buf()?;
        let n = b
            .iter()
            .take_while(|c| **c == b'\r' || **c == b'\n')
            .count();
        if n == 0 {
            return Ok(());
        }
        r.consume(n);
    }
}

/// The next position at or after `from` where a record starts: a line start (or
/// `from` itself after a newline) where a record header line of `fmt` begins
/// (`false`), or a gzip member header `1f 8b 08` (`true`), whichever comes first.
fn find_next(file: &File, from: u64, fmt: Format) -> Option<(u64, bool)> {
    let mut chunk = vec![0u8; 1 << 20];
    let mut window = vec![0u8; 8192];
    let mut check = |at: u64| -> bool {
        match file.read_at(&mut window, at) {
            Ok(n) if n > 0 => starts_record(fmt, &window[..n]),
            _ => false,
        }
    };
    if from > 0 {
        let mut prev = [0u8; 1];
        if file.read_at(&mut prev, from - 1).ok() == Some(1) && prev[0] == b'\n' && check(from) {
            return Some((from, false));
        }
    }
    let mut pos = from;
    loop {
        let n = file.read_at(&mut chunk, pos).ok()?;
        if n == 0 {
            return None;
        }
        let gz = memchr::memmem::find(&chunk[..n], &[0x1f, 0x8b, 0x08]);
        let limit = gz.unwrap_or(n);
        for i in memchr::memchr_iter(b'\n', &chunk[..limit]) {
            let at = pos + i as u64 + 1;
            if check(at) {
                return Some((at, false));
            }
        }
        if let Some(i) = gz {
            return Some((pos + i as u64, true));
        }
        // Keep two bytes of overlap for a gzip header across chunks.
        pos += if n > 2 { (n - 2) as u64 } else { n as u64 };
    }
}

/// Reads one line (with its `\n`) into `out`, at most `max` bytes. Returns false at
/// the end of the stream before any byte.
fn read_line_limited(
    r: &mut impl BufRead,
    out: &mut Vec<u8>,
    max: usize,
) -> Result<bool, ParseError> {
    let start = out.len();
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(out.len() > start);
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if out.len() - start + take > max {
            return Err(ParseError::Garbage(format!(
                "header line longer than {max} bytes"
            )));
        }
        out.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            return Ok(true);
        }
    }
}

/// Parses one record at the current position of `r`. `body_start` receives the
/// header length (where the block starts, relative to the record).
fn parse_record(
    r: &mut impl BufRead,
    fmt: Format,
    opts: ReadOptions,
    prefix_max: usize,
    body_start: &mut u64,
) -> Result<Record, ParseError> {
    let mut header = Vec::with_capacity(512);
    let mut fields = Vec::with_capacity(12);
    let mut arc_header = None;
    let content_length;
    match fmt {
        Format::Warc => {
            if !read_line_limited(r, &mut header, 4096)? || !starts_record(Format::Warc, &header) {
                return Err(ParseError::Garbage(format!(
                    "expected a WARC/ version line, found '{}'",
                    quote_bytes(&header, 40)
                )));
            }
            loop {
                let before = header.len();
                if !read_line_limited(r, &mut header, HEADER_MAX)? {
                    return Err(ParseError::Garbage(
                        "header block ends with the file (truncated header)".into(),
                    ));
                }
                if header.len() > HEADER_MAX {
                    return Err(ParseError::Garbage(format!(
                        "header block longer than {HEADER_MAX} bytes"
                    )));
                }
                let line = &header[before..];
                let text = String::from_utf8_lossy(line);
                let text = text.trim_end_matches(['\r', '\n']);
                if text.is_empty() {
                    break;
                }
                if text.starts_with([' ', '\t']) {
                    if let Some((_, v)) = fields.last_mut() {
                        let v: &mut String = v;
                        v.push(' ');
                        v.push_str(text.trim());
                    }
                    continue;
                }
                match text.split_once(':') {
                    Some((k, v)) => fields.push((k.trim().to_string(), v.trim().to_string())),
                    None => {
                        return Err(ParseError::Garbage(format!(
                            "bad header line '{}'",
                            escape_controls(&text.chars().take(60).collect::<String>())
                        )))
                    }
                }
            }
            let cl = fields
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("Content-Length"))
                .map(|(_, v)| v.as_str());
            content_length = match cl.map(|v| v.parse::<u64>()) {
                Some(Ok(n)) => n,
                Some(Err(_)) => {
                    return Err(ParseError::Garbage(format!(
                        "bad Content-Length '{}'",
                        escape_controls(cl.unwrap_or(""))
                    )))
                }
                None => return Err(ParseError::Garbage("no Content-Length header".into())),
            };
        }
        Format::Arc => {
            if !read_line_limited(r, &mut header, 8192)? {
                return Err(ParseError::Garbage("empty ARC header line".into()));
            }
            let line = header.strip_suffix(b"\n").unwrap_or(&header);
            let h = arc::parse_header(line).map_err(ParseError::Garbage)?;
            let rec_type = if h.url.starts_with("filedesc:") {
                "warcinfo"
            } else {
                "response"
            };
            fields.push(("WARC-Type".into(), rec_type.into()));
            fields.push(("WARC-Target-URI".into(), h.url.clone()));
            fields.push(("WARC-Date".into(), h.date.clone()));
            fields.push(("Content-Type".into(), h.mime.clone()));
            fields.push(("Content-Length".into(), h.length.to_string()));
            content_length = h.length;
            arc_header = Some(h);
        }
    }
    *body_start = header.len() as u64;
    let mut rec = Record {
        format: fmt,
        offset: 0,
        length: 0,
        end: 0,
        own_member: false,
        gzip: false,
        header,
        fields,
        arc: arc_header,
        content_length,
        block_read: 0,
        block_prefix: Vec::new(),
        http_len: None,
        payload_sha1: None,
        mis_sized: false,
        warning: None,
    };
    if let Some(h) = &rec.arc {
        rec.warning = h.warning.clone();
    }
    // The block: a prefix in memory, the rest streamed.
    let want = content_length.min(prefix_max as u64) as usize;
    let mut prefix = Vec::with_capacity(want);
    let got = r.by_ref().take(want as u64).read_to_end(&mut prefix)?;
    rec.block_read = got as u64;
    let is_http = {
        let t = rec.rec_type();
        matches!(t, "response" | "revisit" | "request") && {
            let u = rec.target_uri();
            u.starts_with("http:") || u.starts_with("https:")
        }
    };
    // As warcio without verify_http: any non-empty block of an http(s) response,
    // revisit or request is read as HTTP headers, whatever its first line.
    if is_http && !prefix.is_empty() {
        rec.http_len = Some(http_header_end(&prefix));
    }
    let compute = match opts.digest {
        DigestMode::Never => false,
        DigestMode::Always => true,
        DigestMode::IfMissing => rec.header("WARC-Payload-Digest").unwrap_or("").is_empty(),
    };
    let mut hasher = compute.then(Sha1::new);
    if let Some(h) = hasher.as_mut() {
        h.update(&prefix[rec.http_len.unwrap_or(0).min(prefix.len())..]);
    }
    rec.block_prefix = prefix;
    let mut rest = content_length - got as u64;
    if got == want && rest > 0 {
        let mut buf = vec![0u8; BUF];
        while rest > 0 {
            let n = r.read(&mut buf[..(rest.min(BUF as u64) as usize)])?;
            if n == 0 {
                break;
            }
            if let Some(h) = hasher.as_mut() {
                h.update(&buf[..n]);
            }
            rest -= n as u64;
            rec.block_read += n as u64;
        }
    }
    rec.payload_sha1 = hasher.map(|h| h.finalize().into());
    Ok(rec)
}

/// Length of the HTTP header at the start of `block` (through the first blank line);
/// the whole block if it has no blank line.
fn http_header_end(block: &[u8]) -> usize {
    let crlf = memchr::memmem::find(block, b"\r\n\r\n").map(|i| i + 4);
    let lf = memchr::memmem::find(block, b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => block.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warc_out::{sha1_base32, write_record};
    use std::io::Write;

    fn response(uri: &str, date: &str, body: &str) -> Vec<u8> {
        let block =
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{body}");
        let mut out = Vec::new();
        write_record(
            &mut out,
            "WARC/1.0",
            &[
                ("WARC-Type", "response".into()),
                ("WARC-Target-URI", uri.into()),
                ("WARC-Date", date.into()),
                ("WARC-Record-ID", format!("<urn:uuid:{}>", uri.len())),
                ("Content-Type", "application/http; msgtype=response".into()),
            ],
            block.as_bytes(),
        );
        out
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn read(bytes: &[u8], digest: DigestMode) -> Vec<Item> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.warc");
        std::fs::write(&p, bytes).unwrap();
        let mut r = ArchiveReader::open(&p, ReadOptions { digest }).unwrap();
        let mut items = Vec::new();
        while let Some(it) = r.next_item() {
            items.push(it);
        }
        items
    }

    fn records(items: &[Item]) -> Vec<&Record> {
        items
            .iter()
            .filter_map(|i| {
                if let Item::Record(r) = i {
                    Some(&**r)
                } else {
                    None
                }
            })
            .collect()
    }

    fn problems(items: &[Item]) -> Vec<(u64, &str)> {
        items
            .iter()
            .filter_map(|i| {
                if let Item::Problem { offset, reason } = i {
                    Some((*offset, reason.as_str()))
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn base32_known_values() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY======");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI======");
        // sha1("") in base32, as in CDX files.
        assert_eq!(sha1_base32(b""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    }

    #[test]
    fn plain_and_gzip_offsets() {
        let a = response("http://a.org/", "2020-01-01T00:00:00Z", "hello");
        let b = response("http://b.org/", "2020-01-02T00:00:00Z", "world!");
        let plain = [a.clone(), b.clone()].concat();
        let items = read(&plain, DigestMode::IfMissing);
        let recs = records(&items);
        assert!(problems(&items).is_empty());
        assert_eq!(recs.len(), 2);
        assert_eq!(
            (recs[0].offset, recs[0].length, recs[0].end),
            (0, a.len() as u64 - 4, a.len() as u64)
        );
        assert_eq!(recs[1].offset, a.len() as u64);
        assert_eq!(recs[1].http_status(), Some("200"));
        assert_eq!(
            recs[1].http_header("content-type").as_deref(),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(recs[1].payload_digest().unwrap(), sha1_base32(b"world!"));
        assert_eq!(recs[1].timestamp14(), "20200102000000");

        let (ga, gb) = (gz(&a), gz(&b));
        let items = read(&[ga.clone(), gb.clone()].concat(), DigestMode::Never);
        let recs = records(&items);
        assert!(problems(&items).is_empty());
        assert_eq!((recs[0].offset, recs[0].length), (0, ga.len() as u64));
        assert_eq!(
            (recs[1].offset, recs[1].length, recs[1].end),
            (
                ga.len() as u64,
                gb.len() as u64,
                (ga.len() + gb.len()) as u64
            )
        );
        assert!(recs
            .iter()
            .all(|r| r.own_member && r.payload_sha1.is_none()));
    }

    #[test]
    fn warc_versions_0_17_1_0_1_1() {
        let mut bytes = Vec::new();
        for v in ["WARC/0.17", "WARC/1.0", "WARC/1.1"] {
            write_record(
                &mut bytes,
                v,
                &[
                    ("WARC-Type", "resource".into()),
                    ("WARC-Target-URI", format!("http://x/{v}")),
                    ("WARC-Date", "2020-01-01T00:00:00.123456Z".into()),
                ],
                b"body",
            );
        }
        let items = read(&bytes, DigestMode::IfMissing);
        let recs = records(&items);
        assert!(problems(&items).is_empty());
        assert_eq!(recs.len(), 3);
        assert!(recs.iter().all(|r| r.timestamp14() == "20200101000000"
            && r.payload_digest().unwrap() == sha1_base32(b"body")));
    }

    #[test]
    fn whole_file_gzip_is_read_and_reported() {
        let a = response("http://a.org/", "2020-01-01T00:00:00Z", "hello");
        let b = response("http://b.org/", "2020-01-02T00:00:00Z", "world!");
        let items = read(&gz(&[a, b].concat()), DigestMode::Never);
        assert_eq!(records(&items).len(), 2);
        assert!(records(&items).iter().all(|r| !r.own_member));
        assert_eq!(problems(&items).len(), 1);
    }

    #[test]
    fn garbage_between_records_is_skipped() {
        let a = response("http://a.org/", "2020-01-01T00:00:00Z", "hello");
        let b = response("http://b.org/", "2020-01-02T00:00:00Z", "world!");
        let junk = b"some junk\nWARX/1.0\n".to_vec();
        let items = read(
            &[a.clone(), junk.clone(), b.clone()].concat(),
            DigestMode::Never,
        );
        let recs = records(&items);
        assert_eq!(recs.len(), 2);
        // Garbage after a record cannot be told from a wrong Content-Length: the record
        // is reported (offset 0) and its `end` covers the garbage.
        assert_eq!(problems(&items), [(0, problems(&items)[0].1)]);
        assert_eq!(recs[0].end, (a.len() + junk.len()) as u64);
        // gzip: garbage bytes between members.
        let items = read(&[gz(&a), junk, gz(&b)].concat(), DigestMode::Never);
        assert_eq!(records(&items).len(), 2);
        assert_eq!(problems(&items).len(), 1);
    }

    #[test]
    fn mis_sized_and_truncated_records() {
        let a = response("http://a.org/", "2020-01-01T00:00:00Z", "hello");
        let b = response("http://b.org/", "2020-01-02T00:00:00Z", "world!");
        // Content-Length one too small: the record is returned, flagged, and the next
        // record is still found.
        let text = String::from_utf8(a.clone()).unwrap();
        let cl = "Content-Length: 64\r\n";
        assert!(text.contains(cl), "test setup: {text}");
        let bad = text.replace(cl, "Content-Length: 60\r\n");
        assert_ne!(bad, text, "test setup: length not found in {text}");
        let items = read(&[bad.as_bytes(), &b].concat(), DigestMode::Never);
        let recs = records(&items);
        assert_eq!(recs.len(), 2, "{items:?}");
        assert!(recs[0].mis_sized);
        assert_eq!(recs[0].end, bad.len() as u64);
        assert_eq!(recs[1].target_uri(), "http://b.org/");
        // Content-Length too large: the next record is found inside the block.
        let bad = text.replace(cl, "Content-Length: 90\r\n");
        let items = read(&[bad.as_bytes(), &b].concat(), DigestMode::Never);
        assert_eq!(records(&items).len(), 2, "{items:?}");
        // Truncated file, plain and gzip.
        let cut = &[a.clone(), b.clone()].concat()[..a.len() + b.len() - 10];
        let items = read(cut, DigestMode::Never);
        assert_eq!(records(&items).len(), 2);
        assert!(records(&items)[1].mis_sized);
        assert!(problems(&items)[0].1.contains("truncated"));
        let gzipped = [gz(&a), gz(&b)].concat();
        let items = read(&gzipped[..gzipped.len() - 10], DigestMode::Never);
        assert_eq!(records(&items).len(), 1);
        assert!(problems(&items)[0].1.contains("gzip"));
    }

    /// Issue 16 W4: a Content-Length that runs past the end of the file must not hide
    /// the records after it: reading resumes at the next `WARC/` line, as for a
    /// length that is too large but still inside the file.
    #[test]
    fn content_length_past_the_end_of_the_file_hides_nothing() {
        let recs: Vec<Vec<u8>> = (0..20)
            .map(|i| {
                response(
                    &format!("http://a.org/{i}"),
                    "2020-01-01T00:00:00Z",
                    "hello",
                )
            })
            .collect();
        let text = String::from_utf8(recs[5].clone()).unwrap();
        let huge = text.replace("Content-Length: 64\r\n", "Content-Length: 999999\r\n");
        assert_ne!(huge, text, "test setup");
        let mut bytes = recs[..5].concat();
        let offset = bytes.len() as u64;
        bytes.extend_from_slice(huge.as_bytes());
        bytes.extend(recs[6..].concat());
        let items = read(&bytes, DigestMode::Never);
        let found = records(&items);
        assert_eq!(found.len(), 20, "{:?}", problems(&items));
        assert!(found[5].mis_sized);
        assert_eq!(found[6].target_uri(), "http://a.org/6");
        let p = problems(&items);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].0, offset);
        assert!(p[0].1.contains("past the end of the file"), "{p:?}");
        // A record that is really cut short at the end is still reported as such.
        let items = read(&bytes[..bytes.len() - 10], DigestMode::Never);
        assert_eq!(records(&items).len(), 20);
        assert!(problems(&items).iter().any(|p| p.1.contains("truncated")));
    }

    #[test]
    fn garbage_before_gzip_and_mixed_compression() {
        let a = response("http://a.org/", "2020-01-01T00:00:00Z", "hello");
        let b = response("http://b.org/", "2020-01-02T00:00:00Z", "world!");
        let junk = b"\x00\xffnot a warc at all\n\x01\x02".to_vec();
        let items = read(&[junk.clone(), gz(&a), gz(&b)].concat(), DigestMode::Never);
        let recs = records(&items);
        assert_eq!(recs.len(), 2, "{items:?}");
        assert!(recs.iter().all(|r| r.gzip && r.own_member));
        assert_eq!(recs[0].offset, junk.len() as u64);
        assert_eq!(problems(&items).len(), 1);
        // A plain record, then gzip members: no problem.
        let items = read(&[a.clone(), gz(&b)].concat(), DigestMode::Never);
        let recs = records(&items);
        assert_eq!(recs.len(), 2, "{items:?}");
        assert!(problems(&items).is_empty(), "{items:?}");
        assert!(!recs[0].gzip && recs[1].gzip);
    }

    #[test]
    fn corrupt_gzip_member_resumes_at_next() {
        let a = response("http://a.org/", "2020-01-01T00:00:00Z", "hello");
        let b = response("http://b.org/", "2020-01-02T00:00:00Z", "world!");
        let mut ga = gz(&a);
        let mid = ga.len() / 2;
        for x in &mut ga[mid..mid + 8] {
            *x ^= 0x55;
        }
        let items = read(&[ga, gz(&b)].concat(), DigestMode::Never);
        let recs = records(&items);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].target_uri(), "http://b.org/");
        assert_eq!(problems(&items)[0].0, 0);
    }

    #[test]
    fn garbage_input_never_panics() {
        let a = response("http://a.org/", "2020-01-01T00:00:00Z", "hello");
        let mut x: u64 = 7;
        for round in 0..200 {
            let mut bytes = if round % 2 == 0 { a.clone() } else { gz(&a) };
            for _ in 0..(round % 7 + 1) {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (x >> 33) as usize % bytes.len();
                bytes[i] = (x >> 17) as u8;
            }
            let cut = (x >> 40) as usize % (bytes.len() + 1);
            let _ = read(&bytes[..cut.max(1)], DigestMode::Always);
        }
    }

    #[test]
    fn arc_records() {
        let body = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhi";
        let filedesc_block = "1 0 Test\nURL IP-address Archive-date Content-type Archive-length\n";
        let arc = format!(
            "filedesc://t.arc 127.0.0.1 20140216050221 text/plain {}\n{filedesc_block}\n\
             http://example.com/ 93.184.216.119 20140216050221 text/html {}\n{body}\n",
            filedesc_block.len(),
            body.len()
        );
        let items = read(arc.as_bytes(), DigestMode::IfMissing);
        let recs = records(&items);
        assert!(problems(&items).is_empty(), "{items:?}");
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].rec_type(), "warcinfo");
        assert_eq!(recs[1].rec_type(), "response");
        assert_eq!(recs[1].timestamp14(), "20140216050221");
        assert_eq!(recs[1].payload_digest().unwrap(), sha1_base32(b"hi"));
        let off = arc.find("http://example.com/").unwrap() as u64;
        assert_eq!(recs[1].offset, off);
        // A bad length is reported and the next header line is found.
        let bad = arc.replace(&format!("text/html {}", body.len()), "text/html abc");
        let bad = format!("{bad}http://example.com/b 1.2.3.4 20140216050222 text/html 2\nok\n");
        let items = read(bad.as_bytes(), DigestMode::Never);
        // The bad length is read as 0 (as warcio does) and reported; the block that
        // follows is then reported as garbage.
        assert!(
            problems(&items)[0].1.contains("bad archive length"),
            "{items:?}"
        );
        assert_eq!(
            records(&items).last().unwrap().target_uri(),
            "http://example.com/b"
        );
    }
}
