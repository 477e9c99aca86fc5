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
//! from a snapshot without its side store) is dropped unverified (Jaccard `-`),
//! and counted ([`Pair::unverified`], the run's `documents_dropped_unverified`).
//! Hash servers keep each key's location across restarts (journal, snapshot), so
//! a restarted server never turns a verified match into an unverified one.
//! With `--store DIR` the side store is saved as `minhash.kept` and rebuilds the
//! store with its locations ([`KeptDocs::save`], [`KeptDocs::load_file`]). The
//! side store lives in files, not in memory (see [`KeptDocs`]).
//!
//! Two store requests per chunk: a located *test* of every band key (round 0),
//! then, after the documents were judged one by one in order (the band keys of
//! kept documents of the chunk sit in a local map), a located insert of the kept
//! documents' keys (round 1). Verdicts thus equal asking document by document, and
//! outputs are the same for any `--threads` and `--chunk-bytes`.

mod records;

use super::{ChunkContext, Decisions, DocStatus, Pair, Scratch};
use crate::options::MinHashOptions;
use crate::plan::{ChunkPlan, DocKind};
use parking_lot::Mutex;
use records::{Record, RecordFile};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use webdedup_minhash::estimate_jaccard_low8;
use webdedup_store::bands::{location_ordinal, ordinal_location};
use webdedup_store::{BandOwners, BatchId, Location, Store, StoreError};
use webdedup_text::shown::escape_tsv;
use xxhash_rust::xxh3::Xxh3Default;

struct KeptInner {
    /// The kept documents' records, by ordinal (opened at the first document).
    records: Option<RecordFile>,
    /// Where the record files go (None: the system's temporary directory).
    dir: Option<PathBuf>,
    /// Room in a record: signature bytes and band keys (the run's parameters).
    sig_cap: usize,
    band_cap: usize,
    /// The store is this process's own: its locations are ordinals
    /// ([`ordinal_location`]). Otherwise (hash servers) they are the documents'
    /// own locations, shared with other workers, and `index` finds the record of
    /// this process's documents.
    local: bool,
    index: HashMap<Location, u32>,
    /// Input file ids to their relative paths (names of documents without ids).
    files: HashMap<u64, Arc<str>>,
    /// Saved with the store (`--store DIR`).
    persist: bool,
    /// Bytes the documents take in [`KeptDocs::save`]'s format.
    encoded_docs: u64,
    /// Runs folded into the saved side store; file ids of this run are mixed with
    /// it (0 for the first), so equal relative paths in two crawls stay apart.
    runs: u64,
    /// A run on shared servers: its salt, mixed into file ids likewise (workers
    /// with equal relative paths stay apart).
    salt: u64,
    /// This run's input files (mixed ids) by rank in input order.
    rank: HashMap<u64, u32>,
    /// The last record read (a document's owner is usually asked for several
    /// bands in a row).
    cached: Option<u32>,
    record: Record,
    /// The last location read alone ([`Self::input_location`]), by ordinal.
    cached_loc: Option<(u32, Location)>,
}

impl KeptInner {
    fn new(sig_cap: usize, band_cap: usize) -> Self {
        KeptInner {
            records: None,
            dir: None,
            sig_cap,
            band_cap,
            local: false,
            index: HashMap::new(),
            files: HashMap::new(),
            persist: false,
            encoded_docs: 0,
            runs: 0,
            salt: 0,
            rank: HashMap::new(),
            cached: None,
            record: Record::default(),
            cached_loc: None,
        }
    }

    /// What file ids of this run are mixed with.
    fn mix(&self) -> u64 {
        run_mix(self.runs) ^ self.salt
    }

    fn len(&self) -> u64 {
        self.records.as_ref().map_or(0, |r| r.len())
    }

    /// Whether `owner` (a document's own location) is a document of this run at
    /// or after `here` in input order: a key it owns was inserted by an
    /// interrupted attempt of this run (on servers, which keep it), not before
    /// `here`, so for `here` it is new.
    fn is_future(&self, owner: Location, here: Location) -> bool {
        match (self.rank.get(&owner.file), self.rank.get(&here.file)) {
            (Some(o), Some(h)) => (*o, owner.record) >= (*h, here.record),
            _ => false,
        }
    }

