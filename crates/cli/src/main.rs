//! `webdedup`: the command line. Subcommands only; the work is in the library crates.

mod batch;
mod check;
mod conventions;
mod convert;
mod dedup;
mod distribute;
mod flags;
mod hint;
mod minhash;
mod preflight;
mod read_args;
mod remote;
mod report;
mod server;
mod status;
mod substr;
mod summaries;

use clap::{Parser, Subcommand};
use std::path::Path;
use std::process::ExitCode;
use webdedup_formats::output::NewDirs;
use webdedup_text::shown::escape_controls;

use conventions::{Reporting, Threads};
pub use conventions::{EXIT_FATAL, EXIT_INPUT_PROBLEMS, EXIT_OK, EXIT_STOPPED};
use webdedup_archive::{CdxCommand, WarcCommand};

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
    /// Exact dedup of documents (verticals, JSON Lines, Parquet, WET): keep the first instance of
    /// every document and every long paragraph (the KNOT worker).
    Dedup(dedup::DedupArgs),
    /// Near-duplicate documents by MinHash LSH, in stream mode: a document is dropped
    /// when one of its band keys was inserted by an earlier kept document (its
    /// original, named in `STEM.dedup.pairs`). Same inputs, stores and outputs as `dedup`.
    Minhash(minhash::MinhashArgs),
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
    /// 64-bit SimHash fingerprints of documents (verticals, JSON Lines, Parquet, WET, plain text).
    Simhash {
        #[command(flatten)]
        args: flags::simhash::SimhashFlags,
        #[command(flatten)]
        threads: Threads,
        #[command(flatten)]
        report: Reporting,
    },
    /// Near-duplicate documents by SimHash: all pairs within k bits, clusters, dedup,
    /// and an incremental index.
    Similar {
        #[command(flatten)]
        args: flags::simhash::SimilarFlags,
        #[command(flatten)]
        threads: Threads,
        #[command(flatten)]
        report: Reporting,
    },
    /// Web-archive dedup over CDX/CDXJ indexes (NutchWAX dedup-cdx, revisits, add-dates).
    #[command(subcommand)]
    Cdx(CdxCmd),
    /// WARC/ARC files: build CDX(J) indexes, rewrite repeated payloads as revisit records.
    #[command(subcommand)]
    Warc(WarcCmd),
    /// One self-contained HTML page of what runs removed (totals per crawl, language,
    /// domain; similarity histograms; drops beside their originals): docs/report.md.
    Report(report::ReportArgs),
    /// Verticals to JSON Lines by the shared corpus's rules (samples, tests).
    #[command(hide = true)]
    ToJsonl(convert::ToJsonlArgs),
}

/// `webdedup cdx ...`: the archive crate's commands with the shared options.
#[derive(Subcommand)]
enum CdxCmd {
    /// Print every capture whose (urlkey, digest) was already seen: all but the first
    /// occurrence, in input order (NutchWAX dedup-cdx).
    Dups {
        #[command(flatten)]
        args: flags::archive::DupsFlags,
        #[command(flatten)]
        report: Reporting,
    },
    /// Print the lines of WARC revisit records (NutchWAX revisits).
    Revisits {
        #[command(flatten)]
        args: flags::archive::RevisitsFlags,
        #[command(flatten)]
        report: Reporting,
    },
    /// Every capture date of every (urlkey, digest) version, sorted by urlkey then
    /// digest (NutchWAX add-dates input); external sort in bounded memory.
    Dates {
        #[command(flatten)]
        args: flags::archive::DatesFlags,
        #[command(flatten)]
        report: Reporting,
    },
}

/// `webdedup warc ...`: the archive crate's commands with the shared options.
#[derive(Subcommand)]
enum WarcCmd {
    /// CDXJ (default) or 11-field CDX index of WARC / ARC files, as cdxj-indexer.
    Index {
        #[command(flatten)]
        args: flags::archive::IndexFlags,
        #[command(flatten)]
        threads: Threads,
        #[command(flatten)]
        report: Reporting,
    },
    /// Rewrite WARC files, replacing repeated payloads by revisit records.
    Dedup {
        #[command(flatten)]
        args: flags::archive::WarcDedupFlags,
        #[command(flatten)]
        report: Reporting,
    },
}

