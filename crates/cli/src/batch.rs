//! `webdedup batch ...`: deterministic batch mode (see `webdedup_dedup::batch`).

use crate::conventions::{Reporting, Threads};
use crate::flags::defs::{
    BlocksFlag, ChunkBytesFlag, FeedbackFlag, MarkFlag, MaxLineBytesFlag, NormalizeFlag,
    OutputFlags, PiecesFlags, SubstrFlag, MINHASH_PINS_NORMALIZATION, SUBSTR_PINS_NORMALIZATION,
};
use crate::flags::inputs::{Inputs, INPUTS};
use crate::read_args::ReadArgs;
use crate::{EXIT_INPUT_PROBLEMS, EXIT_OK};
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use webdedup_dedup::batch::{self, BatchConfig, MinHashStage, Stage};
use webdedup_dedup::{Mode, Options, PolicyChoices, RunConfig, RunStats};
use webdedup_formats::summary::{thousands, Outcome};
use webdedup_text::shown::escape_controls;

#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Phase 1, one task: plan this task's share of the input files and write every
    /// key with its position as sorted runs, one per partition.
    Hash(TaskArgs),
    /// Phase 2, one task and stage (`url-title`, then `docs`, then `paras`): the first
    /// occurrence of every key of this task's partitions.
    Resolve(ResolveArgs),
    /// Phase 3, one task: write this task's share of the outputs, the same bytes
    /// as `webdedup dedup`.
    Filter(FilterArgs),
    /// Fold the run's new keys into a store directory (`--store` of `dedup`).
    Publish(PublishArgs),
    /// Every phase locally, tasks on threads.
    Run(RunArgs),
    /// ExactSubstr's rule: strike every byte span of at least --length bytes
    /// that occurs twice or more in the inputs (or all copies but the first),
    /// found with a suffix array over all the texts (docs/substr.md).
    Substr(crate::substr::SubstrArgs),
}

#[derive(Debug, Args, Clone)]
// The MinHash settings mean something only with --minhash.
#[command(
    mut_arg(INPUTS, |a| a.help("Inputs: directories (searched recursively) or files, as for `webdedup dedup` (not `-`: every phase reads the input again)")),
    mut_arg("shingles", |a| a.requires("minhash")),
    mut_arg("shingle_norm", |a| a.requires("minhash")),
    mut_arg("hashes", |a| a.requires("minhash")),
    mut_arg("bands", |a| a.requires("minhash")),
    mut_arg("rows", |a| a.requires("minhash")),
    mut_arg("verify", |a| a.requires("minhash")),
    mut_arg("verify_hashes", |a| a.requires("minhash")),
    mut_arg("keep", |a| a.requires("minhash")),
    mut_arg("clusters", |a| a.requires("minhash")),
    mut_arg("substr", |a| a.conflicts_with("minhash")),
    mut_arg("feedback", |a| a.requires("substr"))
)]
pub struct Common {
    #[command(flatten)]
    input: Inputs,
    /// Work directory shared by all tasks (runs, verdicts, completion markers).
    #[arg(short, long, value_name = "DIR")]
    work: PathBuf,
    /// Number of tasks of each phase (fixed for a work directory; `publish` reads it
    /// from the work directory).
    #[arg(long, default_value_t = 1, value_name = "N")]
    task_count: usize,
    /// Hash partitions (groups of blocks), spread over the resolve tasks.
    #[arg(long, default_value_t = webdedup_dedup::batch::DEFAULT_PARTITIONS, value_name = "N")]
    partitions: u32,
    #[command(flatten)]
    blocks: BlocksFlag,
    #[command(flatten)]
    normalize: NormalizeFlag,
    #[command(flatten)]
    pieces: PiecesFlags,
    #[command(flatten)]
    chunk_bytes: ChunkBytesFlag,
    #[command(flatten)]
    max_line_bytes: MaxLineBytesFlag,
    #[command(flatten)]
    read: ReadArgs,
    /// MinHash mode: the decisions of `webdedup minhash` (near-duplicate documents by
    /// LSH band keys) instead of exact dedup's; resolve stages `bands`, then `pick`.
    #[arg(long)]
    minhash: bool,
    #[command(flatten)]
    minhash_settings: crate::minhash::MinHashSettings,
    /// Substring mode: the decisions of `webdedup dedup --substr` (repeated spans
    /// removed inside documents); one resolve stage, `windows`.
    #[command(flatten)]
    substr: SubstrFlag,
    #[command(flatten)]
    feedback: FeedbackFlag,
}

