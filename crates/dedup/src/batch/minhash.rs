//! MinHash in batch mode (`webdedup batch ... --minhash`): the decisions of
//! `webdedup minhash` from tasks, equal to stream mode's outputs byte for byte.
//!
//! Stream mode's rule is sequential: in input order, a document is dropped when one
//! of its band keys was inserted by an earlier *kept* document (with `--verify J`
//! only if their estimated Jaccard similarity is at least J), and only kept
//! documents insert. Whether a document is kept depends on earlier decisions, so
//! it does not split by key as exact mode does. But a band key that occurs once in
//! the whole input can neither match nor be matched: only documents with a band key
//! shared by another document (the *candidates*) need the sequential walk, and only
//! their shared keys. So:
//!
//! 1. **hash** (task I of N): the files of rank `r ≡ I (mod N)` are planned as
//!    stream mode plans them; every band key is written with its position (file
//!    rank, document index, band index) into sorted runs per partition, and every
//!    document's line, id and signature bytes into a document table.
//! 2. **resolve `--stage bands`** (task J, partitions `p ≡ J (mod N)`, in
//!    parallel, memory of one partition as exact mode's resolve): the records of the
//!    keys that occur at least twice.
//! 3. **resolve `--stage pick`** (one task): the shared records of all partitions,
//!    in (file, document, band) order, and the table entries of the documents they
//!    name; it walks them in input order (or, with `--keep`, in the policy's order:
//!    [`keep`](super::keep)) with a map (shared key → first kept document), which
//!    is stream mode's store restricted to the keys that matter, and writes every
//!    dropped document with its original's name and Jaccard estimate. Its memory is proportional to the near-duplicate part of the input
//!    (documents sharing a band), not to the input.
//! 4. **filter** (task J): its files through the stream runner, deciding from the
//!    pick's list (`policy::minhash::Decided`), rendered by stream mode's code.

use super::keep::{Keep, Rank};
use super::*;
use crate::policy::minhash::{pick_original, Decided};
use std::io::BufWriter;
use webdedup_minhash::estimate_jaccard_low8;

/// MinHash mode's resolve stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinHashStage {
    /// Per partition, in parallel: the band keys that occur more than once.
    Bands,
    /// One task: the sequential walk over the candidates.
    Pick,
}

webdedup_text::named_choices! {
    MinHashStage, "MinHash stage", quote "", {
        Bands => "bands",
        Pick => "pick",
    }
}

const BANDS_RUN: &str = "bands";
const DOCS_TABLE: &str = "minhash-docs";
const DOCS_MAGIC: &[u8; 8] = b"WDDMHDT1";
const DROPS_MAGIC: &[u8; 8] = b"WDDMHDR1";

fn bands_run(part: u32) -> String {
    format!("{BANDS_RUN}-{part}.run")
}

fn stage_dir(work: &Path, stage: MinHashStage) -> PathBuf {
    work.join("verdicts")
        .join(format!("minhash-{}", stage.name()))
}

/// A byte sink that also hashes what it writes (the table's checksum).
struct Hashed<W: Write> {
    w: W,
    h: xxhash_rust::xxh3::Xxh3,
}

impl<W: Write> Hashed<W> {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.h.update(b);
        self.w.write_all(b)?;
        Ok(())
    }
    fn varint(&mut self, v: u64) -> Result<()> {
        let mut b = Vec::with_capacity(10);
        put_varint(&mut b, v);
        self.put(&b)
    }
    fn finish(mut self) -> Result<W> {
        let sum = self.h.digest();
        self.w.write_all(&sum.to_le_bytes())?;
        Ok(self.w)
    }
}

/// A document of the table: where it starts, its id, the low bytes of its
/// signature, and its value under the `--keep` policy (None: it has none).
struct DocEntry {
    line: u64,
    id: Option<Box<str>>,
    sig: Box<[u8]>,
    rank: Option<Rank>,
}

/// Input problems of the `--keep` field, reported as `FILE:LINE: reason`, the
/// first [`KEEP_PROBLEMS_SHOWN`] of a file, then how many more.
struct KeepProblems<'a> {
    report: &'a (dyn Fn(&str) + Sync),
    file: Option<u32>,
    in_file: u64,
}

const KEEP_PROBLEMS_SHOWN: u64 = 20;

