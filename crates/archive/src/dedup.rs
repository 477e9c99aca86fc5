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
//! earlier ones. A duplicate whose first capture is not in the table (store shared
//! with another process) is kept, never turned into a revisit that cannot resolve.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use webdedup_formats::output::{io_error_at, AtomicOutput, OutputCompression};
use webdedup_formats::warc::{
    base32, sha1_base32, write_record, ArchiveReader, DigestMode, Format, Item, ReadOptions, Record,
};
use webdedup_store::Store;

use crate::cdx_cmd::url_digest_key;
use crate::surt::url_key;
use crate::util::{base_name, Report};

/// What makes two responses the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DedupBy {
    /// Same payload digest, whatever the URL.
    Digest,
    /// Same SURT url key and payload digest.
    #[value(name = "url+digest")]
    UrlDigest,
}

/// Where the first capture of a payload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub record_id: String,
    pub target_uri: String,
    pub date: String,
    pub digest: String,
    pub file: String,
    pub offset: u64,
}

/// First captures by key. Saved as tab-separated lines
/// `key-hex file offset record-id target-uri date digest`.
#[derive(Default)]
pub struct Locations {
    map: HashMap<u64, Location>,
}

impl Locations {
    pub fn get(&self, key: u64) -> Option<&Location> {
        self.map.get(&key)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Loads a locations file, inserting its keys into `store` too. Bad lines are
    /// reported.
    pub fn load(path: &Path, store: &dyn Store, report: &mut Report) -> anyhow::Result<Locations> {
        let mut loc = Locations::default();
        let f = File::open(path)
            .with_context(|| format!("cannot open locations file {}", path.display()))?;
        let mut keys = Vec::new();
        for (i, line) in BufReader::new(f).lines().enumerate() {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            let f: Vec<&str> = line.split('\t').collect();
            let parsed = (f.len() == 7)
                .then(|| (u64::from_str_radix(f[0], 16).ok(), f[2].parse::<u64>().ok()));
            match parsed {
                Some((Some(key), Some(offset))) => {
                    keys.push(key);
                    loc.map.insert(
                        key,
                        Location {
                            file: f[1].into(),
                            offset,
                            record_id: f[3].into(),
                            target_uri: f[4].into(),
                            date: f[5].into(),
                            digest: f[6].into(),
                        },
                    );
                }
                _ => report.bad(
                    format_args!("{}:{}", path.display(), i + 1),
                    "bad locations line; skipped",
                ),
            }
        }
        let mut seen = Vec::new();
        for chunk in keys.chunks(8192) {
            store.test_and_insert(chunk, &mut seen)?;
        }
        Ok(loc)
    }

    /// Writes all locations to `path` (atomically), sorted by key.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let mut out = AtomicOutput::create(path, OutputCompression::None)?;
        let mut keys: Vec<&u64> = self.map.keys().collect();
        keys.sort();
        let mut buf = Vec::with_capacity(1 << 16);
        for k in keys {
            let l = &self.map[k];
            writeln!(
                buf,
                "{k:016x}\t{}\t{}\t{}\t{}\t{}\t{}",
                l.file, l.offset, l.record_id, l.target_uri, l.date, l.digest
            )?;
            if buf.len() > 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        out.finish(true)?;
        Ok(())
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DedupStats {
    pub files: u64,
    pub records: u64,
    pub responses: u64,
    pub revisits_written: u64,
    /// Duplicates left as they are (mis-sized, sharing a gzip member, no HTTP header,
    /// first capture unknown).
    pub duplicates_kept: u64,
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

/// One candidate record waiting for the store's verdict.
struct Candidate {
    key: u64,
    offset: u64,
    end: u64,
    replaceable: bool,
    loc: Location,
    /// The record, its block cut to the HTTP header.
    rec: Box<Record>,
}

const BATCH: usize = 1024;

struct FileJob<'a> {
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
    seen: Vec<bool>,
}

impl FileJob<'_> {
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
            self.out.write_all(&buf[..got])?;
            self.copied += got as u64;
        }
        Ok(())
    }

