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
//!
//! ```
//! // The key CDX indexes sort and dedup by: cdxj-indexer's SURT.
//! use webdedup_archive::surt::url_key;
//! assert_eq!(url_key("http://www.Example.org/a?b=1"), "org,example)/a?b=1");
//! ```

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

use webdedup_store::{MemStore, Store};

pub use dedup::DedupBy;
pub use index::IndexFormat;

use crate::util::{Out, Report};
use webdedup_formats::summary::{count, thousands, Outcome};

/// A `webdedup cdx ...` command with its options (the command line's flags are
/// in the binary; these are the plain options they become).
#[derive(Debug, Clone)]
pub enum CdxCommand {
    /// Every capture whose (urlkey, digest) was already seen (NutchWAX dedup-cdx).
    Dups(CdxDupsOptions),
    /// The lines of WARC revisit records (NutchWAX revisits).
    Revisits(CdxRevisitsOptions),
    /// Every capture date of every (urlkey, digest) version (NutchWAX add-dates input).
    Dates(CdxDatesOptions),
}

/// `cdx dups`.
#[derive(Debug, Clone, Default)]
pub struct CdxDupsOptions {
    /// CDX or CDXJ files or directories; `-` is standard input.
    pub files: Vec<PathBuf>,
    /// Print the original CDX lines instead of `urlkey sha1:DIGEST timestamp`.
    pub lines: bool,
    /// Output file (None: standard output); `.gz` / `.zst` compress.
    pub output: Option<PathBuf>,
}

/// `cdx revisits`.
#[derive(Debug, Clone, Default)]
pub struct CdxRevisitsOptions {
    /// CDX or CDXJ files or directories; `-` is standard input.
    pub files: Vec<PathBuf>,
    /// Also count lines whose file name is `-` as revisits (pywb's rule).
    pub filename_dash: bool,
    /// Print the original CDX lines instead of `urlkey sha1:DIGEST timestamp`.
    pub lines: bool,
    /// Output file (None: standard output).
    pub output: Option<PathBuf>,
}

/// The sort buffer of `cdx dates` unless told otherwise (bytes).
pub const DEFAULT_SORT_MEMORY: u64 = 1 << 30;

/// `cdx dates`.
#[derive(Debug, Clone)]
pub struct CdxDatesOptions {
    /// CDX / CDXJ files or directories; `-` is standard input.
    pub files: Vec<PathBuf>,
    /// Dates files (or `.dup` files of `cdx dups`) to merge with.
    pub merge: Vec<PathBuf>,
    /// Memory for the sort buffer, in bytes.
    pub memory: u64,
    /// Directory for sort runs (None: the system temporary directory).
    pub tmp_dir: Option<PathBuf>,
    /// Output file (None: standard output).
    pub output: Option<PathBuf>,
}

impl Default for CdxDatesOptions {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            merge: Vec::new(),
            memory: DEFAULT_SORT_MEMORY,
            tmp_dir: None,
            output: None,
        }
    }
}

/// Runs a `cdx` subcommand with the embedded in-memory store, printing its summary.
/// Returns the exit code: 0 ok, 1 some input was reported bad (the rest was
/// processed). Fatal errors (output not writable...) are `Err` (exit code 2).
pub fn run_cdx(cmd: &CdxCommand) -> anyhow::Result<i32> {
    printed(cdx_outcome(cmd, None))
}

/// Prints the summary of a command's outcome; its exit code.
fn printed(outcome: anyhow::Result<Outcome>) -> anyhow::Result<i32> {
    let o = outcome?;
    eprintln!("{}", o.summary());
    Ok(o.status)
}

/// The outcome of `run`, with the status its reported problems give.
fn reported(run: impl FnOnce(&mut Report) -> anyhow::Result<Outcome>) -> anyhow::Result<Outcome> {
    let mut report = Report::default();
    let mut o = run(&mut report)?;
    o.status = report.exit_code();
    Ok(o)
}

