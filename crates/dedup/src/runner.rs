//! The stream runner: every file of an input directory, in sorted relative-path
//! order, through plan -> store -> render -> write.
//!
//! With several threads, planning (parsing, normalizing, hashing) and rendering run
//! in parallel while two gates keep the store requests and the writes in input
//! order. The store therefore sees exactly the key sequence of a one-thread pass,
//! and the outputs are byte-identical for every `--threads` value.

use crate::options::Options;
use crate::plan::{ChunkPlan, Planner};
use crate::policy::{chunk_identity, decide, file_id, ChunkContext, Decisions, Scratch};
use crate::render::{render_spans, DdOut, DroppedOut};
use crate::report::{ChunkStats, RunStats};
use crate::resume::{encode_finished, encode_tag, Finished, Recorded, Recorder, Replayer};
use anyhow::{anyhow, Context, Result};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use webdedup_formats::chunk::{
    BufferPool, Chunk, Issue, DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES,
};
use webdedup_formats::input::split_document_name;
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::parquet::RowSlice;
use webdedup_formats::parquet_out::{ParquetOut, RowGroupOut};
use webdedup_formats::read::{DocFormat, DocReader, ReadSettings};
use webdedup_formats::{open_file, Compression};
use webdedup_store::journal::encode_record;
use webdedup_store::{fault, Journal, Location, Store};

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
    pub plans: Option<&'a crate::plan::PlanCache>,
}

/// The per-file decision log of an unfinished output: `OUT/REL.dedup.log` (without
/// the input's and the output's compression suffixes). It is named after the input,
/// not the output: the output's compression may depend on the format read
/// (`--compress auto`), which a stopped run need not know for every file.
pub fn log_path(out_dir: &Path, rel: &Path) -> PathBuf {
    let mut s = output_stem(out_dir, rel).into_os_string();
    s.push(".log");
    PathBuf::from(s)
}

/// The bytes that name an input file in decision records.
pub fn rel_bytes(rel: &Path) -> &[u8] {
    rel.as_os_str().as_encoded_bytes()
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
    /// Show a progress bar on stderr.
    pub progress: bool,
    /// Input problems printed per file before the rest are only counted.
    pub report_limit: usize,
    pub chunk_bytes: usize,
    pub max_line_bytes: usize,
    /// fsync every output before renaming it into place.
    pub sync: bool,
    /// `--mark`: write every input unchanged and the decisions to an attributes
    /// file beside each output (see [`crate::write_back`]).
    pub mark: bool,
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
            progress: false,
            report_limit: 20,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            sync: false,
            mark: false,
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

pub use webdedup_formats::input::{InputFile, Listing, Skipped};

/// The input files of a run (see [`webdedup_formats::input`]: files, directories
/// searched recursively, `-` for standard input, in the order given), leaving out
/// anything under `exclude` (the output directory). Non-regular files found in a
/// directory are in `skipped`, for the caller to report.
pub fn list_inputs(inputs: &[PathBuf], exclude: &Path) -> Result<Listing> {
    let opts = webdedup_formats::input::ListOptions {
        exclude: Some(exclude),
        ..Default::default()
    };
    webdedup_formats::input::list_inputs(inputs, &opts).map_err(anyhow::Error::from)
}

/// Reports the inputs a listing skipped (before the run reads anything).
pub fn report_skipped(listing: &Listing, report: &(dyn Fn(&str) + Sync)) {
    for s in &listing.skipped {
        report(&s.to_string());
    }
}

/// Counts the inputs a listing skipped as input problems of the run.
pub fn count_skipped(listing: &Listing, stats: &mut RunStats) {
    if !listing.skipped.is_empty() {
        *stats.issues.entry("skipped-input".into()).or_default() += listing.skipped.len() as u64;
    }
}

/// The output of input `REL`: `OUT/STEM.dedup.EXT` plus the output compression's
/// suffix (`part.parquet` -> `part.dedup.parquet`, `part.jsonl.gz` ->
/// `part.dedup.jsonl.gz`); a vertical's is `OUT/REL.dedup` (the KNOT seed's name),
/// REL without its compression suffix.
pub fn output_path(out_dir: &Path, rel: &Path, compress: OutputCompression) -> PathBuf {
    // The format's extension after `.dedup`, so that `*.parquet` globs and tools
    // that go by extension find the output (verticals have none).
    let (_, extension, _) = split_document_name(rel.as_os_str().as_encoded_bytes());
    let mut name = output_stem(out_dir, rel).into_os_string();
    name.push(extension);
    name.push(compress.suffix());
    PathBuf::from(name)
}

/// The `.dd` list that goes with an output: `OUT/STEM.dedup.dd`, never compressed.
pub fn dd_path(out_dir: &Path, rel: &Path) -> PathBuf {
    let mut name = output_stem(out_dir, rel).into_os_string();
    name.push(".dd");
    PathBuf::from(name)
}

/// `--mark`'s attributes file: `OUT/STEM.dedup.attributes.jsonl`, never compressed.
pub fn attributes_path(out_dir: &Path, rel: &Path) -> PathBuf {
    let mut name = output_stem(out_dir, rel).into_os_string();
    name.push(".attributes.jsonl");
    PathBuf::from(name)
}

/// Feedback mode's dropped paragraphs: `OUT/STEM.dedup.dropped`, never compressed.
pub fn dropped_path(out_dir: &Path, rel: &Path) -> PathBuf {
    let mut name = output_stem(out_dir, rel).into_os_string();
    name.push(".dropped");
    PathBuf::from(name)
}

/// MinHash mode's pairs report: `OUT/STEM.dedup.pairs` (`DOC TAB ORIGINAL TAB
/// JACCARD` per dropped document), never compressed.
pub fn pairs_path(out_dir: &Path, rel: &Path) -> PathBuf {
    let mut name = output_stem(out_dir, rel).into_os_string();
    name.push(".pairs");
    PathBuf::from(name)
}

/// Feedback mode's index of input file ids: `OUT/files.idx`, one `ID TAB REL` a line.
pub const FILES_INDEX: &str = "files.idx";

/// Writes `OUT/files.idx` for `files` (atomically).
pub fn write_files_index(out_dir: &Path, files: &[InputFile]) -> Result<()> {
    write_files_index_of(out_dir, files.iter().map(|f| rel_bytes(&f.rel)))
}

/// Writes `OUT/files.idx` for inputs named by their paths relative to the input
/// directory (atomically).
pub fn write_files_index_of<'a>(
    out_dir: &Path,
    rels: impl IntoIterator<Item = &'a [u8]>,
) -> Result<()> {
    let path = out_dir.join(FILES_INDEX);
    let mut text = Vec::new();
    for rel in rels {
        text.extend_from_slice(format!("{:016x}\t", file_id(rel)).as_bytes());
        text.extend_from_slice(rel);
        text.push(b'\n');
    }
    let mut out = AtomicOutput::create(&path, OutputCompression::None)
        .with_context(|| format!("cannot create {}", path.display()))?;
    out.write_all(&text)
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.finish(false)
        .with_context(|| format!("cannot finish {}", path.display()))
}

