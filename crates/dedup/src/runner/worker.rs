//! One thread's worker: the engine on a job, and the chunk's journal record.

use super::ahead::{Ahead, Deferral, Deferred, Foreseen, Foresight, Recent, Sight};
use super::config::{Durability, RunConfig};
use super::lanes::{LaneScratch, LaneStore, Lanes};
use super::order::Job;
use super::outputs::rel_bytes;
use crate::engine::{Engine, Rendering};
use crate::options::Options;
use crate::policy::{chunk_identity, file_id, ChunkContext, NEAR_INSERT_ROUND};
use crate::resume::{encode_tag, Recorder, Replayer};
use crate::state::RunState;
use anyhow::{Context, Result};
use std::sync::atomic::Ordering;
use webdedup_formats::input::InputFile;
use webdedup_formats::output::OutputCompression;
use webdedup_store::journal::encode_record;
use webdedup_store::{fault, BatchId, Location, Store, StoreError};

/// What a chunk asked ahead needs besides itself ([`Worker::ahead`],
/// [`Worker::decide_foreseen`]).
#[derive(Clone, Copy)]
pub(crate) struct AheadRun<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) opts: &'a Options,
    pub(crate) state: &'a RunState,
    pub(crate) dur: &'a Durability<'a>,
    pub(crate) recent: &'a Recent,
    /// Where the insert round of a chunk whose tests were asked ahead goes after
    /// its turn; None: it is sent in the turn.
    pub(crate) insert_lanes: Option<&'a Lanes>,
}

/// One thread's engine, and the journal record of its chunk.
pub(crate) struct Worker {
    pub(crate) engine: Engine,
    /// Record number (from 1) of the chunk's first paragraph in its file.
    pub(crate) first_record: u64,
    asked: Vec<u64>,
    seen: Vec<bool>,
    test_only: Vec<bool>,
    /// The location each asked key was inserted with (feedback mode).
    locs: Vec<Location>,
    /// Feedback mode: the chunk's record carries its new keys' locations.
    located: bool,
    new_keys: Vec<u64>,
    tag: Vec<u8>,
    /// The journal record of the chunk (empty when none is due): built outside
    /// the gates, appended in the write gate before the chunk's output.
    pub(crate) record: Vec<u8>,
    record_due: bool,
    lane_scratch: LaneScratch,
    foresight: Foresight,
    /// The inserts answered in the chunk's turn, sent after it.
    deferred: Deferred,
}

impl Worker {
    pub(crate) fn new(opts: &Options, mark: bool) -> Self {
        Worker {
            engine: Engine::new(opts, mark),
            first_record: 1,
            asked: Vec::new(),
            seen: Vec::new(),
            test_only: Vec::new(),
            locs: Vec::new(),
            located: false,
            new_keys: Vec::new(),
            tag: Vec::new(),
            record: Vec::new(),
            record_due: false,
            lane_scratch: Default::default(),
            foresight: Foresight::default(),
            deferred: Deferred::default(),
        }
    }

    pub(crate) fn plan(&mut self, job: &Job, file: &InputFile, dur: &Durability) {
        let e = &mut self.engine;
        e.forget_ahead();
        match &job.chunk {
            Ok(chunk) => {
                let cached = dur.plans.is_some_and(|c| {
                    c.take(rel_bytes(&file.rel), job.index, &chunk.data, &mut e.plan)
                });
                if !cached {
                    e.plan(&job.format, chunk);
                }
            }
            Err(_) => e.plan.clear(),
        }
    }

    /// Asks the store (or the recorded verdicts) about the chunk; journals the
    /// answers. Runs in the commit gate, so in input order.
    pub(crate) fn decide(
        &mut self,
        job: &Job,
        file: &InputFile,
        store: &dyn Store,
        opts: &Options,
        state: &RunState,
        dur: &Durability,
    ) -> Result<()> {
        self.decide_with(job, file, store, opts, dur, |e, id, store| {
            e.decide(id, store, opts, state)
        })
    }