impl KeepProblems<'_> {
    fn add(&mut self, files: &[InputFile], rank: u32, line: u64, keep: &Keep, why: &str) {
        if self.file != Some(rank) {
            self.flush(files);
            (self.file, self.in_file) = (Some(rank), 0);
        }
        self.in_file += 1;
        if self.in_file <= KEEP_PROBLEMS_SHOWN {
            (self.report)(&format!(
                "{}:{line}: --keep {keep}: {why}; ranked after every document with a value",
                files[rank as usize].path.display()
            ));
        }
    }

    fn flush(&mut self, files: &[InputFile]) {
        if let Some(f) = self.file {
            let hidden = self.in_file.saturating_sub(KEEP_PROBLEMS_SHOWN);
            if hidden > 0 {
                (self.report)(&format!(
                    "{}: {hidden} more input problems not shown",
                    files[f as usize].path.display()
                ));
            }
        }
    }
}

/// The hash phase of MinHash mode for one task; returns false if already finished.
pub(super) fn hash(
    cfg: &BatchConfig,
    task: usize,
    report: &(dyn Fn(&str) + Sync),
    plans: Option<&PlanCache>,
) -> Result<bool> {
    let Some(job) = HashTask::start(cfg, task)? else {
        return Ok(false);
    };
    let staging = job.out.staging()?;
    let tmp = staging.path();
    let table = tmp.join(DOCS_TABLE);
    let file = std::fs::File::create(&table)
        .with_context(|| format!("cannot create {}", table.display()))?;
    let mut docs = Hashed {
        w: BufWriter::new(file),
        h: xxhash_rust::xxh3::Xxh3::new(),
    };
    docs.put(DOCS_MAGIC)?;
    let mut runs: Vec<Vec<Rec>> = vec![Vec::new(); cfg.partitions as usize];
    let mut doc_index = 0u32;
    let mut problems = KeepProblems {
        report,
        file: None,
        in_file: 0,
    };
    job.plan_owned(
        cfg,
        report,
        plans,
        |rank, chunk_index, plan, data, format| {
            if chunk_index == 0 {
                doc_index = 0;
            }
            for d in plan.docs.iter().filter(|d| d.live()) {
                let bands = &plan.bands[d.bands.start as usize..d.bands.end as usize];
                for (b, &key) in bands.iter().enumerate() {
                    runs[cfg.partition(key) as usize].push(Rec {
                        key,
                        file: rank,
                        seq: doc_index,
                        doc: b as u32,
                    });
                }
                docs.varint(rank as u64)?;
                docs.varint(doc_index as u64)?;
                docs.varint(d.line)?;
                match &d.id {
                    Some(id) => {
                        let id = plan.meta_of(id).as_bytes();
                        docs.varint(id.len() as u64 + 1)?;
                        docs.put(id)?;
                    }
                    None => docs.varint(0)?,
                }
                // The signature is only compared with `--verify`.
                let sig = match cfg.options.minhash().and_then(|m| m.verify) {
                    Some(_) => &plan.sigs[d.sig.start as usize..d.sig.end as usize],
                    None => &[],
                };
                docs.varint(sig.len() as u64)?;
                docs.put(sig)?;
                if cfg.keep.ranks() {
                    let pieces = &plan.pieces[d.pieces.clone()];
                    let bytes = match (pieces.first(), pieces.last()) {
                        (Some(a), Some(b)) => &data[a.range.start..b.range.end],
                        _ => &[],
                    };
                    match cfg.keep.rank(format, bytes, d.text_chars) {
                        Ok(r) => {
                            docs.put(&[1])?;
                            docs.put(&r.to_le_bytes())?;
                        }
                        Err(why) => {
                            problems.add(&job.files, rank, d.line, &cfg.keep, &why);
                            docs.put(&[0])?;
                        }
                    }
                }
                doc_index += 1;
            }
            Ok(())
        },
    )?;
    problems.flush(&job.files);
    docs.finish()?
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .with_context(|| format!("cannot write {}", table.display()))?;
    for (p, recs) in runs.iter_mut().enumerate() {
        recs.sort_unstable();
        write_atomic(&tmp.join(bands_run(p as u32)), &encode(recs))?;
    }
    job.publish(&staging)
}

