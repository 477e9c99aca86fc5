//! `warc dedup`: rewrites WARC files, replacing each HTTP response whose payload
//! digest (optionally with its URL) was seen before by a WARC/1.1 revisit record
//! (profile identical-payload-digest) that keeps the HTTP headers and points at the
//! first capture. Everything else is copied byte for byte.
//!
//! How the output is made: the output is the input with some byte ranges replaced.
//! A replaced range is exactly one record (one gzip member for `.warc.gz`, the record
//! and its trailing blank lines for uncompressed files); the bytes between replaced
//! ranges are copied from the input file unchanged, including records the reader
//! reported as bad, so no byte of the input outside a replaced record is lost.
//!
//! "Seen" questions go through the [`Store`] (key: [`url_digest_key`] of the SURT
//! url key, or of an empty URL for `--by digest`); the first capture of each key is
//! remembered in a [`Locations`] table (record ID, URI, date, output file and
//! offset), optionally loaded from and saved to a file so later crawls dedup against
//! earlier ones. A version the store has seen whose first capture is not in the
//! table (a run that failed before saving its locations, a store shared with
//! another process) is taken as a first capture here, never turned into a revisit
//! that cannot resolve.
//!
//! Revisit records of the inputs keep resolving, whatever the input order: a record
//! one of them named earlier is kept; one that names a record replaced earlier is
//! rewritten to name the first capture (see [`Locations`] and docs/dev/design.md).
//! Duplicates with their first capture's record ID, and those whose revisit would
//! not be smaller, are kept too.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use webdedup_formats::cdx::normalize_digest;
use webdedup_formats::output::{io_error_at, AtomicOutput, OutputCompression};
use webdedup_formats::output_plan::plan_outputs;
use webdedup_formats::warc::{ArchiveReader, DigestMode, Format, Item, ReadOptions, Record};
use webdedup_formats::warc_out::base32;
use webdedup_store::{fault, Store};

use crate::cdx_cmd::url_digest_key;
pub use crate::locations::{capture_names, Location, Locations, Names};
pub use crate::revisit::revisit_record;
use crate::revisit::{as_stored, retargeted_revisit};
use crate::surt::url_key;
use crate::util::{base_name, Report};

/// What makes two responses the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupBy {
    /// Same payload digest, whatever the URL.
    Digest,
    /// Same SURT url key and payload digest.
    UrlDigest,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DedupStats {
    pub files: u64,
    pub records: u64,
    pub responses: u64,
    pub revisits_written: u64,
    /// Duplicates left as they are, for any reason (the four counts below, and:
    /// mis-sized, sharing a gzip member, no HTTP header, first capture unknown).
    pub duplicates_kept: u64,
    /// ... because a revisit of the inputs refers to them.
    pub kept_referenced: u64,
    /// ... because their revisit would not be smaller.
    pub kept_not_smaller: u64,
    /// ... because their record ID is their first capture's (two copies of a file).
    pub kept_same_id: u64,
    /// ... because they cannot be replaced in place (mis-sized, sharing a gzip
    /// member, no HTTP header, not WARC).
    pub kept_not_replaceable: u64,
    /// Versions the store had seen but whose first capture is unknown (a run that
    /// failed after asking the store, before its locations were saved; another
    /// process sharing the store): the capture here became their first.
    pub first_captures_adopted: u64,
    /// Revisits of the inputs rewritten to name the first capture, because the
    /// record they named was replaced by a revisit.
    pub revisits_retargeted: u64,
    /// Revisits of the inputs that name a replaced record and could not be
    /// rewritten (reported).
    pub revisits_unresolved: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Responses whose WARC-Payload-Digest differs from their payload (kept).
    pub digest_mismatch: u64,
}

/// Whether `claimed` is a SHA-1 digest (base32 or hex) different from `sha1`.
/// Digests of other algorithms cannot be checked and are not "other".
pub fn claims_other_sha1(claimed: &str, sha1: &[u8; 20]) -> bool {
    let Some((label, value)) = claimed.split_once(':') else {
        return false;
    };
    if !label.trim().eq_ignore_ascii_case("sha1") && !label.trim().eq_ignore_ascii_case("sha-1") {
        return false;
    }
    let value = value.trim();
    if value.len() == 32 {
        !value.eq_ignore_ascii_case(&base32(sha1))
    } else if value.len() == 40 {
        let hex: String = sha1.iter().map(|b| format!("{b:02x}")).collect();
        !value.eq_ignore_ascii_case(&hex)
    } else {
        true
    }
}

