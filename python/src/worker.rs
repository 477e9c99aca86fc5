//! `webdedup.Worker`: documents deduplicated against its `Dedup`'s store by the
//! engine the command line runs (`webdedup_dedup::engine`), one chunk a call.

use crate::results::{Document, Records, Vert};
use crate::shared::Shared;
use crate::{err, feedback, formats, input_bytes, warn_problems};
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::Arc;
use webdedup_dedup::engine::{CallEngine, Engine};
use webdedup_dedup::policy::DocStatus;
use webdedup_dedup::render::carries_reference;
use webdedup_formats::chunk::IssueKind;
use webdedup_formats::read::DocFormat;
use webdedup_formats::vertical::{escape_attr, parse_tag};
use webdedup_store::Location;

/// Plans, decides and renders `data` as one chunk; returns the kept bytes, the
/// documents' statuses, kept and dropped paragraphs, and input problems (and, in
/// feedback mode, the dropped paragraphs with references to their originals,
/// numbered within `source`).
fn run(
    st: &mut CallEngine,
    shared: &Shared,
    data: Vec<u8>,
    source: &str,
    format: &DocFormat,
) -> Result<Vert, String> {
    let feedback = shared.options.feedback();
    let mut first_record = 0;
    st.run(
        data,
        format,
        shared.store.store()?,
        &shared.options,
        &shared.state,
        source,
        |plan| {
            if !feedback {
                return Ok((0, 0));
            }
            let (file, first) = shared.sources.reserve(source, plan.paras.len())?;
            first_record = first;
            Ok((file, first))
        },
    )?;
    let e = &mut st.engine;
    let references = if feedback {
        reference_list(e, shared)
            .into_iter()
            .map(|(j, name, rec)| (first_record + j as u64, name, rec))
            .collect()
    } else {
        Vec::new()
    };
    let stats = &e.rendered.stats;
    Ok(Vert {
        format: format.name(),
        statuses: e.statuses(),
        kept: stats.paras_kept,
        dropped: stats.paras - stats.paras_kept,
        problems: e.problems(),
        data: std::mem::take(&mut e.rendered.out),
        feedback: std::mem::take(&mut e.rendered.side),
        references,
        source: feedback.then(|| source.to_owned()),
        first_record,
    })
}

/// Feedback mode: (paragraph index in this call, original source, original
/// record) of every dropped paragraph that carries a reference, in order; the
/// source is `None` where the original is not known.
fn reference_list(e: &Engine, shared: &Shared) -> Vec<(usize, Option<String>, u64)> {
    let (plan, dec) = (&e.plan, &e.decisions);
    let mut refs = Vec::new();
    for (doc, &status) in plan.docs.iter().zip(&dec.docs) {
        for j in doc.paras.clone() {
            if !dec.keep_para[j] && carries_reference(plan, status, j) {
                let orig = dec.originals[j];
                let name = (orig != Location::UNKNOWN)
                    .then(|| shared.sources.name(orig.file))
                    .flatten();
                refs.push((j, name, orig.record));
            }
        }
    }
    refs
}

/// Deduplicates verticals against its `Dedup`'s store. Thread-safe (see module).
#[pyclass(module = "webdedup", frozen)]
pub struct Worker {
    pub(crate) shared: Arc<Shared>,
    /// Boxed: the worker's state has a 64-byte alignment (a debug build aborts
    /// with a misaligned pointer when creating a Worker) and Python allocates
    /// objects 16-byte aligned; a pyclass must not hold it inline.
    pub(crate) state: Mutex<Box<CallEngine>>,
}

#[pymethods]
impl Worker {
    /// Deduplicates documents given as bytes or str in the `Dedup`'s input format:
    /// verticals (`<doc ...>` ... `</doc>`) or JSON Lines (one object a line), or,
    /// with `input_format="auto"` (the default), whichever the data's first bytes
    /// say (`{`: JSON Lines), as the command line sniffs a file. Returns a `Vert`:
    /// the kept bytes exactly as the command line writes them for these documents,
    /// their statuses and counts. A dict, or a list or tuple of dicts, is taken as
    /// records (`process_records`) and gives `Records`. Malformed input is handled
    /// by the command line's rules: listed in `problems` and warned about
    /// (`WebdedupWarning`, naming the line or record); it never raises. `source`
    /// names where the text comes from, for feedback references (see
    /// `Dedup(feedback=True)`); it is not used otherwise.
    #[pyo3(signature = (data, source=None))]
    fn process(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        source: Option<&str>,
    ) -> PyResult<PyObject> {
        if data.is_instance_of::<PyDict>() {
            let one = PyList::new(py, [data])?;
            let r = self.process_records(py, one.as_any(), source)?;
            return Ok(Py::new(py, r)?.into_any());
        }
        if data.is_instance_of::<PyList>() || data.is_instance_of::<PyTuple>() {
            let r = self.process_records(py, data, source)?;
            return Ok(Py::new(py, r)?.into_any());
        }
        let data = input_bytes(data)?;
        let source = source.unwrap_or(feedback::DEFAULT_SOURCE);
        let format = self.shared.read.resolve(&data);
        if let Some(what) = format.file_only() {
            // Their readers need a file to seek in; records have a way in already.
            return Err(PyValueError::new_err(format!(
                "process() takes verticals or JSON Lines, not {what} data: give its records as dicts \
                 (process_records, e.g. pyarrow's Table.to_pylist(), or warcio's records' text to \
                 process_document), or its path to the batch functions (input_format={:?})",
                what.to_lowercase()
            )));
        }
        let vert = py
            .allow_threads(|| run(&mut self.state.lock(), &self.shared, data, source, &format))
            .map_err(err)?;
        warn_problems(
            py,
            vert.problems
                .iter()
                .map(|(l, why)| format!("line {l}: {why}")),
        )?;
        Ok(Py::new(py, vert)?.into_any())
    }

