//! Runs that outlive the process: a store kept between runs (`--store DIR`), a
//! journal of every chunk's new keys and verdicts, and `--restore` after a crash.
//!
//! State lives in the store directory (`store.snap`, `journal`; feedback mode
//! after a stop by signal: `store.locations`) or, without
//! `--store`, in the output directory (`.webdedup.journal`; the store is then
//! rebuilt from the journal alone). The protocol (docs/dev/design.md has the why):
//!
//! 1. Start: load the snapshot; replay the journal on top (its keys into the store,
//!    its decision records into memory); with `--restore`, also read the
//!    `REL.dedup.log` of every unfinished output. Without `--restore`, leftover
//!    state of an interrupted run is an error (finishing it differently would
//!    turn its own text into duplicates). A new journal begins with a start record
//!    (`resume::RunStart`): with it and the finish marks, a restore decides for
//!    each output it finds whether it is the run's (skipped; MinHash: decided again,
//!    not written), an earlier run's (written again), or one whose records the
//!    journal lost (refused). One rule for every mode: a restore never writes a
//!    finished output again.
//! 2. Run: each chunk's new keys and verdicts are journaled in input order before
//!    its output is written; the journal is synced before an output is renamed into
//!    place. A chunk with recorded verdicts uses them instead of asking the store.
//! 3. End: save the snapshot, then remove the journal.
//!    Stopped by a signal: write the decision records of each unfinished output to
//!    its `REL.dedup.log`, save the snapshot, remove the journal.

use crate::policy::minhash::KeptFile;
use crate::resume::{is_bookkeeping, replay_keys, Finished, Recorded, RunStart};
use crate::runner::{
    list_inputs, log_path, on_finished, rel_bytes, run_listed, Durability, InputFile,
};
use crate::state::RunState;
use crate::{RunConfig, RunStats};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use webdedup_formats::chunk::ChunkReader;
use webdedup_formats::open_input;
use webdedup_store::journal::remove_durably;
use webdedup_store::{fault, DirLock, Journal, MemStore, Store, StoreError, StoreMeta, SyncMode};

// The store directory's files and a run's own state files: named in one place.
use webdedup_store_spec::files::{
    JOURNAL_FILE, LOCATIONS_FILE, LOCK_FILE, MINHASH_KEPT_FILE, OUTPUT_JOURNAL_FILE,
    OUTPUT_LOCK_FILE, SNAPSHOT_FILE,
};
use webdedup_store_spec::{OpenOptions, StoreSpec};

#[derive(Clone, Debug)]
pub struct Persistence {
    /// Keep the store here between runs (`store.snap` + `journal`).
    pub store_dir: Option<PathBuf>,
    /// Finish an interrupted run: skip finished outputs, reuse recorded decisions.
    pub restore: bool,
    pub fsync: SyncMode,
    pub blocks: u32,
    /// Preallocate for about this many keys (beyond those loaded).
    pub capacity: usize,
}

/// What happened to the persistent state, for the summary.
#[derive(Debug, Default)]
pub struct PersistReport {
    pub loaded_keys: u64,
    pub load_seconds: f64,
    pub journal_records_replayed: u64,
    pub recorded_chunks: usize,
    pub saved: Option<webdedup_store::SnapshotInfo>,
    pub logs_written: usize,
}