/// `OUT/STEM.dedup`, what every file of input `REL` is named after: REL without
/// its compression suffix and its format's extension
/// ([`split_document_name`]; verticals have none).
fn output_stem(out_dir: &Path, rel: &Path) -> PathBuf {
    let (stem, _, _) = split_document_name(rel.as_os_str().as_encoded_bytes());
    // SAFETY: only ASCII suffixes were cut, so the rest is valid encoded bytes.
    let mut name = unsafe { OsString::from_encoded_bytes_unchecked(stem.to_vec()) };
    name.push(".dedup");
    out_dir.join(name)
}

/// Two inputs whose outputs would have the same name (`a.vert` and `a.vert.gz`):
/// an error naming both, since one output would silently replace the other.
fn check_output_names(files: &[InputFile], out_dir: &Path) -> Result<()> {
    let mut seen = std::collections::HashMap::new();
    for f in files {
        let out = output_stem(out_dir, &f.rel);
        if let Some(other) = seen.insert(out.clone(), &f.path) {
            anyhow::bail!(
                "inputs {} and {} would both be written to {}; rename one of them",
                other.display(),
                f.path.display(),
                out.display()
            );
        }
    }
    Ok(())
}

struct Job {
    seq: u64,
    file: usize,
    /// The file's format (named, or sniffed from its first bytes).
    format: DocFormat,
    /// Index of the chunk in its file.
    index: u64,
    first: bool,
    /// The input's compression, found by content (`--mark` copies an input whose
    /// output has the same one).
    compression: Compression,
    /// None when the file could not be opened.
    chunk: Result<Chunk, String>,
}

/// One thread's reusable buffers.
struct Worker {
    planner: Planner,
    plan: ChunkPlan,
    scratch: Scratch,
    decisions: Decisions,
    out: Vec<u8>,
    dd: Vec<u8>,
    dropped: Vec<u8>,
    /// Record number (from 1) of the chunk's first paragraph in its file.
    first_record: u64,
    stats: ChunkStats,
    asked: Vec<u64>,
    seen: Vec<bool>,
    test_only: Vec<bool>,
    /// The location each asked key was inserted with (feedback mode).
    locs: Vec<Location>,
    /// Feedback mode: the chunk's record carries its new keys' locations.
    located: bool,
    new_keys: Vec<u64>,
    tag: Vec<u8>,
    /// The journal record of the chunk (empty when none is due): built outside
    /// the gates, appended in the write gate before the chunk's output.
    record: Vec<u8>,
    record_due: bool,
    /// Where each entry of the plan went in `out` (Parquet, WET).
    spans: Vec<std::ops::Range<usize>>,
    /// `--mark`: the chunk's attributes lines.
    attrs: Vec<u8>,
    /// Parquet: the chunk's row group, encoded here and appended by the writer.
    row_group: Option<RowGroupOut>,
    /// WET: the chunk's records as written (`out` holds the rendered bytes).
    records: Vec<u8>,
}

impl Worker {
    fn new(opts: &Options, mark: bool) -> Self {
        Worker {
            planner: Planner::new(opts).with_marks(mark),
            plan: ChunkPlan::default(),
            scratch: Scratch::default(),
            decisions: Decisions::default(),
            out: Vec::new(),
            dd: Vec::new(),
            dropped: Vec::new(),
            first_record: 1,
            stats: ChunkStats::default(),
            asked: Vec::new(),
            seen: Vec::new(),
            test_only: Vec::new(),
            locs: Vec::new(),
            located: false,
            new_keys: Vec::new(),
            tag: Vec::new(),
            record: Vec::new(),
            record_due: false,
            spans: Vec::new(),
            attrs: Vec::new(),
            row_group: None,
            records: Vec::new(),
        }
    }