/// Reads a hash task's document table, keeping the documents `want` names.
fn read_docs(
    path: &Path,
    ranked: bool,
    want: &HashSet<(u32, u32)>,
    out: &mut HashMap<(u32, u32), DocEntry>,
) -> Result<()> {
    let body = &read_checked(path, DOCS_MAGIC, "MinHash document table")?[..];
    let bad = |why: &str| anyhow!("{}: {why}", path.display());
    let mut pos = 8;
    let field = |pos: &mut usize| get_varint(body, pos).map_err(|e| bad(&e.to_string()));
    while pos < body.len() {
        let at = (field(&mut pos)? as u32, field(&mut pos)? as u32);
        let line = field(&mut pos)?;
        let id_len = field(&mut pos)? as usize;
        let id = match id_len {
            0 => None,
            n => Some(
                body.get(pos..pos + n - 1)
                    .ok_or_else(|| bad("truncated id"))?,
            ),
        };
        pos += id_len.saturating_sub(1);
        let sig_len = field(&mut pos)? as usize;
        let sig = body
            .get(pos..pos + sig_len)
            .ok_or_else(|| bad("truncated signature"))?;
        pos += sig_len;
        let rank = match ranked {
            false => None,
            true => {
                let flag = *body.get(pos).ok_or_else(|| bad("truncated --keep value"))?;
                pos += 1;
                match flag {
                    0 => None,
                    1 => {
                        let b = body
                            .get(pos..pos + 16)
                            .ok_or_else(|| bad("truncated --keep value"))?;
                        pos += 16;
                        Some(Rank::from_le_bytes(b.try_into().expect("16 bytes")))
                    }
                    _ => return Err(bad("bad --keep value flag")),
                }
            }
        };
        if want.contains(&at) {
            out.insert(
                at,
                DocEntry {
                    line,
                    id: id.map(|b| Box::from(String::from_utf8_lossy(b).as_ref())),
                    sig: Box::from(sig),
                    rank,
                },
            );
        }
    }
    Ok(())
}

/// `resolve --stage bands` for one task: per partition it owns, the records of the
/// band keys that occur more than once.
pub(super) fn resolve_bands(cfg: &BatchConfig, task: usize) -> Result<bool> {
    require_markers(&hash_dir(&cfg.work), cfg.task_count, "hash")?;
    let Some(out) = TaskDir::start(stage_dir(&cfg.work, MinHashStage::Bands), task)? else {
        return Ok(false);
    };
    let staging = out.staging()?;
    let tmp = staging.path();
    let mut recs = Vec::new();
    let mut shared = Vec::new();
    for p in (0..cfg.partitions).filter(|p| cfg.owner(*p as usize) == task) {
        recs.clear();
        shared.clear();
        for t in 0..cfg.task_count {
            let run = hash_dir(&cfg.work)
                .join(format!("task-{t}"))
                .join(bands_run(p));
            decode(&run, &mut recs)?;
        }
        recs.sort_unstable();
        for group in recs.chunk_by(|a, b| a.key == b.key) {
            if group.len() > 1 {
                shared.extend_from_slice(group);
            }
        }
        write_atomic(&tmp.join(format!("shared-{p}")), &encode(&shared))?;
        fault::hit("batch-resolve-partition");
    }
    out.publish(&staging, "batch-resolve-published")
}