    fn flush(&mut self, batch: &mut Vec<Candidate>) -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let keys: Vec<u64> = batch.iter().map(|c| c.key).collect();
        self.store.test_and_insert(&keys, &mut self.seen)?;
        for (i, c) in batch.drain(..).enumerate() {
            if !self.seen[i] {
                let mut loc = c.loc;
                loc.file = self.out_name.clone();
                loc.offset = (c.offset as i64 + self.delta) as u64;
                self.locations.map.insert(c.key, loc);
                continue;
            }
            let first = match self.locations.get(c.key) {
                Some(first) if c.replaceable => first.clone(),
                _ => {
                    self.stats.duplicates_kept += 1;
                    continue;
                }
            };
            let revisit = revisit_record(&c.rec, &first);
            let bytes = if c.rec.gzip {
                gzip_member(&revisit)?
            } else {
                revisit
            };
            self.copy_to(c.offset)?;
            self.out.write_all(&bytes)?;
            self.copied = c.end;
            self.delta += bytes.len() as i64 - (c.end - c.offset) as i64;
            self.stats.revisits_written += 1;
        }
        Ok(())
    }
}

fn gzip_member(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 2),
        flate2::Compression::default(),
    );
    e.write_all(bytes)?;
    e.finish()
}

/// The WARC/1.1 revisit record that replaces `rec`, pointing at `first`.
pub fn revisit_record(rec: &Record, first: &Location) -> Vec<u8> {
    let http = rec.http_header_bytes().unwrap_or(b"");
    let mut fields: Vec<(&str, String)> = vec![("WARC-Type", "revisit".into())];
    for name in [
        "WARC-Record-ID",
        "WARC-Date",
        "WARC-Target-URI",
        "WARC-IP-Address",
        "WARC-Warcinfo-ID",
        "WARC-Concurrent-To",
    ] {
        for (k, v) in &rec.fields {
            if k.eq_ignore_ascii_case(name) {
                fields.push((name, v.clone()));
            }
        }
    }
    fields.push((
        "WARC-Profile",
        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest".into(),
    ));
    fields.push(("WARC-Refers-To-Target-URI", first.target_uri.clone()));
    fields.push(("WARC-Refers-To-Date", first.date.clone()));
    if !first.record_id.is_empty() {
        fields.push(("WARC-Refers-To", first.record_id.clone()));
    }
    fields.push((
        "WARC-Payload-Digest",
        rec.payload_digest().unwrap_or_default(),
    ));
    fields.push(("WARC-Block-Digest", sha1_base32(http)));
    fields.push(("WARC-Truncated", "length".into()));
    fields.push((
        "Content-Type",
        rec.header("Content-Type")
            .unwrap_or("application/http; msgtype=response")
            .to_string(),
    ));
    let mut out = Vec::with_capacity(http.len() + 1024);
    write_record(&mut out, "WARC/1.1", &fields, http);
    out
}

/// Output path of `input` under `out`: `out` itself for a single input that is not a
/// directory, else `out/<file name>`.
pub fn output_path(input: &Path, out: &Path, single: bool) -> PathBuf {
    if single && !out.is_dir() && !out.to_string_lossy().ends_with('/') {
        out.to_owned()
    } else {
        out.join(input.file_name().unwrap_or(input.as_os_str()))
    }
}

/// Rewrites each input to its output (see [`output_path`]).
pub fn dedup(
    inputs: &[PathBuf],
    out: &Path,
    by: DedupBy,
    store: &dyn Store,
    locations: &mut Locations,
    report: &mut Report,
) -> anyhow::Result<DedupStats> {
    let mut stats = DedupStats::default();
    let single = inputs.len() == 1;
    for input in inputs {
        let out_path = output_path(input, out, single);
        let same = out_path == *input
            || matches!((std::fs::canonicalize(&out_path), std::fs::canonicalize(input)), (Ok(a), Ok(b)) if a == b);
        if same {
            anyhow::bail!("output {} would overwrite its input", out_path.display());
        }
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
            input: file,
            input_path: input,
            // AtomicOutput's errors name the file.
            out: AtomicOutput::create(&out_path, OutputCompression::None)?,
            out_name: base_name(&out_path),
            copied: 0,
            delta: 0,
            store,
            locations,
            stats: &mut stats,
            seen: Vec::new(),
        };
        job.stats.files += 1;
        let mut batch: Vec<Candidate> = Vec::with_capacity(BATCH);
        let mut scratch = Vec::new();
        while let Some(item) = reader.next_item() {
            let rec = match item {
                Item::Problem { offset, reason } => {
                    report.bad(format_args!("{}: offset {offset}", input.display()), reason);
                    continue;
                }
                Item::Record(rec) => rec,
            };
            job.stats.records += 1;
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
                    report.bad(
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
            let mut rec = rec;
            // Only the HTTP header is needed for a revisit.
            rec.block_prefix.truncate(rec.http_len.unwrap_or(0));
            batch.push(Candidate {
                key,
                offset: rec.offset,
                end: rec.end,
                replaceable,
                loc,
                rec,
            });
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
