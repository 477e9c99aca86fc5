//! `webdedup server`: owns the blocks the block map gives it and answers batched
//! test-and-insert requests from workers (and the KNOT one-hash protocol).
//!
//! Durability: every answered request is journaled (and handed to the OS) before
//! its answer is sent, so a server killed at any instant and restarted loses no
//! acknowledged key. The journal record of a request also holds its verdicts, keyed
//! by (stream, sequence number): a retried request gets the first attempt's
//! verdicts back, even across a server restart. A save (SIGHUP, SIGTERM) writes the
//! snapshot, the retry records and the migration progress, then starts a new
//! journal.
//!
//! Stopping (SIGTERM, SIGINT) drains as tokio's mini-redis does: stop accepting,
//! let every connection finish the request it is answering, refuse the rest
//! (refused requests get no verdicts), then save. A request checks that the
//! server is not closing under the gate, and the final save takes the gate
//! exclusively after closing is set: every acknowledged key is in the snapshot.
//!
//! Who may change what the store is: its settings come from a snapshot or
//! journal, else from `--knot` (a store of KNOT clients' hashes, fixed at start),
//! else from the first worker's handshake. A connection that does not open with
//! our preamble is a KNOT client only on a `--knot` server; elsewhere it is
//! dropped and counted, and changes nothing.
//!
//! First-seen locations (feedback mode, MinHash) are kept too: the journal
//! records them with the keys they belong to, a save writes them beside the
//! snapshot (`SAVE.locations`, [`webdedup_store::locations`]), so a restarted
//! server names the same originals. The key set has an id, kept in that file and
//! in the journal's header: a server that comes back without its keys has a new
//! one, and workers, told it in the handshake, stop instead of going on with a
//! store that forgot what it acknowledged.
//!
//! Journal record tags (the first byte says which):
//! `S stream seq n bitmap` a worker request (keys: the new ones), `L` a located
//! insert (`L`, or `L stream seq n bitmap` with an id; keys: the new ones, then
//! each one's file and record), `K` a KNOT key,
//! `M block` keys taken over from a block's previous owner, `F block` that block
//! fully taken over, `R block` a block handed over to its new owner (dropped here).

mod admission;
mod answer;
mod conn;
mod connection;
mod http;
mod migrate;
mod process;
mod retry;
mod throttle;

use crate::auth::Secret;
use crate::wire::{self, ServerState};
use anyhow::{bail, Context, Result};
use parking_lot::{Mutex, RwLock, RwLockReadGuard};
use retry::RetryRecords;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use webdedup_store::server_map::{ServerAddr, ServerMap};
use webdedup_store::{journal, snapshot, BlockMap, Journal, MemStore, Store, StoreMeta, SyncMode};

/// Everything `webdedup server` is told.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The block map this server serves by.
    pub map: PathBuf,
    /// The previous block map: take over (and hand over) the blocks whose owner
    /// changed between it and `map` before serving workers.
    pub from_map: Option<PathBuf>,
    /// How the maps name this server (default: the listen address).
    pub me: Option<ServerAddr>,
    pub listen: SocketAddr,
    /// Serve KNOT clients (the one-hash protocol): the store holds their hashes
    /// (settings fixed at start), and a connection without our preamble is one.
    pub knot: bool,
    /// A second port speaking only the KNOT one-hash protocol (implies `knot`).
    pub knot_port: Option<u16>,
    /// Where to serve `/metrics` (Prometheus text) and `/status` (JSON) over HTTP.
    pub metrics: Option<SocketAddr>,
    pub load: Option<PathBuf>,
    pub save: Option<PathBuf>,
    pub journal: Option<PathBuf>,
    pub fsync: SyncMode,
    pub capacity: usize,
    pub auth: Option<Secret>,
    /// Allow listening beyond loopback without a shared secret.
    pub insecure: bool,
    pub max_frame: u32,
    /// Bytes of frames in flight beyond each connection's own small buffer, all
    /// connections together (at least `max_frame`).
    pub frame_memory: usize,
    pub max_connections: usize,
    pub idle_timeout: Duration,
    /// Memory for retry records (oldest dropped first beyond it).
    pub retry_memory: usize,
}

