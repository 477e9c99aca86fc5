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
pub mod util;

use std::path::PathBuf;

use clap::{Args, Subcommand};
use webdedup_store::MemStore;

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
    /// CDX / CDXJ files (or `.dup` files of `cdx dups`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// An existing dates file (`urlkey sha1:DIGEST DATE...`) to merge with.
    #[arg(long)]
    pub merge: Option<PathBuf>,
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
    let mut report = Report::default();
    match cmd {
        CdxCommand::Dups(a) => {
            let store = MemStore::default();
            let mut out = Out::create(a.output.as_deref())?;
            let s = cdx_cmd::dups(&a.files, a.lines, &store, &mut out, &mut report)?;
            out.finish()?;
            eprintln!(
                "webdedup cdx dups: {} lines, {} duplicates, {} without digest, {} bad lines",
                s.lines, s.printed, s.no_digest, s.bad
            );
        }
        CdxCommand::Revisits(a) => {
            let mut out = Out::create(a.output.as_deref())?;
            let s = cdx_cmd::revisits(&a.files, a.lines, a.filename_dash, &mut out, &mut report)?;
            out.finish()?;
            eprintln!(
                "webdedup cdx revisits: {} lines, {} revisits, {} bad lines",
                s.lines, s.printed, s.bad
            );
        }
        CdxCommand::Dates(a) => {
            let opts = dates::DatesOptions {
                memory: a.memory,
                tmp_dir: a.tmp_dir.clone(),
                ..Default::default()
            };
            let mut out = Out::create(a.output.as_deref())?;
            let s = dates::dates(&a.files, a.merge.as_deref(), &opts, &mut out, &mut report)?;
            out.finish()?;
            eprintln!(
                "webdedup cdx dates: {} lines, {} versions, {} without digest, {} bad lines, {} sort runs",
                s.lines, s.versions, s.no_digest, s.bad, s.runs
            );
        }
    }
    Ok(report.exit_code())
}
