//! `webdedup.Dedup`: the key store and the settings every `Worker` uses.

use crate::shared::Shared;
use crate::worker::Worker;
use crate::{err, feedback, formats, servers, worker_state, Keys, WebdedupWarning};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use webdedup_dedup::{DocCheck, PolicyChoices, RunState, UrlFilter};
use webdedup_store_spec::{OpenOptions, OpenedStore, StoreSpec};
use webdedup_text::Normalization;

/// The deduplicator: the key store and the settings every worker uses.
///
/// `map=None` keeps the store in this process (the embedded store); `store_dir`
/// loads the command line's snapshot (`DIR/store.snap`) if present, and `save()`
/// writes it back, so Python and `webdedup dedup --store DIR` share key sets.
/// `store="redis://HOST:PORT[,...]"` keeps the key set in Redis / Valkey instead.
#[pyclass(module = "webdedup", frozen)]
pub struct Dedup {
    shared: Arc<Shared>,
}

impl Dedup {
    /// Runs a server-control call: 0 on success, 1 or (with `check`) an exception.
    /// With `warn`, a failure returned as 1 is also a `WebdedupWarning` saying why
    /// (a server that cannot start must not fail in silence).
    fn server_call(
        &self,
        py: Python<'_>,
        check: bool,
        warn: bool,
        f: fn(&servers::Servers) -> Result<(), String>,
    ) -> PyResult<i32> {
        let Keys::Servers(s) = &self.shared.store else {
            return Ok(0);
        };
        match py.allow_threads(|| f(s)) {
            Ok(()) => Ok(0),
            Err(e) if check => Err(err(e)),
            Err(e) => {
                if warn {
                    let text =
                        std::ffi::CString::new(e.replace('\0', "\\0")).expect("NUL replaced");
                    PyErr::warn(py, &py.get_type::<WebdedupWarning>(), &text, 1)?;
                }
                Ok(1)
            }
        }
    }
}