    /// The ordinal of the document a store location names, if it is one of ours.
    fn ordinal(&self, loc: Location) -> Option<u32> {
        if self.local {
            location_ordinal(loc).filter(|&o| (o as u64) < self.len())
        } else {
            self.index.get(&loc).copied()
        }
    }

    /// The record of the document a store location names, if it is one of ours.
    fn record_of(&mut self, loc: Location) -> io::Result<Option<&Record>> {
        let Some(ord) = self.ordinal(loc) else {
            return Ok(None);
        };
        self.read_ordinal(ord).map(Some)
    }

    /// The record of kept document `ord` (< [`len`](Self::len)).
    fn read_ordinal(&mut self, ord: u32) -> io::Result<&Record> {
        if self.cached != Some(ord) {
            self.cached = None;
            let records = self.records.as_mut().expect("an ordinal has a record");
            records.read(ord, &mut self.record)?;
            self.cached = Some(ord);
        }
        Ok(&self.record)
    }

    /// Where the document a store location names sits in the input: itself, or
    /// for an ordinal, its record's.
    fn input_location(&mut self, loc: Location) -> io::Result<Location> {
        if !self.local {
            return Ok(loc);
        }
        // Only the location: this runs in the ordered step, for every band key
        // found in the store, and the whole record (its id a second read) is
        // needed only for a dropped document's original.
        let Some(ord) = self.ordinal(loc) else {
            return Ok(loc);
        };
        if self.cached == Some(ord) {
            return Ok(self.record.loc);
        }
        match self.cached_loc {
            Some((o, at)) if o == ord => Ok(at),
            _ => {
                let records = self.records.as_mut().expect("an ordinal has a record");
                let at = records.loc(ord)?;
                self.cached_loc = Some((ord, at));
                Ok(at)
            }
        }
    }

    /// Remembers a kept document; returns its store location.
    fn push(
        &mut self,
        loc: Location,
        id: Option<&[u8]>,
        sig: &[u8],
        bands: &[u64],
    ) -> io::Result<Location> {
        if !self.local && self.index.contains_key(&loc) {
            // The same location twice (a source named twice): the first stays.
            return Ok(loc);
        }
        if self.records.is_none() {
            let dir = self.dir.clone().unwrap_or_else(std::env::temp_dir);
            self.records = Some(
                RecordFile::create(&dir, self.sig_cap, self.band_cap).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("MinHash side store in {}: {e}", dir.display()),
                    )
                })?,
            );
        }
        let records = self.records.as_mut().expect("opened");
        let ord = records.push(loc, id, sig, bands)?;
        self.encoded_docs += 16
            + 4
            + id.map_or(0, |i| i.len() as u64)
            + 4
            + sig.len() as u64
            + 4
            + 8 * bands.len() as u64;
        if self.local {
            Ok(ordinal_location(ord))
        } else {
            self.index.insert(loc, ord);
            Ok(loc)
        }
    }

    fn name(&mut self, loc: Location) -> io::Result<String> {
        if loc == Location::UNKNOWN {
            return Ok("-".into());
        }
        let loc = match self.record_of(loc)? {
            Some(Record { id: Some(id), .. }) => return Ok(id.clone()),
            Some(r) => r.loc,
            None => loc,
        };
        Ok(match self.files.get(&loc.file) {
            Some(rel) => format!("{rel}:{}", loc.record),
            None => format!("{:016x}:{}", loc.file, loc.record),
        })
    }

    /// The Jaccard similarity of `sig` with the signature of the document `o`
    /// names, estimated, when that signature is known and comparable.
    fn known_sig(&mut self, o: Location, sig: &[u8]) -> io::Result<Option<f64>> {
        Ok(self
            .record_of(o)?
            .filter(|d| d.sig.len() == sig.len() && !sig.is_empty())
            .map(|d| estimate_jaccard_low8(sig, &d.sig)))
    }
}

/// The side store of stream mode: for each kept document of this process, its
/// location (input file id, line), its id and, with `--verify`, the low bytes of its
/// signature (112 bytes at the defaults), and its band keys. It names originals in
/// the pairs report, verifies matches and (`--store DIR`) rebuilds the store. It
/// lives in files ([`records`]: a fixed-size record per kept document, about 260
/// bytes at the defaults, read back only for originals), so it costs no memory per
/// kept document, except on hash servers, where an index from a document's
/// location to its record takes about 40 bytes.
pub struct KeptDocs {
    inner: Mutex<KeptInner>,
}

