//! Common Crawl WET files: the plain text of web pages as WARC `conversion`
//! records (`.warc.wet.gz`, one gzip member per record).
//!
//! * **Document**: a `conversion` record. Its URL is `WARC-Target-URI`, its id
//!   `WARC-Record-ID` (WET has no title, so no URL+title key); its paragraphs are
//!   the lines of its block ([`plain`](crate::plain): JSON Lines' rules).
//! * **Other records** (`warcinfo`, and any other type) are not documents: they
//!   are written as they are where they stand.
//! * **Reading** goes through the WARC reader of `warc index` / `warc dedup`
//!   ([`ArchiveReader`]), so record offsets are the file's (a gzip member's offset
//!   in a `.gz` file) and damage is handled as there: garbage between records is
//!   skipped to the next record, a corrupt gzip member to the next member. A
//!   record whose block is shorter than its `Content-Length` (a truncated record),
//!   or not followed by the next record (a wrong `Content-Length`), is a bad
//!   record: reported with its offset and passed through as read (header and the
//!   block read) unless `--drop-bad-records`. A record with a block longer than
//!   `--max-line-bytes` is left out, reported.
//! * **Chunk**: whole records, about `--chunk-bytes` of them; the chunk's data is
//!   each record's header, block and `\r\n\r\n`, decompressed.
//! * **Written back** ([`write_record`]): a document kept whole is its record byte
//!   for byte (decompressed); a partly kept one has its kept lines as block and its
//!   header as read except `Content-Length` (the new block's length) and the SHA-1
//!   `WARC-Block-Digest` / `WARC-Payload-Digest` (recomputed). Dropped documents
//!   are left out. With gzip output every record is its own gzip member, as in the
//!   input, so the output can be indexed and read record by record.

use crate::chunk::{Chunk, Extra, Issue, IssueKind};
use crate::doc::{DocMeta, DocSink};
use crate::warc::{ArchiveReader, Item, ReadOptions};
use crate::warc_out::sha1_base32;
use std::fs;
use std::io::{self, Seek, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What a record of a chunk is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A `conversion` record: a document.
    Conversion {
        uri: Option<String>,
        id: Option<String>,
    },
    /// Any other record (`warcinfo`...): written as it is.
    Other,
    /// A record that cannot be read whole (why): passed through as read.
    Bad(String),
}

/// Where a record lies in its chunk's data.
#[derive(Clone, Debug)]
pub struct RecordInfo {
    /// All its bytes: header, block, and (for whole records) `\r\n\r\n`.
    pub range: Range<usize>,
    /// Length of its header (through the blank line that ends it).
    pub header_len: usize,
    /// Its offset in the file (of its gzip member in a gzip file).
    pub offset: u64,
    pub kind: RecordKind,
}

/// The end of every WARC record.
const TRAILER: &[u8] = b"\r\n\r\n";

/// Reads a WET file in chunks of whole records.
///
/// Every byte of the file is accounted for: a record the reader could not
/// delimit by its `Content-Length` (past the end of the file, wrong, or not a
/// number) is the bytes from its start to the next record the reader found (or
/// the end of the file), read again from the file and passed on as one bad
/// record (in a gzip file: its gzip member, decompressed); bytes between records
/// that do not start a record are garbage, reported and skipped. Nothing is read
/// twice. (A gzip member holding several records turns this off: its records
/// have no span of their own.)
pub struct Records {
    reader: ArchiveReader,
    chunk_bytes: usize,
    max_block: usize,
    peeked: Option<Item>,
    done: bool,
    /// The file, to read damaged records as they are.
    file: fs::File,
    file_len: u64,
    /// Every record so far has a span of the file (offset to end): a plain
    /// record, or a gzip member of its own.
    spans: bool,
    /// Offset up to which the file's bytes are accounted for.
    covered: u64,
    /// Problems the reader reported at or after `covered`: a damaged record or
    /// garbage, told apart once the next record is found.
    gap: Vec<(u64, String)>,
}

impl Records {
    pub fn open(
        path: &Path,
        drop_bad: bool,
        chunk_bytes: usize,
        max_block: usize,
    ) -> io::Result<Records> {
        let _ = drop_bad; // the parser applies it
        Records::from_file(fs::File::open(path)?, path, chunk_bytes, max_block)
    }