/// A response waiting for the store's verdict.
struct Response {
    key: u64,
    offset: u64,
    end: u64,
    replaceable: bool,
    loc: Location,
    names: Names,
    /// The record, its block cut to the HTTP header.
    rec: Box<Record>,
}

/// A revisit record of the inputs, with the names of its original.
struct InputRevisit {
    offset: u64,
    end: u64,
    /// Its own record ID.
    id: String,
    /// Can be rewritten in place (its own gzip member or exactly sized, whole block
    /// in memory).
    rewritable: bool,
    target: Names,
    /// Its WARC-Payload-Digest (empty if none).
    digest: String,
    /// The key of the target's payload (in this run's `--by` mode) and the SURT of
    /// its URI: whether a first capture answers the URI and digest lookup.
    digest_key: Option<u64>,
    target_surt: String,
    rec: Box<Record>,
}

/// Revisits of the inputs with larger blocks are never rewritten (their blocks are
/// not kept in memory while waiting in a batch).
const REWRITE_MAX: usize = 64 << 10;

/// Records in input order: decisions are taken in this order, so a revisit of the
/// inputs and the record it names are handled whichever comes first.
enum Pending {
    Response(Response),
    Revisit(InputRevisit),
}

const BATCH: usize = 1024;

struct FileJob<'a> {
    by: DedupBy,
    input: File,
    input_path: &'a Path,
    out: AtomicOutput,
    out_name: String,
    copied: u64,
    /// Output offset minus input offset for the bytes being copied now.
    delta: i64,
    store: &'a dyn Store,
    locations: &'a mut Locations,
    stats: &'a mut DedupStats,
    report: &'a mut Report,
    seen: Vec<bool>,
    keys: Vec<u64>,
}