/// Runs a `cdx` command under the conventions.
fn run_cdx(cmd: &CdxCmd) -> anyhow::Result<u8> {
    let (lib, files, output, report) = match cmd {
        CdxCmd::Dups { args, report } => (
            CdxCommand::Dups(args.options()),
            &args.files.paths,
            &args.output,
            report,
        ),
        CdxCmd::Revisits { args, report } => (
            CdxCommand::Revisits(args.options()),
            &args.files.paths,
            &args.output,
            report,
        ),
        CdxCmd::Dates { args, report } => (
            CdxCommand::Dates(args.options()),
            &args.files.paths,
            &args.output,
            report,
        ),
    };
    let store = remote::archive_store(match cmd {
        CdxCmd::Dups { args, .. } => Some(&args.store),
        _ => None,
    })?;
    report.run("reading indexes", files, 1, output.is_none(), || {
        webdedup_archive::cdx_outcome(&lib, store.as_deref())
    })
}

/// Runs a `warc` command under the conventions.
fn run_warc(cmd: &WarcCmd) -> anyhow::Result<u8> {
    match cmd {
        WarcCmd::Index {
            args,
            threads,
            report,
        } => {
            let a = args.options(threads.count());
            report.run(
                "indexing",
                &args.files.paths,
                1,
                args.output.is_none(),
                || webdedup_archive::warc_outcome(&WarcCommand::Index(a), None),
            )
        }
        WarcCmd::Dedup { args, report } => {
            let store = remote::archive_store(Some(&args.store))?;
            let lib = WarcCommand::Dedup(args.options());
            report.run("deduplicating", &args.files.paths, 1, false, || {
                webdedup_archive::warc_outcome(&lib, store.as_deref())
            })
        }
    }
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
    match cmd {
        Command::Dedup(a) => Some(&a.out.output),
        Command::Minhash(a) => Some(&a.dedup.out.output),
        Command::Cdx(CdxCmd::Dups { args, .. }) => args.output.as_deref(),
        Command::Cdx(CdxCmd::Revisits { args, .. }) => args.output.as_deref(),
        Command::Cdx(CdxCmd::Dates { args, .. }) => args.output.as_deref(),
        Command::Warc(WarcCmd::Index { args, .. }) => args.output.as_deref(),
        Command::Warc(WarcCmd::Dedup { args, .. }) => Some(&args.output),
        _ => None,
    }
}

/// How a command that stopped half-way is finished (commands that write no
/// outputs have nothing to finish).
fn resume_of(cmd: &Command) -> Option<hint::Resume> {
    match cmd {
        Command::Dedup(_) | Command::Minhash(_) => Some(hint::Resume::Restore),
        Command::Batch(_)
        | Command::ToJsonl(_)
        | Command::Simhash { .. }
        | Command::Similar { .. }
        | Command::Cdx(_)
        | Command::Warc(_) => Some(hint::Resume::RunAgain),
        Command::Check(_)
        | Command::Server(_)
        | Command::Distribute(_)
        | Command::Status(_)
        | Command::Report(_) => None,
    }
}

/// The inputs a command names on its command line (files or directories).
fn named_inputs(cmd: &Command) -> Vec<&Path> {
    fn paths(v: &[std::path::PathBuf]) -> Vec<&Path> {
        v.iter().map(|p| p.as_path()).collect()
    }
    match cmd {
        Command::Dedup(a) => paths(&a.input),
        Command::Minhash(a) => paths(&a.dedup.input),
        Command::ToJsonl(a) => paths(&a.input),
        Command::Check(a) => [paths(&a.input), vec![a.output.as_path()]].concat(),
        Command::Batch(b) => paths(b.input_and_work().0),
        Command::Status(a) => paths(&a.input),
        Command::Simhash { args, .. } => paths(&args.files),
        Command::Similar { args, .. } => paths(&args.files),
        Command::Cdx(CdxCmd::Dups { args, .. }) => paths(&args.files),
        Command::Cdx(CdxCmd::Revisits { args, .. }) => paths(&args.files),
        Command::Cdx(CdxCmd::Dates { args, .. }) => {
            [paths(&args.files), paths(&args.merge)].concat()
        }
        Command::Warc(WarcCmd::Index { args, .. }) => paths(&args.files),
        Command::Warc(WarcCmd::Dedup { args, .. }) => paths(&args.files),
        Command::Report(a) => paths(&a.runs),
        Command::Server(_) | Command::Distribute(_) => Vec::new(),
    }
}

