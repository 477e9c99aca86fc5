//! The ordered step asked ahead (MinHash and near mode on this process's store,
//! several threads; see `runner::asks_ahead`).
//!
//! A store only grows, and before a chunk's turn in the commit gate only earlier
//! chunks insert. So a chunk can ask its tests before its turn, in parallel with
//! other chunks: a key found then is found for good, with the same first
//! location; a key not found may since have been inserted by the chunks that were
//! still ahead of it. In its turn each chunk leaves the keys it inserted
//! ([`Recent`]), and a chunk corrects its early answers by those of the chunks it
//! did not wait for ([`Foresight::patch`]): exactly the store's answers in its
//! turn. MinHash mode asks its test round ahead; near mode asks ahead the n-grams
//! its test round may ask (it builds them ahead too). Both judge in the turn,
//! where the test round is answered from the corrected answers
//! ([`Sight::Corrected`]). Every answer is a one-thread run's, so every output
//! is too. Near mode (without feedback) also judges the chunk ahead, on the
//! answers it has then and its exact rounds asked as tests
//! ([`Foreseen::speculating`]); its turn judges again only the documents whose
//! inputs changed (`policy::near::speculation`).
//!
//! Both modes also move their insert round out of the gate ([`Foreseen`]
//! deferring, [`Deferred`]): in its turn the chunk answers the round without the
//! store, hands the keys it inserts to [`Recent`] and leaves the gate; the
//! inserts follow in block lanes (`super::lanes`), each block still seeing its
//! keys in input order. MinHash tested ahead every key it inserts, in the same
//! order ([`Deferral::Answered`]): an insert is found if the corrected test found
//! it, or an earlier insert of the chunk did, and its log holds the keys it
//! inserted new. Near mode also inserts n-grams it never tested (those of short
//! kept paragraphs), but judges nothing by its insert round's answers
//! ([`Deferral::Unanswered`]): the round is answered "new" unasked, its log holds
//! every key it inserts (new or not) with the location it was inserted with,
//! and the store's own answers replace the given ones in the chunk's journal
//! record once the lanes have sent the round ([`Deferred::send`]). A log that
//! holds keys the store had already still corrects exactly: a key an asking
//! chunk did not find ahead was inserted by none of the chunks before its
//! watermark (below), so it is in the store in its turn if and only if one of
//! the chunks whose logs it reads inserted it, and the first of those logs to
//! hold it has its first location.
//!
//! The store then lags the gate, so [`Recent`] counts two things: the chunks
//! that passed the gate (their logs) and the chunks whose inserts are all in the
//! store (`stored`, in input order: a chunk's last lane turn follows every
//! earlier chunk's in that lane). A chunk asking ahead takes the stored count as
//! its watermark: every key of the chunks before it is in the store, and the
//! keys of the chunks from it to the asking one, which may or may not be there
//! yet, are all in the logs by the asking chunk's turn. A key found ahead is
//! found for good with its first location, even from a chunk whose inserts are
//! half done: within a block slots arrive in input order, so an earlier first
//! inserter's slot is there before any later owner's. A chunk with nothing
//! usable asked ahead ([`Sight::Blind`]) waits in its turn until every earlier
//! chunk's inserts are stored and asks the store itself.

use parking_lot::{Condvar, Mutex};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::ops::Range;
use std::sync::Arc;
use webdedup_store::{Answer, BatchId, Location, Op, Request, Store, StoreError};

use crate::policy::near::{KeyHasher, KeyParas};

/// Keys a chunk inserted new, with the locations they were inserted with.
pub(crate) type NewKeys = HashMap<u64, Location, BuildHasherDefault<KeyHasher>>;

/// The keys a chunk inserted (new ones, or with [`Deferral::Unanswered`] every
/// key its round inserts), with the locations they were inserted with, in
/// order: a key's first entry has its first location. A plain list, built in
/// the turn at the cost of a push; the chunks that read it look its keys up in
/// the map of their own unanswered tests, built ahead ([`Foresight::patch`]).
pub(crate) type Log = Vec<(u64, Location)>;