#[derive(Debug, Args)]
pub struct TaskArgs {
    #[command(flatten)]
    common: Common,
    /// This task's index, from 0 (Slurm: $SLURM_ARRAY_TASK_ID).
    #[arg(long, value_name = "I")]
    task_index: usize,
    #[command(flatten)]
    report: Reporting,
}

#[derive(Debug, Args)]
pub struct ResolveArgs {
    #[command(flatten)]
    task: TaskArgs,
    /// `url-title`, `docs` or `paras` (each needs the one before finished); with
    /// `--minhash`: `bands`, then `pick` (one task: task 0); with `--substr`:
    /// `windows`.
    #[arg(long)]
    stage: StageName,
    /// The store directory of earlier runs: its keys are always seen.
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FilterArgs {
    #[command(flatten)]
    task: TaskArgs,
    #[command(flatten)]
    out: OutputFlags,
    #[command(flatten)]
    mark: MarkFlag,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    #[command(flatten)]
    common: Common,
    /// The store directory to fold the run's new keys into (`DIR/store.snap`,
    /// created if missing), as `dedup --store DIR` keeps it.
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    #[command(flatten)]
    report: Reporting,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    out: OutputFlags,
    #[command(flatten)]
    mark: MarkFlag,
    /// One task of each phase per thread unless --task-count is given.
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    report: Reporting,
    /// Store directory of earlier runs: read by resolve, updated at the end.
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Memory for the hash phase's plans, kept for the filter phase so it need not
    /// parse the input again (about 0.6x the input's size keeps them all; chunks
    /// past the budget are parsed twice). 0 turns it off.
    #[arg(long, default_value_t = 2048, value_name = "MIB")]
    plan_cache_mib: usize,
}

/// A resolve stage: exact mode's or MinHash mode's.
#[derive(Clone, Copy, Debug)]
pub enum StageName {
    Exact(Stage),
    MinHash(MinHashStage),
}

impl std::str::FromStr for StageName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.parse()
            .map(StageName::Exact)
            .or_else(|_| s.parse().map(StageName::MinHash))
            .map_err(|_| {
                format!("unknown stage '{s}' (expected url-title, docs or paras; with --minhash: bands or pick; with --substr: windows)")
            })
    }
}

impl StageName {
    fn name(self) -> &'static str {
        match self {
            StageName::Exact(s) => s.name(),
            StageName::MinHash(s) => s.name(),
        }
    }
}

impl BatchCommand {
    /// The input directory (or file) and the work directory of the task.
    pub fn input_and_work(&self) -> (&[PathBuf], &Path) {
        let c = match self {
            BatchCommand::Substr(s) => return (&s.input.paths, &s.output),
            BatchCommand::Hash(t) => &t.common,
            BatchCommand::Resolve(r) => &r.task.common,
            BatchCommand::Filter(f) => &f.task.common,
            BatchCommand::Publish(p) => &p.common,
            BatchCommand::Run(r) => &r.common,
        };
        (&c.input.paths, &c.work)
    }
}

fn config(c: &Common, task_count: usize) -> Result<BatchConfig> {
    if c.read.wikilinks() {
        bail!(
            "batch mode reads documents (verticals, JSON Lines, Parquet, WET), not wikilinks rows"
        );
    }
    if c.minhash {
        c.normalize.refuse_for(MINHASH_PINS_NORMALIZATION)?;
    }
    if c.substr.substr.is_some() {
        c.normalize.refuse_for(SUBSTR_PINS_NORMALIZATION)?;
    }
    Ok(BatchConfig {
        inputs: c.input.paths.clone(),
        work: c.work.clone(),
        task_count,
        partitions: c.partitions,
        blocks: c.blocks.blocks,
        options: Options {
            // MinHash settings are checked by their own conversion; the rest
            // by the one every command shares.
            mode: match (c.minhash, c.substr.substr) {
                (true, _) => Mode::MinHash(c.minhash_settings.options()?),
                (false, Some(params)) => Mode::Substr {
                    params,
                    feedback: c.feedback.feedback,
                },
                (false, None) => Mode::default(),
            },
            ..PolicyChoices {
                normalization: Some(c.normalize.normalization),
                min_para_chars: Some(c.pieces.min_para_chars),
                doc_check: Some(c.pieces.doc_check),
                ..Default::default()
            }
            .options()
            .map_err(anyhow::Error::msg)?
        },
        read: c.read.settings()?,
        chunk_bytes: c.chunk_bytes.get(),
        max_line_bytes: c.max_line_bytes.get(),
        keep: c.minhash_settings.keep.clone(),
    })
}

