//! MinHash stream mode (`webdedup minhash`): near-duplicate *documents* by their
//! LSH band keys (`webdedup-minhash`).
//!
//! For each document in input order: if one of its band keys was inserted before
//! (in the store, or by an earlier kept document of the chunk), the document is a
//! near-duplicate of the document that inserted it, its *original*; otherwise it is
//! kept and inserts its band keys. Only kept documents insert, so nothing chains
//! through dropped documents and every drop names one original. With `--verify J`
//! a match drops the document only when the Jaccard similarity estimated from the
//! two signatures is at least `J`; the originals are tried in band order and the
//! first that passes is named. A document whose original's signature is not known
//! to this process (another worker's document on shared hash servers, a key loaded
//! from a snapshot without its side store) is dropped unverified (Jaccard `-`).
//! With `--store DIR` the side store is saved as `minhash.kept` and rebuilds the
//! store with its locations ([`KeptDocs::encode`], [`KeptDocs::load`]).
//!
//! Two store requests per chunk: a located *test* of every band key (round 0),
//! then, after the documents were judged one by one in order (the band keys of
//! kept documents of the chunk sit in a local map), a located insert of the kept
//! documents' keys (round 1). Verdicts thus equal asking document by document, and
//! outputs are the same for any `--threads` and `--chunk-bytes`.

use super::{ChunkContext, Decisions, DocStatus, Scratch};
use crate::options::MinHashOptions;
use crate::plan::{ChunkPlan, DocKind};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use webdedup_minhash::estimate_jaccard_low8;
use webdedup_store::{BatchId, Location, Store, StoreError};

/// A dropped document and its original, for the pairs report.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// The dropped document's index in the chunk plan.
    pub doc: usize,
    /// The original's name (its id, or `REL:LINE`), or `-` when not known.
    pub original: String,
    /// The estimated Jaccard similarity, when both signatures were at hand.
    pub jaccard: Option<f64>,
}

/// A kept document, as the side store remembers it.
struct Kept {
    /// Its id, where its format has one (else it is named `REL:LINE`).
    id: Option<Box<str>>,
    /// The low 8 bits of its signature's values (empty without `--verify`).
    sig: Box<[u8]>,
    /// Its band keys (only when the side store is saved: `--store DIR`).
    bands: Box<[u64]>,
}

#[derive(Default)]
struct KeptInner {
    docs: HashMap<Location, Kept>,
    /// Input file ids to their relative paths (names of documents without ids).
    files: HashMap<u64, Arc<str>>,
    /// Saved with the store (`--store DIR`): keep band keys and the order of the
    /// kept documents, and the files of earlier runs.
    persist: bool,
    order: Vec<Location>,
    /// Runs folded into the saved side store; file ids of this run are mixed with
    /// it (0 for the first), so equal relative paths in two crawls stay apart.
    runs: u64,
    /// A run on shared servers: its salt, mixed into file ids likewise (workers
    /// with equal relative paths stay apart).
    salt: u64,
    /// This run's input files (mixed ids) by rank in input order.
    rank: HashMap<u64, u32>,
}

impl KeptInner {
    /// What file ids of this run are mixed with.
    fn mix(&self) -> u64 {
        run_mix(self.runs) ^ self.salt
    }

    /// Whether `owner` is a document of this run at or after `here` in input
    /// order: a key it owns was inserted by an interrupted attempt of this run
    /// (on servers, which keep it), not before `here`, so for `here` it is new.
    fn is_future(&self, owner: Location, here: Location) -> bool {
        match (self.rank.get(&owner.file), self.rank.get(&here.file)) {
            (Some(o), Some(h)) => (*o, owner.record) >= (*h, here.record),
            _ => false,
        }
    }
}

/// The side store of stream mode: for each kept document of this process, by its
/// location (input file id, line), its id and, with `--verify`, the low bytes of its
/// signature (112 bytes at the defaults). It names originals in the pairs report
/// and verifies matches. Cost: about 60 bytes plus the id (and 112 signature
/// bytes with `--verify`) per kept document, in memory.
#[derive(Default)]
pub struct KeptDocs {
    inner: Mutex<KeptInner>,
}

impl std::fmt::Debug for KeptDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeptDocs({} documents)", self.inner.lock().docs.len())
    }
}