impl Default for KeptDocs {
    fn default() -> Self {
        let p = webdedup_minhash::Params::default();
        KeptDocs::new(p.verification_len(), p.bands)
    }
}

impl std::fmt::Debug for KeptDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeptDocs({} documents)", self.inner.lock().len())
    }
}

fn io_error(e: io::Error) -> StoreError {
    StoreError::Io {
        path: PathBuf::from("(MinHash side store)"),
        error: e,
    }
}

impl KeptDocs {
    /// A side store for `verification` bytes (`Params::verification_len`) and
    /// `bands` band keys a document.
    pub fn new(verification: usize, bands: usize) -> Self {
        KeptDocs {
            inner: Mutex::new(KeptInner::new(verification, bands)),
        }
    }

    /// Puts the side store's files in `dir` (default: the system's temporary
    /// directory). Takes effect before the first document.
    pub fn set_dir(&self, dir: &Path) {
        self.inner.lock().dir = Some(dir.to_path_buf());
    }

    /// The store is this process's own (embedded, `--store DIR`), not shared with
    /// other workers: its locations become the kept documents' ordinals
    /// ([`ordinal_location`]), so no index is needed to find their records. Ignored once documents were kept
    /// (they stay found by their locations).
    pub fn set_local(&self) {
        let mut g = self.inner.lock();
        if g.len() == 0 {
            g.local = true;
        }
    }

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
        self.inner.lock().len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The side store will be saved ([`save`](Self::save)).
    pub fn set_persistent(&self) {
        self.inner.lock().persist = true;
    }

    /// Saves the side store to `path` (`minhash.kept` with `--store DIR`),
    /// atomically, streamed from its files:
    ///
    /// ```text
    /// "WDDMHKP\0" u32 version=2  str settings  u64 runs
    /// u64 files, each: u64 id  str rel
    /// u64 docs (in the order they were kept), each: u64 file  u64 line
    ///     u32 id_len (u32::MAX: none) id  u32 sig_len sig  u32 bands  u64 × bands
    /// u64 xxh3-64 of everything before
    /// ```
    ///
    /// The bytes are a function of the decisions (as a snapshot's are of its keys):
    /// two runs that kept the same documents write the same file. A run's journal
    /// names the side store it started from by its checksum (the last field), so a
    /// restore tells whether the interrupted run got as far as saving (see
    /// `persist`). Version 1 also held the writing run's nonce, for the same
    /// purpose; it is still read.
    pub fn save(&self, path: &Path, settings: &str) -> Result<u64, StoreError> {
        let mut g = self.inner.lock();
        let mut files: Vec<(u64, Arc<str>)> =
            g.files.iter().map(|(k, v)| (*k, v.clone())).collect();
        files.sort();
        let total = 8
            + 4
            + 4
            + settings.len() as u64
            + 8
            + 8
            + files
                .iter()
                .map(|(_, rel)| 8 + 4 + rel.len() as u64)
                .sum::<u64>()
            + 8
            + g.encoded_docs
            + 8;
        let g = &mut *g;
        webdedup_store::snapshot::write_atomic_stream(path, total, "minhash-kept", |w| {
            let mut w = Hashing {
                w,
                h: Xxh3Default::new(),
            };
            w.write_all(KEPT_MAGIC)?;
            w.write_all(&KEPT_VERSION.to_le_bytes())?;
            put_bytes(&mut w, settings.as_bytes())?;
            w.write_all(&(g.runs + 1).to_le_bytes())?;
            w.write_all(&(files.len() as u64).to_le_bytes())?;
            for (id, rel) in &files {
                w.write_all(&id.to_le_bytes())?;
                put_bytes(&mut w, rel.as_bytes())?;
            }
            let n = g.len();
            w.write_all(&n.to_le_bytes())?;
            let mut d = Record::default();
            for ord in 0..n {
                let records = g.records.as_mut().expect("documents have records");
                records.read(ord as u32, &mut d)?;
                w.write_all(&d.loc.file.to_le_bytes())?;
                w.write_all(&d.loc.record.to_le_bytes())?;
                match &d.id {
                    Some(id) => put_bytes(&mut w, id.as_bytes())?,
                    None => w.write_all(&u32::MAX.to_le_bytes())?,
                }
                put_bytes(&mut w, &d.sig)?;
                w.write_all(&(d.bands.len() as u32).to_le_bytes())?;
                for k in &d.bands {
                    w.write_all(&k.to_le_bytes())?;
                }
            }
            let check = w.h.digest();
            w.w.write_all(&check.to_le_bytes())
        })
    }

