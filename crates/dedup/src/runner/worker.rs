//! One thread's worker: the engine on a job, and the chunk's journal record.

use super::config::{Durability, RunConfig};
use super::lanes::{LaneScratch, LaneStore, Lanes};
use super::order::Job;
use super::outputs::rel_bytes;
use crate::engine::{Engine, Rendering};
use crate::options::Options;
use crate::policy::{chunk_identity, file_id, ChunkContext};
use crate::resume::{encode_tag, Recorder, Replayer};
use crate::state::RunState;
use anyhow::{Context, Result};
use std::sync::atomic::Ordering;
use webdedup_formats::input::InputFile;
use webdedup_formats::output::OutputCompression;
use webdedup_store::journal::encode_record;
use webdedup_store::{fault, Location, Store};

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
        }
    }

    pub(crate) fn plan(&mut self, job: &Job, file: &InputFile, dur: &Durability) {
        let e = &mut self.engine;
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
        let rel = rel_bytes(&file.rel);
        let id = ChunkContext {
            id: chunk_identity(rel, job.index),
            file: file_id(rel),
            first_record: self.first_record,
        };
        self.record_due = false;
        if let Some(v) = dur.recorded.and_then(|r| r.get(rel, job.index)) {
            let replay = Replayer::with_store(v, store);
            let r = self.engine.decide(id, &replay, opts, state);
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
            return self
                .engine
                .decide(id, store, opts, state)
                .context("store request failed");
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
        let r = self.engine.decide(id, &rec, opts, state);
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