/// Runs a `cdx` subcommand; what it did is in the [`Outcome`] (the command line
/// shows its summary and figures as the conventions say). The "seen" set of `cdx
/// dups` is in `store` (a persisted store, the server cluster...) when given,
/// else in a fresh in-memory one.
pub fn cdx_outcome(cmd: &CdxCommand, store: Option<&dyn Store>) -> anyhow::Result<Outcome> {
    reported(|report| {
        Ok(match cmd {
            CdxCommand::Dups(a) => {
                let files = inputs::expand(&a.files, true, true, report)?;
                // Presized for about one key per 100 bytes of (uncompressed) input, so the
                // table rarely grows; 9 bytes per key.
                let mut mem = None;
                let store = store.unwrap_or_else(|| {
                    let bytes: u64 = files
                        .iter()
                        .filter_map(|f| std::fs::metadata(f).ok())
                        .map(|m| m.len())
                        .sum();
                    let keys = (bytes / 100).min(1 << 31) as usize;
                    mem.insert(MemStore::with_capacity(
                        webdedup_store::DEFAULT_BLOCKS,
                        keys,
                    ))
                });
                let s = Out::written(a.output.as_deref(), |out| {
                    cdx_cmd::dups(&files, a.lines, store, out, report)
                })?;
                let mut o = Outcome::new("cdx dups");
                o.count("lines", s.lines, "line", "lines").count(
                    "duplicates",
                    s.printed,
                    "duplicate",
                    "duplicates",
                );
                unread_lines(&mut o, s.no_digest, s.bad);
                o
            }
            CdxCommand::Revisits(a) => {
                let files = inputs::expand(&a.files, true, true, report)?;
                let s = Out::written(a.output.as_deref(), |out| {
                    cdx_cmd::revisits(&files, a.lines, a.filename_dash, out, report)
                })?;
                let mut o = Outcome::new("cdx revisits");
                o.count("lines", s.lines, "line", "lines")
                    .count("revisits", s.printed, "revisit", "revisits")
                    .count("bad_lines", s.bad, "bad line", "bad lines");
                o
            }
            CdxCommand::Dates(a) => {
                let files = inputs::expand(&a.files, true, true, report)?;
                let opts = dates::DatesOptions {
                    memory: a.memory,
                    tmp_dir: a.tmp_dir.clone(),
                    ..Default::default()
                };
                let s = Out::written(a.output.as_deref(), |out| {
                    dates::dates(&files, &a.merge, &opts, out, report)
                })?;
                let mut o = Outcome::new("cdx dates");
                o.count("lines", s.lines, "line", "lines")
                    .count("versions", s.versions, "version", "versions");
                unread_lines(&mut o, s.no_digest, s.bad).count(
                    "sort_runs",
                    s.runs,
                    "sort run",
                    "sort runs",
                );
                o
            }
        })
    })
}

/// The CDX lines a command passed over: those without a digest, and bad ones.
fn unread_lines(o: &mut Outcome, no_digest: u64, bad: u64) -> &mut Outcome {
    o.count(
        "without_digest",
        no_digest,
        "without digest",
        "without digest",
    )
    .count("bad_lines", bad, "bad line", "bad lines")
}

/// A `webdedup warc ...` command with its options.
#[derive(Debug, Clone)]
pub enum WarcCommand {
    /// CDXJ or 11-field CDX index of WARC / ARC files, as cdxj-indexer.
    Index(WarcIndexOptions),
    /// Rewrite WARC files, replacing repeated payloads by revisit records.
    Dedup(WarcDedupOptions),
}

/// `warc index`.
#[derive(Debug, Clone)]
pub struct WarcIndexOptions {
    /// WARC or ARC files or directories.
    pub files: Vec<PathBuf>,
    /// Index layout.
    pub format: IndexFormat,
    /// Record types to index: `all`, or a comma-separated list checked by
    /// [`index::parse_records`].
    pub records: String,
    /// Files indexed in parallel (None: the number of CPUs); output order is the
    /// file order whatever the value.
    pub threads: Option<usize>,
    /// Output file (None: standard output); `.gz` / `.zst` compress.
    pub output: Option<PathBuf>,
}

impl Default for WarcIndexOptions {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            format: IndexFormat::Cdxj,
            records: index::DEFAULT_RECORDS.join(","),
            threads: None,
            output: None,
        }
    }
}

/// `warc dedup`.
#[derive(Debug, Clone)]
pub struct WarcDedupOptions {
    /// WARC files or directories, processed in order (earlier captures are the
    /// originals).
    pub inputs: Vec<PathBuf>,
    /// Output file (one input) or directory (several inputs, or an existing
    /// directory).
    pub output: PathBuf,
    /// What makes two responses duplicates.
    pub by: DedupBy,
    /// First-capture locations: loaded when the file exists, saved (merged) at the end.
    pub locations: Option<PathBuf>,
}

/// Runs a `warc` subcommand with the embedded in-memory store, printing its
/// summary. Exit codes as [`run_cdx`].
pub fn run_warc(cmd: &WarcCommand) -> anyhow::Result<i32> {
    printed(warc_outcome(cmd, None))
}