/// `resolve --stage pick` (one task): stream mode's sequential rule over the
/// candidates, in input order. Writes every dropped document (file rank, line) with
/// its original's name and the Jaccard estimate.
pub(super) fn resolve_pick(cfg: &BatchConfig) -> Result<bool> {
    let bands_dir = stage_dir(&cfg.work, MinHashStage::Bands);
    require_markers(&bands_dir, cfg.task_count, "resolve --stage bands")?;
    let Some(pick) = TaskDir::start(stage_dir(&cfg.work, MinHashStage::Pick), 0)? else {
        return Ok(false);
    };
    let verify = cfg.options.minhash().and_then(|m| m.verify);
    let mut recs = Vec::new();
    for p in 0..cfg.partitions {
        let owner = cfg.owner(p as usize);
        decode(
            &bands_dir
                .join(format!("task-{owner}"))
                .join(format!("shared-{p}")),
            &mut recs,
        )?;
    }
    // Input order, and a document's bands in band order (owners are tried so).
    recs.sort_unstable_by_key(|r| (r.file, r.seq, r.doc));
    let candidates: HashSet<(u32, u32)> = recs.iter().map(|r| (r.file, r.seq)).collect();
    let mut docs = HashMap::default();
    for t in 0..cfg.task_count {
        let table = hash_dir(&cfg.work)
            .join(format!("task-{t}"))
            .join(DOCS_TABLE);
        read_docs(&table, cfg.keep.ranks(), &candidates, &mut docs)?;
    }
    drop(candidates);
    let files = cfg.files()?;
    let doc = |at: &(u32, u32)| {
        docs.get(at)
            .ok_or_else(|| anyhow!("document {at:?} is not in the hash phase's tables"))
    };
    // Stream mode's name of a kept document: its id, else `REL:LINE`.
    let name_of = |at: &(u32, u32)| -> Result<String> {
        let d = doc(at)?;
        Ok(match &d.id {
            Some(id) => id.to_string(),
            None => {
                let rel = files
                    .get(at.0 as usize)
                    .ok_or_else(|| anyhow!("file rank {} is not in the input", at.0))?;
                format!("{}:{}", rel.rel.to_string_lossy(), d.line)
            }
        })
    };
    let mut owner_of: HashMap<u64, (u32, u32)> = HashMap::default();
    let mut owners: Vec<(u32, u32)> = Vec::new();
    let mut out = Hashed {
        w: Vec::new(),
        h: xxhash_rust::xxh3::Xxh3::new(),
    };
    out.put(DROPS_MAGIC)?;
    // The walk's order: the policy's preferred document first, ties in input
    // order (the groups are in input order and the sort is stable).
    let mut walk: Vec<&[Rec]> = recs
        .chunk_by(|a, b| (a.file, a.seq) == (b.file, b.seq))
        .collect();
    if cfg.keep.ranks() {
        // (A document missing from the tables is an error at its turn below.)
        walk.sort_by_key(|g| {
            std::cmp::Reverse(docs.get(&(g[0].file, g[0].seq)).and_then(|d| d.rank))
        });
    }
    for group in walk {
        let here = (group[0].file, group[0].seq);
        owners.clear();
        for r in group {
            if let Some(&o) = owner_of.get(&r.key) {
                if !owners.contains(&o) {
                    owners.push(o);
                }
            }
        }
        let sig = &doc(&here)?.sig;
        // As stream mode: an estimate needs both signatures (kept only with --verify).
        let estimate = |o: &(u32, u32)| -> Result<Option<f64>> {
            let theirs = &doc(o)?.sig;
            Ok((theirs.len() == sig.len() && !sig.is_empty())
                .then(|| estimate_jaccard_low8(sig, theirs)))
        };
        let verdict = pick_original(&owners, verify, estimate)?;
        match verdict {
            Some((o, jaccard)) => {
                out.varint(here.0 as u64)?;
                out.varint(doc(&here)?.line)?;
                let name = name_of(&o)?;
                out.varint(name.len() as u64)?;
                out.put(name.as_bytes())?;
                match jaccard {
                    Some(j) => {
                        out.put(&[1])?;
                        out.put(&j.to_le_bytes())?;
                    }
                    None => out.put(&[0])?,
                }
            }
            None => {
                for r in group {
                    owner_of.entry(r.key).or_insert(here);
                }
            }
        }
    }
    let bytes = out.finish()?;
    let staging = pick.staging()?;
    write_atomic(&staging.path().join("drops"), &bytes)?;
    fault::hit("batch-resolve-partition");
    pick.publish(&staging, "batch-resolve-published")
}

/// The pick's dropped documents of the files `mine` (file ranks), keyed as the
/// filter phase's decisions look them up: (input file id, line).
pub(super) fn decided(
    cfg: &BatchConfig,
    files: &[InputFile],
    mine: &HashSet<u32>,
) -> Result<Decided> {
    let dir = stage_dir(&cfg.work, MinHashStage::Pick);
    require_markers(&dir, 1, "resolve --stage pick")?;
    let path = dir.join("task-0").join("drops");
    let body = &read_checked(&path, DROPS_MAGIC, "MinHash drop list")?[..];
    let bad = |why: &str| anyhow!("{}: {why}", path.display());
    let mut pos = 8;
    let field = |pos: &mut usize| get_varint(body, pos).map_err(|e| bad(&e.to_string()));
    let mut out = Decided::default();
    while pos < body.len() {
        let rank = field(&mut pos)? as u32;
        let line = field(&mut pos)?;
        let n = field(&mut pos)? as usize;
        let name = body
            .get(pos..pos + n)
            .ok_or_else(|| bad("truncated name"))?;
        pos += n;
        let jaccard = match body.get(pos) {
            Some(0) => None,
            Some(1) => {
                let b = body
                    .get(pos + 1..pos + 9)
                    .ok_or_else(|| bad("truncated estimate"))?;
                pos += 8;
                Some(f64::from_le_bytes(b.try_into().unwrap()))
            }
            _ => return Err(bad("bad estimate flag")),
        };
        pos += 1;
        if mine.contains(&rank) {
            let f = files
                .get(rank as usize)
                .ok_or_else(|| bad("a file rank past the input's files (input changed?)"))?;
            let id = crate::policy::file_id(rel_bytes(&f.rel));
            out.drops.insert(
                (id, line),
                (String::from_utf8_lossy(name).into_owned(), jaccard),
            );
        }
    }
    Ok(out)
}
