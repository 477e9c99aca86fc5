//! `webdedup check`: follows the references of a feedback-mode run (`-f`) and
//! confirms each claim "this dropped paragraph repeats that one" (the seed's
//! checking script).
//!
//! Every `STEM.dedup.dropped` under the output directory is read; each
//! `<t>FILE:REC\tFILE:REC</f>` line names a dropped paragraph (the one after it)
//! and its original (paragraph number REC, from 1, of the input file whose id is
//! FILE in `files.idx`). The originals are read from the input directory with the
//! same reader and normalization as the run ([`Planner`]), so "the same text" means
//! the same paragraph key. In near mode a reference holds when the dropped
//! paragraph's tokens are covered by the original's n-grams; since a near duplicate
//! may be covered by several originals (only the main one is named), coverage at or
//! below the threshold is counted as *partial*, and a reference sharing no n-gram
//! with the original (and its n - 1 tokens of context on either side) as
//! *unconfirmed*: the run's n-grams cross paragraph boundaries, and the `.dropped`
//! file holds the dropped paragraph without the tokens before it. In near mode a
//! mismatch is therefore a reference to a missing file or paragraph, or an exact
//! duplicate whose text differs.

use crate::options::{NearOptions, Options};
use crate::plan::{ngram_key, ChunkPlan, Planner};
use crate::runner::open_documents;
use crate::runner::FILES_INDEX;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use webdedup_formats::chunk::{Chunk, DEFAULT_CHUNK_BYTES};
use webdedup_formats::input::InputFile;
use webdedup_formats::read::{DocFormat, ReadSettings};
use webdedup_store::Location;

#[derive(Clone, Debug)]
pub struct CheckConfig {
    /// The run's inputs (files and directories, as given to `dedup`).
    pub inputs: Vec<PathBuf>,
    /// How the run read documents (format or sniffing, fields).
    pub read: ReadSettings,
    pub output: PathBuf,
    /// Check every Nth reference (1: all).
    pub every: usize,
    /// The run's normalization and near settings (`near: None` = exact mode).
    pub options: Options,
    /// The run's `--max-line-bytes` (longer lines were dropped: so here too).
    pub max_line_bytes: usize,
}

/// One reference that does not hold.
#[derive(Clone, Debug, Serialize)]
pub struct Mismatch {
    /// `FILE:LINE` of the reference in the `.dropped` file.
    pub at: String,
    pub dropped: String,
    pub original: String,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckReport {
    pub dropped_files: u64,
    pub references: u64,
    pub checked: u64,
    pub confirmed: u64,
    /// Near mode: some but not enough shared n-grams (see the module docs).
    pub partial: u64,
    /// Near mode: no n-gram of the dropped paragraph occurs in the original (with
    /// its context). The run's n-grams may have started in the paragraph before the
    /// dropped one, which the `.dropped` file does not hold, so this is reported,
    /// not counted as a mismatch.
    pub unconfirmed: u64,
    /// References to `0:0`: the original is not known (chunks replayed by
    /// `--restore`, whose locations are not journaled).
    pub unknown_original: u64,
    pub mismatches: Vec<Mismatch>,
}

struct Reference {
    at: String,
    dropped: Location,
    original: Location,
    key: u64,
    tokens: Vec<u64>,
}

fn fmt_loc(l: Location, names: &HashMap<u64, String>) -> String {
    match names.get(&l.file) {
        Some(rel) => format!("{rel}:{} ({:016x}:{})", l.record, l.file, l.record),
        None => format!("{:016x}:{}", l.file, l.record),
    }
}

fn parse_loc(s: &str) -> Option<Location> {
    let (f, r) = s.split_once(':')?;
    Some(Location {
        file: u64::from_str_radix(f, 16).ok()?,
        record: r.parse().ok()?,
    })
}

fn planner_options(cfg: &CheckConfig) -> Options {
    Options {
        mode: crate::options::Mode::Near {
            near: cfg.options.near().cloned().unwrap_or_default(),
            feedback: false,
        },
        url_filter: None,
        ..cfg.options.clone()
    }
}

/// Plans `data` (documents of `format`) as one chunk.
fn plan_bytes(planner: &mut Planner, plan: &mut ChunkPlan, format: &DocFormat, data: Vec<u8>) {
    let chunk = Chunk {
        data,
        first_line: 1,
        last: true,
        ..Default::default()
    };
    planner.plan_as(format, &chunk, plan);
}

fn read_files_index(output: &Path) -> Result<HashMap<u64, String>> {
    let path = output.join(FILES_INDEX);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (was the run made with -f/--feedback?)",
            path.display()
        )
    })?;
    let mut names = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some((id, rel)) = line.split_once('\t') else {
            bail!("{}:{}: expected 'ID<TAB>PATH'", path.display(), i + 1);
        };
        let id = u64::from_str_radix(id, 16)
            .with_context(|| format!("{}:{}: bad file id '{id}'", path.display(), i + 1))?;
        names.insert(id, rel.to_owned());
    }
    Ok(names)
}

