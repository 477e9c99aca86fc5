//! `--format wikilinks`: dedup of tab-separated link rows (the seed's `-wl`).
//!
//! A row has at least 6 columns. Exact mode: a row is a duplicate when its columns
//! 2, 3, 5 and 6 (1-based), each normalized, joined by tabs, were seen in an
//! earlier row. Near mode: the row's tokens are those of columns 5, 3 and 6 (in
//! this order); a row is a duplicate when more than `--threshold` of them are
//! covered by n-grams seen before (in the store or in an earlier row) *and* its
//! column 2 (the link target) was seen before; the n-grams of kept rows are
//! inserted. Rows with fewer than 6 columns are reported (`FILE:LINE: reason`)
//! and written unchanged. Kept rows are written byte for byte.
//!
//! Files are read one after another on one thread, rows in batches: each batch
//! asks the store in rounds (as a chunk of a vertical does), with the rows kept
//! earlier in the batch in a local set, so results equal a row-by-row pass.

use crate::options::{NearOptions, Options};
use crate::plan::{ngram_key, token_hash};
use crate::policy::file_id;
use crate::render::feedback_header;
use crate::report::RunStats;
use crate::runner::{
    count_skipped, dropped_path, list_inputs, output_path, rel_bytes, report_skipped,
    write_files_index, InputFile, RunConfig,
};
use anyhow::{Context, Result};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::time::Instant;
use webdedup_formats::input::open_file;
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_store::{Location, Store};
use webdedup_text::normalize::normalize;
use webdedup_text::{key, KeyKind, TextBuilder};

/// Rows asked about in one round of store requests.
const BATCH_ROWS: usize = 4096;

struct Row {
    line: Vec<u8>,
    record: u64,
    /// Exact mode: the row key; near mode: the column-2 key.
    key: u64,
    /// Near mode: the n-grams of columns 5, 3, 6 and how many tokens they cover.
    ngrams: std::ops::Range<usize>,
    tokens: usize,
}

struct Batch {
    rows: Vec<Row>,
    ngrams: Vec<u64>,
    keys: Vec<u64>,
    locs: Vec<Location>,
    seen: Vec<bool>,
    originals: Vec<Location>,
    ngram_seen: Vec<bool>,
    text: TextBuilder,
    tokens: Vec<u64>,
}

fn columns(line: &[u8]) -> Vec<&[u8]> {
    line.split(|&b| b == b'\t').collect()
}

fn norm(col: &[u8], opts: &Options) -> String {
    normalize(&String::from_utf8_lossy(col), opts.normalization)
}

impl Batch {
    fn add(&mut self, line: Vec<u8>, record: u64, opts: &Options) {
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let cols = columns(body);
        let start = self.ngrams.len();
        let (key_value, tokens) = match opts.near() {
            None => {
                let joined = [1, 2, 4, 5]
                    .iter()
                    .map(|&i| norm(cols[i], opts))
                    .collect::<Vec<_>>()
                    .join("\t");
                (key(KeyKind::WikilinksRow, joined.as_bytes()), 0)
            }
            Some(n) => {
                self.tokens.clear();
                for &i in &[4usize, 2, 5] {
                    for w in String::from_utf8_lossy(cols[i]).split_whitespace() {
                        self.text.clear();
                        self.text.push_word(w.as_bytes(), false);
                        if !self.text.text().is_empty() {
                            self.tokens.push(token_hash(self.text.text()));
                        }
                    }
                }
                if self.tokens.len() >= n.ngram {
                    self.ngrams
                        .extend(self.tokens.windows(n.ngram).map(ngram_key));
                }
                let target = norm(cols[1], opts);
                (
                    key(KeyKind::WikilinksTarget, target.as_bytes()),
                    self.tokens.len(),
                )
            }
        };
        let end = self.ngrams.len();
        self.rows.push(Row {
            line,
            record,
            key: key_value,
            ngrams: start..end,
            tokens,
        });
    }

    /// Decides the batch's rows; returns for each whether it is kept, and (feedback)
    /// the original of each dropped one.
    fn decide(
        &mut self,
        store: &dyn Store,
        file: u64,
        opts: &Options,
        keep: &mut Vec<bool>,
        origin: &mut Vec<Location>,
    ) -> Result<()> {
        self.keys.clear();
        self.locs.clear();
        for r in &self.rows {
            self.keys.push(r.key);
            self.locs.push(Location {
                file,
                record: r.record,
            });
        }
        if opts.feedback() {
            store.test_and_insert_located(
                &self.keys,
                &self.locs,
                &mut self.seen,
                &mut self.originals,
            )?;
        } else {
            store.test_and_insert(&self.keys, &mut self.seen)?;
            self.originals.clear();
            self.originals.resize(self.keys.len(), Location::UNKNOWN);
        }
        keep.clear();
        origin.clear();
        let Some(n) = opts.near() else {
            keep.extend(self.seen.iter().map(|&s| !s));
            origin.extend_from_slice(&self.originals);
            return Ok(());
        };
        store.test(&self.ngrams, &mut self.ngram_seen)?;
        let mut kept_here: HashSet<u64> = HashSet::new();
        let mut insert = Vec::new();
        for (i, r) in self.rows.iter().enumerate() {
            let grams = &self.ngrams[r.ngrams.clone()];
            let mut covered = vec![false; r.tokens];
            for (g, k) in grams.iter().enumerate() {
                if self.ngram_seen[r.ngrams.start + g] || kept_here.contains(k) {
                    covered[g..g + n.ngram].fill(true);
                }
            }
            let share = covered.iter().filter(|&&c| c).count() as f64 / r.tokens.max(1) as f64;
            let dup = self.seen[i] && r.tokens > 0 && share > n.threshold;
            keep.push(!dup);
            origin.push(self.originals[i]);
            if !dup {
                for &k in grams {
                    if kept_here.insert(k) {
                        insert.push(k);
                    }
                }
            }
        }
        store.test_and_insert(&insert, &mut self.ngram_seen)?;
        Ok(())
    }
}

