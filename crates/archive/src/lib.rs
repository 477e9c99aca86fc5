//! Web-archive deduplication for webdedup.
//!
//! * `cdx dups` / `cdx revisits` / `cdx dates`: NutchWAX's `dedup-cdx`, `revisits`
//!   and `add-dates` over CDX / CDXJ indexes ([`cdx_cmd`], [`dates`]).
//! * `warc index`: CDX / CDXJ from WARC and ARC files ([`index`]).
//! * `warc dedup`: rewrites WARCs, replacing repeated payloads by revisit records
//!   ([`dedup`]).
//!
//! The CLI crate wires [`CdxCommand`] / [`run_cdx`] and [`WarcCommand`] /
//! [`run_warc`] in as `webdedup cdx ...` and `webdedup warc ...`. Every "seen"
//! question goes through a [`webdedup_store::Store`], so a persisted store or the
//! server cluster can replace the in-memory default.

pub mod cdx_cmd;
pub mod dates;
pub mod dedup;
pub mod index;
mod inputs;
pub mod locations;
pub mod revisit;
pub mod surt;
pub mod util;

use std::path::PathBuf;

use clap::{Args, Subcommand};
use webdedup_store::{MemStore, Store};

pub use dedup::DedupBy;
pub use index::IndexFormat;

use crate::util::{Out, Report};

/// `webdedup cdx ...`
#[derive(Debug, Subcommand)]
pub enum CdxCommand {
    /// Print every capture whose (urlkey, digest) was already seen: all but the first
    /// occurrence, in input order (NutchWAX dedup-cdx).
    Dups(DupsArgs),
    /// Print the lines of WARC revisit records (NutchWAX revisits).
    Revisits(RevisitsArgs),
    /// Every capture date of every (urlkey, digest) version, sorted by urlkey then
    /// digest (NutchWAX add-dates input); external sort in bounded memory.
    Dates(DatesArgs),
}

