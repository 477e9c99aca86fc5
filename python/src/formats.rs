//! Document formats from Python: the command line's `--input-format` and JSON
//! Lines fields (`Dedup(input_format=..., text_field=...)`), and records given as
//! dicts (`Worker.process_records`).
//!
//! A list of dicts goes through the JSON Lines reader, so its decisions are the
//! command line's on a file of those records: each dict becomes one JSON line
//! holding only what decides (its text, id, URL and title, found by the same
//! field paths and rules as the reader's), and the kept text of a record is read
//! back from the line the renderer wrote. Everything else stays in Python: a
//! record kept whole is returned as the very object given, a record that lost
//! paragraphs as a copy with the text replaced, and the input is never modified.

use crate::keywords::{self, unexpected, Keyword};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use std::sync::Arc;
use webdedup_formats::fields::{FieldPath, JsonlOptions};
use webdedup_formats::read::{ReadChoices, ReadSettings};

/// `input_format`, `text_field`, `id_field`, `url_field`, `title_field` and
/// `drop_bad_records` as the command line reads them (`--input-format` ...): the
/// library function the command line calls fills the defaults (None) and checks
/// the values, so both refuse the same ones with the same message.
pub fn read_settings(choices: &ReadChoices) -> PyResult<ReadSettings> {
    choices.settings().map_err(PyValueError::new_err)
}

/// Takes `kw` into `choices` if it is one of the format keywords
/// (`input_format` ... `drop_bad_records`); false for any other keyword.
pub fn take_read_keyword(choices: &mut ReadChoices, kw: &Keyword) -> PyResult<bool> {
    match kw.0 {
        "input_format" => choices.input_format = kw.get()?,
        "text_field" => choices.text_field = kw.get()?,
        "id_field" => choices.id_field = kw.get()?,
        "url_field" => choices.url_field = kw.get()?,
        "title_field" => choices.title_field = kw.get()?,
        "drop_bad_records" => choices.drop_bad_records = kw.get()?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The format keywords of a class that takes them as `**read`
/// (`Dedup(input_format=...)`): settings as [`read_settings`] makes them; any
/// other keyword is refused as Python refuses it.
pub fn read_keywords(function: &str, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<ReadSettings> {
    let mut choices = ReadChoices::default();
    for kw in keywords::each(kwargs) {
        let (key, value) = kw?;
        if !take_read_keyword(&mut choices, &Keyword(&key, &value))? {
            return Err(unexpected(function, &key));
        }
    }
    read_settings(&choices)
}

/// The fields of the one-line records `process_records` plans (the JSON Lines
/// reader's defaults).
pub fn record_line_options(drop_bad: bool) -> Arc<JsonlOptions> {
    Arc::new(JsonlOptions {
        text: FieldPath::parse("text"),
        id: vec![FieldPath::parse("id")],
        url: vec![FieldPath::parse("url")],
        title: vec![FieldPath::parse("title")],
        drop_bad,
    })
}

/// What decides about one record, taken from its dict (owned: the GIL is
/// released while it is planned).
#[derive(serde::Serialize)]
pub struct RecordLine {
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
}

/// A record as given: one to plan, or a bad one (with the reader's reason).
pub enum Taken {
    Line(RecordLine),
    Bad(String),
}

/// The value at a dotted path of nested dicts.
fn at_path<'py>(record: &Bound<'py, PyAny>, path: &FieldPath) -> Option<Bound<'py, PyAny>> {
    let mut cur = record.clone();
    for key in &path.0 {
        let d = cur.downcast::<PyDict>().ok()?;
        cur = d.get_item(key).ok().flatten()?;
    }
    Some(cur)
}

/// A metadata value as the JSON Lines reader reads it: a string as it is, a
/// number as Rust writes the number JSON would carry; anything else is missing.
fn scalar(v: &Bound<'_, PyAny>) -> Option<String> {
    if let Ok(s) = v.downcast::<PyString>() {
        return Some(s.to_string_lossy().into_owned());
    }
    if v.is_instance_of::<PyBool>() {
        return None;
    }
    if v.is_instance_of::<PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            return Some(i.to_string());
        }
        if let Ok(u) = v.extract::<u64>() {
            return Some(u.to_string());
        }
        // Beyond 64 bits JSON readers take the number as a float.
        return v
            .extract::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|f| f.to_string());
    }
    if v.is_instance_of::<PyFloat>() {
        return v
            .extract::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|f| f.to_string());
    }
    None
}

fn first(record: &Bound<'_, PyAny>, paths: &[FieldPath]) -> Option<String> {
    paths
        .iter()
        .find_map(|p| at_path(record, p).as_ref().and_then(scalar))
}

/// Takes what decides from one record (needs the GIL).
pub fn take(record: &Bound<'_, PyAny>, o: &JsonlOptions) -> Taken {
    if !record.is_instance_of::<PyDict>() {
        return Taken::Bad("not a JSON object".into());
    }
    let text = match at_path(record, &o.text) {
        None => return Taken::Bad(format!("no field '{}'", o.text)),
        Some(t) => match t.downcast::<PyString>() {
            // A lone surrogate (which JSON text cannot carry) reads as U+FFFD, as
            // the reader reads the escape `\udXXX`.
            Ok(s) => s.to_string_lossy().into_owned(),
            Err(_) => return Taken::Bad(format!("field '{}' is not a string", o.text)),
        },
    };
    Taken::Line(RecordLine {
        text,
        id: first(record, &o.id),
        url: first(record, &o.url),
        title: first(record, &o.title),
    })
}

/// Appends a record's line to the chunk being built.
pub fn write_line(line: &RecordLine, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, line).expect("strings always serialize");
    out.push(b'\n');
}

/// The text value of a line the renderer wrote for a record line.
pub fn kept_text(line: &[u8]) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct Text {
        text: String,
    }
    serde_json::from_slice::<Text>(line)
        .map(|t| t.text)
        .map_err(|e| format!("a written record is not JSON ({e}); please report"))
}

/// A copy of `record` with the value at `path` replaced by `text`: the dicts along
/// the path are copied (with their own `copy()`), nothing else is.
pub fn with_text<'py>(
    record: &Bound<'py, PyAny>,
    path: &FieldPath,
    text: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let root = record.call_method0("copy")?;
    let mut cur = root.clone();
    let (last, parents) = path.0.split_last().expect("a path has a name");
    for key in parents {
        let child = cur.get_item(key)?.call_method0("copy")?;
        cur.set_item(key, &child)?;
        cur = child;
    }
    cur.set_item(last, text)?;
    Ok(root)
}
