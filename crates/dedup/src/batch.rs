//! Deterministic batch mode: hash / resolve / filter as idempotent tasks.
//!
//! Stream mode answers a key "seen" iff it was in the store before the run or was
//! asked earlier in (file, position) order. Which keys are asked depends on earlier
//! answers only within a document (a document dropped whole asks no paragraph key;
//! with `--doc-check url-title` only documents whose URL+title repeated ask their
//! document key; with `--doc-check none` no document asks either). Batch mode computes the same answers with tasks that each see a
//! slice of the work:
//!
//! 1. **hash** (task I of N): the files of rank `r ≡ I (mod N)` (sorted relative
//!    paths) are planned exactly as stream mode plans them, and every key that may
//!    be asked is written with its position (file rank, index within its kind in
//!    the file, document index) into sorted runs, one per (kind, partition);
//!    partition = block mod partitions.
//! 2. **resolve**, three stages (`url-title`, `docs`, `paras`), each task owning the
//!    partitions `p ≡ J (mod N)`: the stage's records are filtered by the previous
//!    stage's answers (is this key asked at all?), sorted by (key, file, index), and
//!    the first occurrence of every key not in the persisted store of earlier runs is
//!    *new*; every other ask is *seen*. The new first occurrences are written per
//!    partition (position and key).
//! 3. **filter** (task J): the files of rank `r ≡ J (mod N)` go through the stream
//!    runner itself (plan, decide, render) with a store that answers from the new
//!    keys of that file: an asked key is new the first time it is asked in the file
//!    if it is listed there, seen otherwise. So outputs equal stream mode's, byte for
//!    byte, for any task count and order.
//! 4. **publish** folds the new keys into the store directory's snapshot.
//!
//! Every task writes into a temporary directory and renames it into place, then
//! writes its completion marker: a task killed at any point is simply run again, and
//! a finished one is skipped. The work directory records its settings and refuses
//! others. Exact mode only (no `-n`, `-f`, `--url-filter`).

use crate::options::{DocCheck, Options};
use crate::plan::{ChunkPlan, DocKind, PlanCache, Planner};
use crate::report::RunStats;
use crate::runner::{
    count_skipped, open_doc_reader, rel_bytes, report_skipped, Durability, InputFile, RunConfig,
};
use crate::state::RunState;
use anyhow::{anyhow, bail, Context, Result};
use parking_lot::Mutex;
// Keys and positions are hashed millions of times per stage; SipHash's DoS
// resistance buys nothing on our own records.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use webdedup_formats::input::{ListOptions, Listing};
use webdedup_formats::read::{DocFormat, ReadSettings};
use webdedup_store::{fault, Answer, Location, MemStore, Op, Request, Store, StoreError};
use webdedup_store_spec::files::SNAPSHOT_FILE;
use webdedup_store_spec::{KeySet, OpenOptions, StoreSpec};

mod hash;
mod keep;
mod minhash;
mod records;
mod replay;
mod substr;

pub use hash::{hash, hash_keeping_plans};
use hash::{hash_dir, run_name, HashTask};
pub use keep::Keep;
pub use minhash::MinHashStage;
use records::{decode, encode, get_varint, put_varint, read_checked, Rec};
use replay::Replay;

/// The key kinds, in stage order: exact mode's three ([`EXACT_STAGES`]), or
/// substring mode's one (`windows`: its picked window keys, [`SUBSTR_STAGES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    UrlTitle = 0,
    Docs = 1,
    Paras = 2,
    Windows = 3,
}

webdedup_text::named_choices! {
    Stage, "stage", quote "", {
        UrlTitle => "url-title",
        Docs => "docs",
        Paras => "paras",
        Windows => "windows",
    }
}

/// Exact mode's resolve stages, in order.
pub const EXACT_STAGES: [Stage; 3] = [Stage::UrlTitle, Stage::Docs, Stage::Paras];
/// Substring mode's: every window a document picks is asked, whatever came before.
pub const SUBSTR_STAGES: [Stage; 1] = [Stage::Windows];

/// Hash partitions (groups of blocks) spread over the resolve tasks, unless told
/// otherwise (`--partitions`).
pub const DEFAULT_PARTITIONS: u32 = 64;

#[derive(Clone, Debug)]
pub struct BatchConfig {
    /// Files and directories (not `-`: the input is read once per phase).
    pub inputs: Vec<PathBuf>,
    pub work: PathBuf,
    pub task_count: usize,
    pub partitions: u32,
    pub blocks: u32,
    pub options: Options,
    /// How documents are read (format, fields); part of the work directory's settings.
    pub read: ReadSettings,
    pub chunk_bytes: usize,
    pub max_line_bytes: usize,
    /// MinHash mode: which copy of a near-duplicate group survives (`--keep`).
    pub keep: Keep,
}