impl FileJob<'_> {
    /// Writes to the output. `WEBDEDUP_FAULT=output-bytes:N:enospc` fails the write
    /// that reaches N output bytes as a full disk does (crash tests: `store::fault`).
    fn write_out(&mut self, bytes: &[u8]) -> io::Result<()> {
        if fault::armed() && fault::disk_full("output-bytes", bytes.len() as u64) {
            // ENOSPC on Linux, as the kernel reports a full disk.
            return Err(io_error_at(
                "cannot write",
                self.out.path(),
                io::Error::from_raw_os_error(28),
            ));
        }
        self.out.write_all(bytes)
    }

    fn copy_to(&mut self, upto: u64) -> io::Result<()> {
        let mut buf = vec![0u8; 1 << 16];
        while self.copied < upto {
            let n = ((upto - self.copied) as usize).min(buf.len());
            let got = self
                .input
                .read_at(&mut buf[..n], self.copied)
                .map_err(|e| io_error_at("cannot read", self.input_path, e))?;
            if got == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "{}: input file shrank while being read",
                        self.input_path.display()
                    ),
                ));
            }
            self.write_out(&buf[..got])?;
            self.copied += got as u64;
        }
        Ok(())
    }

    /// Writes `bytes` in place of the input range `offset..end`.
    fn replace(&mut self, offset: u64, end: u64, bytes: &[u8]) -> io::Result<()> {
        self.copy_to(offset)?;
        self.write_out(bytes)?;
        self.copied = end;
        self.delta += bytes.len() as i64 - (end - offset) as i64;
        Ok(())
    }

    /// Reports a problem with the record at `offset` of the input.
    fn bad_at(&mut self, offset: u64, reason: impl std::fmt::Display) {
        let place = format!("{}: offset {offset}", self.input_path.display());
        self.report.bad(place, reason);
    }

    fn flush(&mut self, batch: &mut Vec<Pending>) -> anyhow::Result<()> {
        self.keys.clear();
        self.keys.extend(batch.iter().filter_map(|p| match p {
            Pending::Response(r) => Some(r.key),
            Pending::Revisit(_) => None,
        }));
        if !self.keys.is_empty() {
            self.store.test_and_insert(&self.keys, &mut self.seen)?;
        }
        let mut i = 0;
        for p in batch.drain(..) {
            match p {
                Pending::Response(r) => {
                    let seen = self.seen[i];
                    i += 1;
                    self.response(r, seen)?;
                }
                Pending::Revisit(r) => self.input_revisit(r)?,
            }
        }
        Ok(())
    }

    fn keep(&mut self, counter: fn(&mut DedupStats) -> &mut u64) {
        self.stats.duplicates_kept += 1;
        *counter(self.stats) += 1;
    }

    fn response(&mut self, r: Response, seen: bool) -> anyhow::Result<()> {
        // A revisit of the inputs (before this record) names it: it stays.
        let referenced = self.locations.take_referenced(&r.names);
        // A version the store has seen without a known first capture counts as
        // new: the store is asked before the locations are saved, so a run that
        // failed in between left versions whose first captures no output holds
        // (were they "seen", every later copy would be kept, and the next crawl
        // would have nothing to point at). This capture is their first now.
        let known = seen && self.locations.get(r.key).is_some();
        if seen && !known {
            self.stats.first_captures_adopted += 1;
        }
        if !known {
            let mut loc = r.loc;
            loc.file = self.out_name.clone();
            loc.offset = (r.offset as i64 + self.delta) as u64;
            self.locations.insert(r.key, loc);
            return Ok(());
        }
        if referenced {
            self.keep(|s| &mut s.kept_referenced);
            return Ok(());
        }
        let first = match self.locations.get(r.key) {
            Some(first) if r.replaceable => first.clone(),
            _ => {
                self.keep(|s| &mut s.kept_not_replaceable);
                return Ok(());
            }
        };
        if !first.record_id.is_empty() && first.record_id == r.loc.record_id {
            // Two copies of the same record (the same file twice, compressed and
            // not): a revisit would name itself.
            self.keep(|s| &mut s.kept_same_id);
            self.bad_at(
                r.offset,
                format_args!(
                    "record {} has the ID of the first capture of its payload ({} offset {}): a revisit would refer to itself; kept as it is",
                    r.loc.record_id, first.file, first.offset
                ),
            );
            return Ok(());
        }
        let bytes = as_stored(&r.rec, revisit_record(&r.rec, &first))?;
        if bytes.len() as u64 >= r.end - r.offset {
            // A small payload under large headers: nothing to gain.
            self.keep(|s| &mut s.kept_not_smaller);
            return Ok(());
        }
        self.replace(r.offset, r.end, &bytes)?;
        self.locations.note_replaced(&r.names, r.key);
        self.stats.revisits_written += 1;
        Ok(())
    }

    fn input_revisit(&mut self, r: InputRevisit) -> anyhow::Result<()> {
        // The record it names, if this run (or an earlier one) replaced it: by ID,
        // by URI and date; by URI and digest only when nothing else names it and no
        // first capture answers that lookup.
        let t = &r.target;
        // pywb finds an original by URI and digest: a first capture may answer.
        let satisfied = r
            .digest_key
            .and_then(|k| self.locations.get(k))
            .is_some_and(|f| {
                self.by == DedupBy::UrlDigest || url_key(&f.target_uri) == r.target_surt
            });
        let replaced = match (t.id, t.uri_date) {
            (None, None) if !satisfied => self.locations.replaced_by(t.uri_digest),
            _ => self
                .locations
                .replaced_by(t.id)
                .or_else(|| self.locations.replaced_by(t.uri_date)),
        };
        // Never point it at another payload (a URI and date can name two records).
        let same_payload = |f: &&Location| {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            !normalize_digest(r.digest.as_bytes(), &mut a)
                || (normalize_digest(f.digest.as_bytes(), &mut b) && a == b)
        };
        let first = replaced
            .and_then(|k| self.locations.get(k))
            .filter(same_payload)
            .cloned();
        let Some(first) = first else {
            // The record it names must stay a response if it comes later; unless it
            // is the first capture of the payload (the usual case: crawlers name the
            // original), which is never replaced: then nothing needs remembering.
            let names_first = r
                .digest_key
                .and_then(|k| self.locations.get(k))
                .is_some_and(|f| {
                    let f = capture_names(&f.record_id, &f.target_uri, &f.date, &f.digest);
                    (t.id.is_some() && t.id == f.id)
                        || (t.uri_date.is_some() && t.uri_date == f.uri_date)
                });
            if !names_first {
                let names = [t.id, t.uri_date, t.uri_digest.filter(|_| !satisfied)];
                self.locations.note_referenced(names.into_iter().flatten());
            }
            return Ok(());
        };
        if !r.rewritable || first.record_id == r.id {
            self.stats.revisits_unresolved += 1;
            self.bad_at(
                r.offset,
                format_args!(
                    "revisit {} names a record replaced by a revisit of {} ({} offset {}), and cannot be rewritten to name that one (its record is not alone in its gzip member, mis-sized, or has that ID)",
                    r.id, first.record_id, first.file, first.offset
                ),
            );
            return Ok(());
        }
        let bytes = as_stored(&r.rec, retargeted_revisit(&r.rec, &first))?;
        self.replace(r.offset, r.end, &bytes)?;
        self.stats.revisits_retargeted += 1;
        Ok(())
    }
}

