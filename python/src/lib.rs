//! `import webdedup`: the seed's deduplication library (libdedup), on the same
//! policy, store and renderer as the `webdedup` command line.
//!
//! Thread-safety: a `Dedup` owns one store shared by all its workers; a `Worker`
//! keeps its own buffers behind a lock, so one worker used from several threads
//! serializes, and several workers (one per thread) run in parallel. Every call that
//! works on text releases the GIL.

mod batch;
mod cdx;
mod dedup;
mod feedback;
mod formats;
mod keywords;
mod minhash;
mod minhash_dedup;
mod results;
mod servers;
mod shared;
mod similar;
mod substr;
mod worker;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use webdedup_store::{MemStore, Store};

create_exception!(
    webdedup,
    WebdedupError,
    PyException,
    "An error of webdedup, with the Rust error's context."
);
create_exception!(
    webdedup,
    WebdedupWarning,
    PyUserWarning,
    "Bad input that webdedup skipped (the rest was processed)."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    WebdedupError::new_err(e.to_string())
}

enum Keys {
    Embedded(MemStore),
    /// Redis / Valkey (`store="redis://..."`).
    Engine(Box<dyn Store>),
    /// The hash servers of a block map (`map=PATH`), connected at first use so
    /// that `start_servers()` may come first (the seed's flow).
    Servers(Box<servers::Servers>),
}

impl Keys {
    fn store(&self) -> Result<&dyn Store, String> {
        match self {
            Keys::Embedded(m) => Ok(m),
            Keys::Engine(s) => Ok(s.as_ref()),
            Keys::Servers(s) => s.store(),
        }
    }

    /// `save()` of `Dedup` and `MinHashDedup` (`owner`): the embedded store's keys
    /// to `DIR/store.snap`, after `side_files` wrote what goes beside them (the
    /// command line's `--store DIR` layout); returns the number of keys. Without a
    /// `store_dir` there is nowhere to save; a remote key set persists itself:
    /// `remote` says where it lives.
    fn save_embedded(
        &self,
        store_dir: Option<&std::path::Path>,
        owner: &str,
        meta: &webdedup_store::StoreMeta,
        remote: &str,
        side_files: impl FnOnce(&std::path::Path) -> PyResult<()>,
    ) -> PyResult<u64> {
        let dir = store_dir
            .ok_or_else(|| PyValueError::new_err(format!("save() needs {owner}(store_dir=...)")))?;
        let Keys::Embedded(mem) = self else {
            return Err(err(format!("save(): {remote}")));
        };
        std::fs::create_dir_all(dir).map_err(err)?;
        side_files(dir)?;
        let info = mem
            .save(&dir.join(webdedup_store_spec::files::SNAPSHOT_FILE), meta)
            .map_err(err)?;
        Ok(info.keys)
    }
}

/// The call state of a new worker of a `Dedup` or `MinHashDedup` (its file ids
/// numbered apart by the count of workers created so far).
fn worker_state(
    options: &webdedup_dedup::Options,
    workers: &std::sync::atomic::AtomicU64,
) -> parking_lot::Mutex<Box<webdedup_dedup::engine::CallEngine>> {
    let id = workers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    parking_lot::Mutex::new(Box::new(webdedup_dedup::engine::CallEngine::new(
        options, id,
    )))
}

fn input_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        Ok(b.as_bytes().to_vec())
    } else if let Ok(s) = obj.downcast::<PyString>() {
        Ok(s.to_cow()?.as_bytes().to_vec())
    } else {
        Err(PyTypeError::new_err("expected str or bytes"))
    }
}

/// One `WebdedupWarning` per problem (bad input that was skipped or passed
/// through, as the command line's `FILE:LINE: reason` lines on stderr).
fn warn_problems(py: Python<'_>, problems: impl IntoIterator<Item = String>) -> PyResult<()> {
    let warning = py.get_type::<WebdedupWarning>();
    for p in problems {
        let text = std::ffi::CString::new(p.replace('\0', "\\0")).expect("NUL replaced");
        PyErr::warn(py, &warning, &text, 1)?;
    }
    Ok(())
}

#[pymodule]
fn webdedup(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dedup::Dedup>()?;
    m.add_class::<worker::Worker>()?;
    m.add_class::<results::Vert>()?;
    m.add_class::<results::Document>()?;
    m.add_class::<results::Records>()?;
    // The seed's names.
    m.add("dedup", m.getattr("Dedup")?)?;
    m.add("WebdedupError", m.py().get_type::<WebdedupError>())?;
    m.add("WebdedupWarning", m.py().get_type::<WebdedupWarning>())?;
    similar::register(m)?;
    cdx::register(m)?;
    batch::register(m)?;
    minhash::register(m)?;
    minhash_dedup::register(m)?;
    substr::register(m)?;
    Ok(())
}
