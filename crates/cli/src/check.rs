//! `webdedup check`: verify the references of a feedback-mode run.

use crate::flags::defs::{MaxLineBytesFlag, NearShapeFlags, NormalizeFlag};
use crate::flags::inputs::{Inputs, INPUTS};
use crate::read_args::ReadArgs;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use webdedup_dedup::check::{check, CheckConfig};
use webdedup_dedup::PolicyChoices;
use webdedup_text::shown::escape_controls;

#[derive(Args, Debug)]
#[command(mut_arg(INPUTS, |a| a.help("The inputs of the checked run (files or directories, as given to `dedup`)")))]
pub struct CheckArgs {
    #[command(flatten)]
    pub(crate) input: Inputs,
    /// The output directory of the checked run (made with -f/--feedback).
    #[arg(short, long, value_name = "DIR")]
    pub(crate) output: PathBuf,
    /// Check only every Nth reference.
    #[arg(
        long = "every",
        short_alias = 'n',
        default_value_t = 1,
        value_name = "N"
    )]
    every: usize,
    #[command(flatten)]
    normalize: NormalizeFlag,
    /// The run was in near mode: references hold when the texts overlap.
    #[arg(long)]
    near: bool,
    #[command(flatten)]
    near_shape: NearShapeFlags,
    #[command(flatten)]
    report: crate::conventions::Reporting,
    #[command(flatten)]
    max_line_bytes: MaxLineBytesFlag,
    /// How the run read its inputs (its --input-format and fields).
    #[command(flatten)]
    read: ReadArgs,
}

pub fn run(args: &CheckArgs) -> Result<u8> {
    // The run's limits: a value `dedup` refused is refused here too (the same
    // library function, the same message).
    let options = PolicyChoices {
        normalization: Some(args.normalize.normalization),
        near: args.near,
        ngram: Some(args.near_shape.ngram),
        threshold: Some(args.near_shape.threshold),
        ..Default::default()
    }
    .options()
    .map_err(anyhow::Error::msg)?;
    let cfg = CheckConfig {
        inputs: args.input.paths.clone(),
        read: args.read.settings()?,
        max_line_bytes: args.max_line_bytes.get(),
        output: args.output.clone(),
        every: args.every.max(1),
        options,
    };
    let report = {
        let _bar = args.report.bytes_progress("checking", &args.input.paths, 1);
        check(&cfg)?
    };
    for m in &report.mismatches {
        let line = format!(
            "{}: mismatch: dropped {} original {}: {}",
            m.at, m.dropped, m.original, m.reason
        );
        eprintln!("{}", escape_controls(&line));
    }
    args.report
        .finish(&crate::summaries::check_outcome(&report)?)
}