impl ServerConfig {
    /// A configuration with the defaults of the command line.
    pub fn new(map: PathBuf, listen: SocketAddr) -> Self {
        ServerConfig {
            map,
            from_map: None,
            me: None,
            listen,
            knot: false,
            knot_port: None,
            metrics: None,
            load: None,
            save: None,
            journal: None,
            fsync: SyncMode::Batch(journal::DEFAULT_BATCH_DELAY),
            capacity: 0,
            auth: None,
            insecure: false,
            max_frame: wire::DEFAULT_MAX_FRAME,
            frame_memory: DEFAULT_FRAME_MEMORY,
            max_connections: 1024,
            idle_timeout: Duration::from_secs(600),
            retry_memory: 256 << 20,
        }
    }

    /// The journal's path: `-j`, else next to the save file.
    pub fn journal_path(&self) -> Option<PathBuf> {
        self.journal
            .clone()
            .or_else(|| self.save.as_ref().map(|s| sidecar(s, "journal")))
    }

    /// Serves KNOT clients (`--knot`, or a `--knot-port`).
    pub fn serves_knot(&self) -> bool {
        self.knot || self.knot_port.is_some()
    }

    /// Refuses settings that would leave the server open or unable to work.
    pub fn check(&self) -> Result<()> {
        let open = |addr: &SocketAddr, what: &str| -> Result<()> {
            if !addr.ip().is_loopback() && self.auth.is_none() && !self.insecure {
                bail!(
                    "{what} {addr} (beyond loopback) needs --auth-token-file (or --insecure on a trusted network)"
                );
            }
            Ok(())
        };
        open(&self.listen, "listening on")?;
        if let Some(m) = &self.metrics {
            open(m, "--metrics on")?;
        }
        if self.serves_knot() && self.auth.is_some() {
            bail!("KNOT clients cannot authenticate: --knot (or --knot-port) and --auth-token-file exclude each other");
        }
        if self.frame_memory < self.max_frame as usize + 4 {
            bail!(
                "the memory for frames in flight ({} bytes) must hold the largest frame (--max-frame {})",
                self.frame_memory,
                self.max_frame
            );
        }
        Ok(())
    }
}

/// Default budget of frames in flight (twice the default largest frame).
pub const DEFAULT_FRAME_MEMORY: usize = 128 << 20;

/// `FILE.ext` beside `FILE`.
pub fn sidecar(path: &Path, ext: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Counters for status and metrics.
#[derive(Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub keys_tested: AtomicU64,
    pub keys_new: AtomicU64,
    pub retried_requests: AtomicU64,
    pub knot_requests: AtomicU64,
    pub connections: AtomicU64,
    pub connections_total: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub bad_frames: AtomicU64,
    pub auth_failures: AtomicU64,
}

/// Migration progress: blocks still to take over, and to hand over.
#[derive(Default, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Migration {
    pub incoming: BTreeSet<u32>,
    pub outgoing: BTreeSet<u32>,
    /// Done, kept across saves (so a restart does not redo them).
    pub fetched: BTreeSet<u32>,
    pub released: BTreeSet<u32>,
}

pub(crate) struct Shared {
    pub cfg: ServerConfig,
    pub map: ServerMap,
    pub fingerprint: u64,
    pub me_addr: ServerAddr,
    /// This server's index in `map` (None: an excluded server, handing over only).
    pub me: Option<usize>,
    pub owned: Vec<bool>,
    pub rule: BlockMap,
    pub store: MemStore,
    /// The key set's id (see the module docs).
    pub store_id: u64,
    /// Requests hold it shared; a save holds it exclusively (a consistent cut).
    pub gate: RwLock<()>,
    pub meta: Mutex<Option<StoreMeta>>,
    pub journal: Mutex<Option<Arc<Journal>>>,
    pub retry: RetryRecords,
    pub state: AtomicU8,
    pub migration: Mutex<Migration>,
    pub old_map: Option<ServerMap>,
    pub counters: Counters,
    pub started: Instant,
    pub shutdown: tokio::sync::Notify,
    /// Set when the server begins to stop: requests not yet answered are refused.
    pub closing: AtomicBool,
    pub budget: Arc<connection::FrameBudget>,
    pub admission: admission::Admission,
    pub throttle: throttle::Throttle,
}

impl Shared {
    pub fn state(&self) -> ServerState {
        match self.state.load(Ordering::SeqCst) {
            0 => ServerState::Ready,
            1 => ServerState::Migrating,
            2 => ServerState::Finished,
            _ => ServerState::Starting,
        }
    }