/// No earlier test of the same key ([`Foresight`]'s `prev`).
const NO_TEST: u32 = u32::MAX;

/// How many chunks have passed the commit gate and how many have their inserts
/// in the store, and the keys the last few inserted new.
pub(crate) struct Recent {
    state: Mutex<RecentState>,
    all_stored: Condvar,
    /// Logs kept: a chunk asks ahead only after every earlier chunk was handed
    /// to a thread, and a thread takes its next chunk only once its last one's
    /// inserts are stored, so fewer than `threads` chunks lie between the
    /// stored count it asks at and its turn.
    keep: usize,
}

#[derive(Default)]
struct RecentState {
    passed: u64,
    /// Chunks before this one have every insert in the store.
    stored: u64,
    /// Chunks after `stored` whose inserts are done (reported out of order).
    stored_early: BTreeSet<u64>,
    logs: VecDeque<(u64, Arc<Log>)>,
}

impl Recent {
    pub(crate) fn new(threads: usize) -> Self {
        Recent {
            state: Mutex::default(),
            all_stored: Condvar::new(),
            keep: 2 * threads + 2,
        }
    }

    /// Chunks before this one have their inserts in the store.
    fn watermark(&self) -> u64 {
        self.state.lock().stored
    }

    /// Chunks before this one have passed the gate (their logs are kept).
    fn passed(&self) -> u64 {
        self.state.lock().passed
    }

    /// Chunk `seq`'s inserts are all in the store (every chunk says so once,
    /// whatever happened to it, after its turn).
    pub(crate) fn stored(&self, seq: u64) {
        let mut s = self.state.lock();
        s.stored_early.insert(seq);
        let mut advanced = false;
        while s.stored_early.first() == Some(&s.stored) {
            s.stored_early.pop_first();
            s.stored += 1;
            advanced = true;
        }
        drop(s);
        if advanced {
            self.all_stored.notify_all();
        }
    }

    /// Waits until every chunk before `seq` has its inserts in the store.
    pub(crate) fn wait_stored(&self, seq: u64) {
        let mut s = self.state.lock();
        if s.stored >= seq {
            return;
        }
        // Its core is free meanwhile (see `super::cores`).
        let idle = super::cores::Idle::begin();
        while s.stored < seq {
            self.all_stored.wait(&mut s);
        }
        drop(s);
        idle.end();
    }

    /// Chunk `seq`'s turn is over; `new` are the keys it inserted new.
    pub(crate) fn pass(&self, seq: u64, new: Log) {
        let mut s = self.state.lock();
        debug_assert_eq!(s.passed, seq, "chunks pass in input order");
        s.passed = seq + 1;
        s.logs.push_back((seq, Arc::new(new)));
        while s.logs.len() > self.keep {
            s.logs.pop_front();
        }
    }

    /// The logs of chunks `from..to`, in order; `None` when some are no longer kept.
    fn since(&self, from: u64, to: u64) -> Option<Vec<Arc<Log>>> {
        let s = self.state.lock();
        if from >= to {
            return Some(Vec::new());
        }
        let first = s.logs.front()?.0;
        if from < first {
            return None;
        }
        Some(
            s.logs
                .iter()
                .filter(|(seq, _)| (from..to).contains(seq))
                .map(|(_, l)| l.clone())
                .collect(),
        )
    }
}

/// One chunk's tests asked ahead, with the store's answers then, corrected by
/// the logs of the chunks before it.
#[derive(Default)]
pub(crate) struct Foresight {
    /// Whether this chunk was asked ahead at all.
    pub(crate) ready: bool,
    /// Chunks before this one had their inserts stored when it asked.
    watermark: u64,
    /// The answers are corrected by the logs of the chunks before this one.
    patched: u64,
    /// Answers the corrections changed so far.
    changed: usize,
    /// A log needed was gone: nothing asked ahead may be used.
    gone: bool,
    keys: Vec<u64>,
    seen: Vec<bool>,
    /// A seen key's first location (unknown for tests that do not ask it).
    originals: Vec<Location>,
    /// Each key not found ahead, with its last test; `prev` chains a test to
    /// the one before it of the same key ([`NO_TEST`]: none).
    unseen: KeyParas,
    prev: Vec<u32>,
}

