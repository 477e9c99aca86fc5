//! One pass over a run's files: `.dd` lines tallied per run, crawl, language and
//! domain; `.pairs` into the similarity histogram; `.dropped` references
//! counted per original ([`crate::feedback`]); `similar` outputs into their histograms; outputs' sizes per crawl.
//! Memory is bounded by the groups' cap and the examples' sample, not by the run.

use crate::discover::{crawl_of, for_lines, language_of, RunFile, RunFiles};
use crate::examples::{SampledPair, Sampler};
use crate::feedback::Feedback;
use crate::hist::{parse_pair, PairStats};
use crate::problems::Problems;
use crate::similar::SimilarStats;
use crate::summary::Summary;
use crate::tally::{domain_of, parse_dd, Groups, Tally};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Everything the page shows of one run.
#[derive(Debug, Default)]
pub struct RunData {
    pub label: String,
    /// `.dd` files read (the figures below are theirs).
    pub dd_files: usize,
    pub total: Tally,
    pub crawls: Groups,
    pub languages: Groups,
    pub domains: Groups,
    /// Bytes of the kept outputs on disk, per crawl.
    pub output_bytes: BTreeMap<String, u64>,
    pub pairs_files: usize,
    pub pairs: PairStats,
    /// Feedback mode's `.dropped` files: references, repeats, sampled drops.
    pub feedback: Feedback,
    pub similar: Vec<(PathBuf, SimilarStats)>,
    pub summaries: Vec<Summary>,
    /// Sampled MinHash drops, and their and their originals' texts by id.
    pub samples: Sampler<SampledPair>,
    pub texts: HashMap<String, String>,
}

impl RunData {
    /// The run's summary with `dedup`'s run figures, if one was found.
    pub fn run_summary(&self) -> Option<&Summary> {
        self.summaries.iter().find(|s| s.is_run_figures())
    }

    /// The `warc dedup` summary among the run's, whose records and bytes are a
    /// web archive's totals.
    pub fn warc_summary(&self) -> Option<&Summary> {
        self.summaries.iter().find(|s| s.command() == "warc dedup")
    }
}

/// Reads the files of `run`; lines that cannot be read go to `problems`.
pub fn analyze(run: &RunFiles, examples: usize, problems: &mut Problems) -> Result<RunData> {
    let mut d = RunData {
        label: run.label.clone(),
        samples: Sampler::new(examples),
        feedback: Feedback::new(examples),
        ..Default::default()
    };
    for f in &run.dd {
        read_dd(f, &mut d, problems)?;
    }
    d.dd_files = run.dd.len();
    for f in &run.pairs {
        read_pairs(f, &mut d, problems)?;
    }
    d.pairs_files = run.pairs.len();
    for f in &run.dropped {
        d.feedback.read(f, &run.outputs, problems)?;
    }
    for f in &run.outputs {
        let len = std::fs::metadata(&f.path)
            .with_context(|| format!("cannot read {}", f.path.display()))?
            .len();
        *d.output_bytes
            .entry(crawl_of(&f.rel).to_owned())
            .or_default() += len;
    }
    for p in &run.summaries {
        match crate::summary::read(p) {
            Ok(s) => d.summaries.push(s),
            Err(e) => {
                let mut n = 0;
                problems.add(p, 1, &format!("{e:#}"), &mut n);
            }
        }
    }
    for p in &run.similar {
        if let Some(s) = crate::similar::read(p, problems)? {
            d.similar.push((p.clone(), s));
        }
    }
    Ok(d)
}

fn read_dd(f: &RunFile, d: &mut RunData, problems: &mut Problems) -> Result<()> {
    let crawl = crawl_of(&f.rel).to_owned();
    let path_language = language_of(&f.rel);
    let mut in_file = 0;
    for_lines(f, |n, line| match parse_dd(line) {
        Ok(l) => {
            d.total.add(l.status);
            d.crawls.add(&crawl, l.status);
            let language = path_language
                .clone()
                .or_else(|| crate::discover::language_in_url(&l.url))
                .unwrap_or_else(|| "(not said)".into());
            d.languages.add(&language, l.status);
            d.domains.add(&domain_of(&l.url), l.status);
        }
        Err(reason) => problems.add(&f.path, n, &reason, &mut in_file),
    })
}

fn read_pairs(f: &RunFile, d: &mut RunData, problems: &mut Problems) -> Result<()> {
    let mut in_file = 0;
    for_lines(f, |n, line| {
        match parse_pair(&String::from_utf8_lossy(line)) {
            Ok(p) => {
                d.pairs.add(p.jaccard);
                let id = p.doc.clone();
                d.samples.offer(&f.rel, &id, || SampledPair {
                    rel: f.rel.clone(),
                    pair: p,
                });
            }
            Err(reason) => problems.add(&f.path, n, &reason, &mut in_file),
        }
    })
}