    /// [`save`](Self::save)'s bytes, in memory (tests).
    #[cfg(test)]
    fn encode(&self, settings: &str) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept");
        self.save(&path, settings).unwrap();
        std::fs::read(path).unwrap()
    }

    /// Loads what [`save`](Self::save) wrote to `path` for `settings`: fills this
    /// side store and inserts every kept document's band keys into `store`,
    /// located, in the order they were kept (so each key's first inserter is its
    /// owner again). Returns what names the file (its checksum). The file is read
    /// twice (its checksum first, so a damaged file changes nothing), never held in
    /// memory.
    pub fn load_file(
        &self,
        path: &Path,
        settings: &str,
        store: &dyn Store,
    ) -> Result<KeptFile, String> {
        let what = path.display().to_string();
        let open = || {
            let f = File::open(path).map_err(|e| format!("cannot read {what}: {e}"))?;
            let len = f
                .metadata()
                .map_err(|e| format!("cannot read {what}: {e}"))?
                .len();
            Ok((io::BufReader::with_capacity(1 << 20, f), len))
        };
        self.load_from(open, settings, &what, store)
    }

    /// [`load_file`](Self::load_file) from bytes in memory (`what` names them).
    pub fn load(
        &self,
        bytes: &[u8],
        settings: &str,
        what: &str,
        store: &dyn Store,
    ) -> Result<KeptFile, String> {
        self.load_from(|| Ok((bytes, bytes.len() as u64)), settings, what, store)
    }

    fn load_from<R: Read>(
        &self,
        open: impl Fn() -> Result<(R, u64), String>,
        settings: &str,
        what: &str,
        store: &dyn Store,
    ) -> Result<KeptFile, String> {
        // Pass 1: the checksum.
        let (mut src, len) = open()?;
        let body_len = len
            .checked_sub(8)
            .ok_or_else(|| format!("{what}: cut short"))?;
        let mut h = Xxh3Default::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut left = body_len;
        while left > 0 {
            let n = (buf.len() as u64).min(left) as usize;
            src.read_exact(&mut buf[..n])
                .map_err(|e| format!("{what}: cannot read: {e}"))?;
            h.update(&buf[..n]);
            left -= n as u64;
        }
        let mut check = [0u8; 8];
        src.read_exact(&mut check)
            .map_err(|e| format!("{what}: cannot read: {e}"))?;
        let checksum = h.digest();
        if checksum.to_le_bytes() != check {
            return Err(format!("{what}: checksum mismatch (damaged or cut short)"));
        }
        // Pass 2: the contents.
        let (src, _) = open()?;
        let mut r = Reader {
            r: src.take(body_len),
            pos: 0,
            what,
        };
        if r.take(8)? != KEPT_MAGIC {
            return Err(format!("{what}: not a MinHash side store"));
        }
        let version = r.u32()?;
        if version != 1 && version != KEPT_VERSION {
            return Err(format!(
                "{what}: MinHash side store format version {version}, this program reads 1 and {KEPT_VERSION}"
            ));
        }
        let found = String::from_utf8_lossy(&r.bytes()?).into_owned();
        if found != settings {
            return Err(format!(
                "{what}: MinHash settings '{found}' in the store, '{settings}' in this run"
            ));
        }
        let nonce = if version == 1 { Some(r.u64()?) } else { None };
        {
            let mut g = self.inner.lock();
            g.runs = r.u64()?;
            for _ in 0..r.u64()? {
                let id = r.u64()?;
                let rel = String::from_utf8_lossy(&r.bytes()?).into_owned();
                g.files.insert(id, Arc::from(rel));
            }
        }
        let (mut seen, mut originals) = (Vec::new(), Vec::new());
        let (mut bands, mut locs) = (Vec::new(), Vec::new());
        for _ in 0..r.u64()? {
            let loc = Location {
                file: r.u64()?,
                record: r.u64()?,
            };
            let id = match r.u32()? {
                u32::MAX => None,
                n => Some(r.take(n as usize)?),
            };
            let sig = r.bytes()?;
            let n = r.u32()? as usize;
            bands.clear();
            for _ in 0..n {
                bands.push(r.u64()?);
            }
            // The side store is unlocked while the store inserts: a band-key store
            // reads it back ([`BandOwners`]).
            let at = self
                .inner
                .lock()
                .push(loc, id.as_deref(), &sig, &bands)
                .map_err(|e| format!("{what}: {e}"))?;
            locs.clear();
            locs.resize(n, at);
            store
                .test_and_insert_located(&bands, &locs, &mut seen, &mut originals)
                .map_err(|e| format!("{what}: {e}"))?;
        }
        if r.pos != body_len {
            return Err(format!("{what}: stray bytes at offset {}", r.pos));
        }
        self.inner.lock().persist = true;
        Ok(KeptFile { checksum, nonce })
    }
}

