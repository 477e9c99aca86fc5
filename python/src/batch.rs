//! Batch mode from Python: the phases of `webdedup batch` as functions, so Spark,
//! Ray or any task runner can call them inside its tasks (see deploy/spark and
//! deploy/ray). Each returns once its task is done; a finished task returns False.
//! Inputs are verticals or JSON Lines (sniffed per file, or `input_format`), with
//! the command line's field options; every phase must be given the same ones (the
//! work directory records them and refuses others).
//!
//! `minhash=True` (with `shingles`, `hashes`, `bands`, `rows`, `verify`) is
//! `webdedup batch --minhash`: the decisions of `webdedup minhash`, its resolve
//! stages `bands` (every task), then `pick` (task 0 only); no store yet.

use crate::err;
use crate::formats::read_settings;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;
use webdedup_dedup::batch::{self, BatchConfig, MinHashStage, Stage};
use webdedup_dedup::options::MinHashOptions;
use webdedup_dedup::{DocCheck, PolicyChoices, RunConfig};
// Problem lines name input files: never raw control bytes on the terminal.
use webdedup_formats::doc::ReadSettings;
use webdedup_formats::output::OutputCompression;
use webdedup_formats::shown::escape_controls;
use webdedup_text::Normalization;

/// The batch configuration, with the defaults and checks of the command line's
/// (one library function for both: [`PolicyChoices::options`]).
#[allow(clippy::too_many_arguments)]
fn config(
    input: PathBuf,
    work: PathBuf,
    task_count: usize,
    partitions: Option<u32>,
    normalize: Option<&str>,
    min_para_chars: Option<usize>,
    doc_check: Option<&str>,
    read: ReadSettings,
    minhash: Option<MinHashOptions>,
) -> PyResult<BatchConfig> {
    let normalization = normalize
        .map(str::parse::<Normalization>)
        .transpose()
        .map_err(PyValueError::new_err)?;
    if minhash.is_some() && normalization.is_some_and(|n| n != Normalization::Loose) {
        return Err(PyValueError::new_err(
            "minhash signatures are pinned to the loose normalization: normalize does not apply",
        ));
    }
    let options = PolicyChoices {
        normalization,
        min_para_chars,
        doc_check: doc_check
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
        partitions: partitions.unwrap_or(batch::DEFAULT_PARTITIONS),
        blocks: webdedup_store::DEFAULT_BLOCKS,
        options,
        read,
        chunk_bytes: webdedup_formats::vertical::DEFAULT_CHUNK_BYTES,
        max_line_bytes: webdedup_formats::vertical::DEFAULT_MAX_LINE_BYTES,
    })
}

/// The MinHash keyword arguments (`minhash=True` and its settings, as the command
/// line's `--minhash`, `--shingles`, ...), checked by the library function the
/// command line calls (`MinHashChoices::options`); None without `minhash`.
fn minhash_options(
    minhash: bool,
    shingles: Option<&str>,
    hashes: Option<usize>,
    bands: Option<usize>,
    rows: Option<usize>,
    verify: Option<f64>,
) -> PyResult<Option<MinHashOptions>> {
    if !minhash {
        if shingles.is_some()
            || hashes.is_some()
            || bands.is_some()
            || rows.is_some()
            || verify.is_some()
        {
            return Err(PyValueError::new_err(
                "shingles, hashes, bands, rows and verify apply with minhash=True",
            ));
        }
        return Ok(None);
    }
    crate::minhash::minhash_options(shingles, hashes, bands, rows, verify).map(Some)
}

fn check_index(cfg: &BatchConfig, task_index: usize) -> PyResult<()> {
    if task_index >= cfg.task_count {
        return Err(PyValueError::new_err(format!(
            "task_index {task_index} is not below task_count {}",
            cfg.task_count
        )));
    }
    Ok(())
}

/// Phase 1 (`webdedup batch hash`) for one task.
#[pyfunction]
#[pyo3(signature = (input, work, task_index, task_count, *, partitions=None, normalize=None, min_para_chars=None, doc_check=None, input_format=None, text_field=None, id_field=None, url_field=None, title_field=None, drop_bad_records=false, minhash=false, shingles=None, hashes=None, bands=None, rows=None, verify=None))]
#[allow(clippy::too_many_arguments)]
fn batch_hash(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    task_index: usize,
    task_count: usize,
    partitions: Option<u32>,
    normalize: Option<&str>,
    min_para_chars: Option<usize>,
    doc_check: Option<&str>,
    input_format: Option<&str>,
    text_field: Option<&str>,
    id_field: Option<&str>,
    url_field: Option<&str>,
    title_field: Option<&str>,
    drop_bad_records: bool,
    minhash: bool,
    shingles: Option<&str>,
    hashes: Option<usize>,
    bands: Option<usize>,
    rows: Option<usize>,
    verify: Option<f64>,
) -> PyResult<bool> {
    let cfg = config(
        input,
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
        read_settings(
            input_format,
            text_field,
            id_field,
            url_field,
            title_field,
            drop_bad_records,
        )?,
        minhash_options(minhash, shingles, hashes, bands, rows, verify)?,
    )?;
    check_index(&cfg, task_index)?;
    py.allow_threads(|| batch::hash(&cfg, task_index, &|l| eprintln!("{}", escape_controls(l))))
        .map_err(|e| err(format!("{e:#}")))
}

