//! Decision records: what the store answered for one chunk, so that a chunk whose
//! keys are already in the store (journaled before a crash) gets the same verdicts
//! when it is processed again.
//!
//! A record is a journal record whose keys are the chunk's *new* keys and whose tag
//! is:
//!
//! ```text
//! u8 version=1  u32 rel_len  rel (relative input path, bytes)  u64 chunk (index in its file)
//! u32 asked (keys the chunk asked the store, all three rounds)  u64 check (fold_key over them)
//! bits[ceil(asked/8)]  (bit i = key i was seen, LSB first)
//! ```
//!
//! In feedback mode (`version=5`, otherwise the same tag) the keys are followed by
//! each new key's first-seen location, `u64 file  u64 record` per key in the keys'
//! order, as a hash server journals them (`L` records): a restore gives the store
//! back the locations feedback references name, and a replayed chunk's originals
//! come from there ([`Replayer::with_store`]).
//!
//! Replaying the record's keys rebuilds the store; the bits give the verdicts back
//! without asking the store (which now holds these keys and would say "seen"). The
//! hash of the asked keys checks that the input is still the same.
//!
//! A **finish mark** follows the record of a file's last chunk when its output is
//! complete (no keys):
//!
//! ```text
//! u8 kind=2  u32 rel_len  rel  u64 chunks (the file's chunk count)
//! ```
//!
//! It is appended before the journal is synced for the output's rename, so the record
//! of a finished output's chunk is never the journal's last record: a damaged last
//! record is always one that a restore redoes (an unfinished output's chunk) or a mark
//! (whose output's records are all intact before it), never keys a finished output
//! depends on. Damage before the last record is refused by the journal replay.
//!
//! A **start record** is a journal's first record, written with its header in one
//! atomic write, so a journal without one was cut short (or written by a webdedup
//! before issue 27):
//!
//! ```text
//! u8 kind=4  u8 how (0: a fresh run, 1: a restore that found no journal)
//! u64 base (MinHash: the checksum of the side store the run started from; 0: none)
//! u32 n, n × (u32 rel_len  rel): the inputs whose output existed when it was written
//! ```
//!
//! It tells a restore, for each output it finds, whether skipping it is safe
//! ([`RunStart::finished`]): an output finished by the run has a finish mark; one
//! listed by a restore's start record was finished before the journal began (its
//! keys are in the snapshot); one listed by a fresh run's is an earlier run's output,
//! to be written again. Any other output lost its records (the journal was cut
//! short): the restore is refused, never a silently smaller store.

use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use webdedup_store::{Answer, Location, MemStore, Op, Request, Store, StoreError};

const TAG_VERSION: u8 = 1;
/// A decision record whose keys are followed by their first-seen locations.
const TAG_LOCATED: u8 = 5;
/// The first byte of a finish mark's tag.
const TAG_FINISHED: u8 = 2;
/// The first byte of the record of a MinHash run's nonce (journals before issue 27).
const TAG_MINHASH_NONCE: u8 = 3;
/// The first byte of a start record's tag.
const TAG_START: u8 = 4;

/// The verdicts of one chunk.
#[derive(Clone, Debug)]
pub struct ChunkVerdicts {
    pub asked: u32,
    pub hash: u64,
    pub bits: Vec<u8>,
}

/// Recorded verdicts by input file (relative path bytes) and chunk index.
#[derive(Debug, Default)]
pub struct Recorded {
    pub files: HashMap<Vec<u8>, BTreeMap<u64, ChunkVerdicts>>,
    /// The last record added: `(rel, Some(chunk))` for a chunk's decision record,
    /// `(rel, None)` for a finish mark.
    pub last: Option<(Vec<u8>, Option<u64>)>,
    /// The inputs with a finish mark.
    pub finished: HashSet<Vec<u8>>,
    /// The journal's start record.
    pub start: Option<RunStart>,
    /// A MinHash run's nonce (journals before issue 27).
    pub nonce: Option<u64>,
}

impl Recorded {
    pub fn get(&self, rel: &[u8], chunk: u64) -> Option<&ChunkVerdicts> {
        self.files.get(rel)?.get(&chunk)
    }