    /// Reads a zstd-compressed WET file: `stream` (its decompressed content) is
    /// copied to an anonymous temporary file first, since the WARC reader needs
    /// to seek (to skip damage); offsets are then the decompressed data's. One
    /// file's decompressed size of temporary disk, no more memory.
    pub fn open_decompressed(
        stream: impl io::Read,
        path: &Path,
        chunk_bytes: usize,
        max_block: usize,
    ) -> io::Result<Records> {
        let mut copy = tempfile::tempfile()?;
        io::copy(&mut io::BufReader::new(stream), &mut copy).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "decompressing to a temporary file ({}): {e}",
                    std::env::temp_dir().display()
                ),
            )
        })?;
        copy.seek(io::SeekFrom::Start(0))?;
        Records::from_file(copy, path, chunk_bytes, max_block)
    }

    fn from_file(
        file: fs::File,
        path: &Path,
        chunk_bytes: usize,
        max_block: usize,
    ) -> io::Result<Records> {
        let copy = file.try_clone()?;
        let file_len = file.metadata()?.len();
        let reader = ArchiveReader::from_file(file, path, ReadOptions::default())?
            .with_block_limit(max_block);
        Ok(Records {
            spans: true,
            reader,
            chunk_bytes: chunk_bytes.max(1),
            max_block,
            peeked: None,
            done: false,
            file: copy,
            file_len,
            covered: 0,
            gap: Vec::new(),
        })
    }

    /// Settles the bytes `covered..to` (before the next record, or the end): a
    /// record whose header could be read up to its damage (it starts with a WARC
    /// version line, or its gzip member decompresses to one) is a bad record, its
    /// bytes as read (decompressed); anything else is garbage, its problems
    /// reported as they are.
    fn settle_gap(
        &mut self,
        to: u64,
        data: &mut Vec<u8>,
        records: &mut Vec<RecordInfo>,
        issues: &mut Vec<Issue>,
    ) {
        let problems = std::mem::take(&mut self.gap);
        let from = self.covered;
        self.covered = self.covered.max(to);
        if to <= from || problems.is_empty() {
            return;
        }
        let mut head = [0u8; 64];
        let n = self.file.read_at(&mut head, from).unwrap_or(0);
        let head = &head[..n];
        let lead = head
            .iter()
            .take_while(|b| matches!(b, b'\r' | b'\n'))
            .count();
        let reason = || {
            problems
                .iter()
                .map(|(_, r)| r.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        };
        if head.starts_with(&[0x1f, 0x8b]) {
            if let Some(bytes) = self.member_record(from, to) {
                let reason = reason();
                push_bad(from, &bytes, 0, reason, data, records);
                return;
            }
        } else if starts_record(&head[lead..]) {
            let reason = reason();
            self.push_span(from + lead as u64, to, 0, reason, data, records, issues);
            return;
        }
        issues.extend(problems.into_iter().map(|(offset, reason)| Issue {
            line: offset,
            kind: IssueKind::Malformed(reason),
        }));
    }

    /// The decompressed bytes of the gzip member(s) at `from..to` when they hold a
    /// record's start and are no longer than the block limit allows; else `None`
    /// (garbage, or a corrupt member).
    fn member_record(&self, from: u64, to: u64) -> Option<Vec<u8>> {
        use std::io::Read;
        let limit = self.max_block as u64 + (1 << 20);
        if to - from > limit {
            return None;
        }
        let mut raw = vec![0u8; (to - from) as usize];
        self.file.read_exact_at(&mut raw, from).ok()?;
        let mut bytes = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        (bytes.len() as u64 <= limit && starts_record(&bytes)).then_some(bytes)
    }

    /// Passes the file's bytes `start..end` on as a bad record (`header_len`: its
    /// header's length, 0 when unknown), or reports it left out when longer than
    /// the block limit.
    #[allow(clippy::too_many_arguments)]
    fn push_span(
        &mut self,
        start: u64,
        end: u64,
        header_len: usize,
        reason: String,
        data: &mut Vec<u8>,
        records: &mut Vec<RecordInfo>,
        issues: &mut Vec<Issue>,
    ) {
        let len = end - start;
        if len > (self.max_block + header_len) as u64 {
            issues.push(Issue {
                line: start,
                kind: IssueKind::Malformed(format!(
                    "{reason}; the {len} bytes to the next record are more than {} (--max-line-bytes): left out",
                    self.max_block
                )),
            });
            return;
        }
        let at = data.len();
        data.resize(at + len as usize, 0);
        if let Err(e) = self.file.read_exact_at(&mut data[at..], start) {
            data.truncate(at);
            issues.push(Issue {
                line: start,
                kind: IssueKind::Malformed(format!("{reason}; cannot read it again: {e}")),
            });
            return;
        }
        records.push(RecordInfo {
            range: at..data.len(),
            header_len,
            offset: start,
            kind: RecordKind::Bad(reason),
        });
    }

    fn next_item(&mut self) -> Option<Item> {
        self.peeked.take().or_else(|| self.reader.next_item())
    }

    fn peek(&mut self) -> Option<&Item> {
        if self.peeked.is_none() {
            self.peeked = self.reader.next_item();
        }
        self.peeked.as_ref()
    }

    /// The next chunk, or None after the last one.
    pub fn next_chunk(&mut self) -> Option<Chunk> {
        if self.done {
            return None;
        }
        let mut data = Vec::new();
        let mut records = Vec::new();
        let mut issues = Vec::new();
        let mut first_offset = None;
        while data.len() < self.chunk_bytes {
            let Some(item) = self.next_item() else {
                if self.spans {
                    let end = self.file_len;
                    self.settle_gap(end, &mut data, &mut records, &mut issues);
                }
                break;
            };
            let rec = match item {
                Item::Problem { offset, reason } if self.spans && offset >= self.covered => {
                    first_offset.get_or_insert(offset);
                    self.gap.push((offset, reason));
                    continue;
                }
                Item::Problem { offset, reason } => {
                    issues.push(Issue {
                        line: offset,
                        kind: IssueKind::Malformed(reason),
                    });
                    continue;
                }
                Item::Record(rec) => rec,
            };
            if self.spans && rec.gzip && !rec.own_member {
                // Records sharing a gzip member: offsets are no longer spans.
                self.spans = false;
                let problems = std::mem::take(&mut self.gap);
                issues.extend(problems.into_iter().map(|(offset, reason)| Issue {
                    line: offset,
                    kind: IssueKind::Malformed(reason),
                }));
            }
            if self.spans {
                self.settle_gap(rec.offset, &mut data, &mut records, &mut issues);
            }
            first_offset.get_or_insert(rec.offset);
            let partial = rec.mis_sized || rec.block_read < rec.content_length;
            // The reader reports what is wrong with a record right after it.
            let mut problem = None;
            if partial {
                if let Some(Item::Problem { offset, .. }) = self.peek() {
                    if *offset == rec.offset {
                        if let Some(Item::Problem { reason, .. }) = self.next_item() {
                            problem = Some(reason);
                        }
                    }
                }
            }
            if partial && self.spans && !rec.gzip {
                // The record runs to where the reader resumed: the next record, or
                // the end of the file when it found none.
                let end = match self.peek() {
                    Some(_) => rec.end.max(rec.offset),
                    None => self.file_len,
                };
                self.covered = end;
                let reason = problem.unwrap_or_else(|| {
                    format!(
                        "record shorter than its Content-Length {} ({} bytes of block)",
                        rec.content_length, rec.block_read
                    )
                });
                let header_len = rec.header.len();
                self.push_span(
                    rec.offset,
                    end,
                    header_len,
                    reason,
                    &mut data,
                    &mut records,
                    &mut issues,
                );
                continue;
            }
            if self.spans {
                self.covered = rec.end;
            }
            if !partial && (rec.block_prefix.len() as u64) < rec.content_length {
                issues.push(Issue {
                    line: rec.offset,
                    kind: IssueKind::Malformed(format!(
                        "record with a block of {} bytes, longer than {} (--max-line-bytes): left out",
                        rec.content_length, self.max_block
                    )),
                });
                continue;
            }
            let start = data.len();
            data.extend_from_slice(&rec.header);
            let header_len = rec.header.len();
            data.extend_from_slice(&rec.block_prefix);
            let kind = if partial {
                RecordKind::Bad(problem.unwrap_or_else(|| {
                    format!(
                        "record shorter than its Content-Length {} ({} bytes of block)",
                        rec.content_length, rec.block_read
                    )
                }))
            } else {
                data.extend_from_slice(TRAILER);
                if rec.rec_type() == "conversion" {
                    RecordKind::Conversion {
                        uri: rec.header("WARC-Target-URI").map(str::to_owned),
                        id: rec.header("WARC-Record-ID").map(str::to_owned),
                    }
                } else {
                    RecordKind::Other
                }
            };
            records.push(RecordInfo {
                range: start..data.len(),
                header_len,
                offset: rec.offset,
                kind,
            });
        }
        let last = self.peek().is_none();
        if last {
            if self.spans {
                let end = self.file_len;
                self.settle_gap(end, &mut data, &mut records, &mut issues);
            }
            self.done = true;
        }
        Some(Chunk {
            data,
            first_line: first_offset.unwrap_or(0),
            offset: 0,
            skipped_lines: Vec::new(),
            issues,
            last,
            dropped_bytes: 0,
            extra: Extra::new(records),
        })
    }
}