impl Foresight {
    /// Forgets the last chunk's tests; the next are asked against the store as
    /// it is now.
    pub(crate) fn start(&mut self, recent: &Recent) {
        self.ready = true;
        self.watermark = recent.watermark();
        self.patched = self.watermark;
        self.changed = 0;
        self.gone = false;
        self.keys.clear();
        self.seen.clear();
        self.originals.clear();
        self.unseen.clear(1 << 12);
        self.prev.clear();
    }

    /// In chunk `seq`'s turn: corrects the answers by the keys the chunks it did
    /// not wait for inserted. How many answers changed (`None`: the logs needed
    /// are gone, nothing asked ahead may be used).
    pub(crate) fn patch(&mut self, recent: &Recent, seq: u64) -> Option<usize> {
        if !self.ready {
            return None;
        }
        self.patch_from(recent, seq);
        (!self.gone).then_some(self.changed)
    }

    /// Before the chunk's turn: corrects the answers by the logs of the chunks
    /// that passed the gate so far, so that its turn has fewer left to apply
    /// (a key is corrected by the first log that has it, as in one pass).
    pub(crate) fn patch_early(&mut self, recent: &Recent) {
        if self.ready {
            let passed = recent.passed();
            self.patch_from(recent, passed);
        }
    }

    fn patch_from(&mut self, recent: &Recent, to: u64) {
        if self.gone || to <= self.patched {
            return;
        }
        let Some(logs) = recent.since(self.patched, to) else {
            self.gone = true;
            return;
        };
        self.patched = to;
        // Logs in input order, each in its order: a test takes the first
        // location its key was inserted with.
        for &(k, loc) in logs.iter().flat_map(|l| l.iter()) {
            let mut at = self.unseen.get(k).unwrap_or(NO_TEST);
            while at != NO_TEST {
                let i = at as usize;
                if !self.seen[i] {
                    self.seen[i] = true;
                    self.originals[i] = loc;
                    self.changed += 1;
                }
                at = self.prev[i];
            }
        }
    }

    /// The first test asked ahead of key `k`, from the `from`th key asked on
    /// (a chunk's later requests ask their keys in the order its tests did).
    fn test_of(&self, from: usize, k: u64) -> Option<usize> {
        (from..self.keys.len()).find(|&i| self.keys[i] == k)
    }
}

/// The store as a chunk asked ahead sees it: tests only, every answer recorded
/// in a [`Foresight`].
pub(crate) struct Ahead<'a> {
    pub(crate) inner: &'a dyn Store,
    pub(crate) sight: Mutex<&'a mut Foresight>,
}

impl Store for Ahead<'_> {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let (keys, op) = (req.keys(), req.op());
        if op.inserts() {
            // Only earlier chunks insert before a chunk's turn.
            return Err(StoreError::Unsupported(
                "an insert asked ahead of the chunk's turn".into(),
            ));
        }
        self.inner.ask(Request::new(None, keys, op)?, out)?;
        let mut guard = self.sight.lock();
        let f = &mut **guard;
        if f.keys.is_empty() {
            // Sized once for the chunk's tests (growing rehashes every key).
            f.unseen.clear(keys.len());
        }
        for (n, (&k, &seen)) in keys.iter().zip(out.seen.iter()).enumerate() {
            let i = (f.keys.len() + n) as u32;
            if seen {
                f.prev.push(NO_TEST);
            } else {
                f.prev.push(f.unseen.get(k).unwrap_or(NO_TEST));
                f.unseen.set(k, i);
            }
        }
        f.keys.extend_from_slice(keys);
        f.seen.extend_from_slice(out.seen);
        if op.located() {
            f.originals.extend_from_slice(out.originals);
        } else {
            f.originals.resize(f.keys.len(), Location::UNKNOWN);
        }
        Ok(())
    }

    forward_store_figures!();
}