    /// [`Self::decide`] with the chunk's requests asked by `run` (the engine's
    /// decisions, or requests replayed: [`Self::decide_foreseen`]).
    fn decide_with(
        &mut self,
        job: &Job,
        file: &InputFile,
        store: &dyn Store,
        opts: &Options,
        dur: &Durability,
        run: impl FnOnce(&mut Engine, ChunkContext, &dyn Store) -> Result<(), StoreError>,
    ) -> Result<()> {
        let rel = rel_bytes(&file.rel);
        let id = ChunkContext {
            id: chunk_identity(rel, job.index),
            file: file_id(rel),
            first_record: self.first_record,
        };
        self.record_due = false;
        if let Some(v) = dur.recorded.and_then(|r| r.get(rel, job.index)) {
            let replay = Replayer::with_store(v, store);
            let r = run(&mut self.engine, id, &replay);
            if r.is_err() || !replay.matched() {
                anyhow::bail!(
                    "{}: chunk {}: the input differs from the interrupted run's (its recorded decisions do not match); restore with the same input and options",
                    file.path.display(),
                    job.index
                );
            }
            return Ok(());
        }
        if dur.journal.is_none() {
            return run(&mut self.engine, id, store).context("store request failed");
        }
        let rec = Recorder {
            inner: store,
            log: parking_lot::Mutex::new((
                std::mem::take(&mut self.asked),
                std::mem::take(&mut self.seen),
                std::mem::take(&mut self.test_only),
                std::mem::take(&mut self.locs),
            )),
        };
        {
            let mut log = rec.log.lock();
            log.0.clear();
            log.1.clear();
            log.2.clear();
            log.3.clear();
        }
        let r = run(&mut self.engine, id, &rec);
        (self.asked, self.seen, self.test_only, self.locs) = rec.log.into_inner();
        r.context("store request failed")?;
        self.located = opts.feedback();
        fault::hit("commit");
        self.record_due = true;
        if fault::armed() && fault::reached("stop", 1) {
            if let Some(stop) = dur.stop {
                stop.store(true, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Runs `decide` (a [`Worker::decide`]) with the ordered step split by store
    /// block (see [`super::lanes`]): outside the commit gate, each round's keys
    /// asked lane by lane in their turns. Every turn the chunk did not take is
    /// passed on, whatever `decide` did.
    pub(crate) fn in_lanes(
        &mut self,
        job: &Job,
        file: &InputFile,
        lanes: &Lanes,
        store: &dyn Store,
        decide: impl FnOnce(&mut Worker, &dyn Store) -> Result<()>,
    ) -> Result<()> {
        let lane_store = LaneStore {
            lanes,
            inner: store,
            seq: job.seq,
            base: chunk_identity(rel_bytes(&file.rel), job.index),
            passed: parking_lot::Mutex::new(vec![false; lanes.rounds()]),
            scratch: parking_lot::Mutex::new(std::mem::take(&mut self.lane_scratch)),
        };
        let r = decide(self, &lane_store);
        lane_store.finish();
        self.lane_scratch = lane_store.scratch.into_inner();
        r
    }

    /// Asks the chunk's tests before its turn ([`super::ahead`]): near mode's
    /// n-grams (built ahead too), MinHash mode's band keys. A failure here, or
    /// verdicts recorded by an interrupted run, mean the chunk asks the store in
    /// its turn.
    pub(crate) fn ahead(&mut self, job: &Job, file: &InputFile, run: &AheadRun) {
        let (store, opts, dur) = (run.store, run.opts, run.dur);
        self.foresight.start(run.recent);
        let recorded = dur
            .recorded
            .and_then(|r| r.get(rel_bytes(&file.rel), job.index));
        if job.chunk.is_err() || recorded.is_some() {
            self.foresight.ready = false;
            return;
        }
        let id = chunk_identity(rel_bytes(&file.rel), job.index);
        let ahead = Ahead {
            inner: store,
            sight: parking_lot::Mutex::new(&mut self.foresight),
        };
        let (mut keys, mut seen, mut originals) = (Vec::new(), Vec::new(), Vec::new());
        let r = match (opts.minhash(), opts.near()) {
            (None, Some(near)) => {
                // The test round of `policy::near::NearScratch::test_round`, for
                // every paragraph it may ask about; the n-grams are kept for the turn.
                self.engine.near_ahead(near.ngram, &mut keys);
                if opts.feedback() {
                    ahead.test_located_batch(id, &keys, &mut seen, &mut originals)
                } else {
                    ahead.test_batch(id, &keys, &mut seen)
                }
            }
            (Some(_), _) => {
                // The test round of `policy::minhash::decide`: every band key of
                // the live documents.
                let plan = &self.engine.plan;
                for d in plan.docs.iter().filter(|d| d.live()) {
                    keys.extend_from_slice(
                        &plan.bands[d.bands.start as usize..d.bands.end as usize],
                    );
                }
                ahead.test_located_batch(id, &keys, &mut seen, &mut originals)
            }
            // Exact mode splits its ordered step by store block instead.
            (None, None) => Err(StoreError::Unsupported("exact mode asked ahead".into())),
        };
        self.foresight.ready = r.is_ok();
        // Near mode judges the chunk ahead too; its turn checks the judgement
        // (`policy::near::speculation`). Record numbers, which feedback mode's
        // judgement names, are counted in the turn.
        if r.is_ok() && opts.near().is_some() && !opts.feedback() {
            self.foresight.patch_early(run.recent);
            let ctx = ChunkContext {
                id,
                file: file_id(rel_bytes(&file.rel)),
                first_record: 1,
            };
            let sight = Sight::Corrected(&self.foresight);
            let seen = Foreseen::new(store, sight).speculating(near_insert_round(id));
            // A failure here leaves the chunk to be judged whole in its turn.
            let _ = self
                .engine
                .judge_ahead(|e| e.decide(ctx, &seen, opts, run.state));
        }
    }

    /// [`Self::decide`] in the chunk's turn after [`Self::ahead`]: the chunk's
    /// tests answered from the corrected answers asked ahead, its insert round
    /// kept for the lanes after the turn (when `run.insert_lanes`). Leaves the
    /// keys the chunk inserted in `recent`, whatever happened.
    pub(crate) fn decide_foreseen(
        &mut self,
        job: &Job,
        file: &InputFile,
        run: &AheadRun,
    ) -> Result<()> {
        let AheadRun { store, recent, .. } = *run;
        let (opts, state, dur) = (run.opts, run.state, run.dur);
        let mut f = std::mem::take(&mut self.foresight);
        let sight = match f.patch(recent, job.seq) {
            Some(_) => Sight::Corrected(&f),
            None => Sight::Blind,
        };
        let blind = matches!(sight, Sight::Blind);
        let mut seen = Foreseen::new(store, sight);
        if blind {
            // The store itself answers: every earlier insert must be in it.
            recent.wait_stored(job.seq);
        } else if run.insert_lanes.is_some() {
            let how = if opts.minhash().is_some() {
                Deferral::Answered
            } else {
                let id = chunk_identity(rel_bytes(&file.rel), job.index);
                Deferral::Unanswered(near_insert_round(id))
            };
            seen = seen.deferring(how, std::mem::take(&mut self.deferred));
        }
        let r = self.decide_with(job, file, &seen, opts, dur, |e, id, s| {
            e.decide(id, s, opts, state)
        });
        let mut st = seen.state.into_inner();
        if let Some(d) = st.take_deferred() {
            self.deferred = d;
        }
        recent.pass(job.seq, st.log);
        self.foresight = f;
        r
    }

    /// Sends the inserts answered in the chunk's turn ([`Self::decide_foreseen`])
    /// to the store in block lanes (when `send`; a failed chunk sends none), and
    /// passes every lane turn the chunk did not take. The chunk's journal record
    /// gets the store's answers of a round answered unasked.
    pub(crate) fn insert_deferred(
        &mut self,
        job: &Job,
        file: &InputFile,
        lanes: &Lanes,
        store: &dyn Store,
        send: bool,
    ) -> Result<()> {
        let mut d = std::mem::take(&mut self.deferred);
        let base = d
            .first_id()
            .unwrap_or_else(|| chunk_identity(rel_bytes(&file.rel), job.index));
        let lane_store = LaneStore {
            lanes,
            inner: store,
            seq: job.seq,
            base,
            passed: parking_lot::Mutex::new(vec![false; lanes.rounds()]),
            scratch: parking_lot::Mutex::new(std::mem::take(&mut self.lane_scratch)),
        };
        let sent = if send { d.send(&lane_store) } else { Ok(()) };
        lane_store.finish();
        self.lane_scratch = lane_store.scratch.into_inner();
        if sent.is_ok() && send && self.record_due && d.unanswered() {
            // The round answered unasked was the chunk's last request.
            let tail = self.seen.len() - d.keys.len();
            debug_assert_eq!(self.asked[tail..], d.keys[..], "the last round deferred");
            self.seen[tail..].copy_from_slice(&d.seen);
        }
        self.deferred = d;
        self.deferred.clear();
        sent.context("store request failed")
    }

    /// Corrects the answers asked ahead by the chunks that passed the gate
    /// meanwhile, before the chunk's turn ([`Foresight::patch_early`]).
    pub(crate) fn patch_early(&mut self, recent: &Recent) {
        self.foresight.patch_early(recent);
    }

    /// Builds the chunk's journal record (outside the gates: in parallel).
    pub(crate) fn build_record(&mut self, job: &Job, file: &InputFile) {
        self.record.clear();
        if !self.record_due {
            return;
        }
        self.new_keys.clear();
        // Keys only tested (near mode's probes) were not inserted: not new keys.
        self.new_keys.extend(
            self.asked
                .iter()
                .zip(&self.seen)
                .zip(&self.test_only)
                .filter(|((_, &s), &t)| !s && !t)
                .map(|((&k, _), _)| k),
        );
        if self.located {
            // Each new key's location follows the keys (see `resume`).
            let n = self.new_keys.len();
            for (((_, &s), &t), l) in self
                .asked
                .iter()
                .zip(&self.seen)
                .zip(&self.test_only)
                .zip(&self.locs)
            {
                if !s && !t {
                    self.new_keys.extend_from_slice(&[l.file, l.record]);
                }
            }
            debug_assert_eq!(self.new_keys.len(), 3 * n);
        }
        encode_tag(
            rel_bytes(&file.rel),
            job.index,
            &self.asked,
            &self.seen,
            self.located,
            &mut self.tag,
        );
        encode_record(&self.tag, &self.new_keys, &mut self.record);
    }

    /// Renders the decided chunk (see [`Engine::render`]).
    pub(crate) fn render(&mut self, job: &Job, file: &InputFile, cfg: &RunConfig) -> Result<()> {
        let Ok(chunk) = &job.chunk else {
            self.engine.clear_rendered();
            return Ok(());
        };
        let name = file.rel.to_string_lossy();
        let how = Rendering {
            name: &name,
            file: file_id(rel_bytes(&file.rel)),
            first_record: self.first_record,
            dd: cfg.dd,
            mark: cfg.mark,
            clusters: cfg.clusters,
            gzip: cfg.output_compression(&file.rel, &job.format) == OutputCompression::Gzip,
        };
        self.engine
            .render(chunk, &job.format, &cfg.options, &how)
            .with_context(|| format!("{}: cannot write its output", file.path.display()))
    }
}

/// The identity of near mode's insert round in the chunk whose first request is
/// `first`.
fn near_insert_round(first: BatchId) -> BatchId {
    BatchId {
        stream: first.stream,
        seq: first.seq + NEAR_INSERT_ROUND,
    }
}