    /// Deduplicates records given as dicts (JSON Lines records already parsed):
    /// the text at the `Dedup`'s `text_field`, id, URL and title at theirs, with
    /// the command line's rules, so the decisions are those of `webdedup dedup` on
    /// a JSON Lines file of these records. Returns `Records`: the records to keep,
    /// in order (a record kept whole is the object given; one that lost paragraphs
    /// a copy whose text holds the kept lines, exactly the text the command line
    /// writes; the input is never modified), statuses and counts. A record that is
    /// not a dict or has no string text is a bad record: status `B`, listed in
    /// `Records.problems`, warned about (`WebdedupWarning`, `records[I]: reason`)
    /// and kept as it is unless `drop_bad_records=True`.
    #[pyo3(signature = (records, source=None))]
    fn process_records(
        &self,
        py: Python<'_>,
        records: &Bound<'_, PyAny>,
        source: Option<&str>,
    ) -> PyResult<Records> {
        let source = source.unwrap_or(feedback::DEFAULT_SOURCE);
        let options = self.shared.read.jsonl.clone();
        let mut given = Vec::new();
        let mut taken = Vec::new();
        for r in records.try_iter()? {
            let r = r?;
            taken.push(formats::take(&r, &options));
            given.push(r);
        }
        // Bad records are warned about before anything is decided: with warnings
        // turned into errors the call raises having changed nothing (no key of its
        // records is in the store yet), so it can be repeated.
        let bad = |reason: &str| IssueKind::BadRecord {
            reason: reason.to_owned(),
            dropped: options.drop_bad,
        };
        warn_problems(
            py,
            taken.iter().enumerate().filter_map(|(i, t)| match t {
                formats::Taken::Bad(reason) => Some(format!("records[{i}]: {}", bad(reason))),
                formats::Taken::Line(_) => None,
            }),
        )?;
        let format = DocFormat::Jsonl(formats::record_line_options(options.drop_bad));
        let (vert, texts) = py
            .allow_threads(|| {
                let mut data = Vec::new();
                for t in &taken {
                    if let formats::Taken::Line(l) = t {
                        formats::write_line(l, &mut data);
                    }
                }
                let mut st = self.state.lock();
                let vert = run(&mut st, &self.shared, data, source, &format)?;
                // One written line per written document, in order: the kept text of
                // those that lost paragraphs is read back from it.
                let mut lines = vert.data.split_inclusive(|&b| b == b'\n');
                let mut texts = Vec::with_capacity(st.engine.decisions.docs.len());
                for status in &st.engine.decisions.docs {
                    let line = if status.written() { lines.next() } else { None };
                    texts.push(match (status, line) {
                        (DocStatus::Partial { .. }, Some(l)) => Some(formats::kept_text(l)?),
                        (_, None) if status.written() => {
                            return Err("fewer written records than kept ones; please report".into())
                        }
                        _ => None,
                    });
                }
                Ok::<_, String>((vert, texts))
            })
            .map_err(err)?;
        let kept = PyList::empty(py);
        let mut statuses = Vec::with_capacity(given.len());
        let mut problems = Vec::new();
        let mut planned = vert.statuses.iter().zip(texts);
        let mut line_of_record = Vec::new();
        for (i, (record, t)) in given.iter().zip(&taken).enumerate() {
            match t {
                formats::Taken::Bad(reason) => {
                    problems.push((i as u64, bad(reason).to_string()));
                    statuses.push("B".to_owned());
                    if !options.drop_bad {
                        kept.append(record)?;
                    }
                }
                formats::Taken::Line(_) => {
                    line_of_record.push(i as u64);
                    let (status, text) = planned.next().expect("one status per planned record");
                    match (status.as_str(), text) {
                        ("K", _) => kept.append(record)?,
                        (_, Some(text)) => {
                            kept.append(formats::with_text(record, &options.text, &text)?)?
                        }
                        _ => {}
                    }
                    statuses.push(status.clone());
                }
            }
        }
        // The reader's problems name lines of the planned records: name records.
        let read: Vec<(u64, String)> = vert
            .problems
            .iter()
            .map(|(line, why)| {
                let at = line_of_record
                    .get((*line as usize).saturating_sub(1))
                    .copied()
                    .unwrap_or(0);
                (at, why.clone())
            })
            .collect();
        warn_problems(
            py,
            read.iter().map(|(i, why)| format!("records[{i}]: {why}")),
        )?;
        problems.extend(read);
        problems.sort_by_key(|p| p.0);
        Ok(Records {
            records: kept.unbind(),
            statuses,
            kept: vert.kept,
            dropped: vert.dropped,
            problems,
            references: vert.references,
            source: vert.source,
            first_record: vert.first_record,
        })
    }