/// What names a saved side store ([`KeptDocs::load_file`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptFile {
    /// Its checksum (its last 8 bytes): a function of its contents.
    pub checksum: u64,
    /// The nonce of the run that wrote it (format version 1 only).
    pub nonce: Option<u64>,
}

/// The compact band-key store confirms a fingerprint by the candidate document's
/// band keys, read from its record.
impl BandOwners for KeptDocs {
    fn owns(&self, ord: u32, key: u64) -> Result<bool, StoreError> {
        let mut g = self.inner.lock();
        if ord as u64 >= g.len() {
            return Ok(false);
        }
        Ok(g.read_ordinal(ord).map_err(io_error)?.bands.contains(&key))
    }
}

const KEPT_MAGIC: &[u8; 8] = b"WDDMHKP\0";
/// 2: no run nonce (the file is a function of the decisions).
const KEPT_VERSION: u32 = 2;

/// Mixes a run number into file ids (0 leaves them as they are).
fn run_mix(runs: u64) -> u64 {
    if runs == 0 {
        0
    } else {
        webdedup_minhash::mix64(runs)
    }
}

/// A writer that hashes what passes through it.
struct Hashing<'a> {
    w: &'a mut dyn Write,
    h: Xxh3Default,
}

impl Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.w.write(buf)?;
        self.h.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

fn put_bytes(o: &mut impl Write, b: &[u8]) -> io::Result<()> {
    o.write_all(&(b.len() as u32).to_le_bytes())?;
    o.write_all(b)
}

struct Reader<'a, R> {
    r: R,
    pos: u64,
    what: &'a str,
}

impl<R: Read> Reader<'_, R> {
    fn take(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let mut v = Vec::new();
        let got = (&mut self.r)
            .take(n as u64)
            .read_to_end(&mut v)
            .map_err(|e| format!("{}: cannot read: {e}", self.what))?;
        if got < n {
            return Err(format!("{}: cut short at offset {}", self.what, self.pos));
        }
        self.pos += n as u64;
        Ok(v)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        self.r
            .read_exact(&mut a)
            .map_err(|_| format!("{}: cut short at offset {}", self.what, self.pos))?;
        self.pos += N as u64;
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u32()? as usize;
        self.take(n)
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
pub fn decide_replayed(
    plan: &ChunkPlan,
    ctx: ChunkContext,
    decided: &Decided,
    out: &mut Decisions,
) {
    out.clear_for(plan);
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
                unverified: false,
            });
        } else {
            out.docs.push(DocStatus::Kept);
            out.keep_para[doc.paras.clone()].fill(true);
        }
    }
}