    /// Adds a record from its tag (a decision record, a finish mark, a start
    /// record, a nonce).
    pub fn add_tag(&mut self, tag: &[u8]) -> Result<(), String> {
        match tag.first() {
            Some(&TAG_FINISHED) => {
                let (rel, _chunks) = decode_finished(tag)?;
                self.finished.insert(rel.clone());
                self.last = Some((rel, None));
                return Ok(());
            }
            Some(&TAG_START) => {
                self.start = Some(RunStart::decode(tag)?);
                return Ok(());
            }
            Some(&TAG_MINHASH_NONCE) => {
                let n = tag.get(1..).and_then(|b| b.try_into().ok());
                self.nonce = Some(u64::from_le_bytes(n.ok_or("bad nonce record")?));
                return Ok(());
            }
            _ => {}
        }
        let (rel, chunk, v) = decode_tag(tag)?;
        self.last = Some((rel.clone(), Some(chunk)));
        self.files.entry(rel).or_default().insert(chunk, v);
        Ok(())
    }

    pub fn chunks(&self) -> usize {
        self.files.values().map(|m| m.len()).sum()
    }
}

/// Whether `tag` is a start record or a MinHash nonce: what the journal says about
/// the run, not a chunk's work.
pub fn is_bookkeeping(tag: &[u8]) -> bool {
    matches!(tag.first(), Some(&TAG_START) | Some(&TAG_MINHASH_NONCE))
}

/// Puts a journal record's keys into `store`: with their first-seen locations when
/// it is a located decision record.
pub fn replay_keys(store: &MemStore, tag: &[u8], keys: &[u64]) -> Result<(), String> {
    if tag.first() != Some(&TAG_LOCATED) {
        store.insert_all(keys);
        return Ok(());
    }
    if !keys.len().is_multiple_of(3) {
        return Err(format!(
            "located decision record of {} values (not a key and a location each)",
            keys.len()
        ));
    }
    let n = keys.len() / 3;
    let locs: Vec<Location> = keys[n..]
        .chunks_exact(2)
        .map(|fr| Location {
            file: fr[0],
            record: fr[1],
        })
        .collect();
    store
        .restore_locations(&keys[..n], &locs)
        .map_err(|e| e.to_string())
}

/// What a run does with an input whose output exists when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Written again: an earlier run's output (a fresh run writes every output).
    Rewrite,
    /// Left alone: what its documents did to the store is durable (in the journal,
    /// or in the snapshot the run started from).
    Skip,
    /// Left alone, but its documents go through the store again, in input order:
    /// MinHash's side store of kept documents (originals' names and signatures) is
    /// not in the journal, so a restore rebuilds it from the run's start.
    Replay,
}

/// A journal's start record (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStart {
    /// Written by a restore that found no journal: the listed outputs are finished
    /// and the snapshot holds their keys. Otherwise by a fresh run: they are an
    /// earlier run's, written again.
    pub by_restore: bool,
    /// MinHash: the checksum of the side store the run started from (0: none).
    pub base: u64,
    /// The inputs (relative path bytes) whose output existed.
    pub outputs: BTreeSet<Vec<u8>>,
}

impl RunStart {
    pub fn encode(&self) -> Vec<u8> {
        let mut t = vec![TAG_START, self.by_restore as u8];
        t.extend_from_slice(&self.base.to_le_bytes());
        t.extend_from_slice(&(self.outputs.len() as u32).to_le_bytes());
        for rel in &self.outputs {
            t.extend_from_slice(&(rel.len() as u32).to_le_bytes());
            t.extend_from_slice(rel);
        }
        t
    }