    /// Deduplicates plain text (JSON Lines pipelines): paragraphs are the non-blank
    /// lines, words split on whitespace. Returns a `Document` with the kept text and
    /// the dropped spans as character offsets `(start, end)` into `text` (each span
    /// a whole line with its newline, never splitting a character).
    #[pyo3(signature = (text, url=None, title=None, source=None))]
    fn process_document(
        &self,
        py: Python<'_>,
        text: &str,
        url: Option<&str>,
        title: Option<&str>,
        source: Option<&str>,
    ) -> PyResult<Document> {
        let source = source.unwrap_or(feedback::DEFAULT_SOURCE);
        let text = text.to_owned();
        let (url, title) = (url.unwrap_or("").to_owned(), title.unwrap_or("").to_owned());
        py.allow_threads(|| {
            // Lines as (byte start, byte end including the newline, blank).
            let mut lines = Vec::new();
            let mut pos = 0;
            for l in text.split_inclusive('\n') {
                lines.push((pos, pos + l.len(), l.trim().is_empty()));
                pos += l.len();
            }
            let mut vert = b"<doc url=\"".to_vec();
            escape_attr(&url, &mut vert);
            vert.extend_from_slice(b"\" title=\"");
            escape_attr(&title, &mut vert);
            vert.extend_from_slice(b"\">\n");
            for &(a, b, blank) in &lines {
                if blank {
                    continue;
                }
                vert.extend_from_slice(b"<p>\n");
                for w in text[a..b].split_whitespace() {
                    // A word such as `</doc>` must stay a token, not become
                    // structure; NUL is refused by the vertical reader.
                    let w = match parse_tag(w.as_bytes()) {
                        Some(_) => {
                            vert.extend_from_slice(b"&lt;");
                            &w.as_bytes()[1..]
                        }
                        None => w.as_bytes(),
                    };
                    vert.extend(w.iter().filter(|&&c| c != 0));
                    vert.push(b'\n');
                }
                vert.extend_from_slice(b"</p>\n");
            }
            vert.extend_from_slice(b"</doc>\n");
            let mut st = self.state.lock();
            let v = run(&mut st, &self.shared, vert, source, &DocFormat::Vertical)?;
            let keep = &st.engine.decisions.keep_para;
            // Paragraph index -> (original source, record), feedback mode only.
            let refs = if self.shared.options.feedback() {
                reference_list(&st.engine, &self.shared)
            } else {
                Vec::new()
            };
            let mut originals = refs.into_iter().peekable();
            let mut references = Vec::new();
            let written = v.statuses.first().is_some_and(|s| s != "D" && s != "E");
            let mut kept = String::new();
            let mut dropped = Vec::new();
            let mut para = 0;
            let mut chars = 0usize;
            for &(a, b, blank) in &lines {
                let n = text[a..b].chars().count();
                let keep_line = if blank {
                    true
                } else {
                    para += 1;
                    written && keep[para - 1]
                };
                if !keep_line && originals.peek().is_some_and(|r| r.0 == para - 1) {
                    let (_, name, record) = originals.next().expect("peeked");
                    references.push((chars, chars + n, name, record));
                }
                if keep_line {
                    kept.push_str(&text[a..b]);
                } else {
                    match dropped.last_mut() {
                        Some((_, end)) if *end == chars => *end += n,
                        _ => dropped.push((chars, chars + n)),
                    }
                }
                chars += n;
            }
            Ok(Document {
                text: kept,
                status: v.statuses.into_iter().next().unwrap_or_default(),
                dropped,
                references,
            })
        })
        .map_err(|e: String| err(e))
    }
}
