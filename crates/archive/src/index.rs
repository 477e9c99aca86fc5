//! `warc index`: CDX (11 fields) or CDXJ lines from WARC and ARC files, with the same
//! fields and values as cdxj-indexer (SURT keys, `sha1:` base32 payload digests,
//! computed when the record has none, gzip member offsets and lengths).

use std::io::Write;
use std::path::{Path, PathBuf};

use webdedup_formats::cdx::{write_cdx11, write_cdxj, IndexEntry};
use webdedup_formats::warc::{ArchiveReader, DigestMode, Item, ReadOptions, Record};

use crate::surt::url_key;
use crate::util::{base_name, Report};

/// Output layout of `warc index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// Records left out because they share a gzip member with other records
    /// (whole-file gzip): no offset and length could point at them.
    pub shared_member: u64,
    pub bytes: u64,
}

/// The WARC 1.1 record types (ARC records are read as `response` and `warcinfo`).
pub const RECORD_TYPES: [&str; 8] = [
    "warcinfo",
    "response",
    "resource",
    "request",
    "metadata",
    "revisit",
    "conversion",
    "continuation",
];

/// `--records`: `all` or a comma-separated list of record types; an unknown type
/// is a usage error, never a filter that silently matches nothing.
pub fn parse_records(spec: &str) -> Result<String, String> {
    if spec == "all" {
        return Ok(spec.to_owned());
    }
    let mut any = false;
    for t in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if !RECORD_TYPES.contains(&t) {
            return Err(format!(
                "unknown record type '{t}' (expected all, or some of {})",
                RECORD_TYPES.join(", ")
            ));
        }
        any = true;
    }
    if !any {
        return Err("no record type given (expected all, or a list)".into());
    }
    Ok(spec.to_owned())
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

/// The index of one file: its lines, its problems (place, reason), its counts.
struct FileIndex {
    lines: Vec<u8>,
    problems: Vec<(String, String)>,
    stats: IndexStats,
}

fn index_file(file: &Path, format: IndexFormat, types: Option<&[String]>) -> FileIndex {
    let mut fi = FileIndex {
        lines: Vec::new(),
        problems: Vec::new(),
        stats: IndexStats::default(),
    };
    let mut reader = match ArchiveReader::open(
        file,
        ReadOptions {
            digest: DigestMode::IfMissing,
        },
    ) {
        Ok(r) => r,
        Err(e) => {
            fi.problems
                .push((file.display().to_string(), format!("cannot open: {e}")));
            return fi;
        }
    };
    fi.stats.files = 1;
    let name = base_name(file);
    while let Some(item) = reader.next_item() {
        match item {
            Item::Problem { offset, reason } => fi
                .problems
                .push((format!("{}: offset {offset}", file.display()), reason)),
            Item::Record(rec) => {
                fi.stats.records += 1;
                if !included(&rec, types) {
                    continue;
                }
                // A replay tool reads a record by (offset, length) in the file: a
                // record inside a gzip member it shares has neither (cdxj-indexer
                // writes nothing for such files). No line rather than a useless one.
                if rec.gzip && !rec.own_member {
                    fi.stats.shared_member += 1;
                    continue;
                }
                fi.stats.indexed += 1;
                let e = entry(&rec, &name);
                // Writing to a Vec cannot fail.
                let _ = match format {
                    IndexFormat::Cdxj => write_cdxj(&mut fi.lines, &e),
                    IndexFormat::Cdx11 => write_cdx11(&mut fi.lines, &e),
                };
            }
        }
    }
    if fi.stats.shared_member > 0 {
        fi.problems.push((
            file.display().to_string(),
            format!(
                "{} records not indexed: they share a gzip member with other records, so no offset and length can point at them (recompress with one record per member: warcio recompress)",
                fi.stats.shared_member
            ),
        ));
    }
    fi.stats.bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    fi
}

/// Indexes `files` into `out`, in file order, `threads` files at a time. Problems are
/// reported with file and byte offset. Each file's index is built in memory (about
/// 250 bytes per record) and written when the files before it are done.
pub fn index(
    files: &[PathBuf],
    format: IndexFormat,
    types: Option<&[String]>,
    threads: usize,
    out: &mut dyn Write,
    report: &mut Report,
) -> anyhow::Result<IndexStats> {
    let mut stats = IndexStats::default();
    if format == IndexFormat::Cdx11 {
        writeln!(out, "{}", webdedup_formats::cdx::CDX11_LEGEND)?;
    }
    let threads = threads.clamp(1, files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, FileIndex)>();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..threads {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= files.len() || tx.send((i, index_file(&files[i], format, types))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending = std::collections::BTreeMap::new();
        let mut want = 0;
        let mut result = Ok(());
        for (i, fi) in rx {
            pending.insert(i, fi);
            while let Some(fi) = pending.remove(&want) {
                want += 1;
                for (place, reason) in &fi.problems {
                    report.bad(place, reason);
                }
                stats.files += fi.stats.files;
                stats.records += fi.stats.records;
                stats.indexed += fi.stats.indexed;
                stats.shared_member += fi.stats.shared_member;
                stats.bytes += fi.stats.bytes;
                if result.is_ok() {
                    result = out.write_all(&fi.lines);
                }
            }
        }
        // On a write error the workers finish their current file and stop when
        // the channel closes.
        Ok(result?)
    })?;
    Ok(stats)
}
