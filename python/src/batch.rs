//! Batch mode from Python: the phases of `webdedup batch` as functions, so Spark,
//! Ray or any task runner can call them inside its tasks (see deploy/spark and
//! deploy/ray). Each returns once its task is done; a finished task returns False.
//! Inputs are verticals or JSON Lines (sniffed per file, or `input_format`), with
//! the command line's field options; every phase must be given the same ones (the
//! work directory records them and refuses others).
//!
//! `minhash=True` (with `shingles`, `shingle_norm`, `hashes`, `bands`, `rows`, `verify`,
//! `verify_hashes`) is
//! `webdedup batch --minhash`: the decisions of `webdedup minhash`, its resolve
//! stages `bands` (every task), then `pick` (task 0 only); no store yet.

use crate::err;
use crate::formats::{read_settings, take_read_keyword};
use crate::keywords::{self, unexpected, Keyword};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use webdedup_dedup::batch::{self, BatchConfig, MinHashStage, Stage};
use webdedup_dedup::options::MinHashOptions;
use webdedup_dedup::{DocCheck, PolicyChoices, RunConfig};
use webdedup_formats::output::OutputCompression;
use webdedup_formats::read::{ReadChoices, ReadSettings};
use webdedup_text::shown::escape_controls;
use webdedup_text::Normalization;

/// The keyword arguments every phase takes: the command line's options of
/// `webdedup batch` (the work directory records them and refuses others), written
/// once for the four functions. A phase's own ones (`store`, `dd`, `compress`)
/// stay in its signature.
#[derive(Default)]
struct PhaseOptions {
    partitions: Option<u32>,
    normalize: Option<String>,
    min_para_chars: Option<usize>,
    doc_check: Option<String>,
    /// `input_format` and the JSON Lines fields.
    read: ReadChoices,
    minhash: bool,
    shingles: Option<String>,
    shingle_norm: Option<String>,
    hashes: Option<usize>,
    bands: Option<usize>,
    rows: Option<usize>,
    verify: Option<f64>,
    verify_hashes: Option<usize>,
}

/// Which phases take `minhash=True` and its settings (all but `batch_publish`,
/// exact mode's).
#[derive(Clone, Copy, PartialEq)]
enum MinHash {
    Taken,
    Refused,
}

impl PhaseOptions {
    /// The options from `function`'s `**options`, each converted as a parameter of
    /// the signature would be; a keyword it does not take raises TypeError, as
    /// Python does.
    fn parse(
        function: &str,
        kwargs: Option<&Bound<'_, PyDict>>,
        minhash: MinHash,
    ) -> PyResult<Self> {
        let mut o = Self::default();
        for kw in keywords::each(kwargs) {
            let (key, value) = kw?;
            let v = Keyword(&key, &value);
            if take_read_keyword(&mut o.read, &v)? {
                continue;
            }
            match key.as_str() {
                "minhash" | "shingles" | "shingle_norm" | "hashes" | "bands" | "rows"
                | "verify" | "verify_hashes"
                    if minhash == MinHash::Refused =>
                {
                    return Err(unexpected(function, &key))
                }
                "partitions" => o.partitions = v.get()?,
                "normalize" => o.normalize = v.get()?,
                "min_para_chars" => o.min_para_chars = v.get()?,
                "doc_check" => o.doc_check = v.get()?,
                "minhash" => o.minhash = v.get()?,
                "shingles" => o.shingles = v.get()?,
                "shingle_norm" => o.shingle_norm = v.get()?,
                "hashes" => o.hashes = v.get()?,
                "bands" => o.bands = v.get()?,
                "rows" => o.rows = v.get()?,
                "verify" => o.verify = v.get()?,
                "verify_hashes" => o.verify_hashes = v.get()?,
                _ => return Err(unexpected(function, &key)),
            }
        }
        Ok(o)
    }

    /// The read settings (`input_format` and the JSON Lines fields).
    fn read(&self) -> PyResult<ReadSettings> {
        read_settings(&self.read)
    }