    fn decode(tag: &[u8]) -> Result<RunStart, String> {
        let mut pos = 0usize;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let b = tag
                .get(pos..pos + n)
                .ok_or_else(|| "start record cut short".to_string())?;
            pos += n;
            Ok(b)
        };
        take(1)?;
        let by_restore = match take(1)?[0] {
            0 => false,
            1 => true,
            n => return Err(format!("start record of unknown kind {n}")),
        };
        let base = u64::from_le_bytes(take(8)?.try_into().unwrap());
        let n = u32::from_le_bytes(take(4)?.try_into().unwrap());
        let mut outputs = BTreeSet::new();
        for _ in 0..n {
            let len = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
            outputs.insert(take(len)?.to_vec());
        }
        if pos != tag.len() {
            return Err("stray bytes in a start record".into());
        }
        Ok(RunStart {
            by_restore,
            base,
            outputs,
        })
    }

    /// What a restore does with the finished output of input `rel`, given the
    /// journal's finish marks (`marked`: also a mark dropped as torn, see
    /// `persist`), or `None` when the journal lost its records. `replay`: the
    /// run's finished outputs go through the store again (MinHash).
    pub fn finished(&self, rel: &[u8], marked: bool, replay: bool) -> Option<Finished> {
        if marked {
            return Some(if replay {
                Finished::Replay
            } else {
                Finished::Skip
            });
        }
        if !self.outputs.contains(rel) {
            return None;
        }
        Some(if self.by_restore {
            Finished::Skip
        } else {
            Finished::Rewrite
        })
    }
}

/// A check value of the keys asked, in order (not a cryptographic hash: it only
/// has to notice that the input changed between the interrupted run and now).
#[inline]
pub fn fold_key(h: u64, k: u64) -> u64 {
    (h ^ k).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

pub fn hash_keys(keys: &[u64]) -> u64 {
    keys.iter().fold(0, |h, &k| fold_key(h, k))
}

/// The tag of a chunk's decision record; `located`: its keys are followed by
/// their locations.
pub fn encode_tag(
    rel: &[u8],
    chunk: u64,
    asked: &[u64],
    seen: &[bool],
    located: bool,
    out: &mut Vec<u8>,
) {
    out.clear();
    out.push(if located { TAG_LOCATED } else { TAG_VERSION });
    out.extend_from_slice(&(rel.len() as u32).to_le_bytes());
    out.extend_from_slice(rel);
    out.extend_from_slice(&chunk.to_le_bytes());
    out.extend_from_slice(&(asked.len() as u32).to_le_bytes());
    out.extend_from_slice(&hash_keys(asked).to_le_bytes());
    let mut byte = 0u8;
    for (i, &s) in seen.iter().enumerate() {
        byte |= (s as u8) << (i % 8);
        if i % 8 == 7 {
            out.push(byte);
            byte = 0;
        }
    }
    if !seen.len().is_multiple_of(8) {
        out.push(byte);
    }
}

/// The tag of already recorded verdicts (for decision logs).
pub fn encode_verdicts(rel: &[u8], chunk: u64, v: &ChunkVerdicts, out: &mut Vec<u8>) {
    out.clear();
    out.push(TAG_VERSION);
    out.extend_from_slice(&(rel.len() as u32).to_le_bytes());
    out.extend_from_slice(rel);
    out.extend_from_slice(&chunk.to_le_bytes());
    out.extend_from_slice(&v.asked.to_le_bytes());
    out.extend_from_slice(&v.hash.to_le_bytes());
    out.extend_from_slice(&v.bits);
}

/// The tag of a finish mark: the output of `rel` (with `chunks` chunks) is complete.
pub fn encode_finished(rel: &[u8], chunks: u64, out: &mut Vec<u8>) {
    out.clear();
    out.push(TAG_FINISHED);
    out.extend_from_slice(&(rel.len() as u32).to_le_bytes());
    out.extend_from_slice(rel);
    out.extend_from_slice(&chunks.to_le_bytes());
}

fn decode_finished(tag: &[u8]) -> Result<(Vec<u8>, u64), String> {
    let cut = || "finish mark cut short".to_string();
    let len = u32::from_le_bytes(tag.get(1..5).ok_or_else(cut)?.try_into().unwrap()) as usize;
    let rel = tag.get(5..5 + len).ok_or_else(cut)?.to_vec();
    let chunks = tag.get(5 + len..).ok_or_else(cut)?;
    let chunks = u64::from_le_bytes(chunks.try_into().map_err(|_| cut())?);
    Ok((rel, chunks))
}

pub fn decode_tag(tag: &[u8]) -> Result<(Vec<u8>, u64, ChunkVerdicts), String> {
    let mut pos = 0usize;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let b = tag
            .get(pos..pos + n)
            .ok_or_else(|| "decision record cut short".to_string())?;
        pos += n;
        Ok(b)
    };
    if !matches!(take(1)?[0], TAG_VERSION | TAG_LOCATED) {
        return Err("unknown decision record version".into());
    }
    let rel_len = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
    let rel = take(rel_len)?.to_vec();
    let chunk = u64::from_le_bytes(take(8)?.try_into().unwrap());
    let asked = u32::from_le_bytes(take(4)?.try_into().unwrap());
    let hash = u64::from_le_bytes(take(8)?.try_into().unwrap());
    let bits = take((asked as usize).div_ceil(8))?.to_vec();
    if pos != tag.len() {
        return Err("stray bytes in a decision record".into());
    }
    Ok((rel, chunk, ChunkVerdicts { asked, hash, bits }))
}

