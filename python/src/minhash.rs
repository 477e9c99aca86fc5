//! MinHash from Python: signatures, band keys and the Jaccard estimate, the same
//! values as the Rust library (`webdedup-minhash`; the test vectors are shared).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use webdedup_dedup::options::{MinHashChoices, MinHashOptions};
use webdedup_minhash::{
    estimate_jaccard, Banding, MinHasher, Params, Shingling, DEFAULT_BANDS, DEFAULT_HASHES,
    DEFAULT_NORM, DEFAULT_ROWS, MAX_ROWS,
};

/// The options of MinHash mode from the keyword arguments `shingles`,
/// `shingle_norm`, `hashes`,
/// `bands`, `rows`, `verify` and `verify_hashes` (None: the command line's default), checked by
/// the function the command line calls: the same defaults and messages.
pub(crate) fn minhash_options(
    shingles: Option<&str>,
    shingle_norm: Option<&str>,
    hashes: Option<usize>,
    bands: Option<usize>,
    rows: Option<usize>,
    verify: Option<f64>,
    verify_hashes: Option<usize>,
) -> PyResult<MinHashOptions> {
    MinHashChoices {
        shingles: shingles
            .map(str::parse)
            .transpose()
            .map_err(PyValueError::new_err)?,
        shingle_norm: shingle_norm
            .map(str::parse)
            .transpose()
            .map_err(PyValueError::new_err)?,
        hashes,
        bands,
        rows,
        verify,
        verify_hashes,
    }
    .options()
    .map_err(PyValueError::new_err)
}

/// `ngram`: an int (word n-grams) or a string (`"5"`, `"words:5"`, `"chars:3"`,
/// `"auto:5"`); None is the command line's default (`auto:5`).
fn shingling(ngram: Option<&Bound<'_, PyAny>>) -> PyResult<Shingling> {
    let Some(ngram) = ngram else {
        return Ok(Shingling::default());
    };
    if let Ok(n) = ngram.extract::<i64>() {
        return n.to_string().parse().map_err(PyValueError::new_err);
    }
    if let Ok(s) = ngram.extract::<String>() {
        return s.parse().map_err(PyValueError::new_err);
    }
    Err(PyTypeError::new_err(
        "ngram must be an int or a string like 'words:5', 'chars:3' or 'auto:5'",
    ))
}

/// The MinHash signature of `text` (`hashes` 32-bit values), or `None` when the text
/// has no word after normalization. `shingle_norm`: `"lower"` (None: the command
/// line's default) or `"loose"`.
#[pyfunction]
#[pyo3(signature = (text, ngram=None, hashes=DEFAULT_HASHES, shingle_norm=None))]
fn minhash_signature(
    py: Python<'_>,
    text: &str,
    ngram: Option<&Bound<'_, PyAny>>,
    hashes: usize,
    shingle_norm: Option<&str>,
) -> PyResult<Option<Vec<u32>>> {
    let params = Params {
        shingling: shingling(ngram)?,
        norm: shingle_norm
            .map(str::parse)
            .transpose()
            .map_err(PyValueError::new_err)?
            .unwrap_or(DEFAULT_NORM),
        hashes,
        bands: 1,
        rows: 1,
        verify_hashes: 0,
    };
    let mut m = MinHasher::new(params).map_err(PyValueError::new_err)?;
    let text = text.to_owned();
    Ok(py.allow_threads(move || m.signature(text.as_bytes()).map(<[u32]>::to_vec)))
}

/// The LSH band keys (`bands` 64-bit keys) of a signature, as the store sees them.
#[pyfunction]
#[pyo3(signature = (signature, bands=DEFAULT_BANDS, rows=DEFAULT_ROWS))]
fn minhash_band_keys(signature: Vec<u32>, bands: usize, rows: usize) -> PyResult<Vec<u64>> {
    if bands == 0 || rows == 0 || rows > MAX_ROWS || bands.saturating_mul(rows) > signature.len() {
        return Err(PyValueError::new_err(format!(
            "bands x rows ({bands} x {rows}) must be at least 1, rows at most {MAX_ROWS}, and the signature ({} values) at least that long",
            signature.len()
        )));
    }
    let mut keys = Vec::with_capacity(bands);
    Banding { bands, rows }.keys(&signature, &mut keys);
    Ok(keys)
}

/// The Jaccard similarity estimated from two signatures of the same settings.
#[pyfunction]
fn minhash_jaccard(a: Vec<u32>, b: Vec<u32>) -> PyResult<f64> {
    if a.len() != b.len() {
        return Err(PyValueError::new_err(format!(
            "signatures of different lengths ({} and {}) come from different settings",
            a.len(),
            b.len()
        )));
    }
    Ok(estimate_jaccard(&a, &b))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(minhash_signature, m)?)?;
    m.add_function(wrap_pyfunction!(minhash_band_keys, m)?)?;
    m.add_function(wrap_pyfunction!(minhash_jaccard, m)?)?;
    Ok(())
}