#[pymethods]
impl Dedup {
    #[new]
    #[pyo3(signature = (map=None, port=None, store_dir=None, *, store=None, store_password=None, normalize=None, min_para_chars=None, doc_check=None, near=false, ngram=None, threshold=None, smooth=false, max_stub=None, url_filter=None, feedback=false, substr=None, blocks=None, capacity=None, server_timeout=webdedup_net::client::DEFAULT_GIVE_UP_AFTER.as_secs_f64(), **read))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        map: Option<PathBuf>,
        port: Option<u16>,
        store_dir: Option<PathBuf>,
        store: Option<String>,
        store_password: Option<String>,
        normalize: Option<&str>,
        min_para_chars: Option<usize>,
        doc_check: Option<&str>,
        near: bool,
        ngram: Option<usize>,
        threshold: Option<f64>,
        smooth: bool,
        max_stub: Option<usize>,
        url_filter: Option<&Bound<'_, PyAny>>,
        feedback: bool,
        substr: Option<&Bound<'_, PyAny>>,
        blocks: Option<u32>,
        capacity: Option<usize>,
        server_timeout: f64,
        read: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let read = formats::read_keywords("Dedup", read)?;
        if port.is_some() && map.is_none() {
            return Err(PyValueError::new_err(
                "port is the hash servers' port: it goes with map=PATH",
            ));
        }
        if feedback && store.is_some() {
            return Err(PyValueError::new_err(
                "feedback=True needs where each key was first seen, which Redis does not keep: use the embedded store or the hash servers (map=...)",
            ));
        }
        let url_filter = url_filter.map(load_url_filter).transpose()?;
        let blocks = blocks.unwrap_or(webdedup_store::DEFAULT_BLOCKS);
        if blocks == 0 {
            return Err(PyValueError::new_err("--blocks must be at least 1"));
        }
        // The command line's defaults, limits and messages: the same library
        // function (`dedup` and `check` call it too).
        let mut options = PolicyChoices {
            normalization: normalize
                .map(str::parse::<Normalization>)
                .transpose()
                .map_err(PyValueError::new_err)?,
            min_para_chars,
            doc_check: doc_check
                .map(str::parse::<DocCheck>)
                .transpose()
                .map_err(PyValueError::new_err)?,
            near,
            ngram,
            threshold,
            smooth,
            max_stub,
            feedback,
            ..Default::default()
        }
        .options()
        .map_err(PyValueError::new_err)?;
        options.url_filter = url_filter;
        if let Some(params) = substr.map(substr_params).transpose()?.flatten() {
            if near {
                return Err(PyValueError::new_err(
                    "substr and near are two modes: give one",
                ));
            }
            if normalize.is_some() {
                return Err(PyValueError::new_err(
                    "substring mode hashes words as written: normalize does not apply",
                ));
            }
            if feedback {
                return Err(PyValueError::new_err(
                    "substr with feedback=True (the .spans report) is the command line's for now: webdedup dedup --substr -f",
                ));
            }
            options.mode = webdedup_dedup::Mode::Substr { params, feedback };
        }
        // The store is opened as the command line opens it (one function for both:
        // the same namespace, store identity and layout rules).
        let keys = webdedup_dedup::identity::key_set(&options, blocks);
        let meta = keys.meta.clone();
        // 0 was the old way of saying "not given".
        let capacity = capacity.filter(|&c| c > 0).map(|c| c as u64);
        if map.is_some() && store.is_some() {
            return Err(PyValueError::new_err(
                "give map (hash servers) or store (Redis), not both",
            ));
        }
        let store = match (store, &store_dir) {
            (None, _) if map.is_some() => Keys::Servers(Box::new(
                servers::Servers::new(
                    map.unwrap(),
                    port,
                    keys.clone(),
                    store_dir.clone(),
                    std::time::Duration::from_secs_f64(server_timeout.max(0.1)),
                )
                .map_err(err)?,
            )),
            (Some(_), Some(_)) => {
                return Err(PyValueError::new_err(
                    "give store (a Redis URL) or store_dir, not both",
                ))
            }
            (url, dir) => {
                let spec = match url {
                    Some(url) => StoreSpec::Redis {
                        url,
                        password: store_password,
                    },
                    None => StoreSpec::embedded(dir.as_deref()),
                };
                let opts = OpenOptions {
                    capacity,
                    salt: servers::salt(),
                    ..Default::default()
                };
                match spec
                    .open(&keys, &opts)
                    .map_err(|e| err(format!("{e:#}")))?
                    .store
                {
                    OpenedStore::Embedded(mem) => Keys::Embedded(mem),
                    OpenedStore::Remote(store) => Keys::Engine(store),
                }
            }
        };
        Ok(Dedup {
            shared: Arc::new(Shared {
                store,
                state: RunState::new(&options),
                options,
                read,
                store_dir,
                meta,
                workers: AtomicU64::new(0),
                sources: feedback::Sources::default(),
            }),
        })
    }

    /// A new worker (cheap; one per thread is the fastest way to use several).
    fn create_worker(&self) -> Worker {
        Worker {
            shared: self.shared.clone(),
            state: worker_state(&self.shared.options, &self.shared.workers),
        }
    }

    /// The seed's server control. With `map=PATH`: starts a `webdedup server` for
    /// every server of the map on this machine (loopback addresses; the binary is
    /// `$WEBDEDUP_BIN` or `webdedup` on the PATH; with `store_dir`, each saves to
    /// `store_dir/server-PORT.snap`) and returns 0 once all listen; otherwise 1,
    /// with a `WebdedupWarning` saying why (a missing binary names `WEBDEDUP_BIN`;
    /// the server's log `MAP.servers/PORT.log` says it too). `check=True` raises
    /// instead. Without a map there is nothing to start: 0.
    #[pyo3(signature = (*, check=false))]
    fn start_servers(&self, py: Python<'_>, check: bool) -> PyResult<i32> {
        self.server_call(py, check, true, servers::Servers::start)
    }

    /// Stops this map's local servers (SIGTERM: they save and exit), whichever
    /// interpreter started them; 0 on success, else 1 with a `WebdedupWarning`
    /// naming the servers. `check=True` raises instead of returning non-zero.
    #[pyo3(signature = (*, check=false))]
    fn stop_servers(&self, py: Python<'_>, check: bool) -> PyResult<i32> {
        self.server_call(py, check, true, servers::Servers::stop)
    }

    /// 0 if every server of the map answers and is ready, 1 otherwise (or, with
    /// `check=True`, a WebdedupError naming the servers that are not).
    #[pyo3(signature = (*, check=false))]
    fn test_servers(&self, py: Python<'_>, check: bool) -> PyResult<i32> {
        self.server_call(py, check, false, servers::Servers::test)
    }

    /// Saves the store to `store_dir` (the command line's snapshot format); returns
    /// the number of keys.
    fn save(&self, py: Python<'_>) -> PyResult<u64> {
        let s = &*self.shared;
        py.allow_threads(|| {
            s.store.save_embedded(
                s.store_dir.as_deref(),
                "Dedup",
                &s.meta,
                "the key set lives in Redis or on the hash servers, which persist it",
                |_| Ok(()),
            )
        })
    }

    /// Keys in the store.
    fn __len__(&self) -> usize {
        self.shared.store.store().map_or(0, |s| s.len() as usize)
    }

    /// Feedback mode: writes `DIR/files.idx`, the file ids of every source the
    /// workers named, so that `webdedup check -i INPUT -o DIR` can follow the
    /// references written to `DIR/SOURCE.dedup.dropped`. Returns its path.
    fn write_files_index(&self, dir: PathBuf) -> PyResult<PathBuf> {
        if !self.shared.options.feedback() {
            return Err(PyValueError::new_err(
                "write_files_index() needs Dedup(feedback=True)",
            ));
        }
        self.shared.sources.write_index(&dir).map_err(err)
    }
}

