//! The ordered step split by store block (exact mode on this process's store).
//!
//! A key's answer depends only on the keys asked before it that fall in the same
//! store block, and each round of a chunk's requests asks keys of a kind of its
//! own (URL+title, document, paragraph keys: hash spaces of their own). So the
//! one commit gate becomes one turn per (round, lane), a lane being a fixed set
//! of store blocks: a chunk asks each lane's share of a round when every earlier
//! chunk has asked its share of that round in that lane. Lanes of one chunk and
//! chunks of different lanes or rounds proceed in parallel; every block still
//! sees its keys in input order, so every answer, and every output, is the one
//! of a one-thread run.

use super::cpu::thread_cpu_ns;
use super::order::wait_turn;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU64, Ordering};
use webdedup_store::{Answer, BatchId, BlockMap, Location, Op, Request, Store, StoreError};

/// Lanes a round is split into at most (fewer when the store has fewer blocks):
/// enough for the threads of a big machine to find a free one.
pub(crate) const LANES: u32 = 64;

/// Lanes of exact mode's rounds for each thread: every lane turn costs each
/// chunk a lock, a wake-up and two reads of the thread's CPU clock (system
/// calls), three rounds a chunk, so a run has no more lanes than its threads
/// can use. (The one insert round asked ahead keeps [`LANES`]: its longest
/// lane is counted as serial work, and 64 keep it at a sixty-fourth.)
pub(crate) fn exact_lanes(threads: usize) -> u32 {
    (threads.max(1) as u32).saturating_mul(8).min(LANES)
}

/// Rounds of exact mode's requests a chunk makes (`policy::decide`).
pub(crate) const EXACT_ROUNDS: usize = 3;

/// One (round, lane): the sequence number of the chunk whose turn it is, and
/// the CPU time spent in it.
#[derive(Default)]
struct Turn {
    next: Mutex<u64>,
    cv: Condvar,
    cpu_ns: AtomicU64,
}

impl Turn {
    /// Runs `f` in chunk `seq`'s turn, then gives the turn to `seq + 1`.
    fn pass<R>(&self, seq: u64, f: impl FnOnce() -> R) -> R {
        wait_turn(&self.next, &self.cv, seq);
        let start = thread_cpu_ns();
        let r = f();
        self.cpu_ns
            .fetch_add(thread_cpu_ns().saturating_sub(start), Ordering::Relaxed);
        *self.next.lock() = seq + 1;
        self.cv.notify_all();
        r
    }
}

/// The turns of every (round, lane) of a run.
pub(crate) struct Lanes {
    map: BlockMap,
    /// A power of two: a block's lane is its low bits (no division for every
    /// key asked).
    lanes: u32,
    rounds: usize,
    turns: Vec<Turn>,
}

impl Lanes {
    /// Turns for `rounds` rounds a chunk, over `store`'s blocks, in at most
    /// `lanes` lanes.
    pub(crate) fn new(store: &dyn Store, rounds: usize, lanes: u32) -> Self {
        let blocks = store.blocks().max(1);
        let most = lanes.clamp(1, LANES).min(blocks);
        // The largest power of two not above `most`.
        let lanes = 1 << most.ilog2();
        Lanes {
            map: BlockMap::new(blocks),
            lanes,
            rounds,
            turns: (0..rounds * lanes as usize)
                .map(|_| Turn::default())
                .collect(),
        }
    }

    pub(crate) fn rounds(&self) -> usize {
        self.rounds
    }

    fn lane_of(&self, key: u64) -> u16 {
        (self.map.block(key) & (self.lanes - 1)) as u16
    }

    fn turn(&self, round: usize, lane: u32) -> &Turn {
        &self.turns[round * self.lanes as usize + lane as usize]
    }

    /// The CPU time of the longest chain of turns (one round in one lane, over
    /// every chunk): what stays serial, however many threads.
    pub(crate) fn longest_chain_seconds(&self) -> f64 {
        let ns = self.turns.iter().map(|t| t.cpu_ns.load(Ordering::Relaxed));
        ns.max().unwrap_or(0) as f64 / 1e9
    }
}

/// Reusable buffers of a chunk's requests split by lane.
#[derive(Default)]
pub(crate) struct LaneScratch {
    /// Each request key's lane (worked out once a key).
    lane: Vec<u16>,
    /// Request positions, grouped by lane (in request order within a lane).
    order: Vec<u32>,
    /// Where each lane's positions start in `order` (one more than the lanes).
    starts: Vec<usize>,
    keys: Vec<u64>,
    locs: Vec<Location>,
    seen: Vec<bool>,
    originals: Vec<Location>,
}