    fn plan(&mut self, job: &Job, file: &InputFile, dur: &Durability) {
        match &job.chunk {
            Ok(chunk) => {
                let cached = dur.plans.is_some_and(|c| {
                    c.take(rel_bytes(&file.rel), job.index, &chunk.data, &mut self.plan)
                });
                if !cached {
                    self.planner.plan_as(&job.format, chunk, &mut self.plan);
                }
            }
            Err(_) => self.plan.clear(),
        }
    }

    /// Asks the store (or the recorded verdicts) about the chunk; journals the
    /// answers. Runs in the commit gate, so in input order.
    fn decide(
        &mut self,
        job: &Job,
        file: &InputFile,
        store: &dyn Store,
        opts: &Options,
        dur: &Durability,
    ) -> Result<()> {
        let rel = rel_bytes(&file.rel);
        let id = ChunkContext {
            id: chunk_identity(rel, job.index),
            file: file_id(rel),
            first_record: self.first_record,
        };
        self.record_due = false;
        if let Some(v) = dur.recorded.and_then(|r| r.get(rel, job.index)) {
            let replay = Replayer::with_store(v, store);
            let r = decide(
                &self.plan,
                id,
                &replay,
                opts,
                &mut self.scratch,
                &mut self.decisions,
            );
            if r.is_err() || !replay.matched() {
                anyhow::bail!(
                    "{}: chunk {}: the input differs from the interrupted run's (its recorded decisions do not match); restore with the same input and options",
                    file.path.display(),
                    job.index
                );
            }
            return Ok(());
        }
        if dur.journal.is_none() {
            return decide(
                &self.plan,
                id,
                store,
                opts,
                &mut self.scratch,
                &mut self.decisions,
            )
            .context("store request failed");
        }
        let rec = Recorder {
            inner: store,
            log: parking_lot::Mutex::new((
                std::mem::take(&mut self.asked),
                std::mem::take(&mut self.seen),
                std::mem::take(&mut self.test_only),
                std::mem::take(&mut self.locs),
            )),
        };
        {
            let mut log = rec.log.lock();
            log.0.clear();
            log.1.clear();
            log.2.clear();
            log.3.clear();
        }
        let r = decide(
            &self.plan,
            id,
            &rec,
            opts,
            &mut self.scratch,
            &mut self.decisions,
        );
        (self.asked, self.seen, self.test_only, self.locs) = rec.log.into_inner();
        r.context("store request failed")?;
        self.located = opts.feedback;
        fault::hit("commit");
        self.record_due = true;
        if fault::armed() && fault::reached("stop", 1) {
            if let Some(stop) = dur.stop {
                stop.store(true, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Builds the chunk's journal record (outside the gates: in parallel).
    fn build_record(&mut self, job: &Job, file: &InputFile) {
        self.record.clear();
        if !self.record_due {
            return;
        }
        self.new_keys.clear();
        // Keys only tested (near mode's probes) were not inserted: not new keys.
        self.new_keys.extend(
            self.asked
                .iter()
                .zip(&self.seen)
                .zip(&self.test_only)
                .filter(|((_, &s), &t)| !s && !t)
                .map(|((&k, _), _)| k),
        );
        if self.located {
            // Each new key's location follows the keys (see `resume`).
            let n = self.new_keys.len();
            for (((_, &s), &t), l) in self
                .asked
                .iter()
                .zip(&self.seen)
                .zip(&self.test_only)
                .zip(&self.locs)
            {
                if !s && !t {
                    self.new_keys.extend_from_slice(&[l.file, l.record]);
                }
            }
            debug_assert_eq!(self.new_keys.len(), 3 * n);
        }
        encode_tag(
            rel_bytes(&file.rel),
            job.index,
            &self.asked,
            &self.seen,
            self.located,
            &mut self.tag,
        );
        encode_record(&self.tag, &self.new_keys, &mut self.record);
    }

    /// Feedback mode's `.dropped` text, or MinHash mode's pairs report, go into
    /// `self.dropped`.
    fn render(&mut self, job: &Job, file: &InputFile, cfg: &RunConfig) -> Result<()> {
        let (dd, feedback) = (cfg.dd, cfg.options.feedback);
        let minhash = cfg.options.minhash.is_some();
        self.out.clear();
        self.dd.clear();
        self.dropped.clear();
        self.spans.clear();
        self.attrs.clear();
        self.records.clear();
        self.row_group = None;
        self.stats = ChunkStats::default();
        if let Ok(chunk) = &job.chunk {
            let name = file.rel.to_string_lossy();
            let dd_buf = dd.then(|| DdOut {
                out: &mut self.dd,
                name: &name,
            });
            let dropped = feedback.then(|| DroppedOut {
                out: &mut self.dropped,
                file: file_id(rel_bytes(&file.rel)),
                first_record: self.first_record,
            });
            let rebuilt = matches!(job.format, DocFormat::Parquet(_) | DocFormat::Wet { .. });
            // `--mark` writes the chunk as read (the writer takes `chunk.data`):
            // the kept text is not needed.
            let text_out = (rebuilt || !cfg.mark).then_some(&mut self.out);
            render_spans(
                &chunk.data,
                &self.plan,
                &self.decisions,
                text_out,
                dd_buf,
                dropped,
                &mut self.stats,
                rebuilt.then_some(&mut self.spans),
            );
            if minhash {
                crate::policy::minhash::pairs_lines(
                    &self.plan,
                    &self.decisions,
                    &name,
                    &mut self.dropped,
                );
            }
            if cfg.mark {
                crate::write_back::attributes(&self.plan, &self.decisions, &name, &mut self.attrs);
            }
            let context = || format!("{}: cannot write its output", file.path.display());
            match &job.format {
                DocFormat::Parquet(_) => {
                    let rows = crate::write_back::parquet_rows(
                        chunk,
                        &self.plan,
                        &self.decisions,
                        &self.out,
                        &self.spans,
                        cfg.mark,
                    )
                    .with_context(context)?;
                    self.row_group = Some(rows);
                }
                DocFormat::Wet { .. } => {
                    let gzip =
                        cfg.output_compression(&file.rel, &job.format) == OutputCompression::Gzip;
                    crate::write_back::wet_records(
                        chunk,
                        &self.decisions,
                        &self.out,
                        &self.spans,
                        cfg.mark,
                        gzip,
                        &mut self.records,
                    )
                    .with_context(context)?;
                    std::mem::swap(&mut self.out, &mut self.records);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Whether `--mark` writes the job's input as it was read (the line formats; Parquet
/// and WET write rows and records again).
fn as_read(job: &Job) -> bool {
    matches!(job.format, DocFormat::Vertical | DocFormat::Jsonl(_))
}

/// Whether an input compressed `input` (found by content) goes to an output
/// compressed `output` unchanged.
fn same_compression(input: Compression, output: OutputCompression) -> bool {
    matches!(
        (input, output),
        (Compression::None, OutputCompression::None)
            | (Compression::Gzip, OutputCompression::Gzip)
            | (Compression::Zstd, OutputCompression::Zstd)
    )
}

/// A new output at `path` holding the first `len` bytes of `file` decompressed:
/// the chunks of a copied input written so far, which were read unchanged.
fn write_prefix(
    file: &InputFile,
    path: &Path,
    compress: OutputCompression,
    len: u64,
) -> Result<AtomicOutput> {
    let mut out = AtomicOutput::create(path, compress)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let (reader, _) =
        open_file(file, None).with_context(|| format!("cannot read {}", file.path.display()))?;
    let copied = std::io::copy(&mut reader.take(len), &mut out)
        .with_context(|| format!("cannot read {} again", file.path.display()))?;
    if copied != len {
        return Err(anyhow!(
            "{}: changed while it was read (to be written unchanged)",
            file.path.display()
        ));
    }
    Ok(out)
}

/// A complete output, to be made durable and renamed into place.
struct Finish {
    main: AtomicOutput,
    attrs: Option<AtomicOutput>,
    /// The file's decision log, removed once the output is in place.
    log: PathBuf,
    dd: Option<AtomicOutput>,
    dropped: Option<AtomicOutput>,
}

/// Syncs the journal (the decisions behind the output must be durable before it
/// counts as finished: a restore skips finished outputs), then flushes, syncs (when
/// `sync`) and renames the `.dd` and the output, and removes the file's decision log.
fn finish_file(f: Finish, journal: Option<&Journal>, sync: bool) -> Result<()> {
    if let Some(j) = journal {
        j.sync().context("cannot sync the journal")?;
    }
    fault::hit("rename");
    // The `.dd` and `.dropped` first: a file is finished when its main output exists.
    if let Some(d) = f.dropped {
        let path = d.path().to_owned();
        d.finish(sync)
            .with_context(|| format!("cannot finish {}", path.display()))?;
    }
    if let Some(a) = f.attrs {
        let path = a.path().to_owned();
        a.finish(sync)
            .with_context(|| format!("cannot finish {}", path.display()))?;
    }
    if let Some(dd) = f.dd {
        let path = dd.path().to_owned();
        dd.finish(sync)
            .with_context(|| format!("cannot finish {}", path.display()))?;
    }
    let path = f.main.path().to_owned();
    f.main
        .finish(sync)
        .with_context(|| format!("cannot finish {}", path.display()))?;
    fault::hit("renamed");
    if f.log.exists() {
        webdedup_store::journal::remove_durably(&f.log)?;
    }
    Ok(())
}

/// The main output of one input file, as its format is written.
enum MainOut {
    /// The rendered bytes of each chunk appended (verticals, JSON Lines, WET).
    Bytes(AtomicOutput),
    /// Encoded row groups appended, the footer written at the end.
    Parquet(ParquetOut<AtomicOutput>),
}

/// The open outputs of the file being written.
struct Outputs {
    main: MainOut,
    dd: Option<AtomicOutput>,
    dropped: Option<AtomicOutput>,
    attrs: Option<AtomicOutput>,
}

/// Writes outputs in input order and keeps the run's figures.
struct Writer<'a> {
    cfg: &'a RunConfig,
    journal: Option<&'a Journal>,
    /// With fsync, finished outputs go to a background thread, so that fsyncing a
    /// file does not hold up the writing of the next one.
    finisher: Option<crossbeam_channel::Sender<Finish>>,
    files: &'a [InputFile],
    /// By file: decided again but not written ([`Finished::Replay`]).
    replay: &'a [bool],
    /// Replayed files done.
    replayed: u64,
    report: &'a (dyn Fn(&str) + Sync),
    current: Option<Outputs>,
    issues_in_file: u64,
    stats: RunStats,
    progress: Option<indicatif::ProgressBar>,
    started: Instant,
}

impl Writer<'_> {
    fn write(&mut self, job: &Job, w: &mut Worker) -> Result<()> {
        let file = &self.files[job.file];
        if self.replay[job.file] {
            // Its decisions went into the store; its finished output stays as it is.
            if job.chunk.as_ref().map_or(true, |c| c.last) {
                self.replayed += 1;
                self.tick();
            }
            return Ok(());
        }
        let chunk = match &job.chunk {
            Ok(c) => c,
            Err(e) => {
                (self.report)(&format!(
                    "{}: cannot read: {e}; no output written",
                    file.path.display()
                ));
                self.stats.files += 1;
                self.stats.files_unreadable += 1;
                self.tick();
                return Ok(());
            }
        };
        if job.first {
            if self.journal.is_some() {
                // An earlier run's output goes before this file's finish mark can be
                // journaled: an output a restore finds with a mark is then this
                // run's (the mark precedes the rename).
                for old in self.cfg.output_candidates(&file.rel) {
                    if old.exists() {
                        webdedup_store::journal::remove_durably(&old)
                            .with_context(|| format!("cannot replace {}", old.display()))?;
                    }
                }
            }
            let compress = self.cfg.output_compression(&file.rel, &job.format);
            let out = output_path(&self.cfg.output, &file.rel, compress);
            let dd_out = dd_path(&self.cfg.output, &file.rel);
            let dd = if self.cfg.dd {
                Some(
                    AtomicOutput::create(&dd_out, OutputCompression::None)
                        .with_context(|| format!("cannot create {}", dd_out.display()))?,
                )
            } else {
                None
            };
            let side = if self.cfg.options.minhash.is_some() {
                Some(pairs_path(&self.cfg.output, &file.rel))
            } else if self.cfg.options.feedback {
                Some(dropped_path(&self.cfg.output, &file.rel))
            } else {
                None
            };
            let dropped = if let Some(p) = side {
                Some(
                    AtomicOutput::create(&p, OutputCompression::None)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                )
            } else {
                None
            };
            let attrs = if self.cfg.mark {
                let p = attributes_path(&self.cfg.output, &file.rel);
                Some(
                    AtomicOutput::create(&p, OutputCompression::None)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                )
            } else {
                None
            };
            let created = |c| {
                AtomicOutput::create(&out, c)
                    .with_context(|| format!("cannot create {}", out.display()))
            };
            let main = match (&job.format, chunk.extra.get::<RowSlice>()) {
                (DocFormat::Parquet(_), Some(slice)) => MainOut::Parquet(
                    ParquetOut::create(created(OutputCompression::None)?, &slice.source)
                        .with_context(|| format!("cannot create {}", out.display()))?,
                ),
                // Each record is its own gzip member, compressed by the worker.
                (DocFormat::Wet { .. }, _) if compress == OutputCompression::Gzip => {
                    MainOut::Bytes(created(OutputCompression::None)?)
                }
                // `--mark` on an input whose output has its compression: the
                // output is the input file's bytes (copied, not compressed again).
                _ if self.cfg.mark
                    && as_read(job)
                    && !file.is_stdin()
                    && fs::metadata(&file.path).is_ok_and(|m| m.is_file())
                    && same_compression(job.compression, compress) =>
                {
                    match AtomicOutput::copy_of(&out, &file.path) {
                        Ok(copy) => MainOut::Bytes(copy),
                        // Written as read instead (that reports what is wrong).
                        Err(_) => MainOut::Bytes(created(compress)?),
                    }
                }
                _ => MainOut::Bytes(created(compress)?),
            };
            self.current = Some(Outputs {
                main,
                dd,
                dropped,
                attrs,
            });
            self.issues_in_file = 0;
        }
        // The chunk's keys and verdicts reach the journal in input order, before
        // its output (the journal is a prefix of the committed chunks).
        if let (Some(j), false) = (self.journal, w.record.is_empty()) {
            j.append_encoded(&w.record)
                .context("cannot write the journal")?;
        }
        self.report_issues(file, &job.format, &w.plan.issues);
        let Outputs {
            main,
            dd,
            dropped,
            attrs,
        } = self
            .current
            .as_mut()
            .ok_or_else(|| anyhow!("internal: no open output for {}", file.path.display()))?;
        let written = match main {
            MainOut::Bytes(main) => {
                let bytes = if self.cfg.mark && as_read(job) {
                    &chunk.data
                } else {
                    &w.out
                };
                // A copied input that is not read as it is (a line dropped as too
                // long, a read error): written as read after all, from the start.
                if main.is_copy() && (!chunk.skipped_lines.is_empty() || !chunk.issues.is_empty()) {
                    let compress = self.cfg.output_compression(&file.rel, &job.format);
                    let (path, len) = (main.path().to_owned(), main.bytes());
                    main.discard();
                    *main = write_prefix(file, &path, compress, len)?;
                }
                main.write_all(bytes)
                    .with_context(|| format!("cannot write {}", main.path().display()))?;
                bytes.len() as u64
            }
            MainOut::Parquet(p) => p
                .append(w.row_group.take().unwrap_or(RowGroupOut::Empty))
                .with_context(|| format!("cannot write the output of {}", file.path.display()))?,
        };
        if fault::armed() && fault::reached("output-bytes", written) {
            fault::crash("output-bytes");
        }
        if let Some(a) = attrs {
            a.write_all(&w.attrs)
                .with_context(|| format!("cannot write {}", a.path().display()))?;
        }
        if let Some(dd) = dd {
            dd.write_all(&w.dd)
                .with_context(|| format!("cannot write {}", dd.path().display()))?;
        }
        if let Some(d) = dropped {
            d.write_all(&w.dropped)
                .with_context(|| format!("cannot write {}", d.path().display()))?;
        }
        // Dropped lines were read too: "MB in" is the input's size.
        self.stats.bytes_in += chunk.data.len() as u64 + chunk.dropped_bytes;
        self.stats.bytes_out += written;
        self.stats.add_chunk(&w.stats);
        if chunk.last {
            // The finish mark goes after the file's last record and before the sync
            // that precedes the rename: a finished output's records are then never
            // the journal's last one, which a restore may drop as torn.
            if let Some(j) = self.journal {
                let mut tag = Vec::new();
                encode_finished(rel_bytes(&file.rel), job.index + 1, &mut tag);
                j.append(&tag, &[]).context("cannot write the journal")?;
            }
            let Outputs {
                main,
                dd,
                dropped,
                attrs,
            } = self.current.take().expect("checked above");
            let main = match main {
                MainOut::Bytes(m) => m,
                MainOut::Parquet(p) => p.finish().with_context(|| {
                    format!("cannot finish the output of {}", file.path.display())
                })?,
            };
            let done = Finish {
                main,
                attrs,
                log: log_path(&self.cfg.output, &file.rel),
                dd,
                dropped,
            };
            match &self.finisher {
                Some(tx) => tx
                    .send(done)
                    .map_err(|_| anyhow!("internal: the output finisher stopped"))?,
                None => finish_file(done, self.journal, self.cfg.sync)?,
            }
            self.stats.files += 1;
            if self.issues_in_file > 0 {
                self.stats.files_with_issues += 1;
                let hidden = self
                    .issues_in_file
                    .saturating_sub(self.cfg.report_limit as u64);
                if hidden > 0 {
                    (self.report)(&format!(
                        "{}: {hidden} more input problems not shown",
                        file.path.display()
                    ));
                }
            }
            self.tick();
        } else if let Some(p) = &self.progress {
            self.update_progress_message(p);
        }
        Ok(())
    }

    fn report_issues(&mut self, file: &InputFile, format: &DocFormat, issues: &[Issue]) {
        for issue in issues {
            *self
                .stats
                .issues
                .entry(issue.kind.name().to_string())
                .or_default() += 1;
            if self.issues_in_file < self.cfg.report_limit as u64 {
                // A line, a Parquet row, a WET record's offset.
                (self.report)(&format!(
                    "{}:{}{}: {}",
                    file.path.display(),
                    format.at(),
                    issue.line,
                    issue.kind
                ));
            }
            self.issues_in_file += 1;
        }
    }

    fn tick(&mut self) {
        if let Some(p) = &self.progress {
            p.inc(1);
            self.update_progress_message(p);
        }
    }

    fn update_progress_message(&self, p: &indicatif::ProgressBar) {
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        let mb = self.stats.bytes_in as f64 / 1e6;
        p.set_message(format!(
            "{mb:.0} MB, {:.0} MB/s, docs kept {} dropped {}",
            mb / secs,
            self.stats.documents_kept,
            self.stats.documents_dropped
        ));
    }
}

/// Opens an input (see [`open_file`]) and decides its document format: the one
/// `read` names, or the one its first decompressed bytes suggest. The reader
/// still starts at the first byte.
pub fn open_documents<'a>(
    f: &InputFile,
    read: &ReadSettings,
    stop: Option<&'a AtomicBool>,
) -> std::io::Result<(DocFormat, BufReader<Box<dyn Read + Send + 'a>>)> {
    let (reader, _) = open_file(f, stop)?;
    let mut r = BufReader::with_capacity(1 << 16, reader);
    let format = read.resolve(r.fill_buf()?);
    Ok((format, r))
}

/// The reader of an input's chunks of whole documents, in its format (named, or
/// sniffed from its first decompressed bytes); Parquet and WET are opened again
/// by path ([`DocFormat::reader`]).
pub fn open_doc_reader<'a>(
    f: &InputFile,
    read: &ReadSettings,
    stop: Option<&'a AtomicBool>,
    chunk_bytes: usize,
    max_line: usize,
) -> std::io::Result<(DocFormat, DocReader<DocStream<'a>>)> {
    open_doc_reader_as(f, read, stop, chunk_bytes, max_line).map(|(f, r, _)| (f, r))
}

/// [`open_doc_reader`], also saying how the input is compressed (by content).
fn open_doc_reader_as<'a>(
    f: &InputFile,
    read: &ReadSettings,
    stop: Option<&'a AtomicBool>,
    chunk_bytes: usize,
    max_line: usize,
) -> std::io::Result<(DocFormat, DocReader<DocStream<'a>>, Compression)> {
    let (reader, compression) = open_file(f, stop)?;
    let mut r = BufReader::with_capacity(1 << 16, reader);
    let format = read.resolve(r.fill_buf()?);
    let reader = format
        .reader(f, r, compression, chunk_bytes, max_line)
        .map_err(|e| std::io::Error::new(e.kind(), e.to_string()))?;
    Ok((format, reader, compression))
}

/// A decompressed input stream.
pub type DocStream<'a> = BufReader<Box<dyn Read + Send + 'a>>;

/// Sends every chunk of every file, numbered in order, until `send` refuses or
/// `stop` says so.
fn read_jobs(
    files: &[InputFile],
    cfg: &RunConfig,
    pool: &Arc<BufferPool>,
    stop: &(dyn Fn() -> bool + Sync),
    dur_stop: Option<&AtomicBool>,
    mut send: impl FnMut(Job) -> bool,
) {
    let mut seq = 0u64;
    for (i, f) in files.iter().enumerate() {
        if stop() {
            return;
        }
        match open_doc_reader_as(f, &cfg.read, dur_stop, cfg.chunk_bytes, cfg.max_line_bytes) {
            // A signal ended the wait for a stream: the file stays unfinished.
            Err(_) if stop() => return,
            Err(e) => {
                if !send(Job {
                    seq,
                    file: i,
                    format: DocFormat::Vertical,
                    index: 0,
                    first: true,
                    compression: Compression::None,
                    chunk: Err(e.to_string()),
                }) {
                    return;
                }
                seq += 1;
            }
            Ok((format, reader, compression)) => {
                let mut chunks = reader.with_pool(pool.clone());
                let mut first = true;
                let mut index = 0;
                while let Some(chunk) = chunks.next_chunk() {
                    if stop()
                        || !send(Job {
                            seq,
                            file: i,
                            format: format.clone(),
                            index,
                            first,
                            compression,
                            chunk: Ok(chunk),
                        })
                    {
                        return;
                    }
                    seq += 1;
                    index += 1;
                    first = false;
                }
            }
        }
    }
}

/// Numbers paragraphs within each input file (feedback records, from 1): advanced
/// in the commit gate, so in input order.
#[derive(Default)]
struct RecordCounter {
    next: u64,
}

impl RecordCounter {
    /// The record number of the job's first paragraph; counts its `paras`.
    fn next(&mut self, job: &Job, paras: usize) -> u64 {
        if job.first {
            self.next = 1;
        }
        let first = self.next;
        self.next += paras as u64;
        first
    }
}

/// Lets threads through one at a time, in sequence-number order.
struct Gate<T> {
    state: Mutex<(u64, T)>,
    cv: Condvar,
}

impl<T> Gate<T> {
    fn new(value: T) -> Self {
        Gate {
            state: Mutex::new((0, value)),
            cv: Condvar::new(),
        }
    }

    /// Runs `f` when it is `seq`'s turn, then lets `seq + 1` through.
    fn pass<R>(&self, seq: u64, f: impl FnOnce(&mut T) -> R) -> R {
        let mut g = self.state.lock();
        while g.0 != seq {
            self.cv.wait(&mut g);
        }
        let r = f(&mut g.1);
        g.0 += 1;
        drop(g);
        self.cv.notify_all();
        r
    }
}

/// Deduplicates every file of `cfg.inputs` into `cfg.output` against `store`.
/// Input problems go to `report` (one line each) and are counted in the stats; an
/// error is returned only for what stops the run (a failing store, an unwritable
/// output).
pub fn run(cfg: &RunConfig, store: &dyn Store, report: &(dyn Fn(&str) + Sync)) -> Result<RunStats> {
    run_with(cfg, store, &Durability::default(), report)
}

/// [`run`] with a journal, recorded verdicts, skipping of finished outputs and a
/// stop flag (see [`Durability`]). `stats.interrupted` says whether the stop flag
/// ended the run before every file was finished.
pub fn run_with(
    cfg: &RunConfig,
    store: &dyn Store,
    dur: &Durability,
    report: &(dyn Fn(&str) + Sync),
) -> Result<RunStats> {
    let listing = list_inputs(&cfg.inputs, &cfg.output)?;
    report_skipped(&listing, report);
    let mut stats = run_files(cfg, listing.files.clone(), store, dur, report)?;
    count_skipped(&listing, &mut stats);
    Ok(stats)
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

/// [`run_with`] over the given input files (a subset of `cfg.inputs`' listing, in
/// its order), e.g. one batch-mode task's share.
pub fn run_files(
    cfg: &RunConfig,
    mut files: Vec<InputFile>,
    store: &dyn Store,
    dur: &Durability,
    report: &(dyn Fn(&str) + Sync),
) -> Result<RunStats> {
    let started = Instant::now();
    check_output_names(&files, &cfg.output)?;
    fs::create_dir_all(&cfg.output)
        .with_context(|| format!("cannot create output directory {}", cfg.output.display()))?;
    if cfg.options.feedback || cfg.options.minhash.is_some() {
        write_files_index(&cfg.output, &files)?;
    }
    if let Some(m) = &cfg.options.minhash {
        // The side store's files sit beside the outputs (unless a store directory
        // was loaded into it already).
        m.kept.set_dir(&cfg.output);
        for f in &files {
            m.kept
                .add_file(file_id(rel_bytes(&f.rel)), &f.rel.to_string_lossy());
        }
    }
    let listed = files.len();
    let on_finished = |f: &InputFile| on_finished(cfg, dur, f);
    files.retain(|f| on_finished(f) != Finished::Skip);
    // Replayed inputs are read and decided, not written.
    let replay: Vec<bool> = files
        .iter()
        .map(|f| on_finished(f) == Finished::Replay)
        .collect();
    let skipped = (listed - files.len() + replay.iter().filter(|&&r| r).count()) as u64;
    let progress = cfg.progress.then(|| {
        let p = indicatif::ProgressBar::new(files.len() as u64);
        p.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} files, {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        p
    });
    let progress_handle = progress.clone();
    let writer = Writer {
        cfg,
        journal: dur.journal,
        finisher: None,
        files: &files,
        replay: &replay,
        replayed: 0,
        report,
        current: None,
        issues_in_file: 0,
        stats: RunStats::default(),
        progress,
        started,
    };
    let threads = cfg.threads.max(1);
    let stop = AtomicBool::new(false);
    let signalled = || dur.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let should_stop = || stop.load(Ordering::Relaxed) || signalled();

    let finish_failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let (finish_tx, finish_rx) = crossbeam_channel::bounded::<Finish>(4);
    let mut finish_tx = Some(finish_tx);
    let replay = &replay;
    let result = std::thread::scope(|sc| -> Result<(RunStats, u64)> {
        let mut writer = writer;
        if cfg.sync {
            let (stop, finish_failure, finish_rx) = (&stop, &finish_failure, &finish_rx);
            sc.spawn(move || {
                for f in finish_rx.iter() {
                    if finish_failure.lock().is_some() {
                        continue;
                    }
                    if let Err(e) = finish_file(f, dur.journal, true) {
                        stop.store(true, Ordering::Relaxed);
                        finish_failure.lock().get_or_insert(e);
                    }
                }
            });
            writer.finisher = finish_tx.take();
        }
        drop(finish_tx.take());
        // Two chunks in flight per thread, plus the reader's.
        let pool = BufferPool::new(threads * 2 + 2);
        let stats = if threads == 1 {
            let mut w = Worker::new(&cfg.options, cfg.mark);
            let mut failure = None;
            let mut records = RecordCounter::default();
            read_jobs(&files, cfg, &pool, &should_stop, dur.stop, |job| {
                w.plan(&job, &files[job.file], dur);
                w.first_record = records.next(&job, w.plan.paras.len());
                let r = w
                    .decide(&job, &files[job.file], store, &cfg.options, dur)
                    .and_then(|_| {
                        if !replay[job.file] {
                            w.build_record(&job, &files[job.file]);
                            w.render(&job, &files[job.file], cfg)?;
                        }
                        writer.write(&job, &mut w)
                    });
                if let Ok(chunk) = job.chunk {
                    pool.give(chunk.data);
                }
                match r {
                    Ok(()) => true,
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            });
            if let Some(e) = failure {
                return Err(e);
            }
            writer.finisher = None;
            (std::mem::take(&mut writer.stats), writer.replayed)
        } else {
            let commit_gate = Gate::new(RecordCounter::default());
            let write_gate = Gate::new(writer);
            let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
            let (tx, rx) = crossbeam_channel::bounded::<Job>(threads * 2);
            std::thread::scope(|s| {
                s.spawn({
                    let (files, should_stop, pool) = (&files, &should_stop, &pool);
                    // The sender moves into the reader: when it is done the channel closes
                    // and the workers' loops end.
                    move || {
                        read_jobs(files, cfg, pool, should_stop, dur.stop, |job| {
                            tx.send(job).is_ok()
                        })
                    }
                });
                for _ in 0..threads {
                    s.spawn(|| {
                        let mut w = Worker::new(&cfg.options, cfg.mark);
                        for job in rx.iter() {
                            let failed = || stop.load(Ordering::Relaxed);
                            if !failed() {
                                w.plan(&job, &files[job.file], dur);
                            }
                            // Every job passes both gates, even after a failure, so no
                            // thread waits forever for a turn that never comes.
                            let r = commit_gate.pass(job.seq, |records| {
                                w.first_record = records.next(&job, w.plan.paras.len());
                                if failed() {
                                    Ok(())
                                } else {
                                    w.decide(&job, &files[job.file], store, &cfg.options, dur)
                                }
                            });
                            let r = r.and_then(|_| {
                                if failed() || replay[job.file] {
                                    return Ok(());
                                }
                                w.build_record(&job, &files[job.file]);
                                w.render(&job, &files[job.file], cfg)
                            });
                            let r = write_gate.pass(job.seq, |wr| {
                                r.and_then(|_| {
                                    if failed() {
                                        Ok(())
                                    } else {
                                        wr.write(&job, &mut w)
                                    }
                                })
                            });
                            if let Err(e) = r {
                                stop.store(true, Ordering::Relaxed);
                                failure.lock().get_or_insert(e);
                            }
                            if let Ok(chunk) = job.chunk {
                                pool.give(chunk.data);
                            }
                        }
                    });
                }
            });
            if let Some(e) = failure.into_inner() {
                return Err(e);
            }
            let writer = write_gate.state.into_inner().1;
            (writer.stats, writer.replayed)
        };
        Ok(stats)
    });
    let (mut stats, replayed) = result?;
    if let Some(e) = finish_failure.into_inner() {
        return Err(e);
    }
    if let Some(p) = progress_handle {
        p.finish_and_clear();
    }
    stats.threads = threads;
    stats.files_skipped = skipped;
    stats.interrupted = signalled() && stats.files + replayed < files.len() as u64;
    stats.finish(
        started.elapsed().as_secs_f64(),
        store.len(),
        store.memory_bytes(),
    );
    stats.keys_counted = store.counts_keys();
    if cfg
        .options
        .minhash
        .as_ref()
        .is_some_and(|m| m.verify.is_some() && m.decided.is_none())
    {
        stats.documents_dropped_unverified.get_or_insert(0);
    }
    Ok(stats)
}
