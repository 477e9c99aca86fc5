//! Plan, decide and render one chunk: the engine the runner (and so batch mode's
//! filter phase) and the Python classes share.
//!
//! An [`Engine`] is one thread's planner and reusable buffers. A chunk goes
//! through [`Engine::plan`] (parse, normalize, hash: in parallel), then
//! [`Engine::decide`] (the store requests: the runner calls it in input order),
//! then [`Engine::render`] (the kept bytes and the side outputs, in [`Rendered`]).
//! [`CallEngine`] runs the three for callers that hand over one chunk a call.

use crate::options::{Mode, Options};
use crate::plan::{ChunkPlan, Planner};
use crate::policy::{self, minhash, ChunkContext, Decisions, Scratch, REQUESTS_PER_CHUNK};
use crate::render::{render_spans, DdOut, DroppedOut};
use crate::report::ChunkStats;
use crate::state::RunState;
use std::ops::Range;
use webdedup_formats::chunk::Chunk;
use webdedup_formats::parquet_out::RowGroupOut;
use webdedup_formats::read::DocFormat;
use webdedup_store::{BatchId, Store, StoreError};

/// Asks `store` about the chunk's keys and decides what is kept, by the run's
/// mode: the paragraph modes by the decision table ([`policy::decide`]), MinHash
/// mode by band keys against the run's kept documents, or from batch mode's
/// resolved decisions when the run has them (then the store is not asked).
pub fn decide(
    plan: &ChunkPlan,
    ctx: ChunkContext,
    store: &dyn Store,
    opts: &Options,
    state: &RunState,
    scratch: &mut Scratch,
    out: &mut Decisions,
) -> Result<(), StoreError> {
    if let Mode::Substr { params, feedback } = opts.mode {
        let s = &mut scratch.substr;
        return policy::substr::decide::decide(plan, ctx, store, params, feedback, s, out);
    }
    let Mode::MinHash(m) = &opts.mode else {
        return policy::decide(plan, ctx, store, opts, scratch, out);
    };
    if let Some(decided) = &state.decided {
        minhash::decide_replayed(plan, ctx, decided, out);
        return Ok(());
    }
    let kept = state
        .kept
        .as_deref()
        .expect("a MinHash run's state holds its kept documents (RunState::new)");
    minhash::decide(plan, ctx, store, m, kept, scratch, out)
}

/// Whether chunks are planned with `--mark`'s characters: with `--mark`
/// (`marks`), and in substring mode's feedback, whose spans report (and batch
/// mode's window locations) names spans by them.
pub fn plans_marks(opts: &Options, marks: bool) -> bool {
    marks || (opts.feedback() && opts.substr().is_some())
}

/// What one chunk renders to.
#[derive(Default)]
pub struct Rendered {
    /// The kept bytes in the input's format (WET: its records as written). Empty
    /// with `--mark` on the line formats, whose input is written as read.
    pub out: Vec<u8>,
    /// `--dd`: one line per document.
    pub dd: Vec<u8>,
    /// Feedback mode's `.dropped` text, or MinHash mode's pairs report.
    pub side: Vec<u8>,
    /// `--mark`: the attributes lines.
    pub attrs: Vec<u8>,
    /// MinHash `--clusters`: `DOC TAB CLUSTER` lines.
    pub clusters: Vec<u8>,
    /// Parquet: the chunk's row group, encoded.
    pub row_group: Option<RowGroupOut>,
    pub stats: ChunkStats,
}

/// How a chunk is rendered besides its decisions: which outputs, and the names
/// they carry.
pub struct Rendering<'a> {
    /// The input's name in `.dd` lines, pairs and attributes (its path relative
    /// to the input directory; Python's source).
    pub name: &'a str,
    /// Feedback mode: the input's file id and the record number of the chunk's
    /// first paragraph in it.
    pub file: u64,
    pub first_record: u64,
    pub dd: bool,
    /// `--mark`: decisions as attributes, the input written as read.
    pub mark: bool,
    /// MinHash: each document's cluster (lines, and an attribute with `mark`).
    pub clusters: bool,
    /// WET: every record its own gzip member.
    pub gzip: bool,
}