/// A revisit record of the inputs, as it waits in a batch.
fn input_revisit(mut rec: Box<Record>, by: DedupBy, scratch: &mut Vec<u8>) -> InputRevisit {
    let own_uri = rec.target_uri().to_string();
    let uri = rec
        .header("WARC-Refers-To-Target-URI")
        .map(|u| u.trim_start_matches('<').trim_end_matches('>').to_string())
        .unwrap_or(own_uri);
    let digest = rec.header("WARC-Payload-Digest").unwrap_or("").to_string();
    let target = capture_names(
        rec.header("WARC-Refers-To").unwrap_or(""),
        &uri,
        rec.header("WARC-Refers-To-Date").unwrap_or(""),
        &digest,
    );
    let target_surt = url_key(&uri);
    let urlkey = match by {
        DedupBy::Digest => "",
        DedupBy::UrlDigest => target_surt.as_str(),
    };
    let digest_key = url_digest_key(urlkey.as_bytes(), digest.as_bytes(), scratch);
    let whole_block = rec.block_read == rec.block_prefix.len() as u64;
    let rewritable = rec.format == Format::Warc
        && rec.own_member
        && !rec.mis_sized
        && whole_block
        && rec.block_prefix.len() <= REWRITE_MAX;
    if !rewritable {
        rec.block_prefix = Vec::new();
    }
    InputRevisit {
        offset: rec.offset,
        end: rec.end,
        id: rec.header("WARC-Record-ID").unwrap_or("").to_string(),
        rewritable,
        target,
        digest,
        digest_key,
        target_surt,
        rec,
    }
}

/// Output paths of `inputs` under `out`: `out` itself for a single input when `out`
/// is not a directory, else one file per input below `out`, named by
/// [`plan_outputs`] (file names; paths below the inputs' common directory when
/// names repeat; an input given twice is refused before anything is written).
pub fn output_paths(inputs: &[PathBuf], out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if inputs.len() == 1 && !out.is_dir() && !out.to_string_lossy().ends_with('/') {
        return Ok(vec![out.to_owned()]);
    }
    Ok(plan_outputs(inputs, out)?)
}

