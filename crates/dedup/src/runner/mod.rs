//! The stream runner: every file of an input directory, in sorted relative-path
//! order, through plan -> store -> render -> write.
//!
//! With several threads, planning (parsing, normalizing, hashing) and rendering run
//! in parallel while two gates keep the store requests and the writes in input
//! order. The store therefore sees exactly the key sequence of a one-thread pass,
//! and the outputs are byte-identical for every `--threads` value.

/// The [`Store`] methods a wrapper store answers as its `inner` store does.
macro_rules! forward_store_figures {
    () => {
        fn len(&self) -> u64 {
            self.inner.len()
        }

        fn counts_keys(&self) -> bool {
            self.inner.counts_keys()
        }

        fn memory_bytes(&self) -> u64 {
            self.inner.memory_bytes()
        }

        fn blocks(&self) -> u32 {
            self.inner.blocks()
        }
    };
}

mod ahead;
mod config;
mod cores;
mod cpu;
mod lanes;
mod order;
mod outputs;
mod worker;
mod writer;

pub use config::{on_finished, Durability, RunConfig};
pub use order::{open_doc_reader, open_documents, DocStream};
pub use outputs::{
    attributes_path, count_skipped, dd_path, dropped_path, list_inputs, log_path, output_path,
    pairs_path, rel_bytes, report_skipped, spans_path, write_files_index, write_files_index_of,
    FILES_INDEX,
};
pub use webdedup_formats::input::{InputFile, Listing, Skipped};

use crate::policy::file_id;
use crate::report::RunStats;
use crate::resume::Finished;
use crate::state::RunState;
use ahead::Recent;
use anyhow::{Context, Result};
use cores::Cores;
use cpu::OrderedClock;
use lanes::{exact_lanes, Lanes, EXACT_ROUNDS, LANES};
use order::{read_jobs, Gate, Job, RecordCounter};
use outputs::{check_output_names, finish_file, Finish};
use parking_lot::Mutex;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use webdedup_formats::chunk::BufferPool;
use webdedup_store::Store;
use worker::{AheadRun, Worker};
use writer::Writer;

/// Deduplicates every file of `cfg.inputs` into `cfg.output` against `store`.
/// Input problems go to `report` (one line each) and are counted in the stats; an
/// error is returned only for what stops the run (a failing store, an unwritable
/// output).
pub fn run(cfg: &RunConfig, store: &dyn Store, report: &(dyn Fn(&str) + Sync)) -> Result<RunStats> {
    let state = RunState::new(&cfg.options);
    run_with(cfg, store, &state, &Durability::default(), report)
}

/// [`run`] with the run's state made by the caller (see [`RunState`]), a journal,
/// recorded verdicts, skipping of finished outputs and a stop flag (see
/// [`Durability`]). `stats.interrupted` says whether the stop flag ended the run
/// before every file was finished.
pub fn run_with(
    cfg: &RunConfig,
    store: &dyn Store,
    state: &RunState,
    dur: &Durability,
    report: &(dyn Fn(&str) + Sync),
) -> Result<RunStats> {
    let listing = list_inputs(&cfg.inputs, &cfg.output)?;
    run_listed(cfg, &listing, store, state, dur, report)
}

/// [`run_with`] over inputs listed already (by [`list_inputs`]): a caller that
/// needs the list first (persistence) lists them once.
pub fn run_listed(
    cfg: &RunConfig,
    listing: &Listing,
    store: &dyn Store,
    state: &RunState,
    dur: &Durability,
    report: &(dyn Fn(&str) + Sync),
) -> Result<RunStats> {
    report_skipped(listing, report);
    let mut stats = run_files(cfg, listing.files.clone(), store, state, dur, report)?;
    count_skipped(listing, &mut stats);
    Ok(stats)
}