/// Runs a `warc` subcommand; what it did is in the [`Outcome`]. The "seen" set of
/// `warc dedup` is in `store` when given, else in a fresh in-memory one. With a
/// shared store, keep `--locations` too: a version the store has seen whose first
/// capture is not in the locations is first captured again (kept as it is), never
/// replaced by a revisit.
pub fn warc_outcome(cmd: &WarcCommand, store: Option<&dyn Store>) -> anyhow::Result<Outcome> {
    reported(|report| {
        Ok(match cmd {
            WarcCommand::Index(a) => {
                // Records are read by offset: files, not standard input.
                let files = inputs::expand(&a.files, true, false, report)?;
                let types = index::record_filter(&a.records);
                let threads = a.threads.unwrap_or_else(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(1)
                });
                let start = std::time::Instant::now();
                let s = Out::written(a.output.as_deref(), |out| {
                    index::index(&files, a.format, types.as_deref(), threads, out, report)
                })?;
                let secs = start.elapsed().as_secs_f64().max(1e-9);
                let mut o = Outcome::new("warc index");
                o.count("files", s.files, "file", "files")
                    .count("records", s.records, "record", "records")
                    .number(s.indexed, "indexed")
                    .figure("indexed", s.indexed);
                if s.shared_member > 0 {
                    o.note(format!(
                        "{} not indexable (in shared gzip members)",
                        thousands(s.shared_member)
                    ));
                }
                o.figure("not_indexable_shared_member", s.shared_member)
                    .figure("bytes", s.bytes)
                    .figure("seconds", secs)
                    .note(format!("{:.1} MB/s", s.bytes as f64 / 1e6 / secs));
                o
            }
            WarcCommand::Dedup(a) => {
                // Directories are searched; outputs keep the files' names (paths below
                // the inputs' common directory when names repeat). Not standard input:
                // records are read by offset.
                let files = inputs::expand(&a.inputs, true, false, report)?;
                let mut mem = None;
                let store = store.unwrap_or_else(|| mem.insert(MemStore::default()));
                let mut locations = match &a.locations {
                    Some(p) if p.exists() => dedup::Locations::load(p, store, report)?,
                    _ => dedup::Locations::default(),
                };
                let start = std::time::Instant::now();
                let s = dedup::dedup(&files, &a.output, a.by, store, &mut locations, report)?;
                if let Some(p) = &a.locations {
                    locations.save(p)?;
                }
                let secs = start.elapsed().as_secs_f64().max(1e-9);
                let mut o = Outcome::new("warc dedup");
                o.count("files", s.files, "file", "files")
                .count("records", s.records, "record", "records")
                .count("responses", s.responses, "response", "responses")
                .note(format!(
                    "{} written",
                    count(s.revisits_written, "revisit", "revisits")
                ))
                .figure("revisits_written", s.revisits_written)
                .note(format!(
                    "{} kept as they are ({} named by revisits, {} not smaller as revisits, {} with their original's record ID, {} not replaceable in place)",
                    count(s.duplicates_kept, "duplicate", "duplicates"),
                    thousands(s.kept_referenced),
                    thousands(s.kept_not_smaller),
                    thousands(s.kept_same_id),
                    thousands(s.kept_not_replaceable)
                ))
                .figure("duplicates_kept", s.duplicates_kept)
                .figure("kept_named_by_revisits", s.kept_referenced)
                .figure("kept_not_smaller", s.kept_not_smaller)
                .figure("kept_same_record_id", s.kept_same_id)
                .figure("kept_not_replaceable", s.kept_not_replaceable);
                if s.first_captures_adopted > 0 {
                    o.note(format!(
                    "{} seen in the store without a known first capture (an earlier run that failed, or another process): first captured here",
                    count(s.first_captures_adopted, "version", "versions")
                ));
                }
                o.figure("first_captures_adopted", s.first_captures_adopted)
                    .note(format!(
                        "{} retargeted",
                        count(s.revisits_retargeted, "revisit", "revisits")
                    ))
                    .figure("revisits_retargeted", s.revisits_retargeted)
                    .number(s.revisits_unresolved, "unresolved")
                    .figure("revisits_unresolved", s.revisits_unresolved)
                    .count(
                        "payload_digest_mismatches",
                        s.digest_mismatch,
                        "payload digest mismatch",
                        "payload digest mismatches",
                    )
                    .note(format!(
                        "{} -> {} bytes ({})",
                        thousands(s.bytes_in),
                        thousands(s.bytes_out),
                        saved(s.bytes_in, s.bytes_out)
                    ))
                    .figure("bytes_in", s.bytes_in)
                    .figure("bytes_out", s.bytes_out)
                    .figure("seconds", secs)
                    .note(format!("{:.1} MB/s", s.bytes_in as f64 / 1e6 / secs));
                o
            }
        })
    })
}

/// `123,030 saved, 15.1%`, or `2,388 more, 0.3%` when the output grew.
fn saved(bytes_in: u64, bytes_out: u64) -> String {
    let share = |d: u64| {
        if bytes_in > 0 {
            100.0 * d as f64 / bytes_in as f64
        } else {
            0.0
        }
    };
    if bytes_out <= bytes_in {
        let d = bytes_in - bytes_out;
        format!("{} saved, {:.1}%", thousands(d), share(d))
    } else {
        let d = bytes_out - bytes_in;
        format!("{} more, {:.1}%", thousands(d), share(d))
    }
}