    pub fn set_state(&self, s: ServerState) {
        self.state.store(s as u8, Ordering::SeqCst);
    }

    pub fn journal(&self) -> Option<Arc<Journal>> {
        self.journal.lock().clone()
    }

    /// The gate, shared, for a request that may change the store; `None` once
    /// the server is closing (the request must be refused, not answered). Checked
    /// under the gate: the final save takes it exclusively after closing is set,
    /// so a request either is in that save or sees closing.
    pub fn enter(&self) -> Option<RwLockReadGuard<'_, ()>> {
        self.enter_holding(None)
    }

    /// [`Shared::enter`] with the gate possibly taken already (`held`).
    pub fn enter_holding<'a>(
        &'a self,
        held: Option<RwLockReadGuard<'a, ()>>,
    ) -> Option<RwLockReadGuard<'a, ()>> {
        let gate = held.unwrap_or_else(|| self.gate.read());
        (!self.closing.load(Ordering::SeqCst)).then_some(gate)
    }

    /// Fixes the settings of the keys this server keeps: the first client's, if
    /// neither a snapshot nor a journal said. Starts the journal then.
    pub fn adopt_meta(&self, theirs: &StoreMeta) -> Result<(), String> {
        let mut meta = self.meta.lock();
        match &*meta {
            Some(mine) => match theirs.mismatch(mine, &format!("server {}", self.me_addr)) {
                Some(m) => Err(m),
                None => Ok(()),
            },
            None => {
                if theirs.blocks != self.map.blocks {
                    return Err(format!(
                        "the client has {} blocks, the block map {}",
                        theirs.blocks, self.map.blocks
                    ));
                }
                if let Some(path) = self.cfg.journal_path() {
                    let j =
                        Journal::create(&path, theirs, self.run_info().as_bytes(), self.cfg.fsync)
                            .map_err(|e| format!("cannot create the journal: {e}"))?;
                    *self.journal.lock() = Some(Arc::new(j));
                }
                *meta = Some(theirs.clone());
                Ok(())
            }
        }
    }

    fn run_info(&self) -> String {
        format!(
            "webdedup server {} pid {} store {:016x}",
            self.me_addr,
            std::process::id(),
            self.store_id
        )
    }

    pub fn status_json(&self) -> serde_json::Value {
        let c = &self.counters;
        let m = self.migration.lock().clone();
        let meta = self.meta.lock().clone();
        let journal_path = self.cfg.journal_path();
        serde_json::json!({
            "server": self.me_addr.to_string(),
            "index": self.me,
            "state": self.state().name(),
            "pid": std::process::id(),
            "store_id": format!("{:016x}", self.store_id),
            "keys": self.store.len(),
            "memory_bytes": self.store.memory_bytes(),
            "blocks": self.map.blocks,
            "blocks_owned": self.owned.iter().filter(|&&o| o).count(),
            "map_fingerprint": format!("{:016x}", self.fingerprint),
            "journal": journal_path.as_ref().map(|p| p.display().to_string()),
            "journal_present": journal_path.as_ref().is_some_and(|p| p.exists()),
            "save": self.cfg.save.as_ref().map(|p| p.display().to_string()),
            "settings": meta.map(|m| serde_json::json!({
                "hash": m.hash, "normalization": m.normalization, "blocks": m.blocks, "key_kind": m.key_kind,
            })),
            "migration": {
                "incoming_pending": m.incoming.len(),
                "outgoing_pending": m.outgoing.len(),
            },
            "retry_records": self.retry.len(),
            "uptime_seconds": self.started.elapsed().as_secs_f64(),
            "requests": c.requests.load(Ordering::Relaxed),
            "retried_requests": c.retried_requests.load(Ordering::Relaxed),
            "keys_tested": c.keys_tested.load(Ordering::Relaxed),
            "keys_inserted": c.keys_new.load(Ordering::Relaxed),
            "knot_requests": c.knot_requests.load(Ordering::Relaxed),
            "connections": c.connections.load(Ordering::Relaxed),
            "connections_total": c.connections_total.load(Ordering::Relaxed),
            "rejected_connections": c.rejected_connections.load(Ordering::Relaxed),
            "bad_frames": c.bad_frames.load(Ordering::Relaxed),
            "auth_failures": c.auth_failures.load(Ordering::Relaxed),
            "connections_in_handshake": self.admission.in_handshake(),
            "evicted_connections": self.admission.evicted.load(Ordering::Relaxed),
            "frame_memory_bytes": self.budget.in_use(),
            "frame_memory_limit": self.budget.total(),
        })
    }

    /// The status served over HTTP (`--metrics`), which nobody authenticates: on
    /// a server with a token, without what locates the server's files and process
    /// (ask `webdedup status`, which authenticates, for those).
    pub fn public_status_json(&self) -> serde_json::Value {
        let mut s = self.status_json();
        if self.cfg.auth.is_some() {
            if let Some(o) = s.as_object_mut() {
                for field in ["pid", "journal", "save", "map_fingerprint", "settings"] {
                    o.remove(field);
                }
            }
        }
        s
    }

    /// Migration bookkeeping after a block was handed over or taken over.
    pub fn migration_step(&self) {
        let m = self.migration.lock();
        let state = self.state();
        if state == ServerState::Finished {
            return;
        }
        if self.me.is_none() {
            if m.outgoing.is_empty() {
                tracing::info!("every block handed over: finished");
                self.set_state(ServerState::Finished);
                self.shutdown.notify_one();
            }
        } else if m.incoming.is_empty() && m.outgoing.is_empty() {
            if state == ServerState::Migrating {
                tracing::info!("migration finished: serving");
            }
            self.set_state(ServerState::Ready);
        } else if m.incoming.is_empty() {
            // Serving needs only the blocks we own; handing over goes on meanwhile.
            self.set_state(ServerState::Ready);
        }
    }

    /// Saves snapshot, retry records and migration progress, then starts a new
    /// journal (or removes it when `last`). Holds every request off meanwhile.
    pub fn save(&self, last: bool) -> Result<()> {
        let Some(path) = self.cfg.save.clone() else {
            return Ok(());
        };
        let _cut = self.gate.write();
        let Some(meta) = self.meta.lock().clone() else {
            tracing::info!("nothing to save: no client has connected and no store was loaded");
            return Ok(());
        };
        let info = self
            .store
            .save(&path, &meta)
            .with_context(|| format!("cannot save the store to {}", path.display()))?;
        self.retry.save(&sidecar(&path, "retry"))?;
        webdedup_store::locations::save(&self.store, self.store_id, &sidecar(&path, "locations"))
            .context("cannot save the first-seen locations")?;
        let m = self.migration.lock().clone();
        let json = serde_json::to_vec_pretty(&m)?;
        snapshot::write_atomic(&sidecar(&path, "migration"), &[&json], "server-migration")
            .context("cannot save the migration progress")?;
        tracing::info!(
            keys = info.keys,
            bytes = info.bytes,
            seconds = info.seconds,
            "saved {}",
            path.display()
        );
        let old = self.journal.lock().take();
        if let Some(j) = old {
            let j = Arc::try_unwrap(j).map_err(|_| anyhow::anyhow!("journal still in use"))?;
            j.remove()
                .context("cannot remove the journal after saving")?;
        }
        if !last {
            if let Some(jp) = self.cfg.journal_path() {
                let j = Journal::create(&jp, &meta, self.run_info().as_bytes(), self.cfg.fsync)?;
                *self.journal.lock() = Some(Arc::new(j));
            }
        }
        Ok(())
    }
}

