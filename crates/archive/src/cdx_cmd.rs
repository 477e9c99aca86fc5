//! `cdx dups` (NutchWAX's dedup-cdx) and `cdx revisits`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use webdedup_formats::cdx::{normalize_digest, CdxItem, CdxReader, CdxRecord};
use webdedup_store::Store;
use webdedup_text::keys::{key, KeyKind};

use crate::util::{open_text, Report};

/// Lines sent to the store per batch.
const BATCH: usize = 8192;

/// Counts of a `dups` / `revisits` run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CdxStats {
    pub lines: u64,
    pub bad: u64,
    pub no_digest: u64,
    pub printed: u64,
}

/// The key of a capture version: `urlkey SP DIGEST` (digest normalized) as
/// [`KeyKind::UrlDigest`]. `scratch` is reused.
pub fn url_digest_key(urlkey: &[u8], digest: &[u8], scratch: &mut Vec<u8>) -> Option<u64> {
    scratch.clear();
    scratch.extend_from_slice(urlkey);
    scratch.push(b' ');
    if !normalize_digest(digest, scratch) {
        return None;
    }
    Some(key(KeyKind::UrlDigest, scratch))
}

/// Appends NutchWAX's `.dup` form of a record, `urlkey sha1:DIGEST timestamp\n`.
pub fn dup_line(rec: &CdxRecord<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(rec.urlkey);
    out.push(b' ');
    match memchr::memrchr(b':', &rec.digest) {
        Some(i) => out.extend_from_slice(&rec.digest[..=i]),
        None => out.extend_from_slice(b"sha1:"),
    }
    let start = out.len();
    normalize_digest(&rec.digest, out);
    if out.len() == start {
        out.push(b'-');
    }
    out.push(b' ');
    out.extend_from_slice(rec.timestamp);
    out.push(b'\n');
}

struct Pending {
    keys: Vec<u64>,
    ends: Vec<usize>,
    text: Vec<u8>,
    seen: Vec<bool>,
}

impl Pending {
    fn flush(
        &mut self,
        store: &dyn Store,
        out: &mut dyn Write,
        stats: &mut CdxStats,
    ) -> anyhow::Result<()> {
        if self.keys.is_empty() {
            return Ok(());
        }
        store.test_and_insert(&self.keys, &mut self.seen)?;
        let mut start = 0;
        for (i, &end) in self.ends.iter().enumerate() {
            if self.seen[i] {
                out.write_all(&self.text[start..end])?;
                stats.printed += 1;
            }
            start = end;
        }
        self.keys.clear();
        self.ends.clear();
        self.text.clear();
        Ok(())
    }
}

/// Writes every line whose (urlkey, digest) the store has already seen, in input
/// order (all but the first occurrence), as `.dup` lines or (`lines`) the original
/// lines. Lines without a digest are never duplicates.
pub fn dups(
    files: &[PathBuf],
    lines: bool,
    store: &dyn Store,
    out: &mut dyn Write,
    report: &mut Report,
) -> anyhow::Result<CdxStats> {
    let mut stats = CdxStats::default();
    let mut read = ReadCounts::default();
    let mut p = Pending {
        keys: Vec::with_capacity(BATCH),
        ends: Vec::with_capacity(BATCH),
        text: Vec::new(),
        seen: Vec::new(),
    };
    let mut scratch = Vec::with_capacity(256);
    for file in files {
        for_each_record(file, report, &mut read, |rec| {
            match url_digest_key(rec.urlkey, &rec.digest, &mut scratch) {
                None => stats.no_digest += 1,
                Some(k) => {
                    p.keys.push(k);
                    if lines {
                        p.text.extend_from_slice(rec.line);
                        p.text.push(b'\n');
                    } else {
                        dup_line(rec, &mut p.text);
                    }
                    p.ends.push(p.text.len());
                }
            }
            if p.keys.len() >= BATCH {
                p.flush(store, out, &mut stats)?;
            }
            Ok(())
        })?;
    }
    p.flush(store, out, &mut stats)?;
    stats.lines = read.lines;
    stats.bad = read.bad;
    Ok(stats)
}

/// Writes the lines of revisit records (mime `warc/revisit`, or with `filename_dash`
/// file name `-`), as `.dup` lines or (`lines`) the original lines.
pub fn revisits(
    files: &[PathBuf],
    lines: bool,
    filename_dash: bool,
    out: &mut dyn Write,
    report: &mut Report,
) -> anyhow::Result<CdxStats> {
    let mut stats = CdxStats::default();
    let mut read = ReadCounts::default();
    let mut text = Vec::with_capacity(1 << 16);
    for file in files {
        for_each_record(file, report, &mut read, |rec| {
            if rec.is_revisit(filename_dash) {
                stats.printed += 1;
                if lines {
                    text.extend_from_slice(rec.line);
                    text.push(b'\n');
                } else {
                    dup_line(rec, &mut text);
                }
                if text.len() > 1 << 16 {
                    out.write_all(&text)?;
                    text.clear();
                }
            }
            Ok(())
        })?;
    }
    out.write_all(&text)?;
    stats.lines = read.lines;
    stats.bad = read.bad;
    Ok(stats)
}

/// Lines read and lines rejected.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReadCounts {
    pub lines: u64,
    pub bad: u64,
}

/// Calls `f` on every well-formed record of a CDX/CDXJ file, reporting bad lines.
/// A file that cannot be opened or read is reported; the others go on.
pub(crate) fn for_each_record(
    file: &Path,
    report: &mut Report,
    stats: &mut ReadCounts,
    mut f: impl FnMut(&CdxRecord<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let input = match open_text(file) {
        Ok(r) => r,
        Err(e) => {
            report.bad(file.display(), format_args!("cannot open: {e}"));
            return Ok(());
        }
    };
    let mut reader = CdxReader::new(input);
    loop {
        let item = match reader.next_line() {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(e) => {
                let line = reader.line_number() + 1;
                report.bad(
                    format_args!("{}:{line}", file.display()),
                    format_args!("read error, rest of file skipped: {e}"),
                );
                break;
            }
        };
        match item {
            CdxItem::Record(rec) => {
                stats.lines += 1;
                f(&rec).with_context(|| format!("{}", file.display()))?;
            }
            CdxItem::Bad { line, reason } => {
                stats.bad += 1;
                report.bad(
                    format_args!("{}:{line}", file.display()),
                    format_args!("{reason}; line skipped"),
                );
            }
        }
    }
    Ok(())
}