#[derive(Debug, Args)]
pub struct DupsArgs {
    /// CDX (legend or 7/9/10/11/12/13/14 fields) or CDXJ files; gzip/zstd detected;
    /// `-` is stdin.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the original CDX lines instead of `urlkey sha1:DIGEST timestamp`.
    #[arg(long)]
    pub lines: bool,
    /// Output file (default stdout); `.gz` / `.zst` compress.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Where the "seen" set lives, for the commands that can share it.
#[derive(Debug, Args, Default)]
pub struct StoreArgs {
    /// Keep the seen versions in Redis / Valkey, `redis://HOST:PORT[,HOST:PORT...]`
    /// (`valkey://`, `rediss://` for TLS), shared with other runs; default: in memory.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// A file holding the Redis / Valkey password (first line).
    #[arg(long, value_name = "FILE")]
    pub store_password_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RevisitsArgs {
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Also count lines whose file name is `-` as revisits (pywb's rule).
    #[arg(long)]
    pub filename_dash: bool,
    /// Print the original CDX lines instead of `urlkey sha1:DIGEST timestamp`.
    #[arg(long)]
    pub lines: bool,
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DatesArgs {
    /// CDX / CDXJ files.
    pub files: Vec<PathBuf>,
    /// Dates files (`urlkey sha1:DIGEST DATE...`, e.g. an earlier output) or `.dup`
    /// files of `cdx dups` to merge with; repeatable.
    #[arg(long)]
    pub merge: Vec<PathBuf>,
    /// Memory for the sort buffer (e.g. 512M, 2G).
    #[arg(long, default_value = "1G", value_parser = util::parse_size)]
    pub memory: u64,
    /// Directory for sort runs (default: the system temporary directory).
    #[arg(long)]
    pub tmp_dir: Option<PathBuf>,
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Runs a `cdx` subcommand with the embedded in-memory store. Returns the exit code:
/// 0 ok, 1 some input was reported bad (the rest was processed). Fatal errors
/// (output not writable...) are `Err` (exit code 2).
pub fn run_cdx(cmd: &CdxCommand) -> anyhow::Result<i32> {
    run_cdx_with_store(cmd, None)
}

/// [`run_cdx`] with the "seen" set in `store` (a persisted store, the server
/// cluster...) instead of a fresh in-memory one. Only `cdx dups` uses a store.
pub fn run_cdx_with_store(cmd: &CdxCommand, store: Option<&dyn Store>) -> anyhow::Result<i32> {
    let mut report = Report::default();
    match cmd {
        CdxCommand::Dups(a) => {
            let files = inputs::expand(&a.files, true, true, &mut report)?;
            // Presized for about one key per 100 bytes of (uncompressed) input, so the
            // table rarely grows; 9 bytes per key.
            let mem;
            let store = match store {
                Some(s) => s,
                None => {
                    let bytes: u64 = files
                        .iter()
                        .filter_map(|f| std::fs::metadata(f).ok())
                        .map(|m| m.len())
                        .sum();
                    let keys = (bytes / 100).min(1 << 31) as usize;
                    mem = MemStore::with_capacity(webdedup_store::DEFAULT_BLOCKS, keys);
                    &mem as &dyn Store
                }
            };
            let mut out = Out::create(a.output.as_deref())?;
            let s = cdx_cmd::dups(&files, a.lines, store, &mut out, &mut report)?;
            out.finish()?;
            eprintln!(
                "webdedup cdx dups: {} lines, {} duplicates, {} without digest, {} bad lines",
                s.lines, s.printed, s.no_digest, s.bad
            );
        }
        CdxCommand::Revisits(a) => {
            let files = inputs::expand(&a.files, true, true, &mut report)?;
            let mut out = Out::create(a.output.as_deref())?;
            let s = cdx_cmd::revisits(&files, a.lines, a.filename_dash, &mut out, &mut report)?;
            out.finish()?;
            eprintln!(
                "webdedup cdx revisits: {} lines, {} revisits, {} bad lines",
                s.lines, s.printed, s.bad
            );
        }
        CdxCommand::Dates(a) => {
            let files = inputs::expand(&a.files, true, true, &mut report)?;
            let opts = dates::DatesOptions {
                memory: a.memory,
                tmp_dir: a.tmp_dir.clone(),
                ..Default::default()
            };
            let mut out = Out::create(a.output.as_deref())?;
            let s = dates::dates(&files, &a.merge, &opts, &mut out, &mut report)?;
            out.finish()?;
            eprintln!(
                "webdedup cdx dates: {} lines, {} versions, {} without digest, {} bad lines, {} sort runs",
                s.lines, s.versions, s.no_digest, s.bad, s.runs
            );
        }
    }
    Ok(report.exit_code())
}

/// `webdedup warc ...`
#[derive(Debug, Subcommand)]
pub enum WarcCommand {
    /// CDXJ (default) or 11-field CDX index of WARC / ARC files, as cdxj-indexer.
    Index(IndexArgs),
    /// Rewrite WARC files, replacing repeated payloads by revisit records.
    Dedup(DedupArgs),
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// WARC or ARC files: gzip per record, whole-file gzip or uncompressed.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "cdxj")]
    pub format: IndexFormat,
    /// Record types to index, comma-separated, or `all`.
    #[arg(long, default_value = "response,revisit,resource,metadata")]
    pub records: String,
    /// Files indexed in parallel (default: the number of CPUs); output order is the
    /// file order whatever the value.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output file (default stdout); `.gz` / `.zst` compress.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DedupArgs {
    /// Input WARC files, processed in order (earlier captures are the originals).
    #[arg(short, long = "input", required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    /// Output file (one input) or directory (several inputs, or an existing
    /// directory): files keep their names.
    #[arg(short, long)]
    pub output: PathBuf,
    /// What makes two responses duplicates.
    #[arg(long, value_enum, default_value = "digest")]
    pub by: DedupBy,
    /// First-capture locations: loaded when the file exists, saved (merged) at the
    /// end, so later crawls dedup against earlier ones.
    #[arg(long)]
    pub locations: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Runs a `warc` subcommand with the embedded in-memory store. Exit codes as
/// [`run_cdx`].
pub fn run_warc(cmd: &WarcCommand) -> anyhow::Result<i32> {
    run_warc_with_store(cmd, None)
}

/// [`run_warc`] with the "seen" set in `store` instead of a fresh in-memory one.
/// Only `warc dedup` uses a store. With a shared store, keep `--locations` too: a
/// duplicate whose first capture is not in the locations is kept, not replaced.
pub fn run_warc_with_store(cmd: &WarcCommand, store: Option<&dyn Store>) -> anyhow::Result<i32> {
    let mut report = Report::default();
    match cmd {
        WarcCommand::Index(a) => {
            // Records are read by offset: files, not standard input.
            let files = inputs::expand(&a.files, true, false, &mut report)?;
            let types = index::record_filter(&a.records);
            let mut out = Out::create(a.output.as_deref())?;
            let start = std::time::Instant::now();
            let s = index::index(
                &files,
                a.format,
                types.as_deref(),
                a.threads.unwrap_or_else(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(1)
                }),
                &mut out,
                &mut report,
            )?;
            out.finish()?;
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            let shared = if s.shared_member > 0 {
                format!(
                    ", {} not indexable (in shared gzip members)",
                    s.shared_member
                )
            } else {
                String::new()
            };
            eprintln!(
                "webdedup warc index: {} files, {} records, {} indexed{shared}, {:.1} MB/s",
                s.files,
                s.records,
                s.indexed,
                s.bytes as f64 / 1e6 / secs
            );
        }
        WarcCommand::Dedup(a) => {
            // Outputs keep the inputs' file names: files only, not directories.
            let files = inputs::expand(&a.inputs, false, false, &mut report)?;
            let mem;
            let store = match store {
                Some(s) => s,
                None => {
                    mem = MemStore::default();
                    &mem as &dyn Store
                }
            };
            let mut locations = match &a.locations {
                Some(p) if p.exists() => dedup::Locations::load(p, store, &mut report)?,
                _ => dedup::Locations::default(),
            };
            let start = std::time::Instant::now();
            let s = dedup::dedup(&files, &a.output, a.by, store, &mut locations, &mut report)?;
            if let Some(p) = &a.locations {
                locations.save(p)?;
            }
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            eprintln!(
                "webdedup warc dedup: {} files, {} records, {} responses, {} revisits written, {} duplicates kept as they are ({} named by revisits, {} not smaller as revisits, {} with their original's record ID), {} revisits retargeted, {} unresolved, {} payload digest mismatches, {} -> {} bytes ({} saved, {:.1}%), {:.1} MB/s",
                s.files,
                s.records,
                s.responses,
                s.revisits_written,
                s.duplicates_kept,
                s.kept_referenced,
                s.kept_not_smaller,
                s.kept_same_id,
                s.revisits_retargeted,
                s.revisits_unresolved,
                s.digest_mismatch,
                s.bytes_in,
                s.bytes_out,
                s.bytes_in as i64 - s.bytes_out as i64,
                if s.bytes_in > 0 { 100.0 * (s.bytes_in as f64 - s.bytes_out as f64) / s.bytes_in as f64 } else { 0.0 },
                s.bytes_in as f64 / 1e6 / secs
            );
        }
    }
    Ok(report.exit_code())
}