impl BatchConfig {
    /// The resolve stages of the work directory's mode, in order (none in MinHash
    /// mode, whose stages are [`MinHashStage`]s).
    pub fn stages(&self) -> &'static [Stage] {
        match (self.options.minhash(), self.options.substr()) {
            (Some(_), _) => &[],
            (None, Some(_)) => &SUBSTR_STAGES,
            (None, None) => &EXACT_STAGES,
        }
    }

    fn settings(&self) -> String {
        // The reading settings only when not the defaults, so work directories
        // made before formats existed still match; MinHash mode likewise.
        let minhash = match self.options.minhash() {
            // `keep=` only when not stream mode's rule (older folders match).
            Some(m) => format!(
                "{} verify={}\n{}",
                m.params.describe(),
                m.verify.unwrap_or(0.0),
                match self.keep.ranks() {
                    true => format!("keep={}\n", self.keep),
                    false => String::new(),
                }
            ),
            None => String::new(),
        };
        // Likewise substring mode: K,W decide the keys; with -f the runs carry
        // each window's location.
        let substr = match self.options.substr() {
            Some(p) => format!(
                "substr={},{}\nlocations={}\n",
                p.k,
                p.w,
                self.options.feedback()
            ),
            None => String::new(),
        };
        // Hash, normalization and blocks are the store identity's (the one function
        // every store records): a work folder's keys are a store's to be.
        let identity = key_set(self).meta;
        format!(
            "webdedup-batch 2\nhash={}\nnormalization={}\nmin-para-chars={}\ndoc-check={:?}\nchunk-bytes={}\nmax-line-bytes={}\nblocks={}\npartitions={}\ntasks={}\n{}{minhash}",
            identity.hash,
            identity.normalization,
            self.options.min_para_chars,
            self.options.doc_check,
            self.chunk_bytes,
            self.max_line_bytes,
            identity.blocks,
            self.partitions,
            self.task_count,
            self.read.describe()
        ) + &substr
    }

    /// Writes the work directory's settings, or checks them against an existing one.
    pub fn prepare(&self) -> Result<()> {
        if self.task_count == 0 || self.partitions == 0 {
            bail!("--task-count and --partitions must be at least 1");
        }
        if self.options.near().is_some()
            || (self.options.feedback() && self.options.substr().is_none())
            || self.options.url_filter.is_some()
        {
            bail!("batch mode is exact, substring or MinHash mode: -n, --url-filter and -f (but with --substr) are not supported");
        }
        if self.keep.ranks() && self.options.minhash().is_none() {
            bail!("--keep {} chooses among near-duplicates: it needs --minhash (exact mode keeps the first copy)", self.keep);
        }
        std::fs::create_dir_all(&self.work)
            .with_context(|| format!("cannot create work directory {}", self.work.display()))?;
        let path = self.work.join("settings");
        let want = self.settings();
        // Concurrent first tasks may both write it: the content is the same.
        if !path.exists() {
            write_atomic(&path, want.as_bytes())?;
        }
        match std::fs::read_to_string(&path) {
            Ok(have) if have == want => Ok(()),
            Ok(have) => {
                // The refusal every store kind gives (`StoreMeta::mismatch`'s format),
                // setting by setting (`name=value` lines; other lines whole).
                let (h, w): (Vec<&str>, Vec<&str>) =
                    (have.lines().collect(), want.lines().collect());
                let diff: Vec<String> = (0..h.len().max(w.len()))
                    .map(|i| {
                        (
                            h.get(i).copied().unwrap_or(""),
                            w.get(i).copied().unwrap_or(""),
                        )
                    })
                    .filter(|(a, b)| a != b)
                    .map(|(a, b)| match (a.split_once('='), b.split_once('=')) {
                        (Some((k, a)), Some((l, b))) if k == l => {
                            webdedup_store::setting_differs(k, a, b)
                        }
                        _ => webdedup_store::setting_differs("settings line", a, b),
                    })
                    .collect();
                bail!(
                    "{}; use a new work directory",
                    webdedup_store::refusal(&path.display().to_string(), &diff)
                )
            }
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    fn listing(&self) -> Result<Listing> {
        let opts = ListOptions {
            exclude: Some(&self.work),
            stdin: false,
            dirs: true,
        };
        webdedup_formats::input::list_inputs(&self.inputs, &opts).map_err(anyhow::Error::from)
    }

    fn files(&self) -> Result<Vec<InputFile>> {
        Ok(self.listing()?.files)
    }

    fn partition(&self, key: u64) -> u32 {
        webdedup_store::block_of(key, self.blocks) % self.partitions
    }

    fn owner(&self, n: usize) -> usize {
        n % self.task_count
    }
}

/// The task count a work directory was made with (`tasks=` of `WORK/settings`), if
/// it has settings: the phases after the first need not be told it again.
pub fn recorded_task_count(work: &Path) -> Result<Option<usize>> {
    let path = work.join("settings");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    text.lines()
        .find_map(|l| l.strip_prefix("tasks="))
        .map(|n| {
            n.trim()
                .parse()
                .with_context(|| format!("{}: bad tasks= line", path.display()))
        })
        .transpose()
}

/// A temporary name beside `path`, unique to this process and call: two copies of
/// one task (a retry, a speculative copy) may run at once, and must not write into
/// each other's files.
/// Which documents a stage asked about (None: every document).
type DocFilter = Box<dyn Fn(&DocPos) -> bool>;

fn temp_name(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".tmp.{}.{n}", std::process::id()));
    PathBuf::from(name)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_name(path);
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let written = if fault::armed() && fault::disk_full("batch-write", 1) {
        // As on a full disk: half of it written, then ENOSPC.
        f.write_all(&bytes[..bytes.len() / 2]).and_then(|_| {
            Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "No space left on device",
            ))
        })
    } else {
        f.write_all(bytes).and_then(|_| f.sync_all())
    };
    let done = written
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|_| {
            std::fs::rename(&tmp, path).with_context(|| format!("cannot rename {}", tmp.display()))
        });
    if done.is_err() {
        // A failed write must not leave its half behind (a full disk stays full).
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// A staging directory of this attempt (see [`temp_name`]): removed when dropped,
/// so an attempt that fails (a full disk) leaves nothing behind; once published
/// (renamed into place) there is nothing left to remove.
struct Staging(PathBuf);

impl Staging {
    fn create(beside: &Path) -> Result<Staging> {
        let s = Staging(temp_name(beside));
        std::fs::create_dir_all(&s.0)
            .with_context(|| format!("cannot create {}", s.0.display()))?;
        Ok(s)
    }

    /// A name only, made when written into (the filter phase's runner makes it).
    fn named(beside: &Path) -> Staging {
        Staging(temp_name(beside))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `name` is a temporary name of [`temp_name`] (`NAME.tmp.PID.N`).
fn is_temp_name(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    let mut parts = name.rsplitn(4, '.');
    let digits =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next())
        && digits(parts.next())
        && parts.next() == Some("tmp")
        && parts.next().is_some()
}

/// Removes the temporary files and staging directories that attempts which died
/// (killed, or failed before this fix) left in the work directory. Only under
/// the exclusive work lock ([`lock_work`]): then no other attempt is running.
pub fn sweep_temporaries(work: &Path) -> Result<u64> {
    fn walk(dir: &Path, depth: u32, removed: &mut u64) -> Result<()> {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
        };
        for e in rd {
            let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
            let (path, is_dir) = (e.path(), e.file_type()?.is_dir());
            if is_temp_name(&e.file_name()) {
                let r = if is_dir {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                r.with_context(|| format!("cannot remove {}", path.display()))?;
                *removed += 1;
            } else if is_dir && depth > 0 {
                walk(&path, depth - 1, removed)?;
            }
        }
        Ok(())
    }
    let mut removed = 0;
    // Staging lives at most three levels down (verdicts/STAGE/task-N.tmp...).
    walk(work, 3, &mut removed)?;
    Ok(removed)
}

/// Held while a batch command uses a work directory: `batch run` alone
/// (exclusive), the phase commands together (shared: a job array's tasks, two
/// copies of one task).
#[derive(Debug)]
pub struct WorkLock(#[allow(dead_code)] Option<webdedup_store::DirLock>);

/// Name of the lock file in a work directory.
pub const WORK_LOCK_FILE: &str = "lock";

/// Takes the work directory's lock (see [`WorkLock`]), or says who holds it.
pub fn lock_work(work: &Path, exclusive: bool) -> Result<WorkLock> {
    use webdedup_store::{Busy, DirLock};
    std::fs::create_dir_all(work)
        .with_context(|| format!("cannot create work directory {}", work.display()))?;
    match DirLock::try_acquire(&work.join(WORK_LOCK_FILE), exclusive)? {
        Ok(lock) => Ok(WorkLock(lock)),
        Err(Busy::Exclusive(pid)) => bail!(
            "work folder {} is in use by another batch run{}: wait for it to end, or use another work folder",
            work.display(),
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        ),
        Err(Busy::Shared) => bail!(
            "work folder {} is in use by batch tasks (batch hash, resolve, filter or publish) running now: \
             wait for them to end, or use another work folder",
            work.display()
        ),
    }
}

/// Replaces `dir` by the contents built in `tmp` (both under the work directory).
/// If another copy of the same task put its (identical: tasks are deterministic)
/// result there first, ours is dropped.
fn publish_dir(tmp: &Path, dir: &Path) -> Result<()> {
    // Never remove a published copy: another attempt may be reading it now.
    if dir.exists() {
        let _ = std::fs::remove_dir_all(tmp);
        return Ok(());
    }
    match std::fs::rename(tmp, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.exists() => {
            let _ = std::fs::remove_dir_all(tmp);
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("cannot rename {}", tmp.display())),
    }
}

fn marker(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.done"))
}

/// A task's place in its phase's folder: `DIR/task-N`, built in a staging folder
/// and published whole, then marked done (`DIR/task-N.done`).
struct TaskDir {
    dir: PathBuf,
    name: String,
}

impl TaskDir {
    /// None when the task already finished (its marker is there): tasks are
    /// idempotent, so a rerun after a crash skips the done ones.
    fn start(dir: PathBuf, task: usize) -> Result<Option<TaskDir>> {
        std::fs::create_dir_all(&dir)?;
        let name = format!("task-{task}");
        if marker(&dir, &name).exists() {
            return Ok(None);
        }
        Ok(Some(TaskDir { dir, name }))
    }

    /// The task's folder.
    fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    fn staging(&self) -> Result<Staging> {
        Staging::create(&self.path())
    }

    /// Puts what was built in `staging` in place and marks the task done;
    /// `published` names the fault point between the two.
    fn publish(&self, staging: &Staging, published: &str) -> Result<bool> {
        publish_dir(staging.path(), &self.path())?;
        fault::hit(published);
        self.mark_done()?;
        Ok(true)
    }

    fn mark_done(&self) -> Result<()> {
        write_atomic(&marker(&self.dir, &self.name), b"")
    }
}

// ---- Resolve ---------------------------------------------------------------------

fn verdict_dir(work: &Path, stage: Stage) -> PathBuf {
    work.join("verdicts").join(stage.name())
}

fn require_markers(dir: &Path, count: usize, what: &str) -> Result<()> {
    for t in 0..count {
        if !marker(dir, &format!("task-{t}")).exists() {
            bail!(
                "{what} task {t} of {count} has not finished ({} is missing); run it first",
                marker(dir, &format!("task-{t}")).display()
            );
        }
    }
    Ok(())
}

/// One resolve stage of MinHash mode (`bands`: task `task` of the task count, in
/// parallel; `pick`: one task, task 0). Returns false if it had already finished.
/// No store of earlier runs yet: MinHash batch runs start from an empty store.
pub fn resolve_minhash(
    cfg: &BatchConfig,
    stage: MinHashStage,
    task: usize,
    store: Option<&Path>,
) -> Result<bool> {
    cfg.prepare()?;
    if cfg.options.minhash().is_none() {
        bail!(
            "--stage {} is a MinHash stage: the work directory {} is exact mode's (url-title, docs, paras)",
            stage.name(),
            cfg.work.display()
        );
    }
    if store.is_some() {
        check_store(cfg)?;
    }
    match stage {
        MinHashStage::Bands => minhash::resolve_bands(cfg, task),
        MinHashStage::Pick if task == 0 => minhash::resolve_pick(cfg),
        MinHashStage::Pick => bail!("--stage pick is one task: task 0 (this is task {task})"),
    }
}

/// The new first occurrences of a stage, all partitions: per file rank, the
/// positions (seq) and the keys.
fn read_new(cfg: &BatchConfig, stage: Stage) -> Result<Vec<Rec>> {
    let dir = verdict_dir(&cfg.work, stage);
    require_markers(
        &dir,
        cfg.task_count,
        &format!("resolve --stage {}", stage.name()),
    )?;
    let mut all = Vec::new();
    for p in 0..cfg.partitions {
        let owner = cfg.owner(p as usize);
        decode(
            &dir.join(format!("task-{owner}")).join(format!("new-{p}")),
            &mut all,
        )?;
    }
    Ok(all)
}

fn key_set(cfg: &BatchConfig) -> KeySet {
    crate::identity::key_set(&cfg.options, cfg.blocks)
}

/// Whether the work directory's mode takes a store of earlier runs (`--store`):
/// checked by resolve and publish; `batch run` checks it before its first phase.
pub fn check_store(cfg: &BatchConfig) -> Result<()> {
    if cfg.options.minhash().is_some() {
        bail!("MinHash batch mode does not read a store of earlier runs yet (--store)");
    }
    substr::refuse_located_store(cfg)
}

/// The store directory `store` of earlier runs, if it holds a snapshot.
fn load_store(cfg: &BatchConfig, store: Option<&Path>) -> Result<Option<MemStore>> {
    let Some(dir) = store else { return Ok(None) };
    check_store(cfg)?;
    let opened = StoreSpec::Dir(dir.to_owned()).open(&key_set(cfg), &OpenOptions::default())?;
    match opened.loaded {
        Some(_) => Ok(Some(opened.into_embedded()?)),
        None => Ok(None),
    }
}

/// A document: (file rank, document index).
type DocPos = (u32, u32);

/// The documents that ask their document key with `--doc-check url-title`: those
/// whose URL+title was asked before (every URL+title key is asked, and all but the
/// new first occurrences are seen), and those without a URL+title key (the
/// shortcut does not apply to them).
fn doc_key_askers(cfg: &BatchConfig) -> Result<impl Fn(&DocPos) -> bool + Send + 'static> {
    let (with, repeated) = url_title_repeats(cfg)?;
    Ok(move |doc: &DocPos| repeated.contains(doc) || !with.contains(doc))
}

/// The documents (file rank, document index) that have a URL+title key, and those
/// whose URL+title key was asked before.
fn url_title_repeats(cfg: &BatchConfig) -> Result<(HashSet<DocPos>, HashSet<DocPos>)> {
    let new: HashSet<(u32, u32)> = read_new(cfg, Stage::UrlTitle)?
        .iter()
        .map(|r| (r.file, r.seq))
        .collect();
    let mut all = Vec::new();
    for t in 0..cfg.task_count {
        for p in 0..cfg.partitions {
            let run = hash_dir(&cfg.work)
                .join(format!("task-{t}"))
                .join(run_name(Stage::UrlTitle, p));
            decode(&run, &mut all)?;
        }
    }
    let with = all.iter().map(|r| (r.file, r.seq)).collect();
    let repeated = all
        .iter()
        .map(|r| (r.file, r.seq))
        .filter(|pos| !new.contains(pos))
        .collect();
    Ok((with, repeated))
}

/// One resolve stage for one task; returns false if it had already finished.
pub fn resolve(cfg: &BatchConfig, stage: Stage, task: usize, store: Option<&Path>) -> Result<bool> {
    cfg.prepare()?;
    if cfg.options.minhash().is_some() {
        bail!(
            "{} is a MinHash work directory: its resolve stages are `bands`, then `pick`",
            cfg.work.display()
        );
    }
    if !cfg.stages().contains(&stage) {
        let names: Vec<&str> = cfg.stages().iter().map(|s| s.name()).collect();
        bail!(
            "--stage {} is not a stage of the work directory {} (its stages: {})",
            stage.name(),
            cfg.work.display(),
            names.join(", ")
        );
    }
    require_markers(&hash_dir(&cfg.work), cfg.task_count, "hash")?;
    let Some(out) = TaskDir::start(verdict_dir(&cfg.work, stage), task)? else {
        return Ok(false);
    };
    // Which records of this stage are asked at all, from the previous stages.
    let asked: Box<dyn Fn(&Rec) -> bool> = match stage {
        Stage::UrlTitle | Stage::Windows => Box::new(|_| true),
        Stage::Docs if cfg.options.doc_check == DocCheck::All => Box::new(|_| true),
        // Paragraphs only: the hash phase wrote no document records; none is asked.
        Stage::Docs if cfg.options.doc_check == DocCheck::None => Box::new(|_| false),
        Stage::Docs => {
            // Only documents whose URL+title repeated (or that have none).
            let asks = doc_key_askers(cfg)?;
            Box::new(move |r: &Rec| asks(&(r.file, r.doc)))
        }
        Stage::Paras => {
            // Documents not dropped whole: the document key was not asked, or new.
            let new: HashSet<(u32, u32)> = read_new(cfg, Stage::Docs)?
                .iter()
                .map(|r| (r.file, r.seq))
                .collect();
            let asked_docs: Option<DocFilter> = match cfg.options.doc_check {
                DocCheck::All => None,
                DocCheck::UrlTitle => Some(Box::new(doc_key_askers(cfg)?)),
                DocCheck::None => Some(Box::new(|_: &DocPos| false)),
            };
            Box::new(move |r: &Rec| {
                let doc = (r.file, r.doc);
                let doc_asked = asked_docs.as_ref().is_none_or(|a| a(&doc));
                !doc_asked || new.contains(&doc)
            })
        }
    };
    let old = load_store(cfg, store)?;
    let staging = out.staging()?;
    let tmp = staging.path();
    let mut recs = Vec::new();
    for p in (0..cfg.partitions).filter(|p| cfg.owner(*p as usize) == task) {
        recs.clear();
        for t in 0..cfg.task_count {
            decode(
                &hash_dir(&cfg.work)
                    .join(format!("task-{t}"))
                    .join(run_name(stage, p)),
                &mut recs,
            )?;
        }
        recs.retain(|r| asked(r));
        recs.sort_unstable();
        let mut new = Vec::new();
        let mut firsts = substr::Originals::new(cfg, stage);
        let mut i = 0;
        while i < recs.len() {
            let key = recs[i].key;
            let end = i + recs[i..].partition_point(|r| r.key == key);
            // Sorted by (key, file, seq): the first of a run of equal keys is the
            // first occurrence in canonical order.
            if !old.as_ref().is_some_and(|s| s.contains(key)) {
                // Readers of new first occurrences use (file, seq) and the key;
                // a paragraph's (a window's) document would only cost bits.
                let doc = match stage {
                    Stage::Paras | Stage::Windows => 0,
                    _ => recs[i].doc,
                };
                new.push(Rec { doc, ..recs[i] });
                if let Some(f) = &mut firsts {
                    f.add(cfg, &recs[i..end]);
                }
            }
            i = end;
        }
        write_atomic(&tmp.join(format!("new-{p}")), &encode(&new))?;
        if let Some(f) = &firsts {
            f.write(tmp, p)?;
        }
        fault::hit("batch-resolve-partition");
    }
    out.publish(&staging, "batch-resolve-published")
}

// ---- Filter ----------------------------------------------------------------------

/// The filter phase for one task: writes the outputs of its files into `output`
/// (as `webdedup dedup` names them). A finished task is skipped.
pub fn filter(
    cfg: &BatchConfig,
    run: &RunConfig,
    task: usize,
    report: &(dyn Fn(&str) + Sync),
) -> Result<Option<RunStats>> {
    filter_with_plans(cfg, run, task, report, None)
}

/// [`filter`] using the plans a [`hash_keeping_plans`] kept, where they match the
/// chunks read (the others are planned as usual).
pub fn filter_with_plans(
    cfg: &BatchConfig,
    run: &RunConfig,
    task: usize,
    report: &(dyn Fn(&str) + Sync),
    plans: Option<&PlanCache>,
) -> Result<Option<RunStats>> {
    cfg.prepare()?;
    // Plans made for another `--mark` lack (or carry needlessly) its characters.
    let plans = plans.filter(|c| c.marks() == run.mark);
    let Some(done) = TaskDir::start(cfg.work.join("filter"), task)? else {
        return Ok(None);
    };
    let listing = cfg.listing()?;
    report_skipped(&listing, report);
    let files = listing.files.clone();
    let mine: HashSet<u32> = (0..files.len() as u32)
        .filter(|r| cfg.owner(*r as usize) == task)
        .collect();
    let stream_of: HashMap<u32, u64> = files
        .iter()
        .enumerate()
        .map(|(r, f)| {
            (
                r as u32,
                crate::policy::chunk_identity(rel_bytes(&f.rel), 0).stream,
            )
        })
        .collect();
    let mut staged = run.clone();
    let mut new: HashMap<u64, HashSet<u64>> = HashMap::default();
    let mut state = RunState::new(&staged.options);
    if staged.options.minhash().is_some() {
        state = state.with_decided(minhash::decided(cfg, &files, &mine)?);
    }
    for &stage in cfg.stages() {
        for r in read_new(cfg, stage)? {
            if mine.contains(&r.file) {
                new.entry(stream_of[&r.file]).or_default().insert(r.key);
            }
        }
    }
    let originals = match cfg.options.feedback() {
        true => substr::originals(cfg, task, &files)?,
        false => HashMap::default(),
    };
    let store = Replay {
        new: Mutex::new(new),
        originals,
    };
    let selected: Vec<InputFile> = files
        .into_iter()
        .enumerate()
        .filter(|(r, _)| mine.contains(&(*r as u32)))
        .map(|(_, f)| f)
        .collect();
    let dur = Durability {
        journal: None,
        recorded: None,
        skip_finished: false,
        finished: None,
        stop: None,
        plans,
    };
    // Outputs are made in a staging directory of this attempt, then moved into
    // place file by file: two copies of one task may run at once.
    let staging = Staging::named(&done.path());
    let staging = staging.path();
    staged.output = staging.to_owned();
    let mut stats = crate::runner::run_files(&staged, selected, &store, &state, &dur, report)?;
    count_skipped(&listing, &mut stats);
    fault::hit("batch-filter-written");
    if cfg.options.minhash().is_some() || cfg.options.feedback() {
        // The runner indexed this task's files; MinHash and feedback mode's index
        // (as stream mode's) names every input file. Every task writes the same one, in its
        // own staging directory: tasks running at once never share a temporary
        // file, and each moves a whole index into place.
        crate::runner::write_files_index(staging, &listing.files)?;
    }
    move_tree(staging, &run.output)?;
    done.mark_done()?;
    Ok(Some(stats))
}

/// Moves every file under `from` to the same relative path under `to` (rename, or
/// copy and rename when they are on different file systems).
fn move_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for e in std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            std::fs::create_dir_all(&dst)
                .with_context(|| format!("cannot create {}", dst.display()))?;
            move_tree(&src, &dst)?;
        } else if std::fs::rename(&src, &dst).is_err() {
            let tmp = temp_name(&dst);
            std::fs::copy(&src, &tmp)
                .with_context(|| format!("cannot copy to {}", tmp.display()))?;
            std::fs::rename(&tmp, &dst)
                .with_context(|| format!("cannot rename {}", tmp.display()))?;
        }
    }
    Ok(())
}