/// Rewrites each input to its output (see [`output_paths`]).
pub fn dedup(
    inputs: &[PathBuf],
    out: &Path,
    by: DedupBy,
    store: &dyn Store,
    locations: &mut Locations,
    report: &mut Report,
) -> anyhow::Result<DedupStats> {
    let mut stats = DedupStats::default();
    let out_paths = output_paths(inputs, out)?;
    // Every output checked before the first is written.
    for (input, out_path) in inputs.iter().zip(&out_paths) {
        let same = out_path == input
            || matches!((std::fs::canonicalize(out_path), std::fs::canonicalize(input)), (Ok(a), Ok(b)) if a == b);
        if same {
            anyhow::bail!("output {} would overwrite its input", out_path.display());
        }
    }
    for (input, out_path) in inputs.iter().zip(out_paths) {
        let mut reader = match ArchiveReader::open(
            input,
            ReadOptions {
                digest: DigestMode::Always,
            },
        ) {
            Ok(r) => r,
            Err(e) => {
                report.bad(input.display(), format_args!("cannot open: {e}"));
                continue;
            }
        };
        if !reader.is_gzip() && out_path.to_string_lossy().ends_with(".gz") {
            eprintln!(
                "webdedup: note: {} is not gzip-compressed, so {} is not either (records are copied as they are)",
                input.display(),
                out_path.display()
            );
        }
        let file = File::open(input).with_context(|| format!("cannot open {}", input.display()))?;
        let len = file
            .metadata()
            .with_context(|| format!("cannot read {}", input.display()))?
            .len();
        let mut job = FileJob {
            by,
            input: file,
            input_path: input,
            // AtomicOutput's errors name the file.
            out: AtomicOutput::create(&out_path, OutputCompression::None)?,
            // The name first captures are found under: the file's path below the
            // output directory (its file name unless names repeat).
            out_name: out_path
                .strip_prefix(out)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .map_or_else(
                    || base_name(&out_path),
                    |r| r.to_string_lossy().into_owned(),
                ),
            copied: 0,
            delta: 0,
            store,
            locations: &mut *locations,
            stats: &mut stats,
            report: &mut *report,
            seen: Vec::new(),
            keys: Vec::new(),
        };
        job.stats.files += 1;
        let mut batch: Vec<Pending> = Vec::with_capacity(BATCH);
        let mut scratch = Vec::new();
        while let Some(item) = reader.next_item() {
            let rec = match item {
                Item::Problem { offset, reason } => {
                    job.report
                        .bad(format_args!("{}: offset {offset}", input.display()), reason);
                    continue;
                }
                Item::Record(rec) => rec,
            };
            job.stats.records += 1;
            if rec.rec_type() == "revisit" {
                batch.push(Pending::Revisit(input_revisit(rec, by, &mut scratch)));
                if batch.len() >= BATCH {
                    job.flush(&mut batch)?;
                }
                continue;
            }
            if rec.rec_type() != "response" {
                continue;
            }
            job.stats.responses += 1;
            // The key is the SHA-1 of the payload as read, never a header's claim: a
            // wrong WARC-Payload-Digest must not turn a new payload into a revisit.
            let Some(sha1) = rec.payload_sha1 else {
                continue;
            };
            let digest = format!("sha1:{}", base32(&sha1));
            if let Some(claimed) = rec.header("WARC-Payload-Digest") {
                if claims_other_sha1(claimed, &sha1) {
                    job.stats.digest_mismatch += 1;
                    job.report.bad(
                        format_args!("{}: offset {}", input.display(), rec.offset),
                        format_args!("WARC-Payload-Digest {claimed} does not match the payload ({digest}); record kept as it is"),
                    );
                    continue;
                }
            }
            let urlkey = match by {
                DedupBy::Digest => String::new(),
                DedupBy::UrlDigest => url_key(rec.target_uri()),
            };
            let Some(key) = url_digest_key(urlkey.as_bytes(), digest.as_bytes(), &mut scratch)
            else {
                continue;
            };
            let replaceable = rec.format == Format::Warc
                && rec.own_member
                && !rec.mis_sized
                && rec.http_len.is_some();
            let loc = Location {
                record_id: rec.header("WARC-Record-ID").unwrap_or("").to_string(),
                target_uri: rec.target_uri().to_string(),
                date: rec.header("WARC-Date").unwrap_or("").to_string(),
                digest,
                file: String::new(),
                offset: 0,
            };
            let names = capture_names(&loc.record_id, &loc.target_uri, &loc.date, &loc.digest);
            let mut rec = rec;
            // Only the HTTP header is needed for a revisit.
            rec.block_prefix.truncate(rec.http_len.unwrap_or(0));
            batch.push(Pending::Response(Response {
                key,
                offset: rec.offset,
                end: rec.end,
                replaceable,
                loc,
                names,
                rec,
            }));
            if batch.len() >= BATCH {
                job.flush(&mut batch)?;
            }
        }
        job.flush(&mut batch)?;
        job.copy_to(len)?;
        job.stats.bytes_in += len;
        job.stats.bytes_out += job.out.bytes();
        job.out.finish(false)?;
    }
    Ok(stats)
}
