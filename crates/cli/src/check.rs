//! `webdedup check`: verify the references of a feedback-mode run.

use crate::read_args::ReadArgs;
use crate::{EXIT_INPUT_PROBLEMS, EXIT_OK};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use webdedup_dedup::check::{check, CheckConfig};
use webdedup_dedup::{NearOptions, Options};
use webdedup_formats::shown::escape_controls;
use webdedup_text::Normalization;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The inputs of the checked run (files or directories, as given to `dedup`;
    /// repeatable).
    #[arg(short, long, value_name = "PATH", required = true, num_args = 1..)]
    input: Vec<PathBuf>,
    /// The output directory of the checked run (made with -f/--feedback).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Check only every Nth reference.
    #[arg(short = 'n', long = "every", default_value_t = 1, value_name = "N")]
    every: usize,
    /// The run's normalization.
    #[arg(long = "normalize", default_value = "loose", value_name = "MODE")]
    normalization: Normalization,
    /// The run was in near mode: references hold when the texts overlap.
    #[arg(long)]
    near: bool,
    /// The run's n-gram size (near mode).
    #[arg(long, default_value_t = 7, value_name = "N")]
    ngram: usize,
    /// The run's threshold (near mode).
    #[arg(long, default_value_t = 0.5, value_name = "SHARE")]
    threshold: f64,
    /// Print the report as JSON on stdout (and nothing else there).
    #[arg(long)]
    json: bool,
    /// The run's --max-line-bytes.
    #[arg(long, default_value_t = webdedup_formats::vertical::DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    max_line_bytes: usize,
    /// How the run read its inputs (its --input-format and fields).
    #[command(flatten)]
    read: ReadArgs,
}

pub fn run(args: &CheckArgs) -> Result<u8> {
    let cfg = CheckConfig {
        inputs: args.input.clone(),
        read: args.read.settings()?,
        max_line_bytes: args.max_line_bytes.max(1),
        output: args.output.clone(),
        every: args.every.max(1),
        options: Options {
            normalization: args.normalization,
            near: args.near.then(|| NearOptions {
                ngram: args.ngram.clamp(1, 64),
                threshold: args.threshold,
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let report = check(&cfg)?;
    for m in &report.mismatches {
        let line = format!(
            "{}: mismatch: dropped {} original {}: {}",
            m.at, m.dropped, m.original, m.reason
        );
        eprintln!("{}", escape_controls(&line));
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("cannot write JSON")?
        );
    } else {
        eprint!("{}", report.table());
    }
    Ok(if report.mismatches.is_empty() {
        EXIT_OK
    } else {
        EXIT_INPUT_PROBLEMS
    })
}
