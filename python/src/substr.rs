//! ExactSubstr's rule from Python: `webdedup.batch_substr`, the command line's
//! `webdedup batch substr` (one call: the spans found over every input, then
//! the outputs written; docs/substr.md).

use crate::batch::failed;
use crate::formats::read_keywords;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use webdedup_dedup::policy::file_id;
use webdedup_dedup::runner::{
    attributes_path, list_inputs, output_path, rel_bytes, spans_path, write_files_index,
};
use webdedup_formats::output::OutputCompression;
use webdedup_formats::problems::Problems;
use webdedup_substr::job::{Choices, Job, Output};
use webdedup_substr::run::Reading;

/// `webdedup batch substr INPUT -o OUTPUT` with the command line's flags as
/// keywords (the read options of the other batch functions in `**options`);
/// returns the figures of its `--json` (documents, documents_changed, spans,
/// bytes_struck, text_bytes, files, problems).
#[pyfunction]
#[pyo3(signature = (
    input, output, *, length=webdedup_substr::DEFAULT_LENGTH, keep_first=false,
    max_memory=None, mark=false, feedback=false, restore=false, threads=None, **options
))]
#[allow(clippy::too_many_arguments)]
fn batch_substr<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    length: usize,
    keep_first: bool,
    max_memory: Option<usize>,
    mark: bool,
    feedback: bool,
    restore: bool,
    threads: Option<usize>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let reading = Reading {
        read: read_keywords("batch_substr", options)?,
        ..Reading::default()
    };
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let choices = Choices {
        length,
        keep_first,
        max_memory,
        threads,
        mark,
        feedback,
        restore,
    };
    let listing = list_inputs(std::slice::from_ref(&input), &output).map_err(failed)?;
    let name = |rel: &std::path::Path, o: Output| match o {
        Output::Main => output_path(&output, rel, OutputCompression::None),
        Output::Attributes => attributes_path(&output, rel),
        Output::Report => spans_path(&output, rel),
    };
    let job = Job::new(&listing.files, &choices, reading, &name, &|rel| {
        file_id(rel_bytes(rel))
    })
    .map_err(PyValueError::new_err)?;
    let (found, problems) = py
        .allow_threads(|| {
            let problems = Problems::new(false);
            let found = job.run(&problems).map_err(|e| e.to_string())?;
            if feedback {
                write_files_index(&output, &listing.files).map_err(|e| format!("{e:#}"))?;
            }
            Ok::<_, String>((found, problems.count()))
        })
        .map_err(failed)?;
    let figures = PyDict::new(py);
    figures.set_item("files", job.files.len())?;
    figures.set_item("documents", found.docs.len())?;
    figures.set_item("documents_changed", found.docs_changed())?;
    figures.set_item("spans", found.spans())?;
    figures.set_item("bytes_struck", found.bytes_struck())?;
    figures.set_item("text_bytes", found.text_bytes)?;
    figures.set_item("problems", problems + listing.skipped.len() as u64)?;
    Ok(figures)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_substr, m)?)
}
