//! `warc index`: CDX (11 fields) or CDXJ lines from WARC and ARC files, with the same
//! fields and values as cdxj-indexer (SURT keys, `sha1:` base32 payload digests,
//! computed when the record has none, gzip member offsets and lengths).

use std::io::Write;
use std::path::PathBuf;

use webdedup_formats::cdx::{write_cdx11, write_cdxj, IndexEntry};
use webdedup_formats::warc::{ArchiveReader, DigestMode, Item, ReadOptions, Record};

use crate::surt::url_key;
use crate::util::{base_name, Report};

/// Output layout of `warc index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IndexFormat {
    /// `urlkey timestamp {json}` (cdxj-indexer's default).
    Cdxj,
    /// ` CDX N b a m s k r M S V g` (cdxj-indexer --cdx11).
    Cdx11,
}

/// The record types indexed by default (cdxj-indexer's default).
pub const DEFAULT_RECORDS: &[&str] = &["response", "revisit", "resource", "metadata"];

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IndexStats {
    pub files: u64,
    pub records: u64,
    pub indexed: u64,
    pub bytes: u64,
}

/// Which records to index: `None` means all types.
pub fn record_filter(spec: &str) -> Option<Vec<String>> {
    if spec == "all" {
        None
    } else {
        Some(
            spec.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        )
    }
}

fn included(rec: &Record, types: Option<&[String]>) -> bool {
    let t = rec.rec_type();
    match types {
        None => true,
        Some(types) => {
            if !types.iter().any(|x| x == t) {
                return false;
            }
            let default = types.len() == DEFAULT_RECORDS.len()
                && types.iter().zip(DEFAULT_RECORDS).all(|(a, b)| a == b);
            !(default
                && matches!(t, "resource" | "metadata")
                && rec.header("Content-Type") == Some("application/warc-fields"))
        }
    }
}

/// The index entry of a record, as cdxj-indexer computes it.
pub fn entry(rec: &Record, filename: &str) -> IndexEntry {
    let t = rec.rec_type();
    let raw_mime = if t == "revisit" {
        Some("warc/revisit".to_string())
    } else if t == "response" || t == "request" {
        rec.http_header("Content-Type")
    } else {
        rec.header("Content-Type").map(str::to_string)
    };
    let mime = raw_mime
        .map(|m| {
            m.split([';', ' ', '\t', '\r', '\n'])
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    let status = if t == "response" || t == "revisit" {
        rec.http_status().unwrap_or("").to_string()
    } else {
        String::new()
    };
    let url = rec.target_uri().to_string();
    IndexEntry {
        urlkey: url_key(&url),
        timestamp: rec.timestamp14(),
        url,
        mime,
        status,
        digest: rec.payload_digest().unwrap_or_default(),
        length: rec.length,
        offset: rec.offset,
        filename: filename.to_string(),
    }
}

/// Indexes `files` into `out`. Problems are reported with file and byte offset.
pub fn index(
    files: &[PathBuf],
    format: IndexFormat,
    types: Option<&[String]>,
    out: &mut dyn Write,
    report: &mut Report,
) -> anyhow::Result<IndexStats> {
    let mut stats = IndexStats::default();
    let mut buf = Vec::with_capacity(1 << 16);
    if format == IndexFormat::Cdx11 {
        writeln!(out, "{}", webdedup_formats::cdx::CDX11_LEGEND)?;
    }
    for file in files {
        let mut reader = match ArchiveReader::open(
            file,
            ReadOptions {
                digest: DigestMode::IfMissing,
            },
        ) {
            Ok(r) => r,
            Err(e) => {
                report.bad(file.display(), format_args!("cannot open: {e}"));
                continue;
            }
        };
        stats.files += 1;
        let name = base_name(file);
        while let Some(item) = reader.next_item() {
            match item {
                Item::Problem { offset, reason } => {
                    report.bad(format_args!("{}: offset {offset}", file.display()), reason)
                }
                Item::Record(rec) => {
                    stats.records += 1;
                    if !included(&rec, types) {
                        continue;
                    }
                    stats.indexed += 1;
                    let e = entry(&rec, &name);
                    match format {
                        IndexFormat::Cdxj => write_cdxj(&mut buf, &e)?,
                        IndexFormat::Cdx11 => write_cdx11(&mut buf, &e)?,
                    }
                    if buf.len() >= 1 << 16 {
                        out.write_all(&buf)?;
                        buf.clear();
                    }
                }
            }
        }
        stats.bytes += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    }
    out.write_all(&buf)?;
    Ok(stats)
}