/// How a [`Foreseen`] answers tests.
pub(crate) enum Sight<'a> {
    /// From the corrected answers, the chunk's inserts in its turn laid over
    /// them.
    Corrected(&'a Foresight),
    /// From the store (nothing usable was asked ahead).
    Blind,
}

/// Which inserts a [`Foreseen`] keeps for after the chunk's turn.
#[derive(Clone, Copy)]
pub(crate) enum Deferral {
    /// Every insert, answered from the corrected tests: the chunk tested ahead
    /// every key it inserts, in the same order (MinHash's band keys).
    Answered,
    /// The request with this identity only, answered "new" without asking: the
    /// policy judges nothing by its answers (near mode's insert round, the
    /// chunk's last request). The store's answers replace them after the turn.
    Unanswered(BatchId),
}

/// The store in a chunk's turn: inserts go to the store, or with
/// [`Foreseen::deferring`] are answered without it and kept for after the turn
/// (the keys inserted are collected for [`Recent`]); tests are answered from
/// what was asked ahead ([`Sight`]).
pub(crate) struct Foreseen<'a> {
    pub(crate) inner: &'a dyn Store,
    pub(crate) sight: Sight<'a>,
    pub(crate) state: Mutex<ForeseenState>,
}

#[derive(Default)]
pub(crate) struct ForeseenState {
    /// The next test key asked ahead to match (tests come in the order asked
    /// ahead, some left out).
    cursor: usize,
    /// A test key was not found ahead: later tests go to the store.
    lost: bool,
    /// Keys the chunk inserted new (so far), for its later requests' answers.
    own: NewKeys,
    /// The chunk's [`Log`] for [`Recent`].
    pub(crate) log: Log,
    /// The inserts kept for after the turn (when deferring).
    pub(crate) deferred: Option<(Deferral, Deferred)>,
    /// The next test asked ahead an insert's key may match.
    insert_cursor: usize,
    /// Ahead of the turn, the insert round of near mode's chunk judged whole
    /// ([`Foreseen::speculating`]).
    speculative: Option<BatchId>,
}

/// A chunk's deferred inserting requests, answered in its turn and sent to the
/// store after it ([`super::worker::Worker::insert_deferred`]).
#[derive(Default)]
pub(crate) struct Deferred {
    pub(crate) requests: Vec<DeferredRequest>,
    pub(crate) keys: Vec<u64>,
    pub(crate) locs: Vec<Location>,
    /// The answers given in the turn; after [`Deferred::send`], the store's.
    pub(crate) seen: Vec<bool>,
    /// The table of the keys a chunk inserted new ([`ForeseenState`]'s `own`),
    /// kept between chunks: built afresh, it grew and rehashed in every turn.
    own: NewKeys,
}

pub(crate) struct DeferredRequest {
    pub(crate) id: BatchId,
    pub(crate) keys: Range<usize>,
    pub(crate) located: bool,
    /// Answered without asking ([`Deferral::Unanswered`]): the store's answers
    /// may differ from the given ones.
    pub(crate) unanswered: bool,
}

impl ForeseenState {
    /// The buffers of the inserts kept for after the turn (if deferring), with
    /// the table of the chunk's new keys handed back for the next chunk.
    pub(crate) fn take_deferred(&mut self) -> Option<Deferred> {
        let (_, mut d) = self.deferred.take()?;
        d.own = std::mem::take(&mut self.own);
        Some(d)
    }
}

impl Deferred {
    pub(crate) fn clear(&mut self) {
        self.requests.clear();
        self.keys.clear();
        self.locs.clear();
        self.seen.clear();
    }

    /// The first request's identity (the chunk's insert round).
    pub(crate) fn first_id(&self) -> Option<BatchId> {
        self.requests.first().map(|r| r.id)
    }

    /// Whether some request was answered without asking: its answers in the
    /// chunk's journal record are the store's, from [`Self::send`].
    pub(crate) fn unanswered(&self) -> bool {
        self.requests.iter().any(|r| r.unanswered)
    }