fn run_config(c: &Common, o: &OutputFlags, mark: &MarkFlag) -> Result<RunConfig> {
    let b = config(c, 1)?;
    let mut r = RunConfig::new(PathBuf::new(), &o.output);
    r.inputs = c.input.paths.clone();
    r.options = b.options;
    r.read = b.read;
    r.dd = o.dd;
    r.compress = o.compress.fixed;
    r.compress_auto = o.compress.auto;
    r.chunk_bytes = c.chunk_bytes.get();
    r.max_line_bytes = c.max_line_bytes.get();
    r.sync = true;
    r.clusters = c.minhash && c.minhash_settings.clusters;
    r.mark = mark.mark;
    Ok(r)
}

fn check_task(t: &TaskArgs) -> Result<BatchConfig> {
    let cfg = config(&t.common, t.common.task_count)?;
    if t.task_index >= cfg.task_count {
        bail!(
            "--task-index {} is not below --task-count {}",
            t.task_index,
            cfg.task_count
        );
    }
    Ok(cfg)
}

fn status(stats: &[RunStats]) -> u8 {
    if stats.iter().any(|s| s.had_input_problems()) {
        EXIT_INPUT_PROBLEMS
    } else {
        EXIT_OK
    }
}

/// A phase command's outcome: what it did (its summary line unless `-q`, its
/// figures for `--json`).
fn phase_outcome(
    r: &Reporting,
    what: &str,
    task: Option<usize>,
    done_now: bool,
    status: u8,
) -> Result<u8> {
    let mut o = Outcome::new(&format!("batch {what}"));
    if let Some(t) = task {
        o.note(format!("task {t}")).figure("task", t as u64);
    }
    o.note(if done_now { "done" } else { "already finished" })
        .figure("already_finished", !done_now);
    o.status = i32::from(status);
    r.finish(&o)
}

