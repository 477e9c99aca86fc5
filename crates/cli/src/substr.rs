//! `webdedup batch substr`: ExactSubstr's rule over the whole input at once (see
//! `webdedup_substr` and docs/substr.md).

use crate::conventions::{Reporting, Threads};
use crate::flags::defs::MaxLineBytesFlag;
use crate::flags::inputs::Inputs;
use crate::read_args::ReadArgs;
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use webdedup_dedup::policy::file_id;
use webdedup_dedup::runner::{
    attributes_path, list_inputs, output_path, rel_bytes, spans_path, write_files_index,
};
use webdedup_formats::output::OutputCompression;
use webdedup_formats::problems::Problems;
use webdedup_formats::summary::Outcome;
use webdedup_substr::job::{Choices, Job, Output};
use webdedup_substr::run::{spans_tsv, Reading};
use webdedup_substr::DEFAULT_LENGTH;

#[derive(Debug, Args)]
pub struct SubstrArgs {
    #[command(flatten)]
    pub input: Inputs,
    /// Output directory: each input's documents in its format without the
    /// struck spans (`OUT/STEM.dedup.EXT`, as `dedup` names them).
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// The shortest span struck, in bytes of text (ExactSubstr's
    /// `--length-threshold`).
    #[arg(long, default_value_t = DEFAULT_LENGTH, value_name = "BYTES")]
    length: usize,
    /// Keep the first copy of a repeated span (in input order) and strike the
    /// later ones; without it every copy is struck, as ExactSubstr does.
    #[arg(long)]
    keep_first: bool,
    /// Memory for the suffix arrays, in MB: the corpus is sorted in shards that
    /// fit it (about 4 bytes a byte of text each) and the shards merged on disk.
    /// Without it, one suffix array over the whole corpus.
    #[arg(long, value_name = "MB")]
    max_memory: Option<usize>,
    /// Also write every struck span as `FILE\tID\tSTART\tEND` (byte offsets in
    /// the document's text) to this file.
    #[arg(long, value_name = "FILE")]
    spans: Option<PathBuf>,
    /// Strike nothing: write every input as read and, beside each output, its
    /// spans as dolma attributes (`STEM.dedup.attributes.jsonl`, one line a
    /// document: `webdedup_repeated_spans`, characters of its text), as
    /// `dedup --substr --mark` does.
    #[arg(long)]
    mark: bool,
    /// Also write, beside each output, `STEM.dedup.spans`: one line a span,
    /// `FILE:LINE:START-END TAB FILE:LINE:START`, the span and where the first
    /// copy of its first window starts (files by their ids; `files.idx` maps
    /// them to paths), as `dedup --substr -f` does.
    #[arg(short = 'f', long)]
    feedback: bool,
    /// Finish an interrupted run (the same command plus `-r`): the spans are
    /// found again, inputs whose outputs are all in place are skipped, the
    /// others (a half-written one among them) written again.
    #[arg(short = 'r', long)]
    restore: bool,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    max_line_bytes: MaxLineBytesFlag,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    pub report: Reporting,
}

pub fn run(args: &SubstrArgs) -> Result<u8> {
    let choices = Choices {
        length: args.length,
        keep_first: args.keep_first,
        max_memory: args.max_memory,
        threads: args.threads.count(),
        mark: args.mark,
        feedback: args.feedback,
        restore: args.restore,
    };
    let reading = Reading {
        read: args.read.settings()?,
        max_line_bytes: args.max_line_bytes.get(),
    };
    let listing = list_inputs(&args.input.paths, &args.output)?;
    for s in &listing.skipped {
        eprintln!("webdedup: {s}");
    }
    let job = Job::new(
        &listing.files,
        &choices,
        reading,
        &|rel, output| output_name(&args.output, rel, output),
        &|rel| file_id(rel_bytes(rel)),
    )
    .map_err(anyhow::Error::msg)?;
    let files = &job.files;
    args.report
        .run("batch substr", &args.input.paths, 2, false, || {
            let problems = Problems::new(false);
            let found = job.run(&problems)?;
            if args.feedback {
                write_files_index(&args.output, &listing.files)?;
            }
            if let Some(path) = &args.spans {
                let mut out = std::io::BufWriter::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?,
                );
                spans_tsv(files, &found, &mut out)
                    .and_then(|_| std::io::Write::flush(&mut out))
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            let mut o = Outcome::new("batch substr");
            o.count("files", files.len() as u64, "file", "files")
                .count(
                    "documents",
                    found.docs.len() as u64,
                    "document",
                    "documents",
                )
                .count(
                    "documents_changed",
                    found.docs_changed(),
                    "document changed",
                    "documents changed",
                )
                .count("spans", found.spans(), "span struck", "spans struck")
                .count(
                    "bytes_struck",
                    found.bytes_struck(),
                    "byte struck",
                    "bytes struck",
                )
                .figure("text_bytes", found.text_bytes)
                .figure("length", args.length as u64)
                .figure("keep_first", args.keep_first);
            o.status = i32::from(problems.count() > 0 || !listing.skipped.is_empty());
            Ok(o)
        })
}

/// The name of an output of input `rel` in `out`: `dedup`'s names.
pub fn output_name(out: &Path, rel: &Path, output: Output) -> PathBuf {
    match output {
        Output::Main => output_path(out, rel, OutputCompression::None),
        Output::Attributes => attributes_path(out, rel),
        Output::Report => spans_path(out, rel),
    }
}