/// [`run_with`] over the given input files (a subset of `cfg.inputs`' listing, in
/// its order), e.g. one batch-mode task's share.
pub fn run_files(
    cfg: &RunConfig,
    mut files: Vec<InputFile>,
    store: &dyn Store,
    state: &RunState,
    dur: &Durability,
    report: &(dyn Fn(&str) + Sync),
) -> Result<RunStats> {
    let started = Instant::now();
    let cpu_started = cpu::process_cpu_ns();
    let ordered = OrderedClock::default();
    check_output_names(&files, &cfg.output)?;
    fs::create_dir_all(&cfg.output)
        .with_context(|| format!("cannot create output directory {}", cfg.output.display()))?;
    if cfg.options.feedback() || cfg.options.minhash().is_some() {
        write_files_index(&cfg.output, &files)?;
    }
    if let Some(kept) = &state.kept {
        // The side store's files sit beside the outputs (unless a store directory
        // was loaded into it already).
        kept.set_dir(&cfg.output);
        for f in &files {
            kept.add_file(file_id(rel_bytes(&f.rel)), &f.rel.to_string_lossy());
        }
    }
    let listed = files.len();
    let on_finished = |f: &InputFile| on_finished(cfg, dur, f);
    files.retain(|f| on_finished(f) != Finished::Skip);
    // Replayed inputs are read and decided, not written.
    let replay: Vec<bool> = files
        .iter()
        .map(|f| on_finished(f) == Finished::Replay)
        .collect();
    let skipped = (listed - files.len() + replay.iter().filter(|&&r| r).count()) as u64;
    let writer = Writer {
        cfg,
        journal: dur.journal,
        finisher: None,
        files: &files,
        replay: &replay,
        replayed: 0,
        report,
        current: None,
        issues_in_file: 0,
        stats: RunStats::default(),
        progress: state.progress.as_deref(),
        files_done: 0,
    };
    let threads = cfg.threads.max(1);
    let stop = AtomicBool::new(false);
    let signalled = || dur.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let should_stop = || stop.load(Ordering::Relaxed) || signalled();

    let finish_failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let (finish_tx, finish_rx) = crossbeam_channel::bounded::<Finish>(4);
    let mut finish_tx = Some(finish_tx);
    let replay = &replay;
    let result = std::thread::scope(|sc| -> Result<(RunStats, u64)> {
        let mut writer = writer;
        if cfg.sync {
            let (stop, finish_failure, finish_rx) = (&stop, &finish_failure, &finish_rx);
            sc.spawn(move || {
                for f in finish_rx.iter() {
                    if finish_failure.lock().is_some() {
                        continue;
                    }
                    if let Err(e) = finish_file(f, dur.journal, true) {
                        stop.store(true, Ordering::Relaxed);
                        finish_failure.lock().get_or_insert(e);
                    }
                }
            });
            writer.finisher = finish_tx.take();
        }
        drop(finish_tx.take());
        // Workers besides `threads` that take a chunk while others wait at a
        // gate ([`cores`]), and the chunks queued for them.
        let spares = if threads == 1 {
            0
        } else {
            (threads / 2).clamp(1, SPARE_WORKERS)
        };
        let workers = threads + spares;
        // The spare workers hold chunks too: a queue of one per busy worker is
        // enough (each queued chunk is a buffer faulted in at the start).
        let queued = threads;
        // A buffer for every chunk in flight: queued, in a worker, and the
        // reader's two (the one it fills, the one it hands on).
        let pool = BufferPool::new(queued + workers + 2);
        let stats = if threads == 1 {
            let mut w = Worker::new(&cfg.options, cfg.mark);
            let mut failure = None;
            let mut records = RecordCounter::default();
            read_jobs(&files, cfg, &pool, &should_stop, dur.stop, |job| {
                w.plan(&job, &files[job.file], dur);
                w.first_record = records.next(&job, w.engine.plan.paras.len());
                let r = ordered
                    .time(|| w.decide(&job, &files[job.file], store, &cfg.options, state, dur))
                    .and_then(|_| {
                        if !replay[job.file] {
                            w.build_record(&job, &files[job.file]);
                            w.render(&job, &files[job.file], cfg)?;
                        }
                        writer.write(&job, &mut w)
                    });
                if let Ok(chunk) = job.chunk {
                    pool.give(chunk.data);
                }
                match r {
                    Ok(()) => true,
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            });
            if let Some(e) = failure {
                return Err(e);
            }
            writer.finisher = None;
            (std::mem::take(&mut writer.stats), writer.replayed)
        } else {
            let lanes = split_by_block(cfg, dur)
                .then(|| Lanes::new(store, EXACT_ROUNDS, exact_lanes(threads)));
            let lanes = &lanes;
            let ahead = asks_ahead(cfg, dur, state).then(|| Recent::new(workers));
            let ahead = &ahead;
            // The insert round, after the gate (see `ahead`).
            let insert_lanes = ahead.is_some().then(|| Lanes::new(store, 1, LANES));
            let insert_lanes = &insert_lanes;
            let commit_gate = Gate::new(RecordCounter::default());
            let write_gate = Gate::new(writer);
            let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
            let (tx, rx) = crossbeam_channel::bounded::<Job>(queued);
            let cores = Cores::new(threads);
            std::thread::scope(|s| {
                s.spawn({
                    let (files, should_stop, pool) = (&files, &should_stop, &pool);
                    // The sender moves into the reader: when it is done the channel closes
                    // and the workers' loops end.
                    move || {
                        read_jobs(files, cfg, pool, should_stop, dur.stop, |job| {
                            tx.send(job).is_ok()
                        })
                    }
                });
                for _ in 0..workers {
                    s.spawn(|| {
                        let mut w = Worker::new(&cfg.options, cfg.mark);
                        let ahead_run = ahead.as_ref().map(|recent| AheadRun {
                            store,
                            opts: &cfg.options,
                            state,
                            dur,
                            recent,
                            insert_lanes: insert_lanes.as_ref(),
                        });
                        for job in rx.iter() {
                            let _core = cores.start();
                            let failed = || stop.load(Ordering::Relaxed);
                            if !failed() {
                                w.plan(&job, &files[job.file], dur);
                                if let Some(run) = &ahead_run {
                                    w.ahead(&job, &files[job.file], run);
                                    w.patch_early(run.recent);
                                }
                            }
                            // Every job passes both gates, even after a failure, so no
                            // thread waits forever for a turn that never comes.
                            let decide = |w: &mut Worker, store: &dyn Store| {
                                if failed() {
                                    return Ok(());
                                }
                                w.decide(&job, &files[job.file], store, &cfg.options, state, dur)
                            };
                            let r = commit_gate.pass(job.seq, |records| {
                                ordered.time(|| {
                                    w.first_record = records.next(&job, w.engine.plan.paras.len());
                                    match (lanes, ahead) {
                                        (Some(_), _) => Ok(()),
                                        (None, Some(recent)) if failed() => {
                                            recent.pass(job.seq, Default::default());
                                            Ok(())
                                        }
                                        (None, Some(_)) => {
                                            let run = ahead_run.as_ref().expect("asked ahead");
                                            w.decide_foreseen(&job, &files[job.file], run)
                                        }
                                        (None, None) => decide(&mut w, store),
                                    }
                                })
                            });
                            let r = r.and_then(|_| match lanes {
                                Some(l) => w.in_lanes(&job, &files[job.file], l, store, decide),
                                None => Ok(()),
                            });
                            // Every job passes the insert lanes, as the gates.
                            let r = match insert_lanes {
                                Some(l) => {
                                    let send = r.is_ok() && !failed();
                                    let file = &files[job.file];
                                    let sent = w.insert_deferred(&job, file, l, store, send);
                                    r.and(sent)
                                }
                                None => r,
                            };
                            if let Some(recent) = ahead {
                                recent.stored(job.seq);
                            }
                            let r = r.and_then(|_| {
                                if failed() || replay[job.file] {
                                    return Ok(());
                                }
                                w.build_record(&job, &files[job.file]);
                                w.render(&job, &files[job.file], cfg)
                            });
                            let r = write_gate.pass(job.seq, |wr| {
                                r.and_then(|_| {
                                    if failed() {
                                        Ok(())
                                    } else {
                                        wr.write(&job, &mut w)
                                    }
                                })
                            });
                            if let Err(e) = r {
                                stop.store(true, Ordering::Relaxed);
                                failure.lock().get_or_insert(e);
                            }
                            if let Ok(chunk) = job.chunk {
                                pool.give(chunk.data);
                            }
                        }
                    });
                }
            });
            if let Some(e) = failure.into_inner() {
                return Err(e);
            }
            for l in [lanes, insert_lanes].into_iter().flatten() {
                ordered.add_seconds(l.longest_chain_seconds());
            }
            let writer = write_gate.into_inner();
            (writer.stats, writer.replayed)
        };
        Ok(stats)
    });
    let (mut stats, replayed) = result?;
    if let Some(e) = finish_failure.into_inner() {
        return Err(e);
    }
    stats.threads = threads;
    stats.files_skipped = skipped;
    stats.interrupted = signalled() && stats.files + replayed < files.len() as u64;
    stats.finish(
        started.elapsed().as_secs_f64(),
        store.len(),
        store.memory_bytes(),
    );
    stats.keys_counted = store.counts_keys();
    let cpu_all = cpu::process_cpu_ns().saturating_sub(cpu_started) as f64 / 1e9;
    stats.set_cpu(cpu_all, ordered.seconds());
    if cfg.options.minhash().is_some_and(|m| m.verify.is_some()) && state.decided.is_none() {
        stats.documents_dropped_unverified.get_or_insert(0);
    }
    if cfg.options.substr().is_some() {
        stats.spans_removed.get_or_insert(0);
        stats.span_bytes_removed.get_or_insert(0);
    }
    Ok(stats)
}

/// Spare workers at most ([`cores`]; one for every two busy ones): each holds
/// a chunk's buffers, faulted in at the start.
const SPARE_WORKERS: usize = 4;

/// Whether chunks ask their tests ahead of their turns ([`ahead`]): MinHash mode
/// (its band-key test round) and near mode (its n-gram test round, the n-grams
/// built ahead too) on this process's own store (see [`split_by_block`]) without
/// batch mode's resolved verdicts. The turn then judges only; the insert round
/// follows the turn in block lanes ([`lanes`], one round). Deciding near mode's
/// chunks whole ahead measured slower (2026-11-28, web3, `-t 2`: the run 7.1-7.9
/// s of CPU against 4.8-4.9 s, as every key a chunk inserted was asked twice and
/// a quarter of the chunks were decided again).
fn asks_ahead(cfg: &RunConfig, dur: &Durability, state: &RunState) -> bool {
    let tests_ahead = cfg.options.minhash().is_some() || cfg.options.near().is_some();
    tests_ahead && dur.journal.is_some() && state.decided.is_none()
}

/// Whether the ordered step is split by store block ([`lanes`]): exact mode (its
/// rounds ask keys of separate kinds; near and MinHash rounds depend on each
/// other's inserts) on this process's own store (the one kept with a journal; a
/// remote store answers a retried request by its identity, which a split would
/// reuse).
fn split_by_block(cfg: &RunConfig, dur: &Durability) -> bool {
    cfg.options.near().is_none() && cfg.options.minhash().is_none() && dur.journal.is_some()
}