// ---- Publish ---------------------------------------------------------------------

/// Folds the run's new keys into `store` (loading its snapshot if there is one) and
/// saves it. Idempotent: the keys are a set.
pub fn publish(cfg: &BatchConfig, store: &Path) -> Result<u64> {
    cfg.prepare()?;
    if cfg.options.minhash().is_some() {
        bail!("MinHash batch mode does not publish into a store yet (--store)");
    }
    substr::refuse_located_store(cfg)?;
    let key_set = key_set(cfg);
    let mem = StoreSpec::Dir(store.to_owned())
        .open(&key_set, &OpenOptions::default())?
        .into_embedded()?;
    let mut keys = Vec::new();
    for &stage in cfg.stages() {
        keys.extend(read_new(cfg, stage)?.into_iter().map(|r| r.key));
    }
    mem.insert_all(&keys);
    std::fs::create_dir_all(store)?;
    mem.save(&store.join(SNAPSHOT_FILE), &key_set.meta)?;
    Ok(mem.len())
}

/// Bytes of the work directory's files (runs, verdicts, markers).
pub fn work_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            total += if p.is_dir() {
                work_bytes(&p)
            } else {
                e.metadata().map_or(0, |m| m.len())
            };
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::run;
    use proptest::prelude::*;

    fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(tree(&p));
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().to_owned(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
        out.sort();
        out
    }

    /// A vertical document titled `t` at `url`: its paragraphs one word a line.
    fn vertical_doc(url: &str, paras: &[Vec<impl AsRef<str>>]) -> String {
        let mut text = format!("<doc url=\"{url}\" title=\"t\">\n");
        for words in paras {
            text += "<p>\n";
            for w in words {
                text += w.as_ref();
                text += "\n";
            }
            text += "</p>\n";
        }
        text + "</doc>\n"
    }

    /// A stream-mode run and the batch setup of the same input, for the
    /// proptests that compare the two.
    struct Both {
        tmp: tempfile::TempDir,
        stream: RunConfig,
        batch: BatchConfig,
        /// The order the tasks run in.
        order: Vec<usize>,
    }

    impl Both {
        /// Writes `texts` as vertical files, runs stream mode over them, and sets
        /// up batch mode in `tasks` tasks, run in an order rotated by `rotate`.
        fn new(
            texts: impl Iterator<Item = String>,
            options: Options,
            tasks: usize,
            rotate: usize,
            chunk: usize,
        ) -> Both {
            let tmp = tempfile::tempdir().unwrap();
            let input = tmp.path().join("in");
            std::fs::create_dir_all(&input).unwrap();
            for (i, text) in texts.enumerate() {
                std::fs::write(input.join(format!("f{i}.vert")), text).unwrap();
            }
            let mut stream = RunConfig::new(&input, tmp.path().join("stream"));
            stream.options = options.clone();
            stream.dd = true;
            stream.chunk_bytes = chunk;
            run(&stream, &MemStore::new(13), &|_| {}).unwrap();
            let batch = BatchConfig {
                inputs: vec![input],
                work: tmp.path().join("work"),
                task_count: tasks,
                partitions: 3,
                blocks: 13,
                options,
                read: Default::default(),
                chunk_bytes: chunk,
                max_line_bytes: 1 << 20,
                keep: Default::default(),
            };
            let order = (0..tasks).map(|t| (t + rotate) % tasks).collect();
            Both {
                tmp,
                stream,
                batch,
                order,
            }
        }

        /// Runs every task's filter phase: whether batch mode wrote what stream
        /// mode wrote.
        fn filtered_as_stream(&self) -> bool {
            let mut run = self.stream.clone();
            run.output = self.tmp.path().join("batch");
            for &t in &self.order {
                filter(&self.batch, &run, t, &|_| {}).unwrap();
            }
            tree(&self.stream.output) == tree(&run.output)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Sorted runs round-trip (repeated keys, documents apart from positions,
        /// extreme values), and any damage is an error, never a panic.
        #[test]
        fn record_runs_round_trip(
            raw in proptest::collection::vec((any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<bool>()), 0..60),
            same_doc in any::<bool>(),
            flip in (any::<usize>(), 1u8..=255),
        ) {
            let mut recs: Vec<Rec> = raw
                .iter()
                .map(|&(key, file, seq, doc, small)| {
                    let key = if small { key % 8 } else { key };
                    Rec { key, file, seq, doc: if same_doc { seq } else { doc } }
                })
                .collect();
            recs.sort_unstable();
            let tmp = tempfile::tempdir().unwrap();
            let p = tmp.path().join("r");
            let bytes = encode(&recs);
            std::fs::write(&p, &bytes).unwrap();
            let mut back = Vec::new();
            decode(&p, &mut back).unwrap();
            prop_assert_eq!(&back, &recs);
            let mut damaged = bytes.clone();
            let at = flip.0 % damaged.len();
            damaged[at] ^= flip.1;
            std::fs::write(&p, &damaged).unwrap();
            prop_assert!(decode(&p, &mut Vec::new()).is_err());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Random small corpora (few words, so many exact repeats of paragraphs,
        /// documents and URLs): batch phases in any task count and order write what
        /// stream mode writes.
        #[test]
        fn batch_phases_equal_stream_mode(
            files in proptest::collection::vec(
                proptest::collection::vec((0u8..4, proptest::collection::vec((0u8..5, 1usize..4), 0..4)), 0..6),
                1..4,
            ),
            tasks in 1usize..5,
            rotate in 0usize..5,
            doc_check in prop_oneof![Just(DocCheck::All), Just(DocCheck::UrlTitle), Just(DocCheck::None)],
            chunk in prop_oneof![Just(1usize), Just(1 << 20)],
        ) {
            let words = ["alpha", "beta", "gamma", "delta", "epsilon"];
            let texts = files.iter().map(|docs| {
                docs.iter()
                    .map(|(url, paras)| {
                        let paras: Vec<Vec<&str>> =
                            paras.iter().map(|&(w, n)| vec![words[w as usize]; n * 4]).collect();
                        vertical_doc(&format!("u{url}"), &paras)
                    })
                    .collect::<String>()
            });
            let options = Options {
                min_para_chars: 20,
                doc_check,
                ..Options::default()
            };
            let both = Both::new(texts, options, tasks, rotate, chunk);
            for &t in &both.order {
                hash(&both.batch, t, &|_| {}).unwrap();
            }
            for stage in EXACT_STAGES {
                for &t in both.order.iter().rev() {
                    resolve(&both.batch, stage, t, None).unwrap();
                }
            }
            prop_assert!(both.filtered_as_stream());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Random small corpora of few words (spans repeated across files, across
        /// documents and inside one document): substring mode's batch phases in
        /// any task count and order write what `dedup --substr` writes, with and
        /// without `-f` (its `.spans` report naming first copies).
        #[test]
        fn substr_batch_phases_equal_stream_mode(
            files in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 0..3), 0..4),
                1..4,
            ),
            tasks in 1usize..5,
            rotate in 0usize..5,
            (k, w) in (1usize..5).prop_flat_map(|k| (Just(k), 1..=k)),
            feedback in any::<bool>(),
            chunk in prop_oneof![Just(1usize), Just(1 << 20)],
        ) {
            let words = ["alpha", "beta", "gamma", "delta"];
            let texts = files.iter().map(|docs| {
                docs.iter()
                    .map(|paras| {
                        let paras: Vec<Vec<&str>> = paras
                            .iter()
                            .map(|p| p.iter().map(|&i| words[i as usize]).collect())
                            .collect();
                        vertical_doc("u", &paras)
                    })
                    .collect::<String>()
            });
            let params = crate::options::SubstrParams::new(k, w).unwrap();
            let options = Options {
                mode: crate::options::Mode::Substr { params, feedback },
                ..Options::default()
            };
            let both = Both::new(texts, options, tasks, rotate, chunk);
            for &t in &both.order {
                hash(&both.batch, t, &|_| {}).unwrap();
            }
            for &t in both.order.iter().rev() {
                resolve(&both.batch, Stage::Windows, t, None).unwrap();
            }
            prop_assert!(both.filtered_as_stream());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Random corpora of near-duplicates (variants of a few texts, few words,
        /// loose bands so that documents share bands with several kept ones, and
        /// verification that fails for some): MinHash batch phases in any task
        /// count and order write what `webdedup minhash`'s stream mode writes.
        #[test]
        fn minhash_batch_phases_equal_stream_mode(
            files in proptest::collection::vec(
                proptest::collection::vec((0usize..3, proptest::collection::vec((0usize..30, 0usize..8), 0..4)), 0..8),
                1..4,
            ),
            tasks in 1usize..5,
            rotate in 0usize..5,
            verify in prop_oneof![Just(None), Just(Some(0.5)), Just(Some(0.9))],
            chunk in prop_oneof![Just(1usize), Just(1 << 20)],
        ) {
            let bases: Vec<Vec<String>> = (0..3)
                .map(|b| (0..30).map(|i| format!("w{}", (i * 7 + b * 3) % 23)).collect())
                .collect();
            let texts = files.iter().map(|docs| {
                docs.iter()
                    .map(|(base, edits)| {
                        let mut words = bases[*base].clone();
                        for &(at, w) in edits {
                            words[at] = format!("e{w}");
                        }
                        vertical_doc("u", &[words])
                    })
                    .collect::<String>()
            });
            let params = webdedup_minhash::Params {
                shingling: "words:2".parse().unwrap(),
                hashes: 16,
                bands: 8,
                rows: 2,
                ..Default::default()
            };
            let options = Options::for_minhash(crate::options::MinHashOptions { params, verify });
            let both = Both::new(texts, options, tasks, rotate, chunk);
            for &t in &both.order {
                hash(&both.batch, t, &|_| {}).unwrap();
            }
            for &t in both.order.iter().rev() {
                resolve_minhash(&both.batch, MinHashStage::Bands, t, None).unwrap();
            }
            resolve_minhash(&both.batch, MinHashStage::Pick, 0, None).unwrap();
            prop_assert!(both.filtered_as_stream());
        }
    }

    #[test]
    fn records_round_trip_and_damage_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("r");
        for recs in [
            vec![],
            vec![Rec {
                key: 0,
                file: 0,
                seq: 0,
                doc: 0,
            }],
        ] {
            std::fs::write(&p, encode(&recs)).unwrap();
            let mut back = Vec::new();
            decode(&p, &mut back).unwrap();
            assert_eq!(back, recs);
        }
        let recs = vec![
            Rec {
                key: 1,
                file: 0,
                seq: 3,
                doc: 1,
            },
            Rec {
                key: u64::MAX,
                file: 7,
                seq: 0,
                doc: 0,
            },
        ];
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("r");
        std::fs::write(&p, encode(&recs)).unwrap();
        let mut back = Vec::new();
        decode(&p, &mut back).unwrap();
        assert_eq!(back, recs);
        let mut bytes = encode(&recs);
        bytes[2] ^= 1;
        std::fs::write(&p, bytes).unwrap();
        assert!(decode(&p, &mut Vec::new())
            .unwrap_err()
            .to_string()
            .contains("checksum"));
    }
}