/// How a server stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// SIGTERM / SIGINT: saved and stopped.
    Stopped,
    /// An excluded server that handed every block over.
    Finished,
}

fn read_map(path: &Path) -> Result<ServerMap> {
    ServerMap::read(path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// What a server starts from.
struct Opened {
    store: MemStore,
    /// The loaded snapshot's key set id (from its locations file).
    store_id: Option<u64>,
    meta: Option<StoreMeta>,
    retry: RetryRecords,
    migration: Option<Migration>,
}

/// Loads the snapshot, its retry records and migration progress (the journal is
/// replayed later, on top).
fn open_store(cfg: &ServerConfig, blocks: u32) -> Result<Opened> {
    let mut meta = None;
    let load = cfg.load.as_ref().filter(|p| p.exists());
    if let Some(p) = &cfg.load {
        if !p.exists() {
            tracing::warn!("{} does not exist yet: starting empty", p.display());
        }
    }
    let jpath = cfg.journal_path().filter(|p| p.exists());
    if let Some(p) = load {
        meta =
            Some(snapshot::read_meta(p).with_context(|| format!("cannot read {}", p.display()))?);
    } else if let Some(j) = &jpath {
        meta = Some(journal::read_meta(j).with_context(|| format!("cannot read {}", j.display()))?);
    }
    if let Some(m) = &meta {
        if m.blocks != blocks {
            bail!(
                "the stored keys have {} blocks, the block map {blocks}",
                m.blocks
            );
        }
    }
    let store = match (load, &meta) {
        (Some(p), Some(m)) => {
            let (s, info) = MemStore::load(p, m, cfg.capacity)
                .with_context(|| format!("cannot load {}", p.display()))?;
            tracing::info!(
                keys = info.keys,
                seconds = info.seconds,
                "loaded {}",
                p.display()
            );
            s
        }
        _ => MemStore::with_capacity(blocks, cfg.capacity),
    };
    // The server's memory is its store: hand back what its small tables leave.
    webdedup_store::trim_heap_as_tables_grow(true);
    let retry = RetryRecords::new(cfg.retry_memory);
    let mut migration = None;
    let mut store_id = None;
    if let Some(p) = load {
        let lp = sidecar(p, "locations");
        if lp.exists() {
            store_id = Some(webdedup_store::locations::load(&store, &lp)?);
        }
        retry.load(&sidecar(p, "retry"))?;
        let mp = sidecar(p, "migration");
        if mp.exists() {
            let text =
                std::fs::read(&mp).with_context(|| format!("cannot read {}", mp.display()))?;
            migration = Some(
                serde_json::from_slice::<Migration>(&text)
                    .with_context(|| format!("{}: not migration progress", mp.display()))?,
            );
        }
    }
    Ok(Opened {
        store,
        store_id,
        meta,
        retry,
        migration,
    })
}

/// Runs a server until SIGTERM / SIGINT (or, for an excluded server, until every
/// block is handed over). Binds before returning `bound` through the callback so
/// tests and launchers can learn the ports.
pub fn run(cfg: ServerConfig, on_bound: impl FnOnce(SocketAddr) + Send + 'static) -> Result<Exit> {
    cfg.check()?;
    process::raise_fd_limit(2 * cfg.max_connections + 64);
    process::no_huge_pages();
    process::one_malloc_arena();
    let map = read_map(&cfg.map)?;
    let me_addr = cfg.me.clone().unwrap_or_else(|| ServerAddr {
        host: cfg.listen.ip().to_string(),
        port: cfg.listen.port(),
    });
    let me = map.index_of(&me_addr);
    let old_map = cfg.from_map.as_deref().map(read_map).transpose()?;
    if let Some(old) = &old_map {
        if old.blocks != map.blocks {
            bail!(
                "the previous map has {} blocks, the new one {}: blocks are fixed once used",
                old.blocks,
                map.blocks
            );
        }
    }
    let in_old = old_map.as_ref().and_then(|m| m.index_of(&me_addr));
    if me.is_none() && in_old.is_none() {
        bail!(
            "{} is not a server of {} (use --me HOST:PORT to say how the map names this server)",
            me_addr,
            cfg.map.display()
        );
    }
    let Opened {
        store,
        store_id,
        mut meta,
        retry,
        migration: saved_migration,
    } = open_store(&cfg, map.blocks)?;
    let knot = conn::knot_meta(map.blocks);
    match &meta {
        None if cfg.serves_knot() => meta = Some(knot),
        Some(m) if cfg.serves_knot() && *m != knot => {
            bail!(
                "--knot serves KNOT clients' hashes, but the stored keys are of another kind (hash {}, key kind {}): use another store",
                m.hash,
                m.key_kind
            )
        }
        Some(m) if !cfg.serves_knot() && *m == knot => tracing::warn!(
            "the stored keys are KNOT clients' hashes: start with --knot to serve KNOT clients (workers are refused)"
        ),
        _ => {}
    }
    let owned: Vec<bool> = map.owner.iter().map(|&o| Some(o as usize) == me).collect();
    // The key set's id: the snapshot's, else the journal's (a server that never
    // saved), else a new key set's.
    let jpath = cfg.journal_path().filter(|p| p.exists());
    let store_id = store_id
        .or_else(|| jpath.as_deref().and_then(journal_store_id))
        .unwrap_or_else(|| u64::from_le_bytes(crate::auth::random::<8>()));
    let shared = Arc::new(Shared {
        fingerprint: wire::map_fingerprint(&map),
        rule: BlockMap::new(map.blocks),
        owned,
        me,
        me_addr: me_addr.clone(),
        store,
        store_id,
        gate: RwLock::new(()),
        meta: Mutex::new(meta.clone()),
        journal: Mutex::new(None),
        retry,
        state: AtomicU8::new(ServerState::Starting as u8),
        migration: Mutex::new(saved_migration.unwrap_or_default()),
        old_map,
        counters: Counters::default(),
        started: Instant::now(),
        shutdown: tokio::sync::Notify::new(),
        closing: AtomicBool::new(false),
        budget: connection::FrameBudget::new(cfg.frame_memory),
        admission: admission::Admission::new(cfg.max_connections),
        throttle: throttle::Throttle::default(),
        map,
        cfg,
    });
    // The journal: replay what a crash left, then append to it.
    if let (Some(jp), Some(meta)) = (shared.cfg.journal_path(), &meta) {
        if jp.exists() {
            let replay = Journal::replay(&jp, meta, |tag, keys| replay_record(&shared, tag, keys))
                .with_context(|| format!("cannot replay the journal {}", jp.display()))?;
            if let Some((offset, why)) = &replay.torn {
                tracing::warn!(
                    "{}: dropped a torn last record at byte {offset}: {why}",
                    jp.display()
                );
            }
            tracing::info!(
                records = replay.records,
                keys = replay.keys,
                "replayed the journal {}",
                jp.display()
            );
            let j = Journal::open_append(&jp, replay.valid_len, shared.cfg.fsync)?;
            *shared.journal.lock() = Some(Arc::new(j));
        } else {
            let j = Journal::create(&jp, meta, shared.run_info().as_bytes(), shared.cfg.fsync)?;
            *shared.journal.lock() = Some(Arc::new(j));
        }
    }
    migrate::plan(&shared);
    let state = if shared.migration.lock().incoming.is_empty() {
        ServerState::Ready
    } else {
        ServerState::Migrating
    };
    shared.set_state(state);
    shared.migration_step();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .max(2),
        )
        .build()
        .context("cannot start the server runtime")?;
    rt.block_on(serve(shared, on_bound))
}

/// Replays one journal record into the store, retry records and migration progress.
fn replay_record(shared: &Shared, tag: &[u8], keys: &[u64]) -> Result<(), String> {
    let bad = || format!("journal record with a bad tag of {} bytes", tag.len());
    match tag.first() {
        Some(b'S') => {
            let (id, n, bitmap) = retry_tag(&tag[1..]).ok_or_else(bad)?;
            shared.store.insert_all(keys);
            shared.retry.insert(id, n, bitmap.to_vec());
        }
        Some(b'L') => {
            let n = keys.len() / 3;
            if !keys.len().is_multiple_of(3) || (tag.len() != 1 && tag.len() < 21) {
                return Err(bad());
            }
            let locs: Vec<webdedup_store::Location> = keys[n..]
                .chunks_exact(2)
                .map(|fr| webdedup_store::Location {
                    file: fr[0],
                    record: fr[1],
                })
                .collect();
            shared
                .store
                .restore_locations(&keys[..n], &locs)
                .map_err(|e| e.to_string())?;
            if tag.len() >= 21 {
                let (id, n, bitmap) = retry_tag(&tag[1..]).ok_or_else(bad)?;
                shared.retry.insert(id, n, bitmap.to_vec());
            }
        }
        Some(b'K') | Some(b'M') => {
            shared.store.insert_all(keys);
        }
        Some(b'F') | Some(b'R') if tag.len() == 5 => {
            let block = u32::from_le_bytes(tag[1..5].try_into().unwrap());
            if block >= shared.map.blocks {
                return Err(format!("block {block} out of range"));
            }
            let mut m = shared.migration.lock();
            if tag[0] == b'F' {
                m.fetched.insert(block);
            } else {
                shared.store.clear_block(block);
                m.released.insert(block);
            }
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// A request's identity and verdicts in a journal tag (after its first byte):
/// `stream seq n bitmap`.
fn retry_tag(t: &[u8]) -> Option<((u64, u64), u32, &[u8])> {
    if t.len() < 20 {
        return None;
    }
    let stream = u64::from_le_bytes(t[0..8].try_into().ok()?);
    let seq = u64::from_le_bytes(t[8..16].try_into().ok()?);
    let n = u32::from_le_bytes(t[16..20].try_into().ok()?);
    let bitmap = &t[20..];
    (bitmap.len() == n.div_ceil(8) as usize).then_some(((stream, seq), n, bitmap))
}

/// The key set id a journal's header names (`... store HEX`, see
/// `Shared::run_info`), if any: journals of older versions name none.
fn journal_store_id(path: &Path) -> Option<u64> {
    let info = journal::read_run_info(path).ok()?;
    let info = String::from_utf8_lossy(&info);
    let hex = info.rsplit_once(" store ")?.1;
    u64::from_str_radix(hex.trim(), 16).ok()
}

async fn serve(
    shared: Arc<Shared>,
    on_bound: impl FnOnce(SocketAddr) + Send + 'static,
) -> Result<Exit> {
    use tokio::net::TcpListener;
    let listener = TcpListener::bind(shared.cfg.listen)
        .await
        .with_context(|| format!("cannot listen on {}", shared.cfg.listen))?;
    let bound = listener.local_addr()?;
    // Every connection task holds a lifeline: `stop` tells it to finish, and the
    // server waits until every `done` sender is dropped (mini-redis's shutdown).
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let (done, mut all_done) = tokio::sync::mpsc::channel::<()>(1);
    let life = conn::Lifeline { stop, _done: done };
    tokio::spawn(conn::accept_loop(
        listener,
        shared.clone(),
        false,
        life.clone(),
    ));
    if let Some(port) = shared.cfg.knot_port {
        let addr = SocketAddr::new(shared.cfg.listen.ip(), port);
        let l = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        tokio::spawn(conn::accept_loop(l, shared.clone(), true, life.clone()));
    }
    if let Some(addr) = shared.cfg.metrics {
        let l = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        tokio::spawn(http::serve(l, shared.clone(), life.stop.clone()));
    }
    drop(life);
    let flusher = {
        let s = shared.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(throttle::WINDOW).await;
                s.throttle.flush();
            }
        })
    };
    tracing::info!(
        "serving {} blocks of {} as {} on {bound}{}{}",
        shared.owned.iter().filter(|&&o| o).count(),
        shared.map.blocks,
        shared.me_addr,
        if shared.cfg.auth.is_some() {
            " (authenticated)"
        } else {
            ""
        },
        if shared.cfg.serves_knot() {
            " (KNOT clients)"
        } else {
            ""
        }
    );
    on_bound(bound);
    if !shared.migration.lock().incoming.is_empty() {
        let s = shared.clone();
        std::thread::spawn(move || migrate::take_over(&s));
    }
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    loop {
        tokio::select! {
            _ = hup.recv() => {
                let s = shared.clone();
                match tokio::task::spawn_blocking(move || s.save(false)).await? {
                    Ok(()) => {}
                    Err(e) => tracing::error!("save on SIGHUP failed: {e:#}"),
                }
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = shared.shutdown.notified() => break,
        }
    }
    // Drain: no new request is answered from here on (checked under the gate),
    // connections finish the request in hand, then the save takes the gate.
    shared.closing.store(true, Ordering::SeqCst);
    let _ = stop_tx.send(true);
    if tokio::time::timeout(DRAIN_TIMEOUT, all_done.recv())
        .await
        .is_err()
    {
        tracing::warn!(
            "{} connections still open after {} s: saving anyway (their requests are refused)",
            shared.counters.connections.load(Ordering::Relaxed),
            DRAIN_TIMEOUT.as_secs()
        );
    }
    flusher.abort();
    shared.throttle.flush();
    let finished = shared.state() == ServerState::Finished;
    let s = shared.clone();
    tokio::task::spawn_blocking(move || s.save(true)).await??;
    // Without a save file the journal is what holds the keys: keep it.
    if let Some(j) = shared.journal.lock().take() {
        if let Ok(j) = Arc::try_unwrap(j) {
            j.close()?;
        }
    }
    Ok(if finished {
        Exit::Finished
    } else {
        Exit::Stopped
    })
}

/// How long a stopping server waits for its connections to finish their requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
