//! `import webdedup`: the seed's deduplication library (libdedup), on the same
//! policy, store and renderer as the `webdedup` command line.
//!
//! Thread-safety: a `Dedup` owns one store shared by all its workers; a `Worker`
//! keeps its own buffers behind a lock, so one worker used from several threads
//! serializes, and several workers (one per thread) run in parallel. Every call that
//! works on text releases the GIL.

mod feedback;
mod formats;
mod servers;
use parking_lot::Mutex;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use webdedup_dedup::plan::{ChunkPlan, Planner};
use webdedup_dedup::policy::{decide, ChunkContext, Decisions, DocStatus, Scratch};
use webdedup_dedup::render::{carries_reference, render, DroppedOut};
use webdedup_dedup::report::ChunkStats;
use webdedup_dedup::{DocCheck, Options, PolicyChoices, UrlFilter};
use webdedup_formats::chunk::{Chunk, IssueKind};
use webdedup_formats::read::{DocFormat, ReadSettings};
use webdedup_formats::vertical::{escape_attr, parse_tag};
use webdedup_store::{BatchId, Location, MemStore, Store, StoreMeta};
use webdedup_store_spec::{OpenOptions, OpenedStore, StoreSpec};
use webdedup_text::Normalization;

mod batch;
mod minhash;
mod minhash_dedup;

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
}

struct Shared {
    store: Keys,
    options: Options,
    /// How `process` reads its bytes (`input_format` and the JSON Lines fields).
    read: ReadSettings,
    store_dir: Option<PathBuf>,
    meta: StoreMeta,
    workers: AtomicU64,
    /// Feedback mode: the sources named by worker calls and their record numbers.
    sources: feedback::Sources,
}