/// Asks the store about the chunk's band keys and decides which documents are
/// kept, naming originals from (and adding the kept documents to) `kept`, the
/// run's side store.
pub fn decide(
    plan: &ChunkPlan,
    ctx: ChunkContext,
    store: &dyn Store,
    m: &MinHashOptions,
    kept: &KeptDocs,
    s: &mut Scratch,
    out: &mut Decisions,
) -> Result<(), StoreError> {
    out.clear_for(plan);
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
    store.test_located_batch(round(0), &s.keys, &mut s.seen, &mut s.originals)?;

    let mh = &mut s.minhash;
    mh.local.clear();
    mh.insert_keys.clear();
    mh.insert_locs.clear();
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
        // Locked a document at a time: other threads' tests asked ahead read
        // records too (the band store's `BandOwners`).
        let mut kept = kept.inner.lock();
        // Owners of the matching bands, in band order, each once. A key in the store
        // was inserted before any key of this chunk: the store's owner comes first.
        mh.owners.clear();
        let here = Location {
            file: ctx.file ^ kept.mix(),
            record: doc.line,
        };
        for (j, key) in bands.iter().enumerate() {
            let mut stored = None;
            if s.seen[asked + j] {
                let o = s.originals[asked + j];
                let at = kept.input_location(o).map_err(io_error)?;
                if !kept.is_future(at, here) {
                    stored = Some(o);
                }
            }
            let owner = stored.or_else(|| mh.local.get(key).copied());
            if let Some(o) = owner {
                if !mh.owners.contains(&o) {
                    mh.owners.push(o);
                }
            }
        }
        asked += bands.len();
        let verdict = pick_original(&mh.owners, m.verify, |o| {
            kept.known_sig(*o, sig).map_err(io_error)
        })?;
        match verdict {
            Some((o, jaccard)) => {
                out.docs.push(DocStatus::Duplicate);
                out.pairs.push(Pair {
                    doc: i,
                    original: kept.name(o).map_err(io_error)?,
                    jaccard,
                    unverified: m.verify.is_some() && jaccard.is_none(),
                });
            }
            None => {
                out.docs.push(DocStatus::Kept);
                out.keep_para[doc.paras.clone()].fill(true);
                let id = doc.id.as_ref().map(|r| plan.meta_of(r).as_bytes());
                let sig = if m.verify.is_some() { sig } else { &[] };
                let at = kept.push(here, id, sig, bands).map_err(io_error)?;
                for &key in bands {
                    mh.local.entry(key).or_insert(at);
                    mh.insert_keys.push(key);
                    mh.insert_locs.push(at);
                }
            }
        }
    }

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

/// The original of a document among the `owners` of its matching bands (in the
/// order they were found), with the Jaccard estimate: without `verify`, the first
/// owner; with it, the first whose estimate reaches the threshold, else the first
/// whose estimate cannot be made (its signature is not known here). `None`: no
/// owner, or none similar enough. Stream and batch mode decide by this one rule.
pub(crate) fn pick_original<O: Copy, E>(
    owners: &[O],
    verify: Option<f64>,
    mut estimate: impl FnMut(&O) -> Result<Option<f64>, E>,
) -> Result<Option<(O, Option<f64>)>, E> {
    let Some(first) = owners.first() else {
        return Ok(None);
    };
    let Some(threshold) = verify else {
        return Ok(Some((*first, estimate(first)?)));
    };
    let mut unverifiable = None;
    for o in owners {
        match estimate(o)? {
            Some(j) if j >= threshold => return Ok(Some((*o, Some(j)))),
            Some(_) => {}
            None => {
                unverifiable.get_or_insert((*o, None));
            }
        }
    }
    Ok(unverifiable)
}

/// Appends the pairs report lines of a chunk: `DOC TAB ORIGINAL TAB JACCARD`, a
/// document named by its id, or `NAME:LINE` when it has none; the Jaccard estimate
/// with 3 decimals, `-` when not known.
pub fn pairs_lines(plan: &ChunkPlan, dec: &Decisions, name: &str, out: &mut Vec<u8>) {
    let mut line = String::new();
    for p in &dec.pairs {
        line.clear();
        push_doc_name(plan, p.doc, name, &mut line);
        line.push('\t');
        line.push_str(&escape_tsv(&p.original));
        match p.jaccard {
            Some(j) => {
                let _ = writeln!(line, "\t{j:.3}");
            }
            None => line.push_str("\t-\n"),
        }
        out.extend_from_slice(line.as_bytes());
    }
}

