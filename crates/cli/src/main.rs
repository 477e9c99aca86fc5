//! `webdedup`: the command line. Subcommands only; the work is in the library crates.

mod batch;
mod check;
mod convert;
mod dedup;
mod distribute;
mod read_args;
mod remote;
mod server;
mod status;

use clap::{Parser, Subcommand};
use std::path::Path;
use std::process::ExitCode;
use webdedup_formats::output::NewDirs;
use webdedup_formats::shown::escape_controls;

/// Exit status: everything read cleanly.
pub const EXIT_OK: u8 = 0;
/// Exit status: some input was rejected or repaired (reported on stderr); the rest
/// was processed.
pub const EXIT_INPUT_PROBLEMS: u8 = 1;
/// Exit status: the run could not be done (bad usage, unwritable output, ...).
pub const EXIT_FATAL: u8 = 2;
/// Exit status: stopped before the end (by a signal: then 128 + its number);
/// finish with `--restore`.
pub const EXIT_STOPPED: u8 = 3;

#[derive(Parser)]
#[command(
    name = "webdedup",
    version,
    about = "Remove duplicate text from web-scale corpora and web archives"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Exact dedup of documents (verticals, JSON Lines): keep the first instance of
    /// every document and every long paragraph (the KNOT worker).
    Dedup(dedup::DedupArgs),
    /// Follow the references of a feedback-mode run (`dedup -f`) and confirm that
    /// every dropped paragraph repeats its named original; exit 1 on any mismatch.
    Check(check::CheckArgs),
    /// Deterministic batch mode: hash / resolve / filter phases as idempotent tasks
    /// (Slurm arrays, Spark, Ray); outputs equal `webdedup dedup`'s.
    #[command(subcommand)]
    Batch(batch::BatchCommand),
    /// A hash server: owns the blocks a block map gives it and answers workers
    /// (`dedup -s MAP`) and KNOT one-hash clients.
    Server(server::ServerArgs),
    /// Write a block map: which server owns which block (the seed's remainder
    /// method with its 5% optimisation, or --balanced); prints the seed's report.
    Distribute(distribute::DistributeArgs),
    /// Are the servers of a block map up, and how far is a run? Exit 1 if not all is well.
    Status(status::StatusArgs),
    /// 64-bit SimHash fingerprints of documents (verticals, JSON Lines, plain text).
    Simhash(webdedup_simhash::SimhashArgs),
    /// Near-duplicate documents by SimHash: all pairs within k bits, clusters, dedup,
    /// and an incremental index.
    Similar(webdedup_simhash::SimilarArgs),
    /// Web-archive dedup over CDX/CDXJ indexes (NutchWAX dedup-cdx, revisits, add-dates).
    #[command(subcommand)]
    Cdx(webdedup_archive::CdxCommand),
    /// WARC/ARC files: build CDX(J) indexes, rewrite repeated payloads as revisit records.
    #[command(subcommand)]
    Warc(webdedup_archive::WarcCommand),
    /// Verticals to JSON Lines by the shared corpus's rules (samples, tests).
    #[command(hide = true)]
    ToJsonl(convert::ToJsonlArgs),
}

/// Logs of long-running commands (servers) go to stderr through `tracing`;
/// `RUST_LOG` picks the level (default `info`).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// The output path of a command (a file or a directory), for [`NewDirs`]: a run that
/// fails removes the output directories it created and left empty.
fn output_of(cmd: &Command) -> Option<&Path> {
    use webdedup_archive::{CdxCommand, WarcCommand};
    match cmd {
        Command::Dedup(a) => Some(&a.output),
        Command::Cdx(CdxCommand::Dups(a)) => a.output.as_deref(),
        Command::Cdx(CdxCommand::Revisits(a)) => a.output.as_deref(),
        Command::Cdx(CdxCommand::Dates(a)) => a.output.as_deref(),
        Command::Warc(WarcCommand::Index(a)) => a.output.as_deref(),
        Command::Warc(WarcCommand::Dedup(a)) => Some(&a.output),
        _ => None,
    }
}

/// The library crates' exit codes (0, 1) as a process status; anything else is fatal.
fn exit_code(code: i32) -> u8 {
    u8::try_from(code)
        .ok()
        .filter(|&c| c <= EXIT_INPUT_PROBLEMS)
        .unwrap_or(EXIT_FATAL)
}

fn main() -> ExitCode {
    webdedup_store::tune_allocator_for_large_tables();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_FATAL } else { EXIT_OK });
        }
    };
    let new_dirs = output_of(&cli.command).map(NewDirs::before);
    let result = match &cli.command {
        Command::Dedup(args) => dedup::run(args),
        Command::Check(args) => check::run(args),
        Command::Batch(cmd) => batch::run(cmd),
        Command::Server(args) => server::run(args),
        Command::Distribute(args) => distribute::run(args),
        Command::Status(args) => status::run(args),
        Command::ToJsonl(args) => convert::run(args),
        Command::Simhash(args) => webdedup_simhash::run_simhash(args).map(exit_code),
        Command::Similar(args) => webdedup_simhash::run_similar(args).map(exit_code),
        Command::Cdx(cmd) => remote::archive_store(match cmd {
            webdedup_archive::CdxCommand::Dups(a) => Some(&a.store),
            _ => None,
        })
        .and_then(|s| webdedup_archive::run_cdx_with_store(cmd, s.as_deref()))
        .map(exit_code),
        Command::Warc(cmd) => remote::archive_store(match cmd {
            webdedup_archive::WarcCommand::Dedup(a) => Some(&a.store),
            _ => None,
        })
        .and_then(|s| webdedup_archive::run_warc_with_store(cmd, s.as_deref()))
        .map(exit_code),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Errors name files and may quote input: never raw control bytes.
            let msg = format!("{e:#}");
            eprintln!("webdedup: error: {}", escape_controls(&msg));
            if let Some(d) = new_dirs {
                d.remove_empty();
            }
            ExitCode::from(EXIT_FATAL)
        }
    }
}