    /// The MinHash options (`minhash=True` and its settings, as the command line's
    /// `--minhash`, `--shingles`, ...), checked by the library function the command
    /// line calls (`MinHashChoices::options`); None without `minhash`.
    fn minhash(&self) -> PyResult<Option<MinHashOptions>> {
        if !self.minhash {
            if self.shingles.is_some()
                || self.shingle_norm.is_some()
                || self.hashes.is_some()
                || self.bands.is_some()
                || self.rows.is_some()
                || self.verify.is_some()
                || self.verify_hashes.is_some()
            {
                return Err(PyValueError::new_err(
                    "shingles, shingle_norm, hashes, bands, rows, verify and verify_hashes apply with minhash=True",
                ));
            }
            return Ok(None);
        }
        crate::minhash::minhash_options(
            self.shingles.as_deref(),
            self.shingle_norm.as_deref(),
            self.hashes,
            self.bands,
            self.rows,
            self.verify,
            self.verify_hashes,
        )
        .map(Some)
    }

    /// The batch configuration, with the defaults and checks of the command line's
    /// (one library function for both: [`PolicyChoices::options`]); `task_index`,
    /// the task a phase runs, is checked against the count.
    fn config(
        &self,
        input: PathBuf,
        work: PathBuf,
        task_index: Option<usize>,
        task_count: usize,
    ) -> PyResult<BatchConfig> {
        if let Some(i) = task_index.filter(|&i| i >= task_count) {
            return Err(PyValueError::new_err(format!(
                "task_index {i} is not below task_count {task_count}"
            )));
        }
        let normalization = self
            .normalize
            .as_deref()
            .map(str::parse::<Normalization>)
            .transpose()
            .map_err(PyValueError::new_err)?;
        let minhash = self.minhash()?;
        if minhash.is_some() && normalization.is_some_and(|n| n != Normalization::Loose) {
            return Err(PyValueError::new_err(
                "minhash signatures are pinned to the loose normalization: normalize does not apply",
            ));
        }
        let options = PolicyChoices {
            normalization,
            min_para_chars: self.min_para_chars,
            doc_check: self
                .doc_check
                .as_deref()
                .map(str::parse::<DocCheck>)
                .transpose()
                .map_err(PyValueError::new_err)?,
            ..Default::default()
        }
        .options()
        .map_err(PyValueError::new_err)?;
        let options = match minhash {
            Some(m) => webdedup_dedup::Options {
                mode: webdedup_dedup::Mode::MinHash(m),
                ..options
            },
            None => options,
        };
        Ok(BatchConfig {
            inputs: vec![input],
            work,
            task_count,
            partitions: self.partitions.unwrap_or(batch::DEFAULT_PARTITIONS),
            blocks: webdedup_store::DEFAULT_BLOCKS,
            options,
            read: self.read()?,
            chunk_bytes: webdedup_formats::chunk::DEFAULT_CHUNK_BYTES,
            max_line_bytes: webdedup_formats::chunk::DEFAULT_MAX_LINE_BYTES,
            keep: Default::default(),
        })
    }
}

/// Python's TypeError for a keyword argument the function does not take.
pub(crate) fn failed(e: impl std::fmt::Display) -> PyErr {
    err(format!("{e:#}"))
}

/// Problem lines name input files: never raw control bytes on the terminal.
fn show_problem(line: &str) {
    eprintln!("{}", escape_controls(line))
}

/// Every phase function takes the input and the work folder first, its own
/// arguments, then the shared keyword options (`**options`, read by
/// [`PhaseOptions`] for the phase's name and MinHash rule) last: this writes that
/// convention once. A phase gives its own arguments (typed, then as its Python
/// signature lists them) and its body, which sees the read options as `$opts`.
macro_rules! phase_function {
    (
        $(#[$doc:meta])*
        fn $name:ident($py:ident, $input:ident, $work:ident, $($arg:ident: $ty:ty),+)
        signature($($sig:tt)*), options $opts:ident: $minhash:expr, -> $ret:ty $body:block
    ) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = ($input, $work, $($sig)* **options))]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            $py: Python<'_>,
            $input: PathBuf,
            $work: PathBuf,
            $($arg: $ty,)+
            options: Option<&Bound<'_, PyDict>>,
        ) -> PyResult<$ret> {
            let $opts = PhaseOptions::parse(stringify!($name), options, $minhash)?;
            $body
        }
    };
}