pub fn run(cmd: &BatchCommand) -> Result<u8> {
    // Problem lines name input files: never raw control bytes.
    let report = |line: &str| eprintln!("{}", escape_controls(line));
    // `batch run` has the work directory to itself; the phase commands share it
    // (a job array's tasks run at once). `substr` has no work directory.
    let work = cmd.input_and_work().1;
    let _lock = match cmd {
        BatchCommand::Substr(_) => None,
        _ => Some(batch::lock_work(work, matches!(cmd, BatchCommand::Run(_)))?),
    };
    match cmd {
        BatchCommand::Substr(s) => crate::substr::run(s),
        BatchCommand::Hash(t) => {
            let cfg = check_task(t)?;
            t.report.check_json_target(false)?;
            let problems = Counted::new(&report);
            let done = {
                let _bar = t.report.bytes_progress("batch hash", &cfg.inputs, 1);
                batch::hash(&cfg, t.task_index, &|l: &str| problems.report(l))?
            };
            // Only `--keep`'s problems are new here (the filter phase reports the rest).
            let code = match cfg.keep.ranks() {
                true => problems.status(),
                false => EXIT_OK,
            };
            phase_outcome(&t.report, "hash", Some(t.task_index), done, code)
        }
        BatchCommand::Resolve(r) => {
            let cfg = check_task(&r.task)?;
            let (task, store) = (r.task.task_index, r.store.as_deref());
            let done = match r.stage {
                StageName::Exact(stage) => batch::resolve(&cfg, stage, task, store)?,
                // One task picks; the others of a job array have nothing to do.
                StageName::MinHash(MinHashStage::Pick) if task != 0 => {
                    if !r.task.report.quiet {
                        eprintln!(
                            "resolve --stage pick is one task (task 0): task {task} has nothing to do"
                        );
                    }
                    return Ok(EXIT_OK);
                }
                StageName::MinHash(stage) => batch::resolve_minhash(&cfg, stage, task, store)?,
            };
            let what = format!("resolve --stage {}", r.stage.name());
            phase_outcome(&r.task.report, &what, Some(task), done, EXIT_OK)
        }
        BatchCommand::Filter(f) => {
            let cfg = check_task(&f.task)?;
            f.task.report.check_json_target(false)?;
            let stats = {
                let _bar = f.task.report.bytes_progress("batch filter", &cfg.inputs, 1);
                batch::filter(
                    &cfg,
                    &run_config(&f.task.common, &f.out, &f.mark)?,
                    f.task.task_index,
                    &report,
                )?
            };
            let code = stats
                .as_ref()
                .map_or(EXIT_OK, |s| status(std::slice::from_ref(s)));
            phase_outcome(
                &f.task.report,
                "filter",
                Some(f.task.task_index),
                stats.is_some(),
                code,
            )
        }
        BatchCommand::Publish(p) => {
            // The task count is the work directory's: publish reads every task's
            // verdicts, so telling it again (or differently) is never needed.
            let tasks = match batch::recorded_task_count(&p.common.work)? {
                Some(n) => {
                    if p.common.task_count != 1 && p.common.task_count != n {
                        eprintln!(
                            "webdedup batch publish: note: {} was made with --task-count {n}; \
                             publish uses that (--task-count {} ignored, and not needed)",
                            p.common.work.display(),
                            p.common.task_count
                        );
                    }
                    n
                }
                None => p.common.task_count,
            };
            let cfg = config(&p.common, tasks)?;
            let keys = batch::publish(&cfg, &p.store)?;
            let mut o = Outcome::new("batch publish");
            o.note(format!("store {}", p.store.display()))
                .figure("store", p.store.display().to_string())
                .count("keys", keys, "key", "keys");
            p.report.finish(&o)
        }
        BatchCommand::Run(a) => run_all(a, &report),
    }
}