/// What a [`Recorder`] logs: every key asked, its verdict, whether it was only
/// tested (near mode's probe round: not inserted, so not a new key of the store
/// even when absent), and the location it was inserted with (unknown when none).
pub type RecorderLog = (Vec<u64>, Vec<bool>, Vec<bool>, Vec<Location>);

/// A store that forwards to another and logs every request ([`RecorderLog`]).
pub struct Recorder<'a> {
    pub inner: &'a dyn Store,
    pub log: Mutex<RecorderLog>,
}

impl Store for Recorder<'_> {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        self.inner.ask(req, out)?;
        let (keys, op) = (req.keys(), req.op());
        let mut log = self.log.lock();
        log.0.extend_from_slice(keys);
        log.1.extend_from_slice(out.seen);
        let n = log.2.len() + keys.len();
        log.2.resize(n, !op.inserts());
        match op {
            Op::TestAndInsertLocated(locs) => log.3.extend_from_slice(locs),
            _ => log.3.resize(n, Location::UNKNOWN),
        }
        Ok(())
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn memory_bytes(&self) -> u64 {
        self.inner.memory_bytes()
    }
    fn blocks(&self) -> u32 {
        self.inner.blocks()
    }
}

/// A store that answers from recorded verdicts (and checks the keys asked are the
/// recorded ones).
pub struct Replayer<'a> {
    pub verdicts: &'a ChunkVerdicts,
    pub state: Mutex<(usize, u64)>,
    /// Where a seen key's first location is asked (feedback mode).
    store: Option<&'a dyn Store>,
}

impl<'a> Replayer<'a> {
    pub fn new(verdicts: &'a ChunkVerdicts) -> Self {
        Replayer {
            verdicts,
            state: Mutex::new((0, 0)),
            store: None,
        }
    }

    /// A replayer that names a seen key's original as `store` holds it: the
    /// restored store (snapshot, its locations and the journal's located records)
    /// has every key the interrupted run had inserted when the chunk asked, each
    /// with the location of its first sighting, which never changes.
    pub fn with_store(verdicts: &'a ChunkVerdicts, store: &'a dyn Store) -> Self {
        Replayer {
            store: Some(store),
            ..Replayer::new(verdicts)
        }
    }

    /// Whether exactly the recorded keys were asked.
    pub fn matched(&self) -> bool {
        let st = self.state.lock();
        st.0 == self.verdicts.asked as usize && st.1 == self.verdicts.hash
    }
}

impl Replayer<'_> {
    /// The next recorded verdicts, one a key, into `seen` (cleared first).
    fn replay(&self, keys: &[u64], seen: &mut Vec<bool>) -> Result<(), StoreError> {
        let mut st = self.state.lock();
        seen.clear();
        if st.0 + keys.len() > self.verdicts.asked as usize {
            return Err(StoreError::Mismatch(
                "more keys asked than the recorded verdicts hold".into(),
            ));
        }
        for (i, k) in keys.iter().enumerate() {
            let j = st.0 + i;
            seen.push(self.verdicts.bits[j / 8] >> (j % 8) & 1 == 1);
            st.1 = fold_key(st.1, *k);
        }
        st.0 += keys.len();
        Ok(())
    }
}