/// The deduplicator: the key store and the settings every worker uses.
///
/// `map=None` keeps the store in this process (the embedded store); `store_dir`
/// loads the command line's snapshot (`DIR/store.snap`) if present, and `save()`
/// writes it back, so Python and `webdedup dedup --store DIR` share key sets.
/// `store="redis://HOST:PORT[,...]"` keeps the key set in Redis / Valkey instead.
#[pyclass(module = "webdedup", frozen)]
struct Dedup {
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
    #[pyo3(signature = (map=None, port=None, store_dir=None, *, store=None, store_password=None, normalize=None, min_para_chars=None, doc_check=None, near=false, ngram=None, threshold=None, smooth=false, max_stub=None, url_filter=None, feedback=false, blocks=None, capacity=None, server_timeout=webdedup_net::client::DEFAULT_GIVE_UP_AFTER.as_secs_f64(), input_format=None, text_field=None, id_field=None, url_field=None, title_field=None, drop_bad_records=false))]
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
        blocks: Option<u32>,
        capacity: Option<usize>,
        server_timeout: f64,
        input_format: Option<&str>,
        text_field: Option<&str>,
        id_field: Option<&str>,
        url_field: Option<&str>,
        title_field: Option<&str>,
        drop_bad_records: bool,
    ) -> PyResult<Self> {
        let read = formats::read_settings(
            input_format,
            text_field,
            id_field,
            url_field,
            title_field,
            drop_bad_records,
        )?;
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
        let id = self.shared.workers.fetch_add(1, Ordering::Relaxed);
        Worker {
            shared: self.shared.clone(),
            state: Mutex::new(Box::new(WorkerState::new(&self.shared.options, id))),
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
        let dir = self
            .shared
            .store_dir
            .clone()
            .ok_or_else(|| PyValueError::new_err("save() needs Dedup(store_dir=...)"))?;
        let shared = self.shared.clone();
        py.allow_threads(move || {
            let Keys::Embedded(mem) = &shared.store else {
                return Err(err(
                    "save(): the key set lives in Redis or on the hash servers, which persist it",
                ));
            };
            std::fs::create_dir_all(&dir).map_err(err)?;
            let info = mem
                .save(
                    &dir.join(webdedup_store_spec::files::SNAPSHOT_FILE),
                    &shared.meta,
                )
                .map_err(err)?;
            Ok(info.keys)
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
        if !self.shared.options.feedback {
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

struct WorkerState {
    planner: Planner,
    plan: ChunkPlan,
    scratch: Scratch,
    decisions: Decisions,
    stream: u64,
    calls: u64,
}

impl WorkerState {
    fn new(opts: &Options, id: u64) -> Self {
        WorkerState {
            planner: Planner::new(opts),
            plan: ChunkPlan::default(),
            scratch: Scratch::default(),
            decisions: Decisions::default(),
            stream: id,
            calls: 0,
        }
    }

    /// Plans and decides `data` as one chunk; returns the kept bytes, the
    /// documents' statuses, kept and dropped paragraphs, and input problems (and,
    /// in feedback mode, the dropped paragraphs with references to their
    /// originals, numbered within `source`).
    fn run(
        &mut self,
        shared: &Shared,
        data: Vec<u8>,
        source: &str,
        format: &DocFormat,
    ) -> Result<Vert, String> {
        let chunk = Chunk {
            data,
            first_line: 1,
            last: true,
            ..Default::default()
        };
        self.planner.plan_as(format, &chunk, &mut self.plan);
        let (file, first_record) = if shared.options.feedback {
            shared.sources.reserve(source, self.plan.paras.len())?
        } else {
            (0, 0)
        };
        let ctx = ChunkContext {
            id: BatchId {
                stream: self.stream,
                seq: self.calls * webdedup_dedup::policy::REQUESTS_PER_CHUNK,
            },
            file,
            first_record,
        };
        self.calls += 1;
        decide(
            &self.plan,
            ctx,
            shared.store.store()?,
            &shared.options,
            &mut self.scratch,
            &mut self.decisions,
        )
        .map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(chunk.data.len());
        let mut dropped_out = Vec::new();
        let dropped = shared.options.feedback.then_some(DroppedOut {
            out: &mut dropped_out,
            file,
            first_record,
        });
        let mut stats = ChunkStats::default();
        render(
            &chunk.data,
            &self.plan,
            &self.decisions,
            &mut out,
            None,
            dropped,
            &mut stats,
        );
        let references = if shared.options.feedback {
            self.references(shared, first_record)
        } else {
            Vec::new()
        };
        Ok(Vert {
            format: format.name(),
            data: out,
            feedback: dropped_out,
            references,
            source: shared.options.feedback.then(|| source.to_owned()),
            first_record,
            statuses: self.decisions.docs.iter().map(|s| s.code()).collect(),
            kept: stats.paras_kept,
            dropped: stats.paras - stats.paras_kept,
            problems: self
                .plan
                .issues
                .iter()
                .map(|i| (i.line, i.kind.to_string()))
                .collect(),
        })
    }

    /// Feedback mode: (paragraph index in this call, original source, original
    /// record) of every dropped paragraph that carries a reference, in order; the
    /// source is `None` where the original is not known.
    fn reference_list(&self, shared: &Shared) -> Vec<(usize, Option<String>, u64)> {
        let mut refs = Vec::new();
        for (doc, &status) in self.plan.docs.iter().zip(&self.decisions.docs) {
            for j in doc.paras.clone() {
                if !self.decisions.keep_para[j] && carries_reference(&self.plan, status, j) {
                    let orig = self.decisions.originals[j];
                    let name = (orig != Location::UNKNOWN)
                        .then(|| shared.sources.name(orig.file))
                        .flatten();
                    refs.push((j, name, orig.record));
                }
            }
        }
        refs
    }

    fn references(&self, shared: &Shared, first_record: u64) -> Vec<(u64, Option<String>, u64)> {
        self.reference_list(shared)
            .into_iter()
            .map(|(j, name, rec)| (first_record + j as u64, name, rec))
            .collect()
    }
}

/// Deduplicates verticals against its `Dedup`'s store. Thread-safe (see module).
#[pyclass(module = "webdedup", frozen)]
struct Worker {
    shared: Arc<Shared>,
    /// Boxed: the worker's state has a 64-byte alignment (a debug build aborts
    /// with a misaligned pointer when creating a Worker) and Python allocates
    /// objects 16-byte aligned; a pyclass must not hold it inline.
    state: Mutex<Box<WorkerState>>,
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
            .allow_threads(|| self.state.lock().run(&self.shared, data, source, &format))
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
                let vert = st.run(&self.shared, data, source, &format)?;
                // One written line per written document, in order: the kept text of
                // those that lost paragraphs is read back from it.
                let mut lines = vert.data.split_inclusive(|&b| b == b'\n');
                let mut texts = Vec::with_capacity(st.decisions.docs.len());
                for status in &st.decisions.docs {
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
            let v = st.run(&self.shared, vert, source, &DocFormat::Vertical)?;
            let keep = &st.decisions.keep_para;
            // Paragraph index -> (original source, record), feedback mode only.
            let refs = if self.shared.options.feedback {
                st.reference_list(&self.shared)
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

/// What `Worker.process_records` returns.
#[pyclass(module = "webdedup", frozen, get_all)]
struct Records {
    /// The records to keep, in input order.
    records: Py<PyList>,
    /// One status per input record: `K`, `N/M`, `D`, `E`, `U` or `B`.
    statuses: Vec<String>,
    /// Paragraphs kept and dropped.
    kept: u64,
    dropped: u64,
    /// Problems as (record index from 0, reason).
    problems: Vec<(u64, String)>,
    /// Feedback mode: (dropped record, original source, original record).
    references: Vec<(u64, Option<String>, u64)>,
    /// Feedback mode: the source the paragraphs are numbered in.
    source: Option<String>,
    /// Feedback mode: the record number of the first paragraph of this call.
    first_record: u64,
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
struct Vert {
    /// The input's format: `vertical` or `jsonl` (the bytes are in it).
    #[pyo3(get)]
    format: &'static str,
    /// The kept bytes (use `text` for a str).
    data: Vec<u8>,
    /// One status per input document: `K`, `N/M`, `D`, `E`.
    #[pyo3(get)]
    statuses: Vec<String>,
    /// Paragraphs kept and dropped.
    #[pyo3(get)]
    kept: u64,
    #[pyo3(get)]
    dropped: u64,
    /// Input problems as (line, reason), lines counted from 1 in this input.
    #[pyo3(get)]
    problems: Vec<(u64, String)>,
    /// Feedback mode: the `.dropped` text (the command line's `-f` format).
    feedback: Vec<u8>,
    /// Feedback mode: (dropped record, original source, original record).
    #[pyo3(get)]
    references: Vec<(u64, Option<String>, u64)>,
    /// Feedback mode: the source the records are numbered in.
    #[pyo3(get)]
    source: Option<String>,
    /// Feedback mode: the record number of this input's first paragraph.
    #[pyo3(get)]
    first_record: u64,
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
struct Document {
    /// The text without its dropped lines.
    text: String,
    /// `K`, `N/M`, `D` or `E`.
    status: String,
    /// Dropped spans, character offsets `(start, end)` into the input text.
    dropped: Vec<(usize, usize)>,
    /// Feedback mode: `(start, end, original source, original record)` of every
    /// dropped line whose original is named (the source is `None` where the store
    /// no longer knows it).
    references: Vec<(usize, usize, Option<String>, u64)>,
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

#[pymodule]
fn webdedup(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Dedup>()?;
    m.add_class::<Worker>()?;
    m.add_class::<Vert>()?;
    m.add_class::<Document>()?;
    m.add_class::<Records>()?;
    // The seed's names.
    m.add("dedup", m.getattr("Dedup")?)?;
    m.add("WebdedupError", m.py().get_type::<WebdedupError>())?;
    m.add("WebdedupWarning", m.py().get_type::<WebdedupWarning>())?;
    m.add_function(wrap_pyfunction!(simhash, m)?)?;
    m.add_function(wrap_pyfunction!(hamming, m)?)?;
    m.add_function(wrap_pyfunction!(similar, m)?)?;
    m.add_function(wrap_pyfunction!(cdx_dups, m)?)?;
    batch::register(m)?;
    minhash::register(m)?;
    minhash_dedup::register(m)?;
    Ok(())
}
