//! What the workers' calls return: `Vert`, `Records`, `Document`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// What `Worker.process_records` returns.
#[pyclass(module = "webdedup", frozen, get_all)]
pub struct Records {
    /// The records to keep, in input order.
    pub(crate) records: Py<PyList>,
    /// One status per input record: `K`, `N/M`, `D`, `E`, `U` or `B`.
    pub(crate) statuses: Vec<String>,
    /// Paragraphs kept and dropped.
    pub(crate) kept: u64,
    pub(crate) dropped: u64,
    /// Problems as (record index from 0, reason).
    pub(crate) problems: Vec<(u64, String)>,
    /// Feedback mode: (dropped record, original source, original record).
    pub(crate) references: Vec<(u64, Option<String>, u64)>,
    /// Feedback mode: the source the paragraphs are numbered in.
    pub(crate) source: Option<String>,
    /// Feedback mode: the record number of the first paragraph of this call.
    pub(crate) first_record: u64,
}

#[pymethods]
impl Records {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Records(records={}, kept={}, dropped={})",
            self.records.bind(py).len(),
            self.kept,
            self.dropped
        )
    }
}

/// What `Worker.process` returns.
#[pyclass(module = "webdedup", frozen)]
pub struct Vert {
    /// The input's format: `vertical` or `jsonl` (the bytes are in it).
    #[pyo3(get)]
    pub(crate) format: &'static str,
    /// The kept bytes (use `text` for a str).
    pub(crate) data: Vec<u8>,
    /// One status per input document: `K`, `N/M`, `D`, `E`.
    #[pyo3(get)]
    pub(crate) statuses: Vec<String>,
    /// Paragraphs kept and dropped.
    #[pyo3(get)]
    pub(crate) kept: u64,
    #[pyo3(get)]
    pub(crate) dropped: u64,
    /// Input problems as (line, reason), lines counted from 1 in this input.
    #[pyo3(get)]
    pub(crate) problems: Vec<(u64, String)>,
    /// Feedback mode: the `.dropped` text (the command line's `-f` format).
    pub(crate) feedback: Vec<u8>,
    /// Feedback mode: (dropped record, original source, original record).
    #[pyo3(get)]
    pub(crate) references: Vec<(u64, Option<String>, u64)>,
    /// Feedback mode: the source the records are numbered in.
    #[pyo3(get)]
    pub(crate) source: Option<String>,
    /// Feedback mode: the record number of this input's first paragraph.
    #[pyo3(get)]
    pub(crate) first_record: u64,
}

#[pymethods]
impl Vert {
    /// The kept text (invalid UTF-8 replaced).
    #[getter]
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }

    /// The status of the first document (`None` if there was none).
    #[getter]
    fn status(&self) -> Option<String> {
        self.statuses.first().cloned()
    }

    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.data)
    }

    /// Feedback mode: the dropped paragraphs, each long one after a
    /// `<t>FILE:REC\tFILE:REC</f>` line (what `webdedup dedup -f` writes to
    /// `REL.dedup.dropped`); empty otherwise.
    #[getter]
    fn feedback<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.feedback)
    }

    fn __repr__(&self) -> String {
        format!(
            "Vert(statuses={:?}, kept={}, dropped={}, bytes={})",
            self.statuses,
            self.kept,
            self.dropped,
            self.data.len()
        )
    }
}

/// What `Worker.process_document` returns.
#[pyclass(module = "webdedup", frozen, get_all)]
pub struct Document {
    /// The text without its dropped lines.
    pub(crate) text: String,
    /// `K`, `N/M`, `D` or `E`.
    pub(crate) status: String,
    /// Dropped spans, character offsets `(start, end)` into the input text.
    pub(crate) dropped: Vec<(usize, usize)>,
    /// Feedback mode: `(start, end, original source, original record)` of every
    /// dropped line whose original is named (the source is `None` where the store
    /// no longer knows it).
    pub(crate) references: Vec<(usize, usize, Option<String>, u64)>,
}

#[pymethods]
impl Document {
    fn __repr__(&self) -> String {
        format!(
            "Document(status={:?}, dropped={:?})",
            self.status, self.dropped
        )
    }
}