impl Store for Replayer<'_> {
    /// Every request, test-only ones too, was recorded in one sequence: each is
    /// answered by the next verdicts. A located one names a seen key's original
    /// as the store holds it (see [`Replayer::with_store`]); a new key has none.
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let keys = req.keys();
        self.replay(keys, out.seen)?;
        if !req.op().located() {
            return Ok(());
        }
        out.originals.clear();
        match self.store {
            Some(store) => {
                let mut present = Vec::new();
                store.test_located(keys, &mut present, out.originals)?;
                for (o, &s) in out.originals.iter_mut().zip(out.seen.iter()) {
                    if !s {
                        *o = Location::UNKNOWN;
                    }
                }
            }
            None => out.originals.resize(keys.len(), Location::UNKNOWN),
        }
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
    fn memory_bytes(&self) -> u64 {
        0
    }
    fn blocks(&self) -> u32 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_round_trip_and_replay() {
        let asked = [5u64, 9, 5, 12, 1, 2, 3, 4, 5];
        let seen = [false, false, true, false, true, false, false, true, true];
        let mut tag = Vec::new();
        encode_tag(b"a/b.vert", 7, &asked, &seen, false, &mut tag);
        let (rel, chunk, v) = decode_tag(&tag).unwrap();
        let mut again = Vec::new();
        encode_verdicts(&rel, chunk, &v, &mut again);
        assert_eq!(again, tag);
        assert_eq!((rel.as_slice(), chunk, v.asked), (&b"a/b.vert"[..], 7, 9));
        let r = Replayer::new(&v);
        let mut out = Vec::new();
        r.test_and_insert(&asked[..4], &mut out).unwrap();
        assert_eq!(out, seen[..4]);
        r.test_and_insert(&asked[4..], &mut out).unwrap();
        assert_eq!(out, seen[4..]);
        assert!(r.matched());
        assert!(r.test_and_insert(&[1], &mut out).is_err());
        for cut in 0..tag.len() {
            assert!(decode_tag(&tag[..cut]).is_err());
        }
    }

    #[test]
    fn located_records_give_back_locations_and_replayed_originals() {
        let here = |record| Location { file: 9, record };
        // A chunk asked [5, 6, 5]: 5 and 6 new (at records 1 and 2), then 5 seen.
        let (asked, seen) = ([5u64, 6, 5], [false, false, true]);
        let mut tag = Vec::new();
        encode_tag(b"a.vert", 0, &asked, &seen, true, &mut tag);
        let keys = [5, 6, 9, 1, 9, 2];
        let store = MemStore::new(3);
        replay_keys(&store, &tag, &keys).unwrap();
        assert_eq!(store.len(), 2);
        assert!(replay_keys(&store, &tag, &keys[..5]).is_err());
        let (_, _, v) = decode_tag(&tag).unwrap();
        let r = Replayer::with_store(&v, &store);
        let (mut s, mut o) = (Vec::new(), Vec::new());
        r.test_and_insert_located(&asked, &[here(1), here(2), here(3)], &mut s, &mut o)
            .unwrap();
        assert_eq!(s, seen);
        assert_eq!(o, [Location::UNKNOWN, Location::UNKNOWN, here(1)]);
        assert!(r.matched());
    }

    #[test]
    fn finish_marks_are_told_apart_from_decision_records() {
        let mut rec = Recorded::default();
        let mut tag = Vec::new();
        encode_tag(b"a.vert", 3, &[1, 2], &[false, true], false, &mut tag);
        rec.add_tag(&tag).unwrap();
        assert_eq!(rec.last, Some((b"a.vert".to_vec(), Some(3))));
        encode_finished(b"a.vert", 4, &mut tag);
        rec.add_tag(&tag).unwrap();
        assert_eq!(rec.last, Some((b"a.vert".to_vec(), None)));
        assert_eq!(rec.chunks(), 1, "a mark is no chunk");
        assert_eq!(decode_finished(&tag).unwrap(), (b"a.vert".to_vec(), 4));
        for cut in 1..tag.len() {
            assert!(rec.add_tag(&tag[..cut]).is_err(), "cut at {cut}");
        }
        tag.push(0);
        assert!(rec.add_tag(&tag).is_err(), "stray byte");
    }
}
