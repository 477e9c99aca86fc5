//! Substring mode (`--substr`) in batch mode: the decisions of `dedup --substr`.
//!
//! Stream mode asks every live document's picked window keys, in document order,
//! whatever the answers before (`policy::substr::decide`): so, as exact mode's
//! paragraph stage without a stage before it, one resolve stage (`windows`)
//! finds each key's first occurrence, and the filter phase's store answers from
//! it (a key asked again, in the same document too, is seen).
//!
//! Feedback mode (`-f`) also names each removed span's first copy. The hash phase
//! then places each window by its location (the document's line, the window's
//! first character: input order within a file, as the runs are sorted), and
//! resolve writes, for each filter task, the first copy of every key its files
//! ask again ([`Originals`]): what stream mode's store answers a located insert.

use super::*;
use crate::options::SubstrParams;
use crate::policy::file_id;
use crate::policy::substr::decide::{doc_units, first_copy, pick_windows, window_char};

/// The hash phase of substring mode, `job` started: every live document's picked
/// windows, as the engine picks them, with their positions (file rank; the
/// window's number in its file, or with `-f` its line and character).
pub(super) fn hash(
    cfg: &BatchConfig,
    params: SubstrParams,
    job: &HashTask,
    report: &(dyn Fn(&str) + Sync),
    plans: Option<&PlanCache>,
) -> Result<bool> {
    let located = cfg.options.feedback();
    let mut runs: Vec<Vec<Rec>> = vec![Vec::new(); cfg.partitions as usize];
    let (mut windows, mut picked) = (Vec::new(), Vec::new());
    let mut number = 0u32;
    job.plan_owned(cfg, report, plans, |rank, chunk_index, plan, _, _| {
        if chunk_index == 0 {
            number = 0;
        }
        for d in plan.docs.iter().filter(|d| d.live()) {
            let units = doc_units(plan, d.paras.clone());
            pick_windows(plan, units.clone(), params, &mut windows, &mut picked);
            for &p in &picked {
                let key = windows[p as usize];
                // A location keeps only the low half of a line (`first_copy`).
                let (seq, doc) = match located {
                    true => (d.line as u32, window_char(plan, units.clone(), p)),
                    false => (number, 0),
                };
                number = number.wrapping_add(1);
                runs[cfg.partition(key) as usize].push(Rec {
                    key,
                    file: rank,
                    seq,
                    doc,
                });
            }
        }
        Ok(())
    })?;
    let staging = job.out.staging()?;
    for (p, recs) in runs.iter_mut().enumerate() {
        recs.sort_unstable();
        write_atomic(
            &staging.path().join(run_name(Stage::Windows, p as u32)),
            &encode(recs),
        )?;
    }
    job.publish(&staging)
}

/// `-f` with a store of earlier runs would need their keys' first copies, which a
/// store directory's snapshot does not hold: refused rather than named `-`.
pub(super) fn refuse_located_store(cfg: &BatchConfig) -> Result<()> {
    if cfg.options.feedback() {
        bail!("batch mode's -f names first copies within one run: --store (a store of earlier runs) is not supported with -f yet; use `dedup --substr -f --store DIR`");
    }
    Ok(())
}

/// A resolve task's first copies of the keys asked again, per filter task (the
/// owner of the asking file): `orig-P-T` in the stage's task folder, one record a
/// key, `Rec { key, file: first copy's file rank, seq: its line, doc: its
/// character }`.
pub(super) struct Originals {
    per_task: Vec<Vec<Rec>>,
}

fn originals_name(part: u32, task: usize) -> String {
    format!("orig-{part}-{task}")
}

impl Originals {
    /// Some in substring mode's feedback (the `windows` stage).
    pub fn new(cfg: &BatchConfig, stage: Stage) -> Option<Originals> {
        (stage == Stage::Windows && cfg.options.feedback()).then(|| Originals {
            per_task: vec![Vec::new(); cfg.task_count],
        })
    }

    /// A new key's records (`asks`, sorted: the first is its first copy): its
    /// first copy, for the filter task of every file that asks it again.
    pub fn add(&mut self, cfg: &BatchConfig, asks: &[Rec]) {
        let first = asks[0];
        for r in &asks[1..] {
            let list = &mut self.per_task[cfg.owner(r.file as usize)];
            // Keys come in order: a key already listed for this task is last.
            if list.last().is_none_or(|l| l.key != first.key) {
                list.push(first);
            }
        }
    }

    /// Writes partition `part`'s lists into the task's staging folder `dir`.
    pub fn write(&self, dir: &Path, part: u32) -> Result<()> {
        for (t, recs) in self.per_task.iter().enumerate() {
            write_atomic(&dir.join(originals_name(part, t)), &encode(recs))?;
        }
        Ok(())
    }
}

/// Filter task `task`'s first copies (every partition's list for it), as the
/// locations stream mode's store gives (`first_copy` of the file's id).
pub(super) fn originals(
    cfg: &BatchConfig,
    task: usize,
    files: &[InputFile],
) -> Result<HashMap<u64, Location>> {
    let dir = verdict_dir(&cfg.work, Stage::Windows);
    let mut recs = Vec::new();
    for p in 0..cfg.partitions {
        let owner = format!("task-{}", cfg.owner(p as usize));
        decode(&dir.join(owner).join(originals_name(p, task)), &mut recs)?;
    }
    recs.iter()
        .map(|r| {
            let f = files.get(r.file as usize).ok_or_else(|| {
                anyhow!(
                    "{}: file rank {} of {} files: the input differs from the hash phase's",
                    dir.display(),
                    r.file,
                    files.len()
                )
            })?;
            let id = file_id(rel_bytes(&f.rel));
            Ok((r.key, first_copy(id, u64::from(r.seq), r.doc)))
        })
        .collect()
}