impl KeptDocs {
    /// Names input file `id` (its relative path, `policy::file_id`) for originals
    /// without ids.
    pub fn add_file(&self, id: u64, rel: &str) {
        let mut g = self.inner.lock();
        let id = id ^ g.mix();
        g.files.insert(id, Arc::from(rel));
        let n = g.rank.len() as u32;
        g.rank.entry(id).or_insert(n);
    }

    /// Mixes `salt` (the run's, on shared servers) into this run's file ids.
    pub fn set_salt(&self, salt: u64) {
        self.inner.lock().salt = salt;
    }

    /// Kept documents remembered.
    pub fn len(&self) -> usize {
        self.inner.lock().docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keep what [`save`](Self::save) needs (band keys, order).
    pub fn set_persistent(&self) {
        self.inner.lock().persist = true;
    }

    /// The side store as saved with `--store DIR` (`minhash.kept`):
    ///
    /// ```text
    /// "WDDMHKP\0" u32 version=1  str settings  u64 run_nonce  u64 runs
    /// u64 files, each: u64 id  str rel
    /// u64 docs (in the order they were kept), each: u64 file  u64 line
    ///     u32 id_len (u32::MAX: none) id  u32 sig_len sig  u32 bands  u64 × bands
    /// u64 xxh3-64 of everything before
    /// ```
    ///
    /// `run_nonce` names the run that wrote it (its journal carries the same), so a
    /// restore knows whether the interrupted run got as far as saving.
    pub fn encode(&self, settings: &str, run_nonce: u64) -> Vec<u8> {
        let g = self.inner.lock();
        let mut o = Vec::new();
        o.extend_from_slice(KEPT_MAGIC);
        o.extend_from_slice(&1u32.to_le_bytes());
        put_bytes(&mut o, settings.as_bytes());
        o.extend_from_slice(&run_nonce.to_le_bytes());
        o.extend_from_slice(&(g.runs + 1).to_le_bytes());
        let mut files: Vec<(&u64, &Arc<str>)> = g.files.iter().collect();
        files.sort();
        o.extend_from_slice(&(files.len() as u64).to_le_bytes());
        for (id, rel) in files {
            o.extend_from_slice(&id.to_le_bytes());
            put_bytes(&mut o, rel.as_bytes());
        }
        o.extend_from_slice(&(g.order.len() as u64).to_le_bytes());
        for loc in &g.order {
            let d = &g.docs[loc];
            o.extend_from_slice(&loc.file.to_le_bytes());
            o.extend_from_slice(&loc.record.to_le_bytes());
            match &d.id {
                Some(id) => put_bytes(&mut o, id.as_bytes()),
                None => o.extend_from_slice(&u32::MAX.to_le_bytes()),
            }
            put_bytes(&mut o, &d.sig);
            o.extend_from_slice(&(d.bands.len() as u32).to_le_bytes());
            for k in d.bands.iter() {
                o.extend_from_slice(&k.to_le_bytes());
            }
        }
        let check = xxhash_rust::xxh3::xxh3_64(&o);
        o.extend_from_slice(&check.to_le_bytes());
        o
    }

    /// Reads what [`encode`](Self::encode) wrote (from `what`, for messages) for
    /// `settings`: fills this side store and inserts every kept document's band keys
    /// into `store`, located, in the order they were kept (so each key's first
    /// inserter is its owner again). Returns the writing run's nonce.
    pub fn load(
        &self,
        bytes: &[u8],
        settings: &str,
        what: &str,
        store: &dyn Store,
    ) -> Result<u64, String> {
        let body_len = bytes
            .len()
            .checked_sub(8)
            .ok_or_else(|| format!("{what}: cut short"))?;
        let (body, check) = bytes.split_at(body_len);
        if xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() != check {
            return Err(format!("{what}: checksum mismatch (damaged or cut short)"));
        }
        let mut r = Reader {
            b: body,
            pos: 0,
            what,
        };
        if r.take(8)? != KEPT_MAGIC || r.u32()? != 1 {
            return Err(format!("{what}: not a MinHash side store of this version"));
        }
        let found = String::from_utf8_lossy(r.bytes()?).into_owned();
        if found != settings {
            return Err(format!(
                "{what}: MinHash settings '{found}' in the store, '{settings}' in this run"
            ));
        }
        let nonce = r.u64()?;
        let mut g = self.inner.lock();
        g.runs = r.u64()?;
        for _ in 0..r.u64()? {
            let id = r.u64()?;
            let rel = String::from_utf8_lossy(r.bytes()?).into_owned();
            g.files.insert(id, Arc::from(rel));
        }
        let (mut seen, mut originals) = (Vec::new(), Vec::new());
        for _ in 0..r.u64()? {
            let loc = Location {
                file: r.u64()?,
                record: r.u64()?,
            };
            let id = match r.u32_peek()? {
                u32::MAX => {
                    r.u32()?;
                    None
                }
                _ => Some(Box::from(String::from_utf8_lossy(r.bytes()?).as_ref())),
            };
            let sig: Box<[u8]> = Box::from(r.bytes()?);
            let n = r.u32()? as usize;
            let mut bands = Vec::with_capacity(n);
            for _ in 0..n {
                bands.push(r.u64()?);
            }
            let locs = vec![loc; n];
            store
                .test_and_insert_located(&bands, &locs, &mut seen, &mut originals)
                .map_err(|e| format!("{what}: {e}"))?;
            g.order.push(loc);
            g.docs.insert(
                loc,
                Kept {
                    id,
                    sig,
                    bands: bands.into(),
                },
            );
        }
        if r.pos != body.len() {
            return Err(format!("{what}: stray bytes at offset {}", r.pos));
        }
        g.persist = true;
        Ok(nonce)
    }
}

const KEPT_MAGIC: &[u8; 8] = b"WDDMHKP\0";

/// Mixes a run number into file ids (0 leaves them as they are).
fn run_mix(runs: u64) -> u64 {
    if runs == 0 {
        0
    } else {
        webdedup_minhash::mix64(runs)
    }
}

fn put_bytes(o: &mut Vec<u8>, b: &[u8]) {
    o.extend_from_slice(&(b.len() as u32).to_le_bytes());
    o.extend_from_slice(b);
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    what: &'a str,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let s = self
            .b
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or_else(|| format!("{}: cut short at offset {}", self.what, self.pos))?;
        self.pos += n;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u32_peek(&mut self) -> Result<u32, String> {
        let v = self.u32()?;
        self.pos -= 4;
        Ok(v)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

impl KeptInner {
    fn name(&self, loc: Location) -> String {
        if loc == Location::UNKNOWN {
            return "-".into();
        }
        if let Some(Kept { id: Some(id), .. }) = self.docs.get(&loc) {
            return id.to_string();
        }
        match self.files.get(&loc.file) {
            Some(rel) => format!("{rel}:{}", loc.record),
            None => format!("{:016x}:{}", loc.file, loc.record),
        }
    }
}

/// The decisions of batch mode's resolve phase (`batch::minhash`) for the files of a
/// filter task: every dropped document, by (input file id, line where it starts),
/// with its original's name and the estimated Jaccard similarity. Documents not
/// listed are kept. The filter phase decides from it alone, so its outputs are
/// rendered by the same code as stream mode's.
#[derive(Debug, Default)]
pub struct Decided {
    pub drops: HashMap<(u64, u64), (String, Option<f64>)>,
}

/// [`decide`] from the resolve phase's decisions (no store request).
fn decide_replayed(plan: &ChunkPlan, ctx: ChunkContext, decided: &Decided, out: &mut Decisions) {
    for (i, doc) in plan.docs.iter().enumerate() {
        if let DocKind::BadRecord { dropped } = doc.kind {
            out.docs.push(DocStatus::BadRecord { dropped });
        } else if !doc.live() {
            out.docs.push(DocStatus::UrlFiltered);
        } else if let Some((original, jaccard)) = decided.drops.get(&(ctx.file, doc.line)) {
            out.docs.push(DocStatus::Duplicate);
            out.pairs.push(Pair {
                doc: i,
                original: original.clone(),
                jaccard: *jaccard,
            });
        } else {
            out.docs.push(DocStatus::Kept);
            out.keep_para[doc.paras.clone()].fill(true);
        }
    }
}

/// Reusable buffers of [`decide`].
#[derive(Default)]
pub struct MinHashScratch {
    local: HashMap<u64, Location>,
    owners: Vec<Location>,
    insert_keys: Vec<u64>,
    insert_locs: Vec<Location>,
}

/// Asks the store about the chunk's band keys and decides which documents are kept.
pub fn decide(
    plan: &ChunkPlan,
    ctx: ChunkContext,
    store: &dyn Store,
    m: &MinHashOptions,
    s: &mut Scratch,
    out: &mut Decisions,
) -> Result<(), StoreError> {
    out.docs.clear();
    out.keep_para.clear();
    out.keep_para.resize(plan.paras.len(), false);
    out.originals.clear();
    out.originals.resize(plan.paras.len(), Location::UNKNOWN);
    out.url_title_repeat.clear();
    out.url_title_repeat.resize(plan.docs.len(), false);
    out.pairs.clear();
    if let Some(decided) = &m.decided {
        decide_replayed(plan, ctx, decided, out);
        return Ok(());
    }
    let round = |n: u64| BatchId {
        stream: ctx.id.stream,
        seq: ctx.id.seq + n,
    };
    let live = |i: usize| plan.docs[i].live();

    // Round 0: test every band key of the live documents.
    s.keys.clear();
    for (i, d) in plan.docs.iter().enumerate() {
        if live(i) {
            s.keys
                .extend_from_slice(&plan.bands[d.bands.start as usize..d.bands.end as usize]);
        }
    }
    store.test_located(&s.keys, &mut s.seen, &mut s.originals)?;

    let mh = &mut s.minhash;
    mh.local.clear();
    mh.insert_keys.clear();
    mh.insert_locs.clear();
    let mut kept = m.kept.inner.lock();
    let mut asked = 0usize;
    for (i, doc) in plan.docs.iter().enumerate() {
        if let DocKind::BadRecord { dropped } = doc.kind {
            out.docs.push(DocStatus::BadRecord { dropped });
            continue;
        }
        if !live(i) {
            out.docs.push(DocStatus::UrlFiltered);
            continue;
        }
        let bands = &plan.bands[doc.bands.start as usize..doc.bands.end as usize];
        let sig = &plan.sigs[doc.sig.start as usize..doc.sig.end as usize];
        // Owners of the matching bands, in band order, each once. A key in the store
        // was inserted before any key of this chunk: the store's owner comes first.
        mh.owners.clear();
        let mut matched = false;
        let here = Location {
            file: ctx.file ^ kept.mix(),
            record: doc.line,
        };
        for (j, key) in bands.iter().enumerate() {
            let stored = Some(s.originals[asked + j])
                .filter(|&o| s.seen[asked + j] && !kept.is_future(o, here));
            let owner = stored.or_else(|| mh.local.get(key).copied());
            if let Some(o) = owner {
                matched = true;
                if !mh.owners.contains(&o) {
                    mh.owners.push(o);
                }
            }
        }
        asked += bands.len();
        let known_sig = |k: &KeptInner, o: &Location| {
            k.docs
                .get(o)
                .filter(|d| d.sig.len() == sig.len() && !sig.is_empty())
                .map(|d| estimate_jaccard_low8(sig, &d.sig))
        };
        let verdict: Option<(Location, Option<f64>)> = if !matched {
            None
        } else {
            match m.verify {
                None => {
                    let o = mh.owners[0];
                    Some((o, known_sig(&kept, &o)))
                }
                Some(threshold) => {
                    let mut found = None;
                    let mut unverifiable = None;
                    for o in &mh.owners {
                        match known_sig(&kept, o) {
                            Some(j) if j >= threshold => {
                                found = Some((*o, Some(j)));
                                break;
                            }
                            Some(_) => {}
                            None => {
                                unverifiable.get_or_insert((*o, None));
                            }
                        }
                    }
                    found.or(unverifiable)
                }
            }
        };
        match verdict {
            Some((o, jaccard)) => {
                out.docs.push(DocStatus::Duplicate);
                out.pairs.push(Pair {
                    doc: i,
                    original: kept.name(o),
                    jaccard,
                });
            }
            None => {
                out.docs.push(DocStatus::Kept);
                out.keep_para[doc.paras.clone()].fill(true);
                for &key in bands {
                    mh.local.entry(key).or_insert(here);
                    mh.insert_keys.push(key);
                    mh.insert_locs.push(here);
                }
                let id = doc.id.as_ref().map(|r| Box::from(plan.meta_of(r)));
                let sig = if m.verify.is_some() {
                    Box::from(sig)
                } else {
                    Box::default()
                };
                let bands = if kept.persist {
                    Box::from(bands)
                } else {
                    Box::default()
                };
                if !kept.docs.contains_key(&here) {
                    if kept.persist {
                        kept.order.push(here);
                    }
                    kept.docs.insert(here, Kept { id, sig, bands });
                }
            }
        }
    }
    drop(kept);

    // Round 1: the kept documents' keys, located (the first inserter owns a key).
    store.test_and_insert_located_batch(
        round(1),
        &mh.insert_keys,
        &mh.insert_locs,
        &mut s.seen,
        &mut s.originals,
    )?;
    Ok(())
}

/// Appends the pairs report lines of a chunk: `DOC TAB ORIGINAL TAB JACCARD`, a
/// document named by its id, or `NAME:LINE` when it has none; the Jaccard estimate
/// with 3 decimals, `-` when not known.
pub fn pairs_lines(plan: &ChunkPlan, dec: &Decisions, name: &str, out: &mut Vec<u8>) {
    let mut line = String::new();
    for p in &dec.pairs {
        line.clear();
        let doc = &plan.docs[p.doc];
        match &doc.id {
            Some(id) => line.push_str(&tsv_field(plan.meta_of(id))),
            None => {
                let _ = write!(line, "{}:{}", tsv_field(name), doc.line);
            }
        }
        line.push('\t');
        line.push_str(&tsv_field(&p.original));
        match p.jaccard {
            Some(j) => {
                let _ = writeln!(line, "\t{j:.3}");
            }
            None => line.push_str("\t-\n"),
        }
        out.extend_from_slice(line.as_bytes());
    }
}

/// A name as a TSV field: tabs, line breaks and backslashes escaped (`\t`, `\n`,
/// `\r`, `\\`), so a line is always one record of three fields.
fn tsv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains(['\t', '\n', '\r', '\\']) {
        return s.into();
    }
    let mut o = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        match c {
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\\' => o.push_str("\\\\"),
            c => o.push(c),
        }
    }
    o.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use webdedup_store::MemStore;

    fn sample() -> KeptDocs {
        let k = KeptDocs::default();
        k.set_persistent();
        k.add_file(7, "a/b.jsonl");
        {
            let mut g = k.inner.lock();
            for (i, id) in [Some("x"), None].into_iter().enumerate() {
                let loc = Location {
                    file: 7,
                    record: i as u64 + 1,
                };
                g.order.push(loc);
                g.docs.insert(
                    loc,
                    Kept {
                        id: id.map(Box::from),
                        sig: vec![i as u8; 4].into(),
                        bands: vec![100 + i as u64, 200].into(),
                    },
                );
            }
        }
        k
    }

    #[test]
    fn side_store_round_trip_rebuilds_keys_with_their_first_owner() {
        let bytes = sample().encode("s", 42);
        let again = KeptDocs::default();
        let store = MemStore::new(7);
        assert_eq!(again.load(&bytes, "s", "f", &store).unwrap(), 42);
        assert_eq!(store.len(), 3);
        let (mut seen, mut orig) = (Vec::new(), Vec::new());
        store
            .test_located(&[200, 101], &mut seen, &mut orig)
            .unwrap();
        assert_eq!(seen, [true, true]);
        // Key 200 belongs to both documents: the first kept owns it.
        assert_eq!(orig[0].record, 1);
        assert_eq!(orig[1].record, 2);
        let g = again.inner.lock();
        assert_eq!(g.name(orig[0]), "x");
        assert_eq!(g.name(orig[1]), "a/b.jsonl:2");
        assert_eq!(g.runs, 1);
    }

    #[test]
    fn damaged_or_foreign_side_stores_are_refused() {
        let bytes = sample().encode("s", 1);
        let store = MemStore::new(7);
        let err = KeptDocs::default()
            .load(&bytes, "t", "f", &store)
            .unwrap_err();
        assert!(
            err.contains("settings 's' in the store, 't' in this run"),
            "{err}"
        );
        for cut in [0, 5, bytes.len() - 1] {
            assert!(KeptDocs::default()
                .load(&bytes[..cut], "s", "f", &store)
                .is_err());
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        let err = KeptDocs::default()
            .load(&flipped, "s", "f", &store)
            .unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }
}