fn run_all(a: &RunArgs, report: &(dyn Fn(&str) + Sync)) -> Result<u8> {
    let threads = a.threads.count();
    let tasks = if a.common.task_count > 1 {
        a.common.task_count
    } else {
        threads
    };
    let cfg = config(&a.common, tasks)?;
    cfg.prepare()?;
    a.report.check_json_target(false)?;
    if a.store.is_some() {
        batch::check_store(&cfg)?;
    }
    // Under the exclusive lock no other attempt runs: whatever temporaries are
    // there, dead attempts left (they would hold disk space for ever).
    batch::sweep_temporaries(&cfg.work)?;
    // The hash and the filter phases read the inputs.
    let bar = a
        .report
        .bytes_progress("batch run", &a.common.input.paths, 2);
    let started = std::time::Instant::now();
    // Each phase: its tasks on `threads` threads, taking task indexes in turn.
    let phase = |f: &(dyn Fn(usize) -> Result<Option<RunStats>> + Sync)| -> Result<Vec<RunStats>> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let out = parking_lot::Mutex::new((Vec::new(), None::<anyhow::Error>));
        std::thread::scope(|s| {
            for _ in 0..threads.min(tasks) {
                s.spawn(|| loop {
                    let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if t >= tasks {
                        break;
                    }
                    match f(t) {
                        Ok(Some(st)) => out.lock().0.push(st),
                        Ok(None) => {}
                        Err(e) => {
                            out.lock().1.get_or_insert(e);
                        }
                    }
                });
            }
        });
        let (stats, err) = out.into_inner();
        match err {
            Some(e) => Err(e),
            None => Ok(stats),
        }
    };
    // The hash phase's plans, kept for the filter phase (it would plan every chunk
    // again): bounded, past the budget chunks are planned twice.
    let plans = webdedup_dedup::plan::PlanCache::new(a.plan_cache_mib << 20).for_marks(a.mark.mark);
    let mut times = Vec::new();
    let mut lap = std::time::Instant::now();
    let mut mark = |name: &'static str| {
        times.push(format!("{name} {:.3} s", lap.elapsed().as_secs_f64()));
        lap = std::time::Instant::now();
    };
    // What the hash phase reports are input problems (an unreadable file, a
    // document without the `--keep` field's value): with `--keep` they set the
    // exit status (the filter phase reports the others again).
    let hash_problems = Counted::new(report);
    phase(&|t| {
        batch::hash_keeping_plans(&cfg, t, &|l: &str| hash_problems.report(l), Some(&plans))
            .map(|_| None)
    })?;
    mark("hash");
    if cfg.options.minhash().is_some() {
        let store = a.store.as_deref();
        phase(&|t| batch::resolve_minhash(&cfg, MinHashStage::Bands, t, store).map(|_| None))?;
        batch::resolve_minhash(&cfg, MinHashStage::Pick, 0, store)?;
    } else {
        for &stage in cfg.stages() {
            phase(&|t| batch::resolve(&cfg, stage, t, a.store.as_deref()).map(|_| None))?;
        }
    }
    mark("resolve");
    let run = run_config(&a.common, &a.out, &a.mark)?;
    let stats = phase(&|t| batch::filter_with_plans(&cfg, &run, t, report, Some(&plans)))?;
    mark("filter");
    let (kept, reused) = plans.counts();
    times.push(format!("{reused} of {kept} kept plans reused"));
    drop(plans);
    if let Some(store) = &a.store {
        let keys = batch::publish(&cfg, store)?;
        eprintln!("store {}: {keys} keys", store.display());
    }
    drop(bar);
    let work = batch::work_bytes(&cfg.work);
    let sum = |f: fn(&RunStats) -> u64| stats.iter().map(f).sum::<u64>();
    let secs = started.elapsed().as_secs_f64();
    let mut o = Outcome::new("batch run");
    o.count("tasks", tasks as u64, "task", "tasks")
        .count("files", sum(|s| s.files), "file", "files")
        .count(
            "documents_read",
            sum(|s| s.documents_read),
            "document read",
            "documents read",
        )
        .number(sum(|s| s.documents_kept), "kept")
        .figure("documents_kept", sum(|s| s.documents_kept))
        .note(format!(
            "{} dropped",
            thousands(sum(|s| s.documents_dropped))
        ))
        .figure("documents_dropped", sum(|s| s.documents_dropped))
        .note(format!(
            "{} of {} paragraphs retained",
            thousands(sum(|s| s.paragraphs_retained)),
            thousands(sum(|s| s.paragraphs_read))
        ))
        .figure("paragraphs_read", sum(|s| s.paragraphs_read))
        .figure("paragraphs_retained", sum(|s| s.paragraphs_retained));
    if cfg.options.substr().is_some() {
        // `dedup --substr`'s figures, by the same names.
        let spans = sum(|s| s.spans_removed.unwrap_or(0));
        let bytes = sum(|s| s.span_bytes_removed.unwrap_or(0));
        crate::summaries::spans_removed_note(&mut o, spans, bytes);
        o.figure("spans_removed", spans)
            .figure("span_bytes_removed", bytes);
    }
    o.figure("bytes_in", sum(|s| s.bytes_in))
        .figure("bytes_out", sum(|s| s.bytes_out))
        .note(format!("{secs:.3} s ({})", times.join(", ")))
        .figure("seconds", secs)
        .note(format!("work directory {} bytes", thousands(work)))
        .figure("work_bytes", work);
    let code = match cfg.keep.ranks() {
        true => status(&stats).max(hash_problems.status()),
        false => status(&stats),
    };
    o.status = i32::from(code);
    a.report.finish(&o)?;
    Ok(code)
}

/// A problem reporter that counts what it reports (the exit status).
struct Counted<'a> {
    inner: &'a (dyn Fn(&str) + Sync),
    count: std::sync::atomic::AtomicU64,
}

impl<'a> Counted<'a> {
    fn new(inner: &'a (dyn Fn(&str) + Sync)) -> Self {
        Counted {
            inner,
            count: Default::default(),
        }
    }

    fn report(&self, line: &str) {
        self.count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (self.inner)(line)
    }

    fn status(&self) -> u8 {
        match self.count.load(std::sync::atomic::Ordering::Relaxed) {
            0 => EXIT_OK,
            _ => EXIT_INPUT_PROBLEMS,
        }
    }
}