/// Phase 2 (`webdedup batch resolve`) for one task and stage (`url-title`, `docs`,
/// `paras`, in that order; with `minhash`: `bands` for every task, then `pick` for
/// task 0 only).
#[pyfunction]
#[pyo3(signature = (input, work, task_index, task_count, stage, *, store=None, partitions=None, normalize=None, min_para_chars=None, doc_check=None, input_format=None, text_field=None, id_field=None, url_field=None, title_field=None, drop_bad_records=false, minhash=false, shingles=None, hashes=None, bands=None, rows=None, verify=None))]
#[allow(clippy::too_many_arguments)]
fn batch_resolve(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    task_index: usize,
    task_count: usize,
    stage: &str,
    store: Option<PathBuf>,
    partitions: Option<u32>,
    normalize: Option<&str>,
    min_para_chars: Option<usize>,
    doc_check: Option<&str>,
    input_format: Option<&str>,
    text_field: Option<&str>,
    id_field: Option<&str>,
    url_field: Option<&str>,
    title_field: Option<&str>,
    drop_bad_records: bool,
    minhash: bool,
    shingles: Option<&str>,
    hashes: Option<usize>,
    bands: Option<usize>,
    rows: Option<usize>,
    verify: Option<f64>,
) -> PyResult<bool> {
    let cfg = config(
        input,
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
        read_settings(
            input_format,
            text_field,
            id_field,
            url_field,
            title_field,
            drop_bad_records,
        )?,
        minhash_options(minhash, shingles, hashes, bands, rows, verify)?,
    )?;
    check_index(&cfg, task_index)?;
    if cfg.options.minhash().is_none() {
        let stage: Stage = stage.parse().map_err(|e: String| {
            PyValueError::new_err(format!("{e}; with minhash=True: bands or pick"))
        })?;
        return py
            .allow_threads(|| batch::resolve(&cfg, stage, task_index, store.as_deref()))
            .map_err(|e| err(format!("{e:#}")));
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
        .map_err(|e| err(format!("{e:#}")))
}

/// Phase 3 (`webdedup batch filter`) for one task: writes its outputs into
/// `output`, the bytes `webdedup dedup` writes.
#[pyfunction]
#[pyo3(signature = (input, work, output, task_index, task_count, *, dd=false, compress="auto", partitions=None, normalize=None, min_para_chars=None, doc_check=None, input_format=None, text_field=None, id_field=None, url_field=None, title_field=None, drop_bad_records=false, minhash=false, shingles=None, hashes=None, bands=None, rows=None, verify=None))]
#[allow(clippy::too_many_arguments)]
fn batch_filter(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    output: PathBuf,
    task_index: usize,
    task_count: usize,
    dd: bool,
    compress: &str,
    partitions: Option<u32>,
    normalize: Option<&str>,
    min_para_chars: Option<usize>,
    doc_check: Option<&str>,
    input_format: Option<&str>,
    text_field: Option<&str>,
    id_field: Option<&str>,
    url_field: Option<&str>,
    title_field: Option<&str>,
    drop_bad_records: bool,
    minhash: bool,
    shingles: Option<&str>,
    hashes: Option<usize>,
    bands: Option<usize>,
    rows: Option<usize>,
    verify: Option<f64>,
) -> PyResult<bool> {
    let cfg = config(
        input.clone(),
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
        read_settings(
            input_format,
            text_field,
            id_field,
            url_field,
            title_field,
            drop_bad_records,
        )?,
        minhash_options(minhash, shingles, hashes, bands, rows, verify)?,
    )?;
    check_index(&cfg, task_index)?;
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
    py.allow_threads(|| {
        batch::filter(&cfg, &run, task_index, &|l| {
            eprintln!("{}", escape_controls(l))
        })
    })
    .map(|s| s.is_some())
    .map_err(|e| err(format!("{e:#}")))
}

/// Folds the run's new keys into the store directory; returns its key count.
#[pyfunction]
#[pyo3(signature = (input, work, task_count, store, *, partitions=None, normalize=None, min_para_chars=None, doc_check=None, input_format=None, text_field=None, id_field=None, url_field=None, title_field=None, drop_bad_records=false))]
#[allow(clippy::too_many_arguments)]
fn batch_publish(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    task_count: usize,
    store: PathBuf,
    partitions: Option<u32>,
    normalize: Option<&str>,
    min_para_chars: Option<usize>,
    doc_check: Option<&str>,
    input_format: Option<&str>,
    text_field: Option<&str>,
    id_field: Option<&str>,
    url_field: Option<&str>,
    title_field: Option<&str>,
    drop_bad_records: bool,
) -> PyResult<u64> {
    let cfg = config(
        input,
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
        read_settings(
            input_format,
            text_field,
            id_field,
            url_field,
            title_field,
            drop_bad_records,
        )?,
        None,
    )?;
    py.allow_threads(|| batch::publish(&cfg, &store))
        .map_err(|e| err(format!("{e:#}")))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_hash, m)?)?;
    m.add_function(wrap_pyfunction!(batch_resolve, m)?)?;
    m.add_function(wrap_pyfunction!(batch_filter, m)?)?;
    m.add_function(wrap_pyfunction!(batch_publish, m)?)?;
    Ok(())
}