/// One thread's planner and buffers: the chunk being worked on, its plan,
/// decisions and rendered outputs.
pub struct Engine {
    planner: Planner,
    pub plan: ChunkPlan,
    scratch: Scratch,
    pub decisions: Decisions,
    pub rendered: Rendered,
    /// Where each entry of the plan went in `rendered.out` (Parquet, WET).
    spans: Vec<Range<usize>>,
    /// WET: the rendered text, before it becomes records.
    records: Vec<u8>,
}

impl Engine {
    /// An engine for `opts`; `marks`: plan what `--mark` needs too.
    pub fn new(opts: &Options, marks: bool) -> Self {
        Engine {
            planner: Planner::new(opts).with_marks(plans_marks(opts, marks)),
            plan: ChunkPlan::default(),
            scratch: Scratch::default(),
            decisions: Decisions::default(),
            rendered: Rendered::default(),
            spans: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Plans `chunk`, read as `format`.
    pub fn plan(&mut self, format: &DocFormat, chunk: &Chunk) {
        self.forget_ahead();
        self.planner.plan_as(format, chunk, &mut self.plan);
    }

    /// Near mode, ahead of the planned chunk's turn: builds its n-grams (its
    /// decision reuses them) and lays into `keys` those its test round may ask
    /// ([`crate::policy::near::NearScratch::build_ahead`]).
    pub fn near_ahead(&mut self, ngram: usize, keys: &mut Vec<u64>) {
        let plan = &self.plan;
        let live = |i: usize| plan.docs[i].live();
        self.scratch.near.build_ahead(plan, live, ngram, keys);
    }

    /// Forgets what [`Self::near_ahead`] built for an earlier chunk (a plan taken
    /// from elsewhere, e.g. a cache, replaces the chunk).
    pub fn forget_ahead(&mut self) {
        self.scratch.near.forget_ahead();
    }

    /// Near mode, ahead of the planned chunk's turn: runs `decide` (a
    /// [`Self::decide`] against the store as it was, nothing inserted) and keeps
    /// its decision, which the turn's decision checks, judging again only what
    /// changed (`policy::near::speculation`).
    pub fn judge_ahead(
        &mut self,
        decide: impl FnOnce(&mut Self) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.scratch.near.speculate();
        let r = decide(self);
        self.scratch.near.end_speculation(r.is_ok());
        r
    }

    /// Decides the planned chunk against `store` ([`decide`]).
    pub fn decide(
        &mut self,
        ctx: ChunkContext,
        store: &dyn Store,
        opts: &Options,
        state: &RunState,
    ) -> Result<(), StoreError> {
        decide(
            &self.plan,
            ctx,
            store,
            opts,
            state,
            &mut self.scratch,
            &mut self.decisions,
        )
    }

    /// Nothing rendered (a chunk that could not be read).
    pub fn clear_rendered(&mut self) {
        let r = &mut self.rendered;
        r.out.clear();
        r.dd.clear();
        r.side.clear();
        r.attrs.clear();
        r.clusters.clear();
        r.row_group = None;
        r.stats = ChunkStats::default();
    }

    /// Renders the decided `chunk`, read as `format`, into [`Self::rendered`].
    pub fn render(
        &mut self,
        chunk: &Chunk,
        format: &DocFormat,
        opts: &Options,
        how: &Rendering,
    ) -> std::io::Result<()> {
        self.clear_rendered();
        self.spans.clear();
        self.records.clear();
        let r = &mut self.rendered;
        let dd = how.dd.then_some(DdOut {
            out: &mut r.dd,
            name: how.name,
        });
        // Substring mode's feedback is its spans report, not removed paragraphs.
        let spans_report = opts.feedback() && opts.substr().is_some();
        let dropped = (opts.feedback() && !spans_report).then_some(DroppedOut {
            out: &mut r.side,
            file: how.file,
            first_record: how.first_record,
        });
        let rebuilt = matches!(format, DocFormat::Parquet(_) | DocFormat::Wet { .. });
        // `--mark` writes the line formats as read: their kept text is not needed.
        let text_out = (rebuilt || !how.mark).then_some(&mut r.out);
        render_spans(
            &chunk.data,
            &self.plan,
            &self.decisions,
            text_out,
            dd,
            dropped,
            &mut r.stats,
            rebuilt.then_some(&mut self.spans),
        );
        let clusters = (how.clusters && opts.minhash().is_some())
            .then(|| minhash::cluster_names(&self.plan, &self.decisions, how.name));
        if opts.minhash().is_some() {
            minhash::pairs_lines(&self.plan, &self.decisions, how.name, &mut r.side);
        }
        if let Some(c) = &clusters {
            minhash::cluster_lines(&self.plan, c, how.name, &mut r.clusters);
        }
        if spans_report {
            let (plan, dec) = (&self.plan, &self.decisions);
            crate::policy::substr::report::spans_lines(plan, dec, how.file, &mut r.side);
        }
        if how.mark {
            crate::write_back::attributes(
                &self.plan,
                &self.decisions,
                how.name,
                clusters.as_deref(),
                &mut r.attrs,
            );
        }
        match format {
            DocFormat::Parquet(_) => {
                r.row_group = Some(crate::write_back::parquet_rows(
                    chunk,
                    &self.plan,
                    &self.decisions,
                    &r.out,
                    &self.spans,
                    how.mark,
                )?);
            }
            DocFormat::Wet { .. } => {
                crate::write_back::wet_records(
                    chunk,
                    &self.decisions,
                    &r.out,
                    &self.spans,
                    how.mark,
                    how.gzip,
                    &mut self.records,
                )?;
                std::mem::swap(&mut r.out, &mut self.records);
            }
            _ => {}
        }
        Ok(())
    }

    /// The status of every document of the chunk (`K`, `N/M`, `D`, `E`, `U`, `B`).
    pub fn statuses(&self) -> Vec<String> {
        self.decisions.docs.iter().map(|s| s.code()).collect()
    }

    /// The chunk's input problems as (line, reason).
    pub fn problems(&self) -> Vec<(u64, String)> {
        self.plan
            .issues
            .iter()
            .map(|i| (i.line, i.kind.to_string()))
            .collect()
    }
}

/// The engine for callers that hand it one whole input a call (the Python
/// classes): each call is a chunk of its own, its store requests numbered in the
/// caller's stream, so that retried requests of two callers never mix.
pub struct CallEngine {
    pub engine: Engine,
    stream: u64,
    calls: u64,
}

impl CallEngine {
    /// An engine for the caller numbered `stream`.
    pub fn new(opts: &Options, stream: u64) -> Self {
        CallEngine {
            engine: Engine::new(opts, false),
            stream,
            calls: 0,
        }
    }

    /// Plans, decides and renders `data` read as `format`, named `name`.
    /// `locate` gives the input's file id and the record number of its first
    /// paragraph once the plan is known (feedback mode numbers paragraphs). The
    /// results are in [`Engine::rendered`], [`Engine::statuses`] and the plan.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        data: Vec<u8>,
        format: &DocFormat,
        store: &dyn Store,
        opts: &Options,
        state: &RunState,
        name: &str,
        locate: impl FnOnce(&ChunkPlan) -> Result<(u64, u64), String>,
    ) -> Result<(), String> {
        let chunk = Chunk {
            data,
            first_line: 1,
            last: true,
            ..Default::default()
        };
        let e = &mut self.engine;
        e.plan(format, &chunk);
        let (file, first_record) = locate(&e.plan)?;
        let ctx = ChunkContext {
            id: BatchId {
                stream: self.stream,
                seq: self.calls * REQUESTS_PER_CHUNK,
            },
            file,
            first_record,
        };
        self.calls += 1;
        e.decide(ctx, store, opts, state)
            .map_err(|e| e.to_string())?;
        let how = Rendering {
            name,
            file,
            first_record,
            dd: false,
            mark: false,
            // Python returns every document's cluster.
            clusters: true,
            gzip: false,
        };
        e.render(&chunk, format, opts, &how)
            .map_err(|e| e.to_string())
    }
}
