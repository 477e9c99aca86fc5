//! The hash phase: every owned input planned, its keys written to sorted runs by
//! partition.

use super::*;
use webdedup_formats::chunk::BufferPool;

/// A hash-phase task about to run, in exact and MinHash mode alike: its folder
/// and the input files.
pub(super) struct HashTask {
    pub out: TaskDir,
    pub files: Vec<InputFile>,
    /// The task's number: it owns the files [`BatchConfig::owner`] gives it.
    pub task: usize,
}

impl HashTask {
    /// None when the task already finished.
    pub fn start(cfg: &BatchConfig, task: usize) -> Result<Option<HashTask>> {
        let Some(out) = TaskDir::start(hash_dir(&cfg.work), task)? else {
            return Ok(None);
        };
        let files = cfg.files()?;
        Ok(Some(HashTask { out, files, task }))
    }

    /// Publishes the task's files, written in `staging`.
    pub fn publish(&self, staging: &Staging) -> Result<bool> {
        fault::hit("batch-hash-written");
        self.out.publish(staging, "batch-hash-published")
    }
}

pub(super) fn hash_dir(work: &Path) -> PathBuf {
    work.join("hash")
}

pub(super) fn run_name(stage: Stage, part: u32) -> String {
    format!("{}-{part}.run", stage.name())
}

impl HashTask {
    /// Plans every chunk of the input files the task owns, in input order, and
    /// hands each plan to `visit` with its file's rank, the chunk's index in the
    /// file, and the chunk as read (its bytes and format); the plans are then kept in `plans` (as far as its budget goes)
    /// for a filter phase in the same process. A file that cannot be read is
    /// reported and skipped (its filter task writes nothing for it).
    pub fn plan_owned(
        &self,
        cfg: &BatchConfig,
        report: &(dyn Fn(&str) + Sync),
        plans: Option<&PlanCache>,
        mut visit: impl FnMut(u32, u64, &ChunkPlan, &[u8], &DocFormat) -> Result<()>,
    ) -> Result<()> {
        // Planned as the filter phase's engine plans (`--mark`'s characters too
        // when the plans are kept for a filter with `--mark`).
        let marks = plans.is_some_and(|c| c.marks());
        let mut planner =
            Planner::new(&cfg.options).with_marks(crate::engine::plans_marks(&cfg.options, marks));
        let mut plan = ChunkPlan::default();
        // Chunk buffers reused from chunk to chunk and file to file (a fresh one
        // a chunk was grown by doubling and copying, and its pages faulted in).
        let pool = BufferPool::new(1);
        for (rank, f) in self
            .files
            .iter()
            .enumerate()
            .filter(|(r, _)| cfg.owner(*r) == self.task)
        {
            let (format, chunks) =
                match open_doc_reader(f, &cfg.read, None, cfg.chunk_bytes, cfg.max_line_bytes) {
                    Ok(r) => r,
                    Err(e) => {
                        report(&format!("{}: cannot read: {e}", f.path.display()));
                        continue;
                    }
                };
            let mut chunks = chunks.with_pool(pool.clone());
            let mut chunk_index = 0u64;
            while let Some(chunk) = chunks.next_chunk() {
                planner.plan_as(&format, &chunk, &mut plan);
                visit(rank as u32, chunk_index, &plan, &chunk.data, &format)?;
                if let Some(cache) = plans {
                    // The next plan sized as this one, not grown from nothing.
                    let next = plan.sized_alike();
                    cache.put(
                        rel_bytes(&f.rel),
                        chunk_index,
                        &chunk.data,
                        std::mem::replace(&mut plan, next),
                    );
                }
                pool.give(chunk.data);
                chunk_index += 1;
            }
        }
        Ok(())
    }
}

/// The hash phase for one task; returns false if it had already finished.
pub fn hash(cfg: &BatchConfig, task: usize, report: &(dyn Fn(&str) + Sync)) -> Result<bool> {
    hash_keeping_plans(cfg, task, report, None)
}

/// [`hash`] that also keeps the chunk plans in `plans` (as far as its budget
/// goes), so a [`filter_with_plans`] in the same process need not plan them again.
pub fn hash_keeping_plans(
    cfg: &BatchConfig,
    task: usize,
    report: &(dyn Fn(&str) + Sync),
    plans: Option<&PlanCache>,
) -> Result<bool> {
    cfg.prepare()?;
    if cfg.options.minhash().is_some() {
        return minhash::hash(cfg, task, report, plans);
    }
    let Some(job) = HashTask::start(cfg, task)? else {
        return Ok(false);
    };
    if let Some(params) = cfg.options.substr() {
        return super::substr::hash(cfg, params, &job, report, plans);
    }
    let mut runs: Vec<Vec<Vec<Rec>>> = vec![vec![Vec::new(); cfg.partitions as usize]; 3];
    let (mut doc_index, mut long_index) = (0u32, 0u32);
    job.plan_owned(cfg, report, plans, |rank, chunk_index, plan, _, _| {
        if chunk_index == 0 {
            (doc_index, long_index) = (0, 0);
        }
        // Bad records ask no key (they are not documents).
        for d in plan.docs.iter().filter(|d| d.kind == DocKind::Document) {
            let mut push = |stage: Stage, key: u64, seq: u32| {
                runs[stage as usize][cfg.partition(key) as usize].push(Rec {
                    key,
                    file: rank,
                    seq,
                    doc: doc_index,
                })
            };
            // Documents without URL or title ask no URL+title key; with
            // `--doc-check none` no document asks either kind.
            if cfg.options.doc_check != DocCheck::None {
                if d.has_url_title {
                    push(Stage::UrlTitle, d.url_title_key, doc_index);
                }
                push(Stage::Docs, d.doc_key, doc_index);
            }
            for p in plan.paras[d.paras.clone()].iter().filter(|p| p.long) {
                push(Stage::Paras, p.key, long_index);
                long_index += 1;
            }
            doc_index += 1;
        }
        Ok(())
    })?;
    let staging = job.out.staging()?;
    for stage in EXACT_STAGES {
        for (p, recs) in runs[stage as usize].iter_mut().enumerate() {
            recs.sort_unstable();
            write_atomic(
                &staging.path().join(run_name(stage, p as u32)),
                &encode(recs),
            )?;
        }
    }
    job.publish(&staging)
}
