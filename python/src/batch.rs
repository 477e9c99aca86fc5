//! Batch mode from Python: the phases of `webdedup batch` as functions, so Spark,
//! Ray or any task runner can call them inside its tasks (see deploy/spark and
//! deploy/ray). Each returns once its task is done; a finished task returns False.

use crate::err;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;
use webdedup_dedup::batch::{self, BatchConfig, Stage};
use webdedup_dedup::{DocCheck, Options, RunConfig};
// Problem lines name input files: never raw control bytes on the terminal.
use webdedup_formats::output::OutputCompression;
use webdedup_formats::shown::escape_controls;
use webdedup_text::Normalization;

#[allow(clippy::too_many_arguments)]
fn config(
    input: PathBuf,
    work: PathBuf,
    task_count: usize,
    partitions: u32,
    normalize: &str,
    min_para_chars: usize,
    doc_check: &str,
) -> PyResult<BatchConfig> {
    let normalization: Normalization = normalize.parse().map_err(PyValueError::new_err)?;
    let doc_check: DocCheck = doc_check.parse().map_err(PyValueError::new_err)?;
    Ok(BatchConfig {
        inputs: vec![input],
        work,
        task_count,
        partitions,
        blocks: webdedup_store::DEFAULT_BLOCKS,
        options: Options {
            normalization,
            min_para_chars,
            doc_check,
            ..Default::default()
        },
        read: Default::default(),
        chunk_bytes: webdedup_formats::vertical::DEFAULT_CHUNK_BYTES,
        max_line_bytes: webdedup_formats::vertical::DEFAULT_MAX_LINE_BYTES,
    })
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
#[pyo3(signature = (input, work, task_index, task_count, *, partitions=64, normalize="loose", min_para_chars=50, doc_check="all"))]
#[allow(clippy::too_many_arguments)]
fn batch_hash(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    task_index: usize,
    task_count: usize,
    partitions: u32,
    normalize: &str,
    min_para_chars: usize,
    doc_check: &str,
) -> PyResult<bool> {
    let cfg = config(
        input,
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
    )?;
    check_index(&cfg, task_index)?;
    py.allow_threads(|| batch::hash(&cfg, task_index, &|l| eprintln!("{}", escape_controls(l))))
        .map_err(|e| err(format!("{e:#}")))
}

/// Phase 2 (`webdedup batch resolve`) for one task and stage (`url-title`, `docs`,
/// `paras`, in that order).
#[pyfunction]
#[pyo3(signature = (input, work, task_index, task_count, stage, *, store=None, partitions=64, normalize="loose", min_para_chars=50, doc_check="all"))]
#[allow(clippy::too_many_arguments)]
fn batch_resolve(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    task_index: usize,
    task_count: usize,
    stage: &str,
    store: Option<PathBuf>,
    partitions: u32,
    normalize: &str,
    min_para_chars: usize,
    doc_check: &str,
) -> PyResult<bool> {
    let cfg = config(
        input,
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
    )?;
    check_index(&cfg, task_index)?;
    let stage: Stage = stage.parse().map_err(PyValueError::new_err)?;
    py.allow_threads(|| batch::resolve(&cfg, stage, task_index, store.as_deref()))
        .map_err(|e| err(format!("{e:#}")))
}

/// Phase 3 (`webdedup batch filter`) for one task: writes its outputs into
/// `output`, the bytes `webdedup dedup` writes.
#[pyfunction]
#[pyo3(signature = (input, work, output, task_index, task_count, *, dd=false, partitions=64, normalize="loose", min_para_chars=50, doc_check="all"))]
#[allow(clippy::too_many_arguments)]
fn batch_filter(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    output: PathBuf,
    task_index: usize,
    task_count: usize,
    dd: bool,
    partitions: u32,
    normalize: &str,
    min_para_chars: usize,
    doc_check: &str,
) -> PyResult<bool> {
    let cfg = config(
        input.clone(),
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
    )?;
    check_index(&cfg, task_index)?;
    let mut run = RunConfig::new(input, output);
    run.options = cfg.options.clone();
    run.dd = dd;
    run.compress = OutputCompression::None;
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
#[pyo3(signature = (input, work, task_count, store, *, partitions=64, normalize="loose", min_para_chars=50, doc_check="all"))]
#[allow(clippy::too_many_arguments)]
fn batch_publish(
    py: Python<'_>,
    input: PathBuf,
    work: PathBuf,
    task_count: usize,
    store: PathBuf,
    partitions: u32,
    normalize: &str,
    min_para_chars: usize,
    doc_check: &str,
) -> PyResult<u64> {
    let cfg = config(
        input,
        work,
        task_count,
        partitions,
        normalize,
        min_para_chars,
        doc_check,
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
