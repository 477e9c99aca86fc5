//! `webdedup report`: one self-contained HTML page of what dedup runs removed,
//! made from their outputs alone: `.dd` lists, MinHash `.pairs`, feedback
//! `.dropped` files (with `files.idx`), `similar`'s pairs / clusters / dedup report and `--json`
//! summaries (docs/report.md). The page loads nothing from elsewhere (style
//! inline, charts as SVG, no script); figures are streamed from the files, and
//! examples sampled deterministically, so memory does not grow with the run and
//! the same runs give the same page.

mod analyze;
mod diff;
mod discover;
mod examples;
mod feedback;
mod hist;
mod html;
mod paragraphs;
mod problems;
mod sections;
mod similar;
mod summary;
mod svg;
mod tally;

pub use problems::Problems;
pub use summary::shell_word;

use anyhow::{bail, Result};
use serde_json::Value;
use std::path::PathBuf;

/// What to report on and how big the page may grow.
#[derive(Clone, Debug)]
pub struct Options {
    /// Run directories, and `--json` summaries or `similar` outputs (each
    /// belonging to the run directory named before it).
    pub inputs: Vec<PathBuf>,
    /// The page's cap in bytes: sections that do not fit are left out (the
    /// totals always stay).
    pub max_bytes: usize,
    /// Drops shown beside their originals, per run.
    pub examples: usize,
    /// Rows of the per-domain and per-language tables.
    pub top: usize,
    /// The runs' inputs (files or directories), where the dropped documents'
    /// texts are looked up for the examples.
    pub sources: Vec<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            inputs: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
            examples: DEFAULT_EXAMPLES,
            top: DEFAULT_TOP,
            sources: Vec::new(),
        }
    }
}

pub const DEFAULT_MAX_BYTES: usize = 5_000_000;
pub const DEFAULT_EXAMPLES: usize = 12;
pub const DEFAULT_TOP: usize = 50;

/// A report made: the page, each run's figures, the sections left out and the
/// lines of the run's files that could not be read.
#[derive(Debug)]
pub struct Made {
    pub html: String,
    pub runs: Vec<Value>,
    pub left_out: Vec<String>,
    pub problems: Problems,
}

/// Reads the runs `opts` names and makes their page.
pub fn make(opts: &Options) -> Result<Made> {
    let groups = discover::group(&opts.inputs)?;
    let mut problems = Problems::default();
    let mut runs = Vec::new();
    for g in &groups {
        let mut d = analyze::analyze(g, opts.examples, &mut problems)?;
        let outputs: Vec<PathBuf> = g.outputs.iter().map(|f| f.path.clone()).collect();
        d.texts = examples::find_texts(&d.samples, &outputs, &opts.sources);
        d.feedback.find_texts(
            opts.top,
            &g.outputs,
            g.files_index.as_deref(),
            &opts.sources,
        )?;
        runs.push(d);
    }
    let empty: Vec<&str> = runs
        .iter()
        .filter(|r| {
            r.dd_files
                + r.pairs_files
                + r.feedback.files.len()
                + r.similar.len()
                + r.summaries.len()
                == 0
        })
        .map(|r| r.label.as_str())
        .collect();
    if !empty.is_empty() {
        bail!(
            "nothing to report in {}: no .dd, .pairs or .dropped file, no similar output and no --json summary (run dedup/minhash with -d and --json FILE)",
            empty.join(", ")
        );
    }
    let mut sections = Vec::new();
    if runs.len() > 1 {
        sections.push(sections::runs_overview(&runs));
    }
    for (i, r) in runs.iter().enumerate() {
        let prefix = if runs.len() > 1 {
            format!("r{}-", i + 1)
        } else {
            String::new()
        };
        sections.extend(sections::run_sections(
            r,
            &prefix,
            opts.top,
            !opts.sources.is_empty(),
        ));
    }
    let names: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    let intro = format!(
        "<p class=\"note\">What webdedup removed, from the outputs of {} ({}). Made by <code>webdedup report</code>; every figure says where it comes from.</p>",
        if runs.len() == 1 { "one run".to_owned() } else { format!("{} runs", runs.len()) },
        html::escape(&names.join(", "))
    );
    let (html, left_out) = html::page("webdedup report", &intro, sections, opts.max_bytes);
    Ok(Made {
        html,
        runs: runs.iter().map(figures).collect(),
        left_out,
        problems,
    })
}

/// A run's figures for `--json`: what its `.dd` lists and side files say.
fn figures(r: &analyze::RunData) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("run".into(), r.label.clone().into());
    m.insert("dd_files".into(), r.dd_files.into());
    if r.dd_files > 0 {
        for (k, v) in r.total.figures() {
            m.insert(k.into(), v.into());
        }
    }
    if r.pairs_files > 0 {
        m.insert(
            "minhash_pairs".into(),
            (r.pairs.similarity.total() + r.pairs.unknown).into(),
        );
    }
    if !r.feedback.files.is_empty() {
        m.insert("feedback_references".into(), r.feedback.references.into());
    }
    m.insert(
        "output_bytes_on_disk".into(),
        r.output_bytes.values().sum::<u64>().into(),
    );
    m.insert("summaries".into(), r.summaries.len().into());
    m.insert("similar_outputs".into(), r.similar.len().into());
    Value::Object(m)
}

/// A file named `name` holding `text`, in a temporary directory that lives as
/// long as the returned guard.
#[cfg(test)]
fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join(name);
    std::fs::write(&p, text).unwrap();
    (t, p)
}