/// A document as the reports name it: its id, or `NAME:LINE` (TSV-escaped).
fn push_doc_name(plan: &ChunkPlan, i: usize, name: &str, line: &mut String) {
    let doc = &plan.docs[i];
    match &doc.id {
        Some(id) => line.push_str(&escape_tsv(plan.meta_of(id))),
        None => {
            let _ = write!(line, "{}:{}", escape_tsv(name), doc.line);
        }
    }
}

/// Each entry's cluster (`--clusters`): the name of the kept document the cluster
/// is made of, the document's own for a kept one, its original's for a dropped
/// one (an original is always a kept document, so a cluster is one kept document
/// and the documents dropped as its near-duplicates); None for entries that are
/// not documents. Names as originals are named (id, else `NAME:LINE`), unescaped.
pub fn cluster_names(plan: &ChunkPlan, dec: &Decisions, name: &str) -> Vec<Option<String>> {
    let mut originals = dec.pairs.iter().peekable();
    (0..plan.docs.len())
        .map(|i| {
            // Pairs come in document order, one per dropped document.
            if let Some(p) = originals.next_if(|p| p.doc == i) {
                return Some(p.original.clone());
            }
            match dec.docs.get(i) {
                Some(DocStatus::Kept) => Some(match &plan.docs[i].id {
                    Some(id) => plan.meta_of(id).to_string(),
                    None => format!("{name}:{}", plan.docs[i].line),
                }),
                _ => None,
            }
        })
        .collect()
}