/// The store as chunk `seq` sees it: each request (a round, named by its
/// [`BatchId`] from `base`) asked lane by lane, each lane in its turn.
/// [`LaneStore::finish`] must follow, whatever happened, so that later chunks
/// get the turns this one did not take.
pub(crate) struct LaneStore<'a> {
    pub(crate) lanes: &'a Lanes,
    pub(crate) inner: &'a dyn Store,
    pub(crate) seq: u64,
    pub(crate) base: BatchId,
    pub(crate) passed: Mutex<Vec<bool>>,
    pub(crate) scratch: Mutex<LaneScratch>,
}

impl LaneStore<'_> {
    /// The round `req` is, if it is one of this chunk's not asked yet.
    fn round_of(&self, id: BatchId) -> Option<usize> {
        let n = id.seq.checked_sub(self.base.seq)? as usize;
        let mut passed = self.passed.lock();
        if id.stream != self.base.stream || n >= self.lanes.rounds || passed[n] {
            return None;
        }
        passed[n] = true;
        Some(n)
    }

    /// Gives every turn this chunk did not take to the next chunk.
    pub(crate) fn finish(&self) {
        let passed = std::mem::take(&mut *self.passed.lock());
        for (round, done) in passed.iter().enumerate() {
            if !done {
                for lane in 0..self.lanes.lanes {
                    self.lanes.turn(round, lane).pass(self.seq, || ());
                }
            }
        }
    }
}

impl Store for LaneStore<'_> {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let Some(id) = req.id() else {
            // A request without identity is a replayed chunk's read of originals
            // (`Replayer`): it inserts nothing and reads only keys seen before it,
            // whose first locations no later insert changes.
            return self.inner.ask(req, out);
        };
        let Some(round) = self.round_of(id) else {
            // Only `policy::decide`'s rounds, each once, keep the order.
            return Err(StoreError::Unsupported(
                "a request outside the chunk's rounds in the block-split ordered step".into(),
            ));
        };
        let (keys, op) = (req.keys(), req.op());
        let lanes = self.lanes.lanes;
        let mut guard = self.scratch.lock();
        let s = &mut *guard;
        s.lane.clear();
        s.lane.extend(keys.iter().map(|&k| self.lanes.lane_of(k)));
        s.starts.clear();
        s.starts.resize(lanes as usize + 1, 0);
        for &l in &s.lane {
            s.starts[l as usize + 1] += 1;
        }
        for l in 0..lanes as usize {
            s.starts[l + 1] += s.starts[l];
        }
        s.order.clear();
        s.order.resize(keys.len(), 0);
        let mut fill = s.starts.clone();
        for (i, &l) in s.lane.iter().enumerate() {
            let l = l as usize;
            s.order[fill[l]] = i as u32;
            fill[l] += 1;
        }
        out.seen.clear();
        out.seen.resize(keys.len(), false);
        if op.located() {
            out.originals.clear();
            out.originals.resize(keys.len(), Location::UNKNOWN);
        }
        let mut failure = None;
        for lane in 0..lanes {
            let part = &s.order[s.starts[lane as usize]..s.starts[lane as usize + 1]];
            self.lanes.turn(round, lane).pass(self.seq, || {
                if failure.is_some() {
                    return;
                }
                s.keys.clear();
                s.keys.extend(part.iter().map(|&i| keys[i as usize]));
                s.locs.clear();
                s.locs
                    .extend(part.iter().filter_map(|&i| op.locs().get(i as usize)));
                let sub_op = match op {
                    Op::TestAndInsertLocated(_) => Op::TestAndInsertLocated(&s.locs),
                    other => other,
                };
                let asked = Request::new(Some(id), &s.keys, sub_op).and_then(|r| {
                    self.inner.ask(
                        r,
                        &mut Answer {
                            seen: &mut s.seen,
                            originals: &mut s.originals,
                        },
                    )
                });
                match asked {
                    Ok(()) => {
                        for (j, &i) in part.iter().enumerate() {
                            out.seen[i as usize] = s.seen[j];
                            if op.located() {
                                out.originals[i as usize] = s.originals[j];
                            }
                        }
                    }
                    Err(e) => failure = Some(e),
                }
            });
        }
        failure.map_or(Ok(()), Err)
    }

    forward_store_figures!();
}
