//! SimHash from Python: fingerprints, distances and all pairs within `k` bits.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The 64-bit SimHash of `text` with the command line's default settings (or
/// `settings`, in the form `webdedup simhash` prints in its header); `None` when the
/// text has no feature.
#[pyfunction]
#[pyo3(signature = (text, settings=None))]
fn simhash(py: Python<'_>, text: &str, settings: Option<&str>) -> PyResult<Option<u64>> {
    use webdedup_simhash::tokenize::{Fingerprinter, Settings};
    let settings = match settings {
        Some(s) => Settings::parse(s).map_err(PyValueError::new_err)?,
        None => Settings::default(),
    };
    let text = text.to_owned();
    Ok(py.allow_threads(move || Fingerprinter::new(settings).fingerprint(&text)))
}

/// The number of bits in which `a` and `b` differ.
#[pyfunction]
fn hamming(a: u64, b: u64) -> u32 {
    webdedup_simhash::core::hamming(a, b)
}

/// All pairs `(i, j, distance)` with `i < j` of `fingerprints` within `k` bits, sorted
/// (permuted-table search, exact).
#[pyfunction]
fn similar(py: Python<'_>, fingerprints: Vec<u64>, k: u32) -> PyResult<Vec<(usize, usize, u32)>> {
    if k > 32 {
        return Err(PyValueError::new_err("k must be at most 32"));
    }
    Ok(py.allow_threads(move || {
        let mut at: std::collections::HashMap<u64, Vec<usize>> = std::collections::HashMap::new();
        for (i, f) in fingerprints.iter().enumerate() {
            at.entry(*f).or_default().push(i);
        }
        let mut distinct: Vec<u64> = at.keys().copied().collect();
        distinct.sort_unstable();
        let mut out = Vec::new();
        for idx in at.values() {
            for (x, &i) in idx.iter().enumerate() {
                for &j in &idx[x + 1..] {
                    out.push((i, j, 0));
                }
            }
        }
        if k > 0 && distinct.len() > 1 {
            let plan = webdedup_simhash::search::Plan::choose(distinct.len(), k);
            for (a, b, d) in plan.all_pairs(&distinct) {
                for &i in &at[&a] {
                    for &j in &at[&b] {
                        out.push((i.min(j), i.max(j), d));
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simhash, m)?)?;
    m.add_function(wrap_pyfunction!(hamming, m)?)?;
    m.add_function(wrap_pyfunction!(similar, m)?)?;
    Ok(())
}
