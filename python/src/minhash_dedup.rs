//! `webdedup.MinHashDedup`: `webdedup minhash`'s decisions from Python, on the same
//! stores (embedded, a store directory shared with `webdedup minhash --store DIR`,
//! hash servers), through the command line's own planner, policy
//! (`policy::minhash::decide`), renderer and pairs report.
//!
//! A worker call is one chunk of documents; decisions equal asking document by
//! document, so inputs fed in the command line's order (files by relative path,
//! each named by it as `source`) give its bytes, pairs and statuses.

use crate::{err, input_bytes, servers, warn_problems, worker_state, Keys};
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use webdedup_dedup::engine::CallEngine;
use webdedup_dedup::options::MinHashOptions;
use webdedup_dedup::policy::file_id;
use webdedup_dedup::policy::minhash::{self, KeptDocs};
use webdedup_dedup::{Options, RunState};
use webdedup_formats::read::ReadSettings;
use webdedup_store::{MemStore, StoreMeta};
use webdedup_store_spec::files::MINHASH_KEPT_FILE;
use webdedup_store_spec::{KeySet, OpenOptions, StoreSpec};

struct Shared {
    store: Keys,
    options: Options,
    /// The kept documents (the side store), this object's own run's.
    state: RunState,
    read: ReadSettings,
    store_dir: Option<PathBuf>,
    meta: StoreMeta,
    workers: AtomicU64,
    /// Sources already named to the side store (its names of documents without ids).
    sources: Mutex<HashSet<String>>,
}

impl Shared {
    fn minhash(&self) -> &MinHashOptions {
        self.options.minhash().expect("MinHash options")
    }

    fn kept(&self) -> &KeptDocs {
        self.state
            .kept
            .as_deref()
            .expect("a MinHash run's kept documents")
    }
}

/// Near-duplicate documents by MinHash LSH, as `webdedup minhash` decides them:
/// in the order documents are given, a document is dropped when one of its band
/// keys was inserted by an earlier kept document (with `verify=J`, only when their
/// estimated Jaccard similarity is at least J), and names that document as its
/// original.
///
/// `map=None` keeps the band keys in this process; `store_dir` shares them with
/// `webdedup minhash --store DIR` (its `store.snap` and `minhash.kept`: originals of
/// earlier runs are named and verified) and `save()` writes them back. `map=PATH`
/// uses the hash servers of a block map (started with `webdedup server`).
#[pyclass(module = "webdedup", frozen)]
pub struct MinHashDedup {
    shared: Arc<Shared>,
}