/// Whether `bytes` begin with a WARC version line (`WARC/1.x`).
fn starts_record(bytes: &[u8]) -> bool {
    bytes.starts_with(b"WARC/") && bytes.get(5).is_some_and(u8::is_ascii_digit)
}

/// Appends `bytes` to `data` as a bad record found at `offset`.
fn push_bad(
    offset: u64,
    bytes: &[u8],
    header_len: usize,
    reason: String,
    data: &mut Vec<u8>,
    records: &mut Vec<RecordInfo>,
) {
    let at = data.len();
    data.extend_from_slice(bytes);
    records.push(RecordInfo {
        range: at..data.len(),
        header_len,
        offset,
        kind: RecordKind::Bad(reason),
    });
}

/// Walks the records of `chunk` (a chunk of [`Records`]), telling `sink` about
/// documents and the other records.
pub fn parse_chunk<S: DocSink>(chunk: &Chunk, drop_bad: bool, sink: &mut S) {
    for issue in &chunk.issues {
        sink.issue(issue.clone());
    }
    let Some(records) = chunk.extra.get::<Vec<RecordInfo>>() else {
        return;
    };
    for r in records {
        match &r.kind {
            RecordKind::Conversion { uri, id } => {
                let meta = DocMeta::Fields {
                    id: id.as_deref(),
                    url: uri.as_deref(),
                    title: None,
                };
                let body = r.range.start + r.header_len..r.range.end - TRAILER.len();
                crate::plain::document(&chunk.data, r.range.clone(), body, r.offset, &meta, sink);
            }
            RecordKind::Other => sink.other(r.range.clone(), r.offset),
            RecordKind::Bad(reason) => {
                sink.issue(Issue {
                    line: r.offset,
                    kind: IssueKind::BadRecord {
                        reason: reason.clone(),
                        dropped: drop_bad,
                    },
                });
                sink.passthrough(r.range.clone(), r.offset, drop_bad);
            }
        }
    }
}