    /// Sends the requests to `store`, in order. A request answered from the
    /// tests gets the answers given in the chunk's turn (checked in debug
    /// builds); one answered without asking keeps the store's in `seen`.
    pub(crate) fn send(&mut self, store: &dyn Store) -> Result<(), StoreError> {
        let (mut seen, mut originals) = (Vec::new(), Vec::new());
        for r in &self.requests {
            let keys = &self.keys[r.keys.clone()];
            let op = if r.located {
                Op::TestAndInsertLocated(&self.locs[r.keys.clone()])
            } else {
                Op::TestAndInsert
            };
            let answer = &mut Answer {
                seen: &mut seen,
                originals: &mut originals,
            };
            store.ask(Request::new(Some(r.id), keys, op)?, answer)?;
            let given = &mut self.seen[r.keys.clone()];
            if r.unanswered {
                given.copy_from_slice(&seen);
            } else {
                debug_assert_eq!(seen[..], given[..], "an answer known before");
            }
        }
        Ok(())
    }
}

impl<'a> Foreseen<'a> {
    pub(crate) fn new(inner: &'a dyn Store, sight: Sight<'a>) -> Self {
        Foreseen {
            inner,
            sight,
            state: Mutex::default(),
        }
    }

    /// Inserts (`how` says which) are not sent but answered without the store
    /// and kept in `buffers` (cleared). Only with [`Sight::Corrected`].
    pub(crate) fn deferring(self, how: Deferral, mut buffers: Deferred) -> Self {
        debug_assert!(matches!(self.sight, Sight::Corrected(_)));
        buffers.clear();
        let mut st = self.state.lock();
        st.own = std::mem::take(&mut buffers.own);
        st.own.clear();
        st.deferred = Some((how, buffers));
        drop(st);
        self
    }

    /// Ahead of the chunk's turn (near mode judging it whole; nothing may be
    /// inserted yet): the insert round `round` is answered "new" unasked, other
    /// inserts are asked as tests, the chunk's earlier keys laid over them.
    pub(crate) fn speculating(self, round: BatchId) -> Self {
        self.state.lock().speculative = Some(round);
        self
    }

    /// An insert ahead of the turn ([`Self::speculating`]).
    fn speculate(
        &self,
        st: &mut ForeseenState,
        round: BatchId,
        req: &Request<'_>,
        out: &mut Answer<'_>,
    ) -> Result<(), StoreError> {
        let (keys, op) = (req.keys(), req.op());
        if req.id() == Some(round) {
            out.seen.clear();
            out.seen.resize(keys.len(), false);
            if op.located() {
                out.originals.clear();
                out.originals.resize(keys.len(), Location::UNKNOWN);
            }
            return Ok(());
        }
        let test = if op.located() {
            Op::TestLocated
        } else {
            Op::Test
        };
        self.inner.ask(Request::new(None, keys, test)?, out)?;
        for (i, &k) in keys.iter().enumerate() {
            if out.seen[i] {
                continue;
            }
            if let Some(&loc) = st.own.get(&k) {
                out.seen[i] = true;
                if op.located() {
                    out.originals[i] = loc;
                }
            } else {
                let loc = op.locs().get(i).copied().unwrap_or(Location::UNKNOWN);
                st.own.insert(k, loc);
            }
        }
        Ok(())
    }

