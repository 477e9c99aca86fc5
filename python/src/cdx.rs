//! Web-archive dedup from Python: NutchWAX's `cdx dups`.

use crate::{err, warn_problems};
use pyo3::prelude::*;
use webdedup_store::MemStore;

/// The captures whose (urlkey, digest) appeared on an earlier line: all but the
/// first capture of every version (NutchWAX dedup-cdx), in input order, as
/// `webdedup cdx dups` prints them: `urlkey sha1:DIGEST timestamp`, or with
/// `whole_lines=True` the CDX lines themselves (`cdx dups --lines`). Lines that are not
/// CDX are skipped with a `WebdedupWarning` naming them (`lines[I]`).
#[pyfunction]
#[pyo3(signature = (lines, *, whole_lines=false))]
fn cdx_dups(py: Python<'_>, lines: Vec<String>, whole_lines: bool) -> PyResult<Vec<String>> {
    let (dups, problems) = py.allow_threads(move || {
        let dir = tempfile::tempdir().map_err(err)?;
        let path = dir.path().join("input.cdx");
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text).map_err(err)?;
        let store = MemStore::default();
        let mut out = Vec::new();
        let mut report = webdedup_archive::util::Report::collecting();
        webdedup_archive::cdx_cmd::dups(
            std::slice::from_ref(&path),
            whole_lines,
            &store,
            &mut out,
            &mut report,
        )
        .map_err(|e| err(format!("{e:#}")))?;
        // The reader names `TEMPFILE:LINE`; the caller knows its list.
        let prefix = format!("{}:", path.display());
        let problems: Vec<String> = report
            .kept()
            .iter()
            .map(|(place, reason)| {
                match place
                    .strip_prefix(&prefix)
                    .and_then(|n| n.parse::<usize>().ok())
                {
                    Some(n) => format!("lines[{}]: {reason}", n - 1),
                    None => format!("{place}: {reason}"),
                }
            })
            .collect();
        let dups = String::from_utf8_lossy(&out)
            .lines()
            .map(str::to_owned)
            .collect();
        Ok::<_, PyErr>((dups, problems))
    })?;
    warn_problems(py, problems)?;
    Ok(dups)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cdx_dups, m)?)?;
    Ok(())
}