/// Runs wikilinks dedup over `cfg.inputs` (one thread; see the module docs).
pub fn run(cfg: &RunConfig, store: &dyn Store, report: &(dyn Fn(&str) + Sync)) -> Result<RunStats> {
    let started = Instant::now();
    let listing = list_inputs(&cfg.inputs, &cfg.output)?;
    report_skipped(&listing, report);
    let files = &listing.files;
    std::fs::create_dir_all(&cfg.output)
        .with_context(|| format!("cannot create output directory {}", cfg.output.display()))?;
    if cfg.options.feedback() {
        write_files_index(&cfg.output, files)?;
    }
    let mut stats = RunStats::default();
    count_skipped(&listing, &mut stats);
    for f in files {
        if let Err(e) = run_file(cfg, f, store, report, &mut stats) {
            report(&format!("{}: {e:#}", f.path.display()));
            stats.files_unreadable += 1;
            *stats.issues.entry("unreadable".into()).or_default() += 1;
        }
        stats.files += 1;
    }
    stats.threads = 1;
    stats.paragraphs_thrown_away = stats.paragraphs_read - stats.paragraphs_retained;
    stats.finish(
        started.elapsed().as_secs_f64(),
        store.len(),
        store.memory_bytes(),
    );
    Ok(stats)
}

fn run_file(
    cfg: &RunConfig,
    f: &InputFile,
    store: &dyn Store,
    report: &(dyn Fn(&str) + Sync),
    stats: &mut RunStats,
) -> Result<()> {
    let (reader, _) = open_file(f, None).context("cannot open")?;
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let out_path = output_path(&cfg.output, &f.rel, cfg.compress);
    let mut out = AtomicOutput::create(&out_path, cfg.compress)
        .with_context(|| format!("cannot create {}", out_path.display()))?;
    let mut dropped = if cfg.options.feedback() {
        let p = dropped_path(&cfg.output, &f.rel);
        Some(
            AtomicOutput::create(&p, OutputCompression::None)
                .with_context(|| format!("cannot create {}", p.display()))?,
        )
    } else {
        None
    };
    let file = file_id(rel_bytes(&f.rel));
    let mut batch = Batch {
        rows: Vec::new(),
        ngrams: Vec::new(),
        keys: Vec::new(),
        locs: Vec::new(),
        seen: Vec::new(),
        originals: Vec::new(),
        ngram_seen: Vec::new(),
        text: TextBuilder::new(cfg.options.normalization),
        tokens: Vec::new(),
    };
    let (mut keep, mut origin) = (Vec::new(), Vec::new());
    let mut line_no = 0u64;
    let mut record = 0u64;
    let mut reported = 0usize;
    let mut eof = false;
    while !eof {
        // Fill a batch; short rows are written through at once, in order, which
        // needs the batch before them flushed first.
        let mut short: Option<Vec<u8>> = None;
        while batch.rows.len() < BATCH_ROWS {
            let mut line = Vec::new();
            let n = reader
                .read_until(b'\n', &mut line)
                .with_context(|| format!("read error after line {line_no}"))?;
            if n == 0 {
                eof = true;
                break;
            }
            line_no += 1;
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            if body.is_empty() {
                continue;
            }
            let ncols = body.split(|&b| b == b'\t').count();
            if ncols < 6 {
                *stats.issues.entry("short-row".into()).or_default() += 1;
                if reported < cfg.report_limit {
                    report(&format!(
                        "{}:{line_no}: row has {ncols} columns, wikilinks rows need at least 6; passed through unchanged",
                        f.path.display()
                    ));
                }
                reported += 1;
                short = Some(line);
                break;
            }
            record += 1;
            batch.add(line, record, &cfg.options);
        }
        batch.decide(store, file, &cfg.options, &mut keep, &mut origin)?;
        for (i, row) in batch.rows.iter().enumerate() {
            stats.paragraphs_read += 1;
            if keep[i] {
                stats.paragraphs_retained += 1;
                stats.bytes_out += row.line.len() as u64;
                out.write_all(&row.line)?;
            } else if let Some(d) = dropped.as_mut() {
                let mut head = Vec::new();
                feedback_header(
                    Location {
                        file,
                        record: row.record,
                    },
                    origin[i],
                    &mut head,
                );
                d.write_all(&head)?;
                d.write_all(&row.line)?;
            }
            stats.bytes_in += row.line.len() as u64;
        }
        batch.rows.clear();
        batch.ngrams.clear();
        if let Some(line) = short {
            stats.bytes_in += line.len() as u64;
            stats.bytes_out += line.len() as u64;
            out.write_all(&line)?;
        }
    }
    if reported > 0 {
        stats.files_with_issues += 1;
    }
    if let Some(d) = dropped {
        d.finish(cfg.sync)?;
    }
    out.finish(cfg.sync)
        .with_context(|| format!("cannot finish {}", out_path.display()))?;
    Ok(())
}

/// The settings that wikilinks mode does not use, refused with a reason.
pub fn unsupported(near: Option<&NearOptions>) -> Option<&'static str> {
    let near = near?;
    if near.rules != crate::NearRules::Webdedup {
        Some("--near-rules onion does not apply to wikilinks rows")
    } else if near.smooth {
        Some("--smooth does not apply to wikilinks rows")
    } else {
        None
    }
}
