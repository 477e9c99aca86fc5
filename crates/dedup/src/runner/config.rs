//! A run's configuration: what it reads and writes, and what makes it durable.

use super::outputs::{output_path, rel_bytes};
use crate::options::Options;
use crate::plan::PlanCache;
use crate::resume::{Finished, Recorded};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use webdedup_formats::chunk::{DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES};
use webdedup_formats::input::InputFile;
use webdedup_formats::output::OutputCompression;
use webdedup_formats::read::{DocFormat, ReadSettings};
use webdedup_store::Journal;

/// What makes a run durable and resumable (see `crate::persist`): all optional.
#[derive(Default)]
pub struct Durability<'a> {
    /// Every chunk's new keys and verdicts are appended here, in input order,
    /// before its output is written; synced before an output is renamed into place.
    pub journal: Option<&'a Journal>,
    /// Verdicts recorded by an interrupted run: used instead of asking the store.
    pub recorded: Option<&'a Recorded>,
    /// Skip the files whose output already exists (`--restore`).
    pub skip_finished: bool,
    /// What a restore does with each input whose output exists, by relative path
    /// bytes ([`rel_bytes`]); instead of `skip_finished`. Inputs it does not list
    /// are written.
    pub finished: Option<&'a HashMap<Vec<u8>, Finished>>,
    /// Set (by a signal handler) to stop reading: chunks already read are finished,
    /// the file being written stays unfinished.
    pub stop: Option<&'a AtomicBool>,
    /// Plans made by an earlier pass over the same input (local `batch run`),
    /// used instead of planning those chunks again.
    pub plans: Option<&'a PlanCache>,
}

#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Files, directories or `-`, read in this order (see [`list_inputs`]).
    pub inputs: Vec<PathBuf>,
    pub output: PathBuf,
    pub threads: usize,
    pub options: Options,
    /// How documents are read: the format (or sniffed per file) and its fields.
    pub read: ReadSettings,
    /// Also write `*.dedup.dd`, one line per input document.
    pub dd: bool,
    pub compress: OutputCompression,
    /// `--compress auto`: outputs of formats other than verticals are compressed
    /// as their input's name says (`.gz`, `.zst`); verticals as `compress` says.
    pub compress_auto: bool,
    /// Input problems printed per file before the rest are only counted.
    pub report_limit: usize,
    pub chunk_bytes: usize,
    pub max_line_bytes: usize,
    /// fsync every output before renaming it into place.
    pub sync: bool,
    /// `--mark`: write every input unchanged and the decisions to an attributes
    /// file beside each output (see [`crate::write_back`]).
    pub mark: bool,
    /// MinHash `--clusters`: each document's cluster in `*.dedup.clusters` (and,
    /// with `mark`, as an attribute).
    pub clusters: bool,
}

impl RunConfig {
    pub fn new(input: impl Into<PathBuf>, output: impl Into<PathBuf>) -> Self {
        RunConfig {
            inputs: vec![input.into()],
            output: output.into(),
            threads: 1,
            options: Options::default(),
            read: ReadSettings::default(),
            dd: false,
            compress: OutputCompression::None,
            compress_auto: false,
            report_limit: 20,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            sync: false,
            mark: false,
            clusters: false,
        }
    }

    /// The compression of the output of input `rel` read as `format`.
    pub fn output_compression(&self, rel: &Path, format: &DocFormat) -> OutputCompression {
        // Parquet compresses its pages itself.
        if matches!(format, DocFormat::Parquet(_)) {
            return OutputCompression::None;
        }
        if !self.compress_auto || *format == DocFormat::Vertical {
            return self.compress;
        }
        let name = rel.as_os_str().as_encoded_bytes();
        if name.ends_with(b".gz") {
            OutputCompression::Gzip
        } else if name.ends_with(b".zst") || name.ends_with(b".zstd") {
            OutputCompression::Zstd
        } else {
            OutputCompression::None
        }
    }

    /// Every name the output of input `rel` may have (one, unless the compression
    /// depends on the format read: `compress_auto`).
    pub fn output_candidates(&self, rel: &Path) -> Vec<PathBuf> {
        let mut c = vec![output_path(&self.output, rel, self.compress)];
        // A Parquet input's output is never compressed, whatever `--compress` says.
        let plain = output_path(&self.output, rel, OutputCompression::None);
        if self.compress != OutputCompression::None && !c.contains(&plain) {
            c.push(plain);
        }
        if self.compress_auto {
            let jsonl = DocFormat::Jsonl(self.read.jsonl.clone());
            let other = output_path(&self.output, rel, self.output_compression(rel, &jsonl));
            if other != c[0] {
                c.push(other);
            }
        }
        c
    }
}

/// What the run does with input `f` ([`Finished::Rewrite`]: it is written, whether
/// its output exists or not).
pub fn on_finished(cfg: &RunConfig, dur: &Durability, f: &InputFile) -> Finished {
    match dur.finished {
        Some(plan) => plan
            .get(rel_bytes(&f.rel))
            .copied()
            .unwrap_or(Finished::Rewrite),
        None if dur.skip_finished && cfg.output_candidates(&f.rel).iter().any(|o| o.exists()) => {
            Finished::Skip
        }
        None => Finished::Rewrite,
    }
}