/// The value of header `name` (case-insensitive) in a WARC header, and the range
/// of that value in `header`.
fn header_value(header: &[u8], name: &str) -> Option<Range<usize>> {
    let mut pos = 0;
    for line in header.split_inclusive(|&b| b == b'\n') {
        let start = pos;
        pos += line.len();
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon]
            .trim_ascii()
            .eq_ignore_ascii_case(name.as_bytes())
        {
            continue;
        }
        let value = &line[colon + 1..];
        let lead = value.len() - value.trim_ascii_start().len();
        let trimmed = value.trim_ascii();
        let from = start + colon + 1 + lead;
        return Some(from..from + trimmed.len());
    }
    None
}

/// Writes one record whose bytes (header, block, trailer) are `record` and whose
/// header is its first `header_len` bytes, into `out`; `changed`: its block is not
/// the one read, so `Content-Length` and the SHA-1 digests are set for the new
/// block. With `gzip`, the record is one gzip member.
pub fn write_record(
    record: &[u8],
    header_len: usize,
    changed: bool,
    gzip: bool,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let mut fixed;
    let bytes = if changed && record.len() >= header_len + TRAILER.len() {
        let (header, rest) = record.split_at(header_len);
        let block = &rest[..rest.len() - TRAILER.len()];
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        if let Some(r) = header_value(header, "Content-Length") {
            edits.push((r, block.len().to_string()));
        }
        for name in ["WARC-Block-Digest", "WARC-Payload-Digest"] {
            if let Some(r) = header_value(header, name) {
                if header[r.clone()].starts_with(b"sha1:") {
                    edits.push((r, sha1_base32(block)));
                }
            }
        }
        edits.sort_by_key(|(r, _)| r.start);
        fixed = Vec::with_capacity(record.len() + 64);
        let mut at = 0;
        for (r, v) in edits {
            fixed.extend_from_slice(&header[at..r.start]);
            fixed.extend_from_slice(v.as_bytes());
            at = r.end;
        }
        fixed.extend_from_slice(&header[at..]);
        fixed.extend_from_slice(rest);
        &fixed[..]
    } else {
        record
    };
    if gzip {
        let mut enc =
            flate2::write::GzEncoder::new(std::mem::take(out), flate2::Compression::default());
        enc.write_all(bytes)?;
        *out = enc.finish()?;
    } else {
        out.extend_from_slice(bytes);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