/// Before anything is created: the named inputs exist, and an input directory
/// holds input files (nothing to do is a usage error, as a missing input is).
fn preflight(cmd: &Command) -> anyhow::Result<()> {
    preflight::inputs_exist(named_inputs(cmd))?;
    let output = output_of(cmd);
    match cmd {
        Command::Batch(batch::BatchCommand::Publish(_)) => Ok(()),
        Command::Batch(b) => {
            let (input, work) = b.input_and_work();
            preflight::has_input_files(input, Some(work))
        }
        Command::Check(a) => preflight::has_input_files(&a.input, Some(&a.output)),
        Command::Status(a) => match &a.output {
            Some(o) => preflight::has_input_files(&a.input, Some(o)),
            None => Ok(()),
        },
        // Every other command: its named inputs, leaving out its output.
        _ => {
            let inputs: Vec<std::path::PathBuf> = named_inputs(cmd)
                .into_iter()
                .map(Path::to_path_buf)
                .collect();
            preflight::has_input_files(&inputs, output)
        }
    }
}

/// Whether `e` comes from writing to a pipe whose reader went away.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
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
        Command::Minhash(args) => minhash::run(args),
        Command::Check(args) => check::run(args),
        Command::Batch(cmd) => batch::run(cmd),
        Command::Server(args) => server::run(args),
        Command::Distribute(args) => distribute::run(args),
        Command::Status(args) => status::run(args),
        Command::ToJsonl(args) => convert::run(args),
        Command::Simhash {
            args,
            threads,
            report,
        } => {
            let a = args.options(threads.count())?;
            report.run(
                "fingerprinting",
                &args.files,
                1,
                args.output.is_none(),
                || webdedup_simhash::simhash_outcome(&a),
            )
        }
        Command::Similar {
            args,
            threads,
            report,
        } => {
            let a = args.options(threads.count())?;
            // --dedup reads every input again to write it back.
            let passes = if args.dedup { 2 } else { 1 };
            let on_stdout = !args.dedup && args.output.is_none();
            // What `webdedup report` reads: the pairs or clusters, or the dedup report.
            let shown = (args.output.as_ref())
                .or(args.report.as_ref())
                .or(args.output_dir.as_ref());
            report.run("comparing", &args.files, passes, on_stdout, || {
                let mut o = webdedup_simhash::similar_outcome(&a)?;
                if let Some(p) = shown {
                    summaries::see_report(&mut o, p, &report.json, true);
                }
                Ok(o)
            })
        }
        Command::Cdx(cmd) => run_cdx(cmd),
        Command::Warc(cmd) => run_warc(cmd),
        Command::Report(args) => report::run(args),
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
            if let (Some(cause), Some(resume)) = (hint::cause_of(&e), resume_of(&cli.command)) {
                eprintln!("webdedup: hint: {}", hint::what_to_do(cause, resume));
            }
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

    /// What the conventions give a command besides its inputs.
    #[derive(Clone, Copy, PartialEq)]
    enum Gives {
        /// Inputs only.
        Inputs,
        /// `-q/--quiet`, `--progress` and `--json` too.
        Reporting,
        /// Those and `-t/--threads`.
        Threads,
    }

    /// Every command that reads inputs, with what else it has.
    const COMMANDS: [(&[&str], Gives); 19] = [
        (&["dedup"], Gives::Threads),
        (&["minhash"], Gives::Inputs),
        (&["check"], Gives::Reporting),
        (&["status"], Gives::Inputs),
        (&["batch", "hash"], Gives::Inputs),
        (&["batch", "resolve"], Gives::Inputs),
        (&["batch", "filter"], Gives::Inputs),
        (&["batch", "publish"], Gives::Inputs),
        (&["batch", "run"], Gives::Threads),
        (&["batch", "substr"], Gives::Reporting),
        (&["cdx", "dups"], Gives::Reporting),
        (&["cdx", "revisits"], Gives::Reporting),
        (&["cdx", "dates"], Gives::Reporting),
        (&["warc", "index"], Gives::Threads),
        (&["warc", "dedup"], Gives::Reporting),
        (&["to-jsonl"], Gives::Inputs),
        (&["simhash"], Gives::Threads),
        (&["similar"], Gives::Threads),
        (&["report"], Gives::Reporting),
    ];

    /// The command at `path` (`["batch", "run"]`).
    fn command(cli: &clap::Command, path: &[&str]) -> clap::Command {
        let mut c = cli;
        for p in path {
            c = c.find_subcommand(p).unwrap_or_else(|| panic!("no {p}"));
        }
        c.clone()
    }

    fn arg(c: &clap::Command, id: &str) -> Option<clap::Arg> {
        c.get_arguments().find(|a| a.get_id() == id).cloned()
    }

    /// The shared options mean one thing everywhere (docs/cli.md): every command
    /// that runs over inputs has `-q/--quiet`, `--progress` and `--json`, every one
    /// that works on threads `-t/--threads`, all from the conventions' groups; no
    /// command gives `-q`, `-t` or `--json` another meaning.
    #[test]
    fn every_command_follows_the_conventions() {
        let cli = Cli::command();
        for (path, gives) in COMMANDS.iter().filter(|(_, g)| *g != Gives::Inputs) {
            let c = command(&cli, path);
            let q = arg(&c, "quiet").unwrap_or_else(|| panic!("{path:?} has no --quiet"));
            assert_eq!(q.get_short(), Some('q'), "{path:?}");
            assert!(arg(&c, "progress").is_some(), "{path:?} has no --progress");
            assert!(arg(&c, "json").is_some(), "{path:?} has no --json");
            if *gives == Gives::Threads {
                let t = arg(&c, "threads").unwrap_or_else(|| panic!("{path:?} has no --threads"));
                assert_eq!(t.get_short(), Some('t'), "{path:?}");
            }
        }
        // Everywhere: a short flag means one thing (the old meanings of server's
        // -i/-o/-s, distribute's -q/-f/-d and check's -n are hidden aliases), and
        // --json takes FILE|-.
        fn walk(c: &clap::Command, path: String) {
            for a in c.get_arguments() {
                let long = match a.get_short() {
                    Some('q') => "quiet",
                    Some('t') => "threads",
                    Some('n') => "near",
                    Some('f') => "feedback",
                    Some('d') => "dd",
                    Some('i') => "input",
                    Some('o') => "output",
                    Some('s') => "servers",
                    _ => continue,
                };
                assert_eq!(a.get_long(), Some(long), "{path}: -{:?}", a.get_short());
            }
            for a in c.get_arguments() {
                if a.get_long() == Some("json") {
                    let names = a.get_value_names().map(|v| v.to_vec());
                    assert_eq!(names, Some(vec!["FILE|-".into()]), "{path} --json");
                }
            }
            for s in c.get_subcommands() {
                walk(s, format!("{path} {}", s.get_name()));
            }
        }
        walk(&cli, "webdedup".into());
    }

    /// Inputs are taken one way (positional, `-i/--input` the older form), by
    /// every command that reads inputs: the one definition in `flags::inputs`.
    #[test]
    fn every_command_takes_its_inputs_one_way() {
        use crate::flags::inputs::{INPUTS, INPUT_ALIAS};
        let cli = Cli::command();
        for (path, _) in &COMMANDS {
            let c = command(&cli, path);
            let pos = arg(&c, INPUTS).unwrap_or_else(|| panic!("{path:?}: no positional inputs"));
            assert!(pos.is_positional(), "{path:?}");
            let alias = arg(&c, INPUT_ALIAS).unwrap_or_else(|| panic!("{path:?}: no -i"));
            assert_eq!(alias.get_short(), Some('i'), "{path:?}");
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