fn dropped_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            dropped_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "dropped") {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads the references of one `.dropped` file (every `every`-th, counting across
/// files through `counter`); `format_of` gives the format of the input a file id
/// names (the dropped paragraphs are as that input's reader read them).
#[allow(clippy::too_many_arguments)]
fn read_references(
    path: &Path,
    format_of: &mut dyn FnMut(u64) -> DocFormat,
    planner: &mut Planner,
    plan: &mut ChunkPlan,
    every: usize,
    counter: &mut u64,
    report: &mut CheckReport,
    refs: &mut Vec<Reference>,
) -> Result<()> {
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    // Headers and the line each starts on.
    let mut heads: Vec<(usize, usize, usize)> = Vec::new(); // (line no, header start, body start)
    let mut pos = 0;
    let mut line_no = 0;
    while pos < data.len() {
        line_no += 1;
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i + 1);
        if data[pos..end].starts_with(b"<t>") {
            heads.push((line_no, pos, end));
        }
        pos = end;
    }
    for (i, &(line, start, body)) in heads.iter().enumerate() {
        report.references += 1;
        *counter += 1;
        if !(*counter - 1).is_multiple_of(every as u64) {
            continue;
        }
        let at = format!("{}:{line}", path.display());
        let header = String::from_utf8_lossy(&data[start..body]);
        let inner = header
            .trim_end()
            .strip_prefix("<t>")
            .and_then(|h| h.strip_suffix("</f>"));
        let locs = inner.and_then(|h| {
            let (a, b) = h.split_once('\t')?;
            Some((parse_loc(a)?, parse_loc(b)?))
        });
        let Some((dropped, original)) = locs else {
            report.mismatches.push(Mismatch {
                at,
                dropped: String::new(),
                original: String::new(),
                reason: format!("malformed feedback line '{}'", header.trim_end()),
            });
            continue;
        };
        let body_end = heads.get(i + 1).map_or(data.len(), |h| h.1);
        let (doc, format) = format_of(dropped.file).dropped_as_document(&data[body..body_end]);
        plan_bytes(planner, plan, &format, doc);
        let Some(p) = plan.paras.first() else {
            report.mismatches.push(Mismatch {
                at,
                dropped: format!("{:016x}:{}", dropped.file, dropped.record),
                original: String::new(),
                reason: "no paragraph follows the feedback line".into(),
            });
            continue;
        };
        refs.push(Reference {
            at,
            dropped,
            original,
            key: p.key,
            tokens: plan.tokens[p.tokens.start as usize..p.tokens.end as usize].to_vec(),
        });
    }
    Ok(())
}

/// The paragraph key and tokens of the wanted records of one input file.
fn doc_token_range(plan: &ChunkPlan, paras: std::ops::Range<usize>) -> std::ops::Range<usize> {
    if paras.is_empty() {
        return 0..0;
    }
    plan.paras[paras.start].tokens.start as usize..plan.paras[paras.end - 1].tokens.end as usize
}

#[allow(clippy::too_many_arguments)]
fn read_originals(
    input: &InputFile,
    read: &ReadSettings,
    max_line: usize,
    wanted: &HashSet<u64>,
    context: usize,
    planner: &mut Planner,
    plan: &mut ChunkPlan,
) -> Result<HashMap<u64, (u64, Vec<u64>)>> {
    let (format, mut chunks) =
        crate::runner::open_doc_reader(input, read, None, DEFAULT_CHUNK_BYTES, max_line)
            .with_context(|| format!("cannot open {}", input.display()))?;
    let mut found = HashMap::new();
    let mut record = 0u64;
    while let Some(chunk) = chunks.next_chunk() {
        planner.plan_as(&format, &chunk, plan);
        for doc in &plan.docs {
            let doc_tokens = doc_token_range(plan, doc.paras.clone());
            for p in &plan.paras[doc.paras.clone()] {
                record += 1;
                if wanted.contains(&record) {
                    // With n - 1 tokens of context on each side: the run's n-grams
                    // cross paragraph boundaries within a document.
                    let from = (p.tokens.start as usize)
                        .saturating_sub(context)
                        .max(doc_tokens.start);
                    let to = (p.tokens.end as usize + context).min(doc_tokens.end);
                    found.insert(record, (p.key, plan.tokens[from..to].to_vec()));
                }
            }
        }
    }
    Ok(found)
}

/// Share of `dropped`'s tokens covered by n-grams that also occur in `original`.
fn coverage(dropped: &[u64], original: &[u64], n: usize) -> f64 {
    if dropped.is_empty() {
        return 1.0;
    }
    let grams: HashSet<u64> = original.windows(n).map(ngram_key).collect();
    let mut covered = vec![false; dropped.len()];
    for (i, w) in dropped.windows(n).enumerate() {
        if grams.contains(&ngram_key(w)) {
            covered[i..i + n].fill(true);
        }
    }
    covered.iter().filter(|&&c| c).count() as f64 / dropped.len() as f64
}

pub fn check(cfg: &CheckConfig) -> Result<CheckReport> {
    let names = read_files_index(&cfg.output)?;
    let mut files = Vec::new();
    dropped_files(&cfg.output, &mut files)?;
    files.sort();
    // The run's input files by relative path (files.idx names them so).
    let list = webdedup_formats::input::ListOptions {
        exclude: Some(&cfg.output),
        stdin: false,
        dirs: true,
    };
    let inputs: HashMap<String, InputFile> =
        webdedup_formats::input::list_inputs(&cfg.inputs, &list)
            .map_err(anyhow::Error::from)?
            .files
            .into_iter()
            .map(|f| (f.rel.to_string_lossy().into_owned(), f))
            .collect();
    // The format of each input, as the run read it (unknown files: verticals).
    let mut formats: HashMap<u64, DocFormat> = HashMap::new();
    let mut format_of = |file: u64| {
        formats
            .entry(file)
            .or_insert_with(|| {
                names
                    .get(&file)
                    .and_then(|rel| inputs.get(rel))
                    .and_then(|f| open_documents(f, &cfg.read, None).ok())
                    .map_or(DocFormat::Vertical, |(format, _)| format)
            })
            .clone()
    };
    let opts = planner_options(cfg);
    let mut planner = Planner::new(&opts);
    let mut plan = ChunkPlan::default();
    let mut report = CheckReport {
        dropped_files: files.len() as u64,
        ..Default::default()
    };
    let mut refs = Vec::new();
    let mut counter = 0;
    for f in &files {
        read_references(
            f,
            &mut format_of,
            &mut planner,
            &mut plan,
            cfg.every.max(1),
            &mut counter,
            &mut report,
            &mut refs,
        )?;
    }
    let mut wanted: HashMap<u64, HashSet<u64>> = HashMap::new();
    for r in &refs {
        if r.original != Location::UNKNOWN {
            wanted
                .entry(r.original.file)
                .or_default()
                .insert(r.original.record);
        }
    }
    let n = opts.near().map_or(7, |n: &NearOptions| n.ngram);
    let mut originals: HashMap<u64, HashMap<u64, (u64, Vec<u64>)>> = HashMap::new();
    for (file, records) in &wanted {
        if let Some(input) = names.get(file).and_then(|rel| inputs.get(rel)) {
            originals.insert(
                *file,
                read_originals(
                    input,
                    &cfg.read,
                    cfg.max_line_bytes,
                    records,
                    n - 1,
                    &mut planner,
                    &mut plan,
                )?,
            );
        }
    }
    for r in refs {
        if r.original == Location::UNKNOWN {
            report.unknown_original += 1;
            continue;
        }
        report.checked += 1;
        let mismatch = |reason: String| Mismatch {
            at: r.at.clone(),
            dropped: fmt_loc(r.dropped, &names),
            original: fmt_loc(r.original, &names),
            reason,
        };
        let Some(file) = originals.get(&r.original.file) else {
            report.mismatches.push(mismatch(
                "the original's file id is not in files.idx".into(),
            ));
            continue;
        };
        let Some((key, tokens)) = file.get(&r.original.record) else {
            report
                .mismatches
                .push(mismatch("the original's file has no such paragraph".into()));
            continue;
        };
        if *key == r.key {
            report.confirmed += 1;
            continue;
        }
        match cfg.options.near() {
            None => report.mismatches.push(mismatch(
                "the texts differ after normalization (a hash collision or a bug)".into(),
            )),
            Some(near) => {
                let c = coverage(&r.tokens, tokens, n);
                if c > near.threshold {
                    report.confirmed += 1;
                } else if c > 0.0 {
                    report.partial += 1;
                } else {
                    report.unconfirmed += 1;
                }
            }
        }
    }
    Ok(report)
}

impl CheckReport {
    pub fn table(&self) -> String {
        format!(
            "Dropped files:            {}\nReferences:               {}\nChecked:                  {}\nConfirmed:                {}\nPartial (near mode):      {}\nUnconfirmed (near mode):  {}\nUnknown originals:        {}\nMismatches:               {}\n",
            self.dropped_files,
            self.references,
            self.checked,
            self.confirmed,
            self.partial,
            self.unconfirmed,
            self.unknown_original,
            self.mismatches.len()
        )
    }
}