/// The `.clusters` lines of a chunk: `DOC TAB CLUSTER` for every document, in
/// input order, both named as in the pairs report.
pub fn cluster_lines(plan: &ChunkPlan, clusters: &[Option<String>], name: &str, out: &mut Vec<u8>) {
    let mut line = String::new();
    for (i, c) in clusters.iter().enumerate() {
        let Some(c) = c else { continue };
        line.clear();
        push_doc_name(plan, i, name, &mut line);
        line.push('\t');
        line.push_str(&escape_tsv(c));
        line.push('\n');
        out.extend_from_slice(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webdedup_store::MemStore;

    fn sample() -> KeptDocs {
        let k = KeptDocs::default();
        k.set_local();
        k.set_persistent();
        k.add_file(7, "a/b.jsonl");
        {
            let mut g = k.inner.lock();
            for (i, id) in [Some("x"), None].into_iter().enumerate() {
                let loc = Location {
                    file: 7,
                    record: i as u64 + 1,
                };
                g.push(
                    loc,
                    id.map(str::as_bytes),
                    &[i as u8; 4],
                    &[100 + i as u64, 200],
                )
                .unwrap();
            }
        }
        k
    }

    #[test]
    fn side_store_round_trip_rebuilds_keys_with_their_first_owner() {
        let bytes = sample().encode("s");
        let again = KeptDocs::default();
        again.set_local();
        let store = MemStore::new(7);
        let file = again.load(&bytes, "s", "f", &store).unwrap();
        assert_eq!(file.nonce, None);
        assert_eq!(
            file.checksum.to_le_bytes(),
            bytes[bytes.len() - 8..],
            "named by its checksum"
        );
        assert_eq!(store.len(), 3);
        let (mut seen, mut orig) = (Vec::new(), Vec::new());
        store
            .test_located(&[200, 101], &mut seen, &mut orig)
            .unwrap();
        assert_eq!(seen, [true, true]);
        // Key 200 belongs to both documents: the first kept owns it.
        assert_eq!(orig[0].record, 1);
        assert_eq!(orig[1].record, 2);
        let mut g = again.inner.lock();
        assert_eq!(g.name(orig[0]).unwrap(), "x");
        assert_eq!(g.name(orig[1]).unwrap(), "a/b.jsonl:2");
        assert_eq!(g.runs, 1);
    }

    /// Issue 27 D15: the saved side store is a function of the decisions, so two
    /// uninterrupted runs (or a run and a restore) save the same bytes; files of
    /// format version 1 (with a run nonce) are still read.
    #[test]
    fn saved_side_store_is_canonical_and_version_1_is_read() {
        let bytes = sample().encode("s");
        assert_eq!(sample().encode("s"), bytes, "two saves, the same bytes");
        // The version 1 layout: the same with a nonce after the settings.
        let at = 8 + 4 + 4 + 1;
        let mut v1 = bytes[..bytes.len() - 8].to_vec();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        v1.splice(at..at, 99u64.to_le_bytes());
        let check = xxhash_rust::xxh3::xxh3_64(&v1);
        v1.extend_from_slice(&check.to_le_bytes());
        let again = KeptDocs::default();
        again.set_local();
        let store = MemStore::new(7);
        let file = again.load(&v1, "s", "f", &store).unwrap();
        assert_eq!((file.nonce, file.checksum), (Some(99), check));
        assert_eq!(store.len(), 3);
        let mut v3 = bytes[..bytes.len() - 8].to_vec();
        v3[8..12].copy_from_slice(&3u32.to_le_bytes());
        let check = xxhash_rust::xxh3::xxh3_64(&v3);
        v3.extend_from_slice(&check.to_le_bytes());
        let err = KeptDocs::default()
            .load(&v3, "s", "f", &MemStore::new(7))
            .unwrap_err();
        assert!(err.contains("version 3"), "{err}");
    }

    #[test]
    fn damaged_or_foreign_side_stores_are_refused() {
        let bytes = sample().encode("s");
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

    /// The side store keeps its documents in files (nothing per document in
    /// memory: no index on the embedded store, records flushed to an unlinked
    /// file), and what decisions read from it (names, signatures, band keys) is
    /// what a side store found by the documents' own locations (hash servers)
    /// answers.
    #[test]
    fn side_store_lives_in_files_and_answers_as_by_location() {
        let dir = tempfile::tempdir().unwrap();
        let (local, shared) = (KeptDocs::default(), KeptDocs::default());
        local.set_local();
        for k in [&local, &shared] {
            k.set_dir(dir.path());
            k.add_file(7, "a/b.jsonl");
        }
        let (local_store, shared_store) = (MemStore::new(31), MemStore::new(31));
        let n = 3000u64;
        let (mut seen, mut orig) = (Vec::new(), Vec::new());
        for i in 0..n {
            let loc = Location {
                file: 7,
                record: 2 * i + 1,
            };
            let id = format!("doc-{i}");
            let id = (i % 3 == 0).then_some(id.as_bytes());
            let sig: Vec<u8> = (0..112).map(|j| (i + j) as u8).collect();
            let bands: Vec<u64> = (0..14).map(|b| i * 100 + b).collect();
            for (k, store) in [(&local, &local_store), (&shared, &shared_store)] {
                let at = k.inner.lock().push(loc, id, &sig, &bands).unwrap();
                store
                    .test_and_insert_located(&bands, &vec![at; 14], &mut seen, &mut orig)
                    .unwrap();
            }
        }
        {
            let g = local.inner.lock();
            assert_eq!(g.len(), n);
            assert!(g.index.is_empty(), "no per-document index on the own store");
            let in_file = g.records.as_ref().unwrap().bytes_in_file();
            assert!(in_file > 256 * (n - 300), "records in the file: {in_file}");
        }
        assert_eq!(shared.inner.lock().index.len() as u64, n);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "the files are unlinked: nothing is left behind"
        );
        let probe: Vec<u64> = (0..n).step_by(7).map(|i| i * 100 + i % 14).collect();
        let query: Vec<u8> = (0..112).map(|j| (j * 3) as u8).collect();
        let answers = |k: &KeptDocs, store: &MemStore| {
            let (mut seen, mut orig) = (Vec::new(), Vec::new());
            store.test_located(&probe, &mut seen, &mut orig).unwrap();
            assert!(seen.iter().all(|&s| s));
            let mut g = k.inner.lock();
            orig.iter()
                .map(|&o| {
                    let at = g.input_location(o).unwrap();
                    (at, g.name(o).unwrap(), g.known_sig(o, &query).unwrap())
                })
                .collect::<Vec<_>>()
        };
        let want = answers(&shared, &shared_store);
        assert_eq!(answers(&local, &local_store), want);
        assert_eq!(want[0].1, "doc-0");
        assert_eq!(want[1].1, "a/b.jsonl:15");
        assert!(want.iter().all(|w| w.2.is_some()));
    }
}