/// `url_filter=`: a rules file (str or path-like) or a list of rules; bad rules
/// raise, naming their line.
fn load_url_filter(arg: &Bound<'_, PyAny>) -> PyResult<Arc<UrlFilter>> {
    // PyO3 never takes a str for a list, so a str is a path, as a PathLike is.
    let (filter, problems) = match arg.extract::<Vec<String>>() {
        Ok(rules) => {
            let (filter, problems) = UrlFilter::parse(&rules.join("\n"));
            let problems = problems
                .into_iter()
                .map(|(line, why)| format!("url_filter rule:{line}: {why}"))
                .collect();
            (filter, problems)
        }
        Err(_) => {
            let path: PathBuf = arg.extract()?;
            UrlFilter::load(&path)
                .map_err(|e| err(format!("cannot read URL filter {}: {e}", path.display())))?
        }
    };
    if !problems.is_empty() {
        return Err(PyValueError::new_err(problems.join("; ")));
    }
    Ok(Arc::new(filter))
}

/// `substr=`: `True` (the command line's `--substr`, 10,4), `(K, W)`, or
/// `False`/`None` (off); checked as `--substr=K,W` is.
fn substr_params(
    v: &Bound<'_, PyAny>,
) -> PyResult<Option<webdedup_dedup::policy::substr::SubstrParams>> {
    use webdedup_dedup::policy::substr::SubstrParams;
    if v.is_none() {
        return Ok(None);
    }
    if let Ok(on) = v.extract::<bool>() {
        return Ok(on.then_some(SubstrParams::DEFAULT));
    }
    let refused = || {
        PyValueError::new_err(
            "substr takes True, (K, W) or (K, W, B), whole numbers as (10, 4) or (10, 4, 80)",
        )
    };
    let (k, w, b) = match v.extract::<(usize, usize)>() {
        Ok((k, w)) => (k, w, SubstrParams::DEFAULT_MIN_BYTES),
        Err(_) => v
            .extract::<(usize, usize, usize)>()
            .map_err(|_| refused())?,
    };
    SubstrParams::new(k, w)
        .map(|p| Some(p.with_min_bytes(b)))
        .map_err(PyValueError::new_err)
}
