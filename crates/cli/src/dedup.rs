//! `webdedup dedup`.

use crate::{EXIT_INPUT_PROBLEMS, EXIT_OK};
use anyhow::{Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use webdedup_dedup::{DocCheck, Options, RunConfig};
use webdedup_formats::output::OutputCompression;
use webdedup_store::{MemStore, DEFAULT_BLOCKS};
use webdedup_text::Normalization;

#[derive(Args, Debug)]
pub struct DedupArgs {
    /// Input directory of vertical files (plain, gzip or zstd), or one file.
    #[arg(short, long, value_name = "DIR")]
    input: PathBuf,
    /// Output directory: one `REL.dedup` per input file `REL`.
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Worker threads (the output is the same for any value). Default: all cores.
    #[arg(short, long)]
    threads: Option<usize>,
    /// Text normalization before hashing: `loose` (lowercase, digits to 0, no
    /// punctuation or symbols, collapsed whitespace) or `none`.
    #[arg(long = "normalize", default_value = "loose", value_name = "MODE")]
    normalization: Normalization,
    /// Paragraphs with fewer characters are short: they ride along with the next
    /// long paragraph instead of being looked up.
    #[arg(long, default_value_t = 50, value_name = "N")]
    min_para_chars: usize,
    /// Test the whole-document key of `all` documents, or only of those whose
    /// URL+title repeated (`url-title`, the KNOT worker's shortcut).
    #[arg(long, default_value = "all", value_name = "WHICH")]
    doc_check: DocCheck,
    /// Also write `*.dedup.dd`: one `<dd url=".." title=".." status=".."/>` per input document.
    #[arg(short = 'd', long = "dd")]
    dd: bool,
    /// Compress outputs: `zst`, `gz` or `none`.
    #[arg(long, default_value = "none", value_name = "KIND")]
    compress: OutputCompression,
    /// Write the run's figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No progress bar and no summary (input problems are still reported).
    #[arg(short, long)]
    quiet: bool,
    /// Blocks of the key space (fixed once a store is saved).
    #[arg(long, default_value_t = DEFAULT_BLOCKS, value_name = "N")]
    blocks: u32,
    /// Preallocate the store for about N keys.
    #[arg(long, default_value_t = 0, value_name = "N")]
    capacity: usize,
    /// Input problems printed per file; the rest are counted in the summary.
    #[arg(long, default_value_t = 20, value_name = "N")]
    report_limit: usize,
    /// Bytes of input handed to a thread at a time (documents never straddle chunks).
    #[arg(long, default_value_t = webdedup_formats::vertical::DEFAULT_CHUNK_BYTES, value_name = "BYTES")]
    chunk_bytes: usize,
    /// Lines longer than this are dropped and reported.
    #[arg(long, default_value_t = webdedup_formats::vertical::DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    max_line_bytes: usize,
    /// fsync every output file before renaming it into place.
    #[arg(long)]
    fsync: bool,
}

pub fn run(args: &DedupArgs) -> Result<u8> {
    if args.blocks == 0 {
        anyhow::bail!("--blocks must be at least 1");
    }
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let cfg = RunConfig {
        input: args.input.clone(),
        output: args.output.clone(),
        threads,
        options: Options {
            normalization: args.normalization,
            min_para_chars: args.min_para_chars,
            doc_check: args.doc_check,
        },
        dd: args.dd,
        compress: args.compress,
        progress: !args.quiet && std::io::stderr().is_terminal(),
        report_limit: args.report_limit,
        chunk_bytes: args.chunk_bytes.max(1),
        max_line_bytes: args.max_line_bytes.max(1),
        sync: args.fsync,
    };
    let store = MemStore::with_capacity(args.blocks, args.capacity);
    let report = |line: &str| eprintln!("{line}");
    let stats = webdedup_dedup::run(&cfg, &store, &report)?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&stats)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if !args.quiet {
        eprint!("{}", stats.table());
    }
    Ok(if stats.had_input_problems() {
        EXIT_INPUT_PROBLEMS
    } else {
        EXIT_OK
    })
}