#[pymethods]
impl MinHashDedup {
    #[new]
    #[pyo3(signature = (map=None, store_dir=None, *, shingles=None, shingle_norm=None, hashes=None, bands=None, rows=None, verify=None, verify_hashes=None, store=None, blocks=webdedup_store::DEFAULT_BLOCKS, server_timeout=webdedup_net::client::DEFAULT_GIVE_UP_AFTER.as_secs_f64(), **read))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        map: Option<PathBuf>,
        store_dir: Option<PathBuf>,
        shingles: Option<&str>,
        shingle_norm: Option<&str>,
        hashes: Option<usize>,
        bands: Option<usize>,
        rows: Option<usize>,
        verify: Option<f64>,
        verify_hashes: Option<usize>,
        store: Option<String>,
        blocks: u32,
        server_timeout: f64,
        read: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if store.is_some() {
            return Err(PyValueError::new_err(
                "MinHashDedup needs the location of each band key's first document (to name originals and verify them), which Redis / Valkey does not keep: use the embedded store (store_dir=...) or the hash servers (map=...)",
            ));
        }
        if blocks == 0 {
            return Err(PyValueError::new_err("blocks must be at least 1"));
        }
        let minhash = crate::minhash::minhash_options(
            shingles,
            shingle_norm,
            hashes,
            bands,
            rows,
            verify,
            verify_hashes,
        )?;
        let params = minhash.params;
        let options = Options::for_minhash(minhash);
        let state = RunState::new(&options);
        let kept = state.kept.as_deref().expect("MinHash mode");
        let read = crate::formats::read_keywords("MinHashDedup", read)?;
        // The store identity of band keys, as the command line records it.
        let keys = KeySet::of(
            &webdedup_store_spec::identity::Keys::MinHash(&params),
            blocks,
        );
        let meta = keys.meta.clone();
        let kept_file = store_dir.as_ref().map(|d| d.join(MINHASH_KEPT_FILE));
        let store = match (&map, &kept_file) {
            (Some(map), _) => {
                // File ids of this Dedup's documents, salted apart from other
                // workers' on the same servers (as the command line's runs).
                kept.set_salt(servers::salt());
                Keys::Servers(Box::new(
                    servers::Servers::new(
                        map.clone(),
                        None,
                        keys.clone(),
                        store_dir.clone(),
                        std::time::Duration::from_secs_f64(server_timeout.max(0.1)),
                    )
                    .map_err(err)?,
                ))
            }
            // The side store rebuilds the keys with their originals' locations.
            (None, Some(k)) if k.exists() => {
                let mem = MemStore::new(blocks);
                kept.set_local();
                kept.set_persistent();
                if let Some(dir) = &store_dir {
                    kept.set_dir(dir);
                }
                kept.load_file(k, &params.describe(), &mem).map_err(err)?;
                Keys::Embedded(mem)
            }
            (None, _) => {
                // The embedded store is this object's own: it locates keys by the
                // kept documents' ordinals in the side store.
                kept.set_local();
                if let Some(dir) = &store_dir {
                    kept.set_persistent();
                    // Its files beside the store, if the directory is there yet
                    // (else in the system's temporary directory).
                    if dir.is_dir() {
                        kept.set_dir(dir);
                    }
                }
                let spec = StoreSpec::embedded(store_dir.as_deref());
                Keys::Embedded(
                    spec.open(&keys, &OpenOptions::default())
                        .and_then(|o| o.into_embedded())
                        .map_err(|e| err(format!("{e:#}")))?,
                )
            }
        };
        Ok(MinHashDedup {
            shared: Arc::new(Shared {
                store,
                options,
                state,
                read,
                store_dir,
                meta,
                workers: AtomicU64::new(0),
                sources: Mutex::default(),
            }),
        })
    }

    /// A new worker (one per thread). Workers share the store and the side store;
    /// decisions follow the order in which calls reach the store.
    fn create_worker(&self) -> MinHashWorker {
        MinHashWorker {
            shared: self.shared.clone(),
            state: worker_state(&self.shared.options, &self.shared.workers),
        }
    }

    /// Saves the band keys and the side store of kept documents to `store_dir`
    /// (`minhash.kept`, then `store.snap`, as `webdedup minhash --store DIR`
    /// does); returns the number of keys.
    fn save(&self, py: Python<'_>) -> PyResult<u64> {
        let s = &*self.shared;
        py.allow_threads(|| {
            s.store.save_embedded(
                s.store_dir.as_deref(),
                "MinHashDedup",
                &s.meta,
                "the band keys live on the hash servers, which persist them",
                |dir| {
                    let kept = dir.join(MINHASH_KEPT_FILE);
                    let params = s.minhash().params.describe();
                    s.kept().save(&kept, &params).map(drop).map_err(err)
                },
            )
        })
    }

    /// Band keys in the store.
    fn __len__(&self) -> usize {
        self.shared.store.store().map_or(0, |s| s.len() as usize)
    }
}

/// Judges documents against its `MinHashDedup`'s store. Thread-safe: one worker
/// used from several threads serializes.
#[pyclass(module = "webdedup", frozen)]
pub struct MinHashWorker {
    shared: Arc<Shared>,
    /// Boxed, as `Worker`'s state (its alignment is more than Python gives).
    state: Mutex<Box<CallEngine>>,
}