phase_function! {
    /// Phase 1 (`webdedup batch hash`) for one task.
    fn batch_hash(py, input, work, task_index: usize, task_count: usize)
    signature(task_index, task_count,), options opts: MinHash::Taken, -> bool {
        let cfg = opts.config(input, work, Some(task_index), task_count)?;
        py.allow_threads(|| batch::hash(&cfg, task_index, &show_problem))
            .map_err(failed)
    }
}

phase_function! {
    /// Phase 2 (`webdedup batch resolve`) for one task and stage (`url-title`, `docs`,
    /// `paras`, in that order; with `minhash`: `bands` for every task, then `pick` for
    /// task 0 only).
    fn batch_resolve(
        py, input, work,
        task_index: usize, task_count: usize, stage: &str, store: Option<PathBuf>
    )
    signature(task_index, task_count, stage, *, store=None,),
    options opts: MinHash::Taken, -> bool {
        let cfg = opts.config(input, work, Some(task_index), task_count)?;
        if cfg.options.minhash().is_none() {
            let stage: Stage = stage.parse().map_err(|e: String| {
                PyValueError::new_err(format!("{e}; with minhash=True: bands or pick"))
            })?;
            return py
                .allow_threads(|| batch::resolve(&cfg, stage, task_index, store.as_deref()))
                .map_err(failed);
        }
        let stage = match stage {
            "bands" => MinHashStage::Bands,
            "pick" if task_index == 0 => MinHashStage::Pick,
            "pick" => {
                return Err(PyValueError::new_err(format!(
                    "stage pick is one task (task_index 0), not task_index {task_index}"
                )))
            }
            _ => {
                return Err(PyValueError::new_err(format!(
                    "unknown stage '{stage}' with minhash=True (expected bands, then pick)"
                )))
            }
        };
        py.allow_threads(|| batch::resolve_minhash(&cfg, stage, task_index, store.as_deref()))
            .map_err(failed)
    }
}

phase_function! {
    /// Phase 3 (`webdedup batch filter`) for one task: writes its outputs into
    /// `output`, the bytes `webdedup dedup` writes.
    fn batch_filter(
        py, input, work,
        output: PathBuf, task_index: usize, task_count: usize, dd: bool, compress: &str
    )
    signature(output, task_index, task_count, *, dd=false, compress="auto",),
    options opts: MinHash::Taken, -> bool {
        let cfg = opts.config(input.clone(), work, Some(task_index), task_count)?;
        let mut run = RunConfig::new(input, output);
        run.options = cfg.options.clone();
        // The runner reads with the run's settings: the work directory's, as the
        // command line's filter does.
        run.read = cfg.read.clone();
        run.chunk_bytes = cfg.chunk_bytes;
        run.max_line_bytes = cfg.max_line_bytes;
        run.dd = dd;
        // As `webdedup dedup --compress`: `auto` (the default) compresses the
        // outputs of JSON Lines as their inputs' names say, verticals stay plain.
        if compress == "auto" {
            run.compress = OutputCompression::None;
            run.compress_auto = true;
        } else {
            run.compress = compress
                .parse()
                .map_err(|e: String| PyValueError::new_err(e.replace("or none", "none or auto")))?;
        }
        run.sync = true;
        py.allow_threads(|| batch::filter(&cfg, &run, task_index, &show_problem))
            .map(|s| s.is_some())
            .map_err(failed)
    }
}

phase_function! {
    /// Folds the run's new keys into the store directory; returns its key count.
    fn batch_publish(py, input, work, task_count: usize, store: PathBuf)
    signature(task_count, store,), options opts: MinHash::Refused, -> u64 {
        let cfg = opts.config(input, work, None, task_count)?;
        py.allow_threads(|| batch::publish(&cfg, &store))
            .map_err(failed)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_hash, m)?)?;
    m.add_function(wrap_pyfunction!(batch_resolve, m)?)?;
    m.add_function(wrap_pyfunction!(batch_filter, m)?)?;
    m.add_function(wrap_pyfunction!(batch_publish, m)?)?;
    Ok(())
}
