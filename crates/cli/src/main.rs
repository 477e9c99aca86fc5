//! `webdedup`: the command line. Subcommands only; the work is in the library crates.

mod batch;
mod check;
mod convert;
mod dedup;
mod distribute;
mod preflight;
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

/// The inputs a command names on its command line (files or directories).
fn named_inputs(cmd: &Command) -> Vec<&Path> {
    use webdedup_archive::{CdxCommand, WarcCommand};
    fn paths(v: &[std::path::PathBuf]) -> Vec<&Path> {
        v.iter().map(|p| p.as_path()).collect()
    }
    match cmd {
        Command::Dedup(a) => paths(&a.input),
        Command::ToJsonl(a) => paths(&a.input),
        Command::Check(a) => [paths(&a.input), vec![a.output.as_path()]].concat(),
        Command::Batch(b) => paths(b.input_and_work().0),
        Command::Status(a) => a.input.iter().map(|p| p.as_path()).collect(),
        Command::Simhash(a) => paths(&a.files),
        Command::Similar(a) => paths(&a.files),
        Command::Cdx(CdxCommand::Dups(a)) => paths(&a.files),
        Command::Cdx(CdxCommand::Revisits(a)) => paths(&a.files),
        Command::Cdx(CdxCommand::Dates(a)) => [paths(&a.files), paths(&a.merge)].concat(),
        Command::Warc(WarcCommand::Index(a)) => paths(&a.files),
        Command::Warc(WarcCommand::Dedup(a)) => paths(&a.inputs),
        Command::Server(_) | Command::Distribute(_) => Vec::new(),
    }
}

/// Before anything is created: the named inputs exist, and an input directory
/// holds input files (nothing to do is a usage error, as a missing input is).
fn preflight(cmd: &Command) -> anyhow::Result<()> {
    preflight::inputs_exist(named_inputs(cmd))?;
    match cmd {
        Command::Dedup(a) => preflight::has_input_files(&a.input, &a.output),
        Command::Check(a) => preflight::has_input_files(&a.input, &a.output),
        Command::Batch(batch::BatchCommand::Publish(_)) => Ok(()),
        Command::Batch(b) => {
            let (input, work) = b.input_and_work();
            preflight::has_input_files(input, work)
        }
        Command::Status(a) => match (&a.input, &a.output) {
            (Some(i), Some(o)) => preflight::has_input_files(std::slice::from_ref(i), o),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The library crates' exit codes (0, 1) as a process status; anything else is fatal.
fn exit_code(code: i32) -> u8 {
    u8::try_from(code)
        .ok()
        .filter(|&c| c <= EXIT_INPUT_PROBLEMS)
        .unwrap_or(EXIT_FATAL)
}

/// Whether `e` comes from writing to a pipe whose reader went away.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
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
    let result = preflight(&cli.command).and_then(|()| match &cli.command {
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
    });
    match result {
        Ok(code) => ExitCode::from(code),
        // `webdedup ... | head`: the reader has what it wanted. Quiet, status 0,
        // as ripgrep and the Unix tools (the runtime ignores SIGPIPE, so a write
        // to a closed pipe is an error, and every command's ends up here).
        Err(e) if is_broken_pipe(&e) => ExitCode::from(EXIT_OK),
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

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every argument (options and positionals) of every command and subcommand, and
    /// every subcommand, has a description in `--help` (issue 19).
    #[test]
    fn every_argument_of_every_command_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if a.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                let help = a.get_help().or(a.get_long_help()).map(|h| h.to_string());
                if help.is_none_or(|h| h.trim().is_empty()) {
                    let name = a
                        .get_long()
                        .map(|l| format!("--{l}"))
                        .unwrap_or_else(|| id.to_uppercase());
                    missing.push(format!("{path} {name}"));
                }
            }
            for sub in cmd.get_subcommands() {
                let sub_path = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(format!("{sub_path} (the command itself)"));
                }
                walk(sub, &sub_path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "webdedup", &mut missing);
        assert!(
            missing.is_empty(),
            "{} arguments without a description:\n{}",
            missing.len(),
            missing.join("\n")
        );
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