#[pymethods]
impl MinHashWorker {
    /// Judges documents given as bytes or str: verticals or JSON Lines (with
    /// `input_format="auto"`, whichever the first bytes say, as the command line
    /// sniffs a file). `source` names them: documents without an id are named
    /// `SOURCE:LINE` in pairs (the command line names a file's by its path relative
    /// to the input directory). Returns a `MinHashResult`; malformed input is
    /// listed in `problems` and warned about (`WebdedupWarning`), never raised.
    #[pyo3(signature = (data, source="python"))]
    fn process(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        source: &str,
    ) -> PyResult<MinHashResult> {
        let data = input_bytes(data)?;
        let shared = &self.shared;
        let r = py
            .allow_threads(|| {
                let format = shared.read.resolve(&data);
                let mut st = self.state.lock();
                st.run(
                    data,
                    &format,
                    shared.store.store()?,
                    &shared.options,
                    &shared.state,
                    source,
                    |_| {
                        let file = file_id(source.as_bytes());
                        if shared.sources.lock().insert(source.to_owned()) {
                            shared.kept().add_file(file, source);
                        }
                        Ok((file, 0))
                    },
                )?;
                let e = &mut st.engine;
                let clusters = minhash::cluster_names(&e.plan, &e.decisions, source)
                    .into_iter()
                    .flatten()
                    .collect();
                let pairs = e
                    .decisions
                    .pairs
                    .iter()
                    .map(|p| {
                        let d = &e.plan.docs[p.doc];
                        let name = match &d.id {
                            Some(id) => e.plan.meta_of(id).to_owned(),
                            None => format!("{source}:{}", d.line),
                        };
                        (name, p.original.clone(), p.jaccard)
                    })
                    .collect();
                let statuses = e.statuses();
                Ok::<_, String>(MinHashResult {
                    kept: statuses.iter().filter(|s| *s == "K").count() as u64,
                    dropped: statuses.iter().filter(|s| *s == "D").count() as u64,
                    data: std::mem::take(&mut e.rendered.out),
                    statuses,
                    pairs,
                    pairs_text: std::mem::take(&mut e.rendered.side),
                    clusters,
                    clusters_text: std::mem::take(&mut e.rendered.clusters),
                    problems: e.problems(),
                })
            })
            .map_err(err)?;
        warn_problems(
            py,
            r.problems.iter().map(|(l, why)| format!("line {l}: {why}")),
        )?;
        Ok(r)
    }
}

/// What `MinHashWorker.process` returns.
#[pyclass(module = "webdedup", frozen)]
pub struct MinHashResult {
    /// The kept documents, byte for byte (use `text` for a str).
    data: Vec<u8>,
    /// One status per input document: `K` kept, `D` dropped (a near-duplicate),
    /// `B` a bad record.
    #[pyo3(get)]
    statuses: Vec<String>,
    /// Each dropped document: (its name, its original's name, the estimated
    /// Jaccard similarity or None when not known).
    #[pyo3(get)]
    pairs: Vec<(String, String, Option<f64>)>,
    /// The same as the command line's `.pairs` report lines.
    pairs_text: Vec<u8>,
    /// Each document's cluster: the name of its kept document (its own when
    /// kept, its original's when dropped), one per document in input order (bad
    /// records have none), as `--clusters` writes them.
    #[pyo3(get)]
    clusters: Vec<String>,
    /// The command line's `.clusters` lines (`DOC TAB CLUSTER`).
    clusters_text: Vec<u8>,
    /// Documents kept and dropped.
    #[pyo3(get)]
    kept: u64,
    #[pyo3(get)]
    dropped: u64,
    /// Input problems as (line, reason).
    #[pyo3(get)]
    problems: Vec<(u64, String)>,
}

#[pymethods]
impl MinHashResult {
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.data)
    }

    #[getter]
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }

    #[getter]
    fn pairs_text<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.pairs_text)
    }

    #[getter]
    fn clusters_text<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.clusters_text)
    }

    fn __repr__(&self) -> String {
        format!(
            "MinHashResult(kept={}, dropped={}, {} bytes)",
            self.kept,
            self.dropped,
            self.data.len()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MinHashDedup>()?;
    m.add_class::<MinHashWorker>()?;
    m.add_class::<MinHashResult>()?;
    Ok(())
}