    /// Answers an insert from the corrected tests and the chunk's own earlier
    /// inserts, or as new ([`Deferral::Unanswered`]), and keeps it for after the
    /// turn.
    fn defer(
        f: &Foresight,
        st: &mut ForeseenState,
        req: &Request<'_>,
        out: &mut Answer<'_>,
    ) -> Result<(), StoreError> {
        let (keys, op) = (req.keys(), req.op());
        let Some(id) = req.id() else {
            return Err(StoreError::Unsupported(
                "an insert without identity kept for after the turn".into(),
            ));
        };
        let (how, d) = st.deferred.as_mut().expect("deferring");
        let unanswered = matches!(how, Deferral::Unanswered(_));
        let start = d.keys.len();
        st.log.reserve(keys.len());
        out.seen.clear();
        if op.located() {
            out.originals.clear();
        }
        for (n, &k) in keys.iter().enumerate() {
            let loc = op.locs().get(n).copied().unwrap_or(Location::UNKNOWN);
            let (seen, original) = if unanswered {
                st.log.push((k, loc));
                (false, Location::UNKNOWN)
            } else {
                let Some(i) = f.test_of(st.insert_cursor, k) else {
                    return Err(StoreError::Unsupported(
                        "an insert of a key the chunk did not test ahead".into(),
                    ));
                };
                st.insert_cursor = i;
                match (f.seen[i], st.own.get(&k)) {
                    (true, _) => (true, f.originals[i]),
                    (false, Some(&own)) => (true, own),
                    (false, None) => {
                        st.own.insert(k, loc);
                        st.log.push((k, loc));
                        (false, Location::UNKNOWN)
                    }
                }
            };
            out.seen.push(seen);
            if op.located() {
                out.originals.push(original);
            }
            d.seen.push(seen);
        }
        d.keys.extend_from_slice(keys);
        match op {
            Op::TestAndInsertLocated(locs) => d.locs.extend_from_slice(locs),
            _ => d.locs.resize(d.keys.len(), Location::UNKNOWN),
        }
        d.requests.push(DeferredRequest {
            id,
            keys: start..d.keys.len(),
            located: op.located(),
            unanswered,
        });
        Ok(())
    }

    /// Whether an inserting request `id` is kept for after the turn.
    fn defers(st: &ForeseenState, id: Option<BatchId>) -> bool {
        match &st.deferred {
            Some((Deferral::Answered, _)) => true,
            Some((Deferral::Unanswered(round), _)) => id == Some(*round),
            None => false,
        }
    }
}

impl Store for Foreseen<'_> {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let (keys, op) = (req.keys(), req.op());
        let mut st = self.state.lock();
        let st = &mut *st;
        if op.inserts() {
            if let Some(round) = st.speculative {
                return self.speculate(st, round, &req, out);
            }
            if let (true, Sight::Corrected(f)) = (Self::defers(st, req.id()), &self.sight) {
                return Self::defer(f, st, &req, out);
            }
            self.inner.ask(req, out)?;
            for (i, &k) in keys.iter().enumerate() {
                if !out.seen[i] {
                    let loc = op.locs().get(i).copied().unwrap_or(Location::UNKNOWN);
                    if let Entry::Vacant(e) = st.own.entry(k) {
                        e.insert(loc);
                        st.log.push((k, loc));
                    }
                }
            }
            return Ok(());
        }
        let f = match self.sight {
            Sight::Corrected(f) if !st.lost => f,
            _ => return self.inner.ask(req, out),
        };
        out.seen.clear();
        if op.located() {
            out.originals.clear();
        }
        for (n, &k) in keys.iter().enumerate() {
            let Some(i) = f.test_of(st.cursor, k) else {
                // Not asked ahead (cannot happen with the policies' requests):
                // the rest of the request from the store, which holds this
                // chunk's inserts too.
                st.lost = true;
                let mut rest = (Vec::new(), Vec::new());
                let r = Request::new(req.id(), &keys[n..], op)?;
                self.inner.ask(
                    r,
                    &mut Answer {
                        seen: &mut rest.0,
                        originals: &mut rest.1,
                    },
                )?;
                out.seen.extend_from_slice(&rest.0);
                if op.located() {
                    out.originals.extend_from_slice(&rest.1);
                }
                return Ok(());
            };
            st.cursor = i;
            let (mut seen, mut original) = (f.seen[i], f.originals[i]);
            if !seen {
                if let Some(&loc) = st.own.get(&k) {
                    (seen, original) = (true, loc);
                }
            }
            out.seen.push(seen);
            if op.located() {
                out.originals.push(original);
            }
        }
        Ok(())
    }

    forward_store_figures!();
}