/// The settings a resumed run must share with the interrupted one, one `name=value`
/// a line.
fn run_info(cfg: &RunConfig) -> Result<String> {
    let canon = |p: &Path| {
        std::fs::canonicalize(p).with_context(|| format!("cannot resolve {}", p.display()))
    };
    let inputs = cfg
        .inputs
        .iter()
        .map(|i| {
            if i.as_os_str() == webdedup_formats::input::STDIN_ARG {
                Ok(i.display().to_string())
            } else {
                canon(i).map(|p| p.display().to_string())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let mut info = format!(
        "input={}\noutput={}\nmin-para-chars={}\ndoc-check={:?}\nchunk-bytes={}\nmax-line-bytes={}\ndd={}\ncompress={}\n",
        inputs.join(" "),
        canon(&cfg.output)?.display(),
        cfg.options.min_para_chars,
        cfg.options.doc_check,
        cfg.chunk_bytes,
        cfg.max_line_bytes,
        cfg.dd,
        if cfg.compress_auto {
            format!("auto{}", cfg.compress.suffix())
        } else {
            cfg.compress.suffix().to_string()
        },
    );
    // Written only when not the defaults (verticals, sniffed), like the lines below.
    info.push_str(&cfg.read.describe());
    // Written only when set, so journals of runs without them still match.
    if let Some(n) = cfg.options.near() {
        info.push_str(&format!(
            "near=ngram {} threshold {} smooth {} max-stub {}\n",
            n.ngram, n.threshold, n.smooth, n.max_stub
        ));
        // Only when not the default, so journals of earlier runs still match.
        if n.rules != crate::NearRules::Webdedup {
            info.push_str(&format!("near-rules={}\n", n.rules.name()));
        }
    }
    if let Some(f) = &cfg.options.url_filter {
        info.push_str(&format!("url-filter-rules={}\n", f.len()));
    }
    if cfg.options.feedback() {
        info.push_str("feedback=true\n");
    }
    if let Some(m) = cfg.options.minhash() {
        info.push_str(&format!(
            "minhash={} verify={}\n",
            m.params.describe(),
            m.verify.map_or("off".to_string(), |j| j.to_string())
        ));
    }
    Ok(info)
}

/// "name 'a' in the interrupted run, 'b' now" for every differing line.
fn run_info_mismatch(recorded: &str, now: &str) -> Option<String> {
    let map = |s: &str| -> BTreeMap<String, String> {
        s.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let (a, b) = (map(recorded), map(now));
    let diffs: Vec<String> = a
        .keys()
        .chain(b.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            format!(
                "{k} '{}' in the interrupted run, '{}' now",
                a.get(k).map_or("", |s| s),
                b.get(k).map_or("", |s| s)
            )
        })
        .collect();
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

/// The number of chunks the runner cuts the input file at `path` into.
fn count_chunks(cfg: &RunConfig, path: &Path) -> Result<u64> {
    let (reader, _) =
        open_input(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut chunks = ChunkReader::with_sizes(reader, cfg.chunk_bytes, cfg.max_line_bytes);
    let mut n = 0;
    while chunks.next_chunk().is_some() {
        n += 1;
    }
    Ok(n)
}

/// A new journal for this run, with its start record (see `resume`): the inputs
/// whose output exists now are an earlier run's (a fresh run writes them again) or,
/// for a restore that found no journal, finished with their keys in the snapshot.
fn create_journal(
    cfg: &RunConfig,
    p: &Persistence,
    files: &[InputFile],
    path: &Path,
    meta: &StoreMeta,
    info: &str,
    base: u64,
) -> Result<Journal> {
    if let (Some(path), false) = (locations_file(cfg, p), p.restore || keeps_locations(cfg)) {
        // An earlier run's: before the journal, so that no restore of this run
        // finds it.
        if path.exists() {
            remove_durably(&path)?;
        }
    }
    let start = RunStart {
        by_restore: p.restore,
        base,
        outputs: files
            .iter()
            .filter(|f| cfg.output_candidates(&f.rel).iter().any(|o| o.exists()))
            .map(|f| rel_bytes(&f.rel).to_vec())
            .collect(),
    };
    Ok(Journal::create_with(
        path,
        meta,
        info.as_bytes(),
        &[(&start.encode(), &[])],
        p.fsync,
    )?)
}

/// Whether the interrupted MinHash run whose journal is `recorded` saved its side
/// store (it had finished every output): the side store is not the one it started
/// from (`base` now, `kept` as loaded). Journals before issue 27 name the run by a
/// nonce that the side store it saved carries too.
fn saved_side_store(recorded: &Recorded, base: u64, kept: Option<KeptFile>) -> bool {
    match (&recorded.start, recorded.nonce) {
        (Some(start), _) => start.base != base,
        (None, Some(nonce)) => kept.and_then(|k| k.nonce) == Some(nonce),
        (None, None) => false,
    }
}

/// What a restore does with each input whose output exists ([`RunStart::finished`]),
/// and the finish mark the journal's torn last record was, if it was one (to be
/// written again). An output whose records the journal lost is an error saying what
/// to do.
#[allow(clippy::type_complexity)]
fn plan_finished(
    cfg: &RunConfig,
    p: &Persistence,
    files: &[InputFile],
    recorded: &Recorded,
    replay: &webdedup_store::journal::JournalReplay,
    journal: &Path,
) -> Result<(HashMap<Vec<u8>, Finished>, Option<(Vec<u8>, u64)>)> {
    // No start record: cut short to its header, or a journal of a webdedup before
    // start records, which lists nothing.
    let start = recorded.start.clone().unwrap_or_default();
    let rerun = cfg.options.minhash().is_some();
    let mut plan = HashMap::new();
    let mut torn_mark = None;
    for f in files {
        let outs = cfg.output_candidates(&f.rel);
        let Some(out) = outs.iter().find(|o| o.exists()) else {
            continue;
        };
        let rel = rel_bytes(&f.rel);
        let mut marked = recorded.finished.contains(rel);
        // The journal ends with the record of the file's last chunk and a torn
        // record: that was its finish mark (the output is complete), nothing is lost.
        if let (false, Some(_), Some((last, Some(chunk)))) = (marked, &replay.torn, &recorded.last)
        {
            if last.as_slice() == rel && count_chunks(cfg, &f.path).ok() == Some(chunk + 1) {
                marked = true;
                torn_mark = Some((rel.to_vec(), chunk + 1));
            }
        }
        match start.finished(rel, marked, rerun) {
            Some(what) => {
                plan.insert(rel.to_vec(), what);
            }
            None => {
                let ends = match &recorded.last {
                    Some((last, Some(chunk))) if last.as_slice() == rel => {
                        format!(" (it ends with the record of its chunk {chunk})")
                    }
                    _ => String::new(),
                };
                bail!(
                    "{}: the output {} of {} is finished, but the journal holds no finish mark \
                     for it{ends}: the journal was cut short after that output was written (or \
                     was written by an older webdedup: finish the restore with that version), so \
                     keys that output and the later ones depend on may be lost. Nothing was \
                     changed. {}",
                    journal.display(),
                    out.display(),
                    f.rel.display(),
                    start_over(cfg, p, journal)
                );
            }
        }
    }
    Ok((plan, torn_mark))
}

/// What to do when the journal cannot be restored exactly (for error messages).
fn start_over(cfg: &RunConfig, p: &Persistence, journal: &Path) -> String {
    match &p.store_dir {
        Some(dir) => format!(
            "To start the run over (keep a copy of the journal to inspect): remove {} and {}, \
             and run the command again without --restore. The store is then its snapshot, as it \
             was before this run unless the run was stopped by a signal and restored since (then \
             put back a copy of {} from before the run, or use a new store directory).",
            journal.display(),
            cfg.output.display(),
            dir.display(),
        ),
        None => format!(
            "To start the run over: remove {} (it holds the journal) and run the command again \
             without --restore.",
            cfg.output.display()
        ),
    }
}

/// Feedback mode with a store directory: the locations file a restore loads.
///
/// The journal carries the locations of the keys it adds; a run stopped by a
/// signal saves its keys in the snapshot and removes the journal, so it saves
/// their locations beside it, and its restore loads them. Any other run starts
/// without the file (a fresh run removes it before its journal begins, a finished
/// run when it saves the snapshot): the locations of keys from before a run are
/// unknown to it, interrupted or not, so a restore names the same originals.
fn locations_file(cfg: &RunConfig, p: &Persistence) -> Option<PathBuf> {
    let dir = p.store_dir.as_ref()?;
    (cfg.options.feedback() && cfg.options.minhash().is_none()).then(|| dir.join(LOCATIONS_FILE))
}

/// Substring mode's feedback keeps the locations file beside the snapshot after
/// every run (saved when it finishes, loaded when the next starts): its report
/// names first copies in earlier crawls, which is what it is for.
fn keeps_locations(cfg: &RunConfig) -> bool {
    cfg.options.feedback() && cfg.options.substr().is_some()
}

/// Loads the locations file `path` (if any) into `store`, which holds the
/// snapshot it was saved with: locations of keys the snapshot lacks mean they do
/// not belong together.
fn load_locations(store: &MemStore, path: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let before = store.len();
    webdedup_store::locations::load(store, path)?;
    if store.len() != before {
        bail!(
            "{}: holds the locations of {} keys the snapshot beside it does not hold: it \
             belongs to another snapshot. Nothing was changed.",
            path.display(),
            store.len() - before
        );
    }
    Ok(())
}

/// Runs `cfg` with a persistent store and crash-safe resume (see the module docs),
/// with `state` made for it ([`RunState::new`]).
pub fn run_persistent(
    cfg: &RunConfig,
    p: &Persistence,
    state: &RunState,
    stop: Option<&AtomicBool>,
    report: &(dyn Fn(&str) + Sync),
) -> Result<(RunStats, PersistReport)> {
    let mut rep = PersistReport::default();
    let listing = list_inputs(&cfg.inputs, &cfg.output)?;
    let files = &listing.files;
    std::fs::create_dir_all(&cfg.output)
        .with_context(|| format!("cannot create output directory {}", cfg.output.display()))?;
    let keys = crate::identity::key_set(&cfg.options, p.blocks);
    let meta = keys.meta.clone();
    let info = run_info(cfg)?;
    let (snapshot, journal_path, lock) = match &p.store_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create store directory {}", dir.display()))?;
            (
                Some(dir.join(SNAPSHOT_FILE)),
                dir.join(JOURNAL_FILE),
                DirLock::acquire(&dir.join(LOCK_FILE))?,
            )
        }
        None => (
            None,
            cfg.output.join(OUTPUT_JOURNAL_FILE),
            DirLock::acquire(&cfg.output.join(OUTPUT_LOCK_FILE))?,
        ),
    };

    // MinHash mode: the side store of kept documents (names, signatures, band keys)
    // is saved beside the snapshot and is what the store is rebuilt from, with each
    // key's first location (see `policy::minhash`).
    let minhash = cfg.options.minhash().zip(state.kept.as_ref());
    if let Some((_, kept)) = minhash {
        // The embedded store is this process's own: it locates keys by the kept
        // documents' ordinals in the side store.
        kept.set_local();
    }
    let kept_path = p
        .store_dir
        .as_ref()
        .filter(|_| minhash.is_some())
        .map(|d| d.join(MINHASH_KEPT_FILE));
    let mut kept_file = None;

    // 1. Load the snapshot, replay the journal.
    let store = match &snapshot {
        Some(_) if kept_path.as_ref().is_some_and(|k| k.exists()) => {
            let ((m, kept), k) = (
                minhash.expect("checked"),
                kept_path.as_ref().expect("checked"),
            );
            let started = std::time::Instant::now();
            let s = MemStore::with_capacity(p.blocks, p.capacity);
            kept.set_persistent();
            if let Some(dir) = &p.store_dir {
                kept.set_dir(dir);
            }
            kept_file = Some(
                kept.load_file(k, &m.params.describe(), &s)
                    .map_err(|e| anyhow!(e))?,
            );
            rep.loaded_keys = s.len();
            rep.load_seconds = started.elapsed().as_secs_f64();
            s
        }
        _ => {
            let spec = StoreSpec::embedded(p.store_dir.as_deref());
            // MinHash without a store directory keeps its keys in the band table
            // below: this one stays empty.
            let room = !(minhash.is_some() && p.store_dir.is_none());
            let opts = OpenOptions {
                capacity: room.then_some(p.capacity as u64),
                ..Default::default()
            };
            let opened = spec.open(&keys, &opts)?;
            if let Some(i) = &opened.loaded {
                rep.loaded_keys = i.keys;
                rep.load_seconds = i.seconds;
            }
            opened.into_embedded()?
        }
    };
    let locations = locations_file(cfg, p);
    if let (Some(path), true) = (&locations, p.restore || keeps_locations(cfg)) {
        load_locations(&store, path)?;
    }
    // MinHash without a store directory: the compact band table (8 bytes a key,
    // fingerprints confirmed against the side store, see `webdedup_store::bands`).
    // With one, the plain table, whose keys the snapshot lists.
    let bands = minhash.filter(|_| p.store_dir.is_none()).map(|(_, kept)| {
        webdedup_store::BandStore::with_capacity(p.blocks, p.capacity, kept.clone())
    });
    let run_store: &dyn Store = match &bands {
        Some(b) => b,
        None => &store,
    };
    let mut recorded = Recorded::default();
    // MinHash mode restores by running the input again from its start on the store
    // as it was before the run (its side store: a stopped MinHash run saves none):
    // the originals' locations and signatures, which decisions and the pairs report
    // depend on, are not in journals. Its finished outputs are decided again, not
    // written ([`Finished::Replay`]).
    let rerun = cfg.options.minhash().is_some();
    if let (Some((_, kept)), Some(_)) = (minhash, &kept_path) {
        kept.set_persistent();
    }
    // The side store the run starts from, by its checksum (0: none). The journal's
    // start record carries it: a restore that finds another one knows the run got
    // as far as saving its own.
    let base = kept_file.map_or(0, |k| k.checksum);
    // What a `--restore` with a journal does with each finished output.
    let mut plan: Option<HashMap<Vec<u8>, Finished>> = None;
    let journal = if journal_path.exists() {
        // Start records and (older journals) MinHash nonces: not work of the run.
        let mut bookkeeping = 0;
        let replay = Journal::replay(&journal_path, &meta, |tag, keys| {
            if is_bookkeeping(tag) {
                bookkeeping += 1;
            } else if !rerun {
                replay_keys(&store, tag, keys)?;
            }
            recorded.add_tag(tag)
        })
        .map_err(|e| match e {
            StoreError::Corrupt { .. } => anyhow!(
                "{e}: the journal is damaged before its last record, so the keys of that \
                 record are lost and the store cannot be restored as the interrupted run left it. \
                 Nothing was changed. {}",
                start_over(cfg, p, &journal_path)
            ),
            e => e.into(),
        })?;
        if let Some((offset, why)) = &replay.torn {
            report(&format!(
                "{}: dropped a torn last record at byte offset {offset} ({why}); no finished \
                 output depends on it (an output's records end with a finish mark before it \
                 is renamed into place), so what it held is redone",
                journal_path.display()
            ));
        }
        let old = String::from_utf8_lossy(&replay.run_info).into_owned();
        let work = replay.records - bookkeeping;
        if work > 0 && !p.restore {
            bail!(
                "{} holds the journal of an interrupted run ({}); finish it first: run that command again with --restore",
                journal_path.display(),
                old.lines().take(2).collect::<Vec<_>>().join(", ")
            );
        }
        if p.restore {
            if let Some(m) = run_info_mismatch(&old, &info) {
                bail!("cannot restore from {}: {m}", journal_path.display());
            }
            rep.journal_records_replayed = work;
            if rerun && saved_side_store(&recorded, base, kept_file) {
                // The interrupted run saved its side store: it had finished every
                // output; only the snapshot and the journal's removal remain.
                if let Some(snap) = &snapshot {
                    rep.saved = Some(store.save(snap, &meta)?);
                }
                remove_durably(&journal_path)?;
                let mut stats = RunStats {
                    files_skipped: files.len() as u64,
                    ..Default::default()
                };
                stats.finish(0.0, run_store.len(), run_store.memory_bytes());
                drop(lock);
                return Ok((stats, rep));
            }
            let (finished, torn_mark) =
                plan_finished(cfg, p, files, &recorded, &replay, &journal_path)?;
            plan = Some(finished);
            let journal = Journal::open_append(&journal_path, replay.valid_len, p.fsync)?;
            if let Some((rel, chunks)) = torn_mark {
                // Put back the mark the torn record was, so a later restore finds it.
                let mut tag = Vec::new();
                crate::resume::encode_finished(&rel, chunks, &mut tag);
                journal.append(&tag, &[])?;
            }
            if recorded.start.is_none() {
                // A journal of a webdedup before start records: one from now on.
                let start = RunStart {
                    by_restore: true,
                    base,
                    outputs: Default::default(),
                };
                journal.append(&start.encode(), &[])?;
            }
            if rerun {
                // Its decision records are not used (see above).
                recorded.files.clear();
            }
            journal
        } else {
            create_journal(cfg, p, files, &journal_path, &meta, &info, base)?
        }
    } else {
        create_journal(cfg, p, files, &journal_path, &meta, &info, base)?
    };

    // Decision logs of unfinished outputs.
    for f in files {
        let log = log_path(&cfg.output, &f.rel);
        if !log.exists() {
            continue;
        }
        let finished = cfg.output_candidates(&f.rel).iter().any(|o| o.exists());
        if finished {
            if p.restore {
                remove_durably(&log)?;
            }
            continue;
        }
        if !p.restore {
            bail!(
                "{} is the decision log of an unfinished output of an interrupted run; finish that run first: run its command again with --restore",
                log.display()
            );
        }
        let r = Journal::replay(&log, &meta, |tag, keys| {
            replay_keys(&store, tag, keys)?;
            recorded.add_tag(tag)
        })?;
        if let Some(m) = run_info_mismatch(&String::from_utf8_lossy(&r.run_info), &info) {
            bail!("cannot restore from {}: {m}", log.display());
        }
        if let Some((offset, why)) = r.torn {
            bail!("{}: damaged at byte offset {offset}: {why}", log.display());
        }
    }
    rep.recorded_chunks = recorded.chunks();

    // 2. Run.
    let dur = Durability {
        journal: Some(&journal),
        recorded: Some(&recorded),
        skip_finished: p.restore && plan.is_none(),
        finished: plan.as_ref(),
        stop,
        plans: None,
    };
    // Nothing to do: every input is skipped (a restore after a finished run).
    let idle = files
        .iter()
        .all(|f| on_finished(cfg, &dur, f) == Finished::Skip);
    let mut stats = run_listed(cfg, &listing, run_store, state, &dur, report)?;
    journal.sync()?;

    // 3. Save.
    if stats.interrupted && rerun {
        // The journal stays: `--restore` runs the input again on the snapshot.
        journal.close()?;
    } else if stats.interrupted {
        let mut all = Recorded::default();
        if snapshot.is_some() {
            Journal::replay(&journal_path, &meta, |tag, _| all.add_tag(tag))?;
        }
        // An earlier run's output not written again yet: a restore without the
        // journal would take it for finished. The journal stays, as after a crash.
        let earlier_left = all.start.as_ref().is_some_and(|s| {
            !s.by_restore
                && files.iter().any(|f| {
                    let rel = rel_bytes(&f.rel);
                    s.outputs.contains(rel)
                        && !all.finished.contains(rel)
                        && cfg.output_candidates(&f.rel).iter().any(|o| o.exists())
                })
        });
        if let (Some(snap), false) = (&snapshot, earlier_left) {
            // Carry the decisions of unfinished outputs into their logs.
            for (rel, chunks) in recorded.files {
                for (i, v) in chunks {
                    all.files
                        .entry(rel.clone())
                        .or_default()
                        .entry(i)
                        .or_insert(v);
                }
            }
            for f in files {
                let Some(chunks) = all.files.get(rel_bytes(&f.rel)) else {
                    continue;
                };
                if cfg.output_candidates(&f.rel).iter().any(|o| o.exists()) {
                    continue;
                }
                let records: Vec<(Vec<u8>, Vec<u64>)> = chunks
                    .iter()
                    .map(|(&i, v)| {
                        let mut tag = Vec::new();
                        crate::resume::encode_verdicts(rel_bytes(&f.rel), i, v, &mut tag);
                        (tag, Vec::new())
                    })
                    .collect();
                Journal::write_file(
                    &log_path(&cfg.output, &f.rel),
                    &meta,
                    info.as_bytes(),
                    &records,
                )?;
                rep.logs_written += 1;
                fault::hit("stop-logs");
            }
            rep.saved = Some(store.save(snap, &meta)?);
            if let Some(path) = &locations {
                // After the snapshot (its keys), before the journal goes.
                webdedup_store::locations::save_canonical(&store, path)?;
            }
            journal.remove()?;
        } else {
            journal.close()?;
        }
    } else {
        if let (Some((m, kept)), Some(k)) = (minhash, &kept_path) {
            // Before the snapshot: a restore that finds another side store than the
            // one its journal started from knows the run finished (the side store is
            // what the next run loads). A restore that had nothing to do (every
            // output finished) leaves it as it is: saving counts a run.
            if !idle {
                kept.save(k, &m.params.describe())?;
            }
        }
        if let Some(snap) = &snapshot {
            rep.saved = Some(store.save(snap, &meta)?);
        }
        if let (Some(path), true) = (&locations, keeps_locations(cfg)) {
            // After the snapshot (its keys): the next run's first copies.
            webdedup_store::locations::save_canonical(&store, path)?;
        } else if let Some(path) = locations.as_ref().filter(|p| p.exists()) {
            // The run is finished: no restore needs its locations.
            remove_durably(path)?;
        }
        journal.remove()?;
    }
    stats.finish(stats.seconds, run_store.len(), run_store.memory_bytes());
    if p.store_dir.is_none() {
        let _ = std::fs::remove_file(lock.path());
    }
    drop(lock);
    Ok((stats, rep))
}
