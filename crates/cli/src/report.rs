//! `webdedup report`: the runs' outputs as one HTML page (`webdedup_report`).
//! Inputs are positional, `-i` an alias, as every reading command's.

use crate::conventions::{Reporting, EXIT_INPUT_PROBLEMS, EXIT_OK};
use crate::flags::inputs::Inputs;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::summary::Outcome;

#[derive(Args, Debug)]
#[command(after_help = "\
Each RUN_DIR is the output directory of a dedup, minhash or batch run (its .dd,
.pairs and .dropped files, found by their suffixes, and any *.json summary and
similar output (*.tsv) in it); a file given after a RUN_DIR (a --json summary,
a similar output) belongs to that run. Several runs (crawl after crawl on one
--store) get one page, with an overview. See docs/report.md.")]
pub struct ReportArgs {
    /// Run directories, and the --json summaries or `similar` outputs of the run
    /// named before them.
    #[command(flatten)]
    pub runs: Inputs,
    /// The HTML page to write (`-`: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Cap on the page's size: sections that do not fit are left out (the totals stay).
    #[arg(long, value_name = "BYTES", default_value_t = webdedup_report::DEFAULT_MAX_BYTES)]
    pub max_bytes: usize,
    /// Drops shown beside their originals, per run (a deterministic sample).
    #[arg(long, value_name = "N", default_value_t = webdedup_report::DEFAULT_EXAMPLES)]
    pub examples: usize,
    /// The runs' inputs (files or directories): the dropped documents' texts,
    /// shown beside their originals (those are found in the kept outputs).
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub source: Vec<PathBuf>,
    /// Rows of the per-domain and per-language tables.
    #[arg(long, value_name = "N", default_value_t = webdedup_report::DEFAULT_TOP)]
    pub top: usize,
    #[command(flatten)]
    pub report: Reporting,
}

pub fn run(args: &ReportArgs) -> Result<u8> {
    let inputs = args.runs.paths.clone();
    if inputs.is_empty() {
        bail!("no run to report on: give its output directory (webdedup report RUN_DIR -o report.html)");
    }
    let to_stdout = args.output.as_os_str() == "-";
    args.report.check_json_target(to_stdout)?;
    let start = std::time::Instant::now();
    let made = {
        let _bar = args.report.bytes_progress("reading runs", &inputs, 1);
        webdedup_report::make(&webdedup_report::Options {
            inputs,
            max_bytes: args.max_bytes,
            examples: args.examples,
            top: args.top,
            sources: args.source.clone(),
        })?
    };
    for p in &made.problems.shown {
        eprintln!("webdedup: {p}");
    }
    write_page(&args.output, &made.html)?;
    let mut o = Outcome::new("report");
    o.count("runs", made.runs.len() as u64, "run", "runs")
        .count("bytes", made.html.len() as u64, "byte", "bytes")
        .note(format!("written to {}", args.output.display()))
        .figure("runs_figures", made.runs.clone())
        .figure("sections_left_out", made.left_out.clone())
        .count("problems", made.problems.count, "problem", "problems")
        .figure("seconds", start.elapsed().as_secs_f64());
    o.status = if made.problems.count > 0 {
        i32::from(EXIT_INPUT_PROBLEMS)
    } else {
        i32::from(EXIT_OK)
    };
    args.report.finish(&o)
}

fn write_page(path: &Path, html: &str) -> Result<()> {
    if path.as_os_str() == "-" {
        return std::io::stdout()
            .lock()
            .write_all(html.as_bytes())
            .context("cannot write to stdout");
    }
    let mut out = AtomicOutput::create(path, OutputCompression::None)
        .with_context(|| format!("cannot create {}", path.display()))?;
    out.write_all(html.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.finish(false)
        .with_context(|| format!("cannot finish {}", path.display()))
}
