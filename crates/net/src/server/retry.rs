//! Retry records: the verdicts of each worker request by (stream, sequence
//! number), so that a retried request is answered as its first attempt was.
//!
//! Sharded by stream so that requests of different workers do not contend; within
//! a shard, a request holds the lock from lookup to recording, so two attempts of
//! one request (a reconnect racing the first attempt) cannot both insert. Memory is
//! bounded: beyond the budget the oldest records go first (a worker only retries
//! its recent requests, or, after a restart, those of its unfinished files).
//!
//! A shard keeps its records' bitmaps in one buffer, oldest first. Apart (a box
//! of about 1 KB a request), they lay among the blocks' growing tables in the C
//! heap and each held a page there: at 1M MinHash documents a hash server's
//! 1,129 records (1.1 MB) kept 3-4.5 MB of its malloc arenas resident.

use anyhow::{Context, Result};
use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::path::Path;

const SHARDS: usize = 64;
/// Per-record overhead counted against the budget (map entry, queue entry, box).
const OVERHEAD: usize = 64;

/// Where a request's verdicts are: how many keys, and their bitmap's length and
/// start in the shard's stream of bitmaps (counted from the shard's first record).
#[derive(Clone, Copy)]
struct Verdicts {
    n: u32,
    len: u32,
    at: u64,
}

#[derive(Default)]
pub(crate) struct Shard {
    map: HashMap<(u64, u64), Verdicts>,
    order: VecDeque<(u64, u64)>,
    /// The bitmaps of the records in `order`, and of dropped ones not yet
    /// compacted away; `bits[0]` is byte `base` of the stream.
    bits: Vec<u8>,
    base: u64,
    bytes: usize,
}

pub(crate) struct RetryRecords {
    shards: Vec<Mutex<Shard>>,
    budget_per_shard: usize,
}

const MAGIC: &[u8; 8] = b"WDDRTRY\0";

impl RetryRecords {
    pub fn new(budget: usize) -> Self {
        RetryRecords {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            budget_per_shard: (budget / SHARDS).max(OVERHEAD * 16),
        }
    }

    pub fn lock(&self, stream: u64) -> MutexGuard<'_, Shard> {
        // Streams are hashes already: their low bits spread well.
        self.shards[(stream as usize) % SHARDS].lock()
    }

    pub fn insert(&self, id: (u64, u64), n: u32, bitmap: Vec<u8>) {
        let budget = self.budget_per_shard;
        self.lock(id.0).insert(id, n, bitmap, budget);
    }

    pub fn budget_per_shard(&self) -> usize {
        self.budget_per_shard
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// Writes every record to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        let mut count = 0u64;
        let mut body = Vec::new();
        for s in &self.shards {
            let s = s.lock();
            for id in &s.order {
                if let Some((n, bits)) = s.get(id) {
                    body.extend_from_slice(&id.0.to_le_bytes());
                    body.extend_from_slice(&id.1.to_le_bytes());
                    body.extend_from_slice(&n.to_le_bytes());
                    body.extend_from_slice(bits);
                    count += 1;
                }
            }
        }
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&body);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        webdedup_store::snapshot::write_atomic(path, &[&out], "server-retry")
            .with_context(|| format!("cannot save retry records to {}", path.display()))?;
        Ok(())
    }

    /// Reads records saved by [`RetryRecords::save`] (none if the file is absent).
    pub fn load(&self, path: &Path) -> Result<()> {
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let bad = |why: &str| anyhow::anyhow!("{}: {why}", path.display());
        if data.len() < 20 || &data[..8] != MAGIC {
            return Err(bad("not a retry record file"));
        }
        let (body, crc) = data.split_at(data.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(bad("CRC mismatch (damaged file)"));
        }
        let count = u64::from_le_bytes(body[8..16].try_into().unwrap());
        let mut pos = 16;
        for _ in 0..count {
            if body.len() - pos < 20 {
                return Err(bad("cut short"));
            }
            let stream = u64::from_le_bytes(body[pos..pos + 8].try_into().unwrap());
            let seq = u64::from_le_bytes(body[pos + 8..pos + 16].try_into().unwrap());
            let n = u32::from_le_bytes(body[pos + 16..pos + 20].try_into().unwrap());
            pos += 20;
            let len = n.div_ceil(8) as usize;
            if body.len() - pos < len {
                return Err(bad("cut short"));
            }
            self.insert((stream, seq), n, body[pos..pos + len].to_vec());
            pos += len;
        }
        Ok(())
    }
}

impl Shard {
    /// The verdicts recorded for `id`: how many keys, and their bitmap.
    pub fn get(&self, id: &(u64, u64)) -> Option<(u32, &[u8])> {
        let v = self.map.get(id)?;
        let from = (v.at - self.base) as usize;
        Some((v.n, &self.bits[from..from + v.len as usize]))
    }

    pub fn insert(&mut self, id: (u64, u64), n: u32, bitmap: Vec<u8>, budget: usize) {
        let at = self.base + self.bits.len() as u64;
        let len = bitmap.len() as u32;
        if let Some(old) = self.map.insert(id, Verdicts { n, len, at }) {
            // Another request under a known id (rare): it moves to the back, so
            // that `order` stays the order of the bitmaps in the buffer.
            self.order.retain(|o| *o != id);
            self.bytes -= old.len as usize + OVERHEAD;
        }
        self.order.push_back(id);
        self.bytes += bitmap.len() + OVERHEAD;
        self.bits.extend_from_slice(&bitmap);
        while self.bytes > budget && self.order.len() > 1 {
            if let Some(old) = self.order.pop_front() {
                if let Some(v) = self.map.remove(&old) {
                    self.bytes -= v.len as usize + OVERHEAD;
                }
            }
        }
        self.compact();
    }

    /// Drops the bitmaps before the oldest record kept once they are half the
    /// buffer (each byte is moved once on average).
    fn compact(&mut self) {
        let first = match self.order.front().and_then(|id| self.map.get(id)) {
            Some(v) => (v.at - self.base) as usize,
            None => self.bits.len(),
        };
        if first > 0 && first * 2 >= self.bits.len() {
            self.bits.drain(..first);
            self.base += first as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_save_and_load() {
        let r = RetryRecords::new(1 << 20);
        r.insert((1, 2), 9, vec![0xff, 1]);
        r.insert((3, 4), 0, vec![]);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r");
        r.save(&p).unwrap();
        let back = RetryRecords::new(1 << 20);
        back.load(&p).unwrap();
        assert_eq!(
            back.lock(1).get(&(1, 2)).map(|(n, b)| (n, b.to_vec())),
            Some((9, vec![0xff, 1]))
        );
        assert_eq!(back.len(), 2);
        // A damaged file is an error, not a silent loss.
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[20] ^= 1;
        std::fs::write(&p, bytes).unwrap();
        assert!(back.load(&p).unwrap_err().to_string().contains("CRC"));
    }

    #[test]
    fn the_oldest_records_go_beyond_the_budget() {
        let r = RetryRecords::new(0);
        let budget = r.budget_per_shard();
        let per = budget / 4 - OVERHEAD;
        let stream = 5u64;
        for seq in 0..10 {
            r.insert((stream, seq), 8, vec![0; per]);
        }
        let s = r.lock(stream);
        assert!(s.get(&(stream, 9)).is_some(), "the newest stays");
        assert!(s.get(&(stream, 0)).is_none(), "the oldest went");
        assert!(s.bytes <= budget);
    }

    #[test]
    fn kept_records_give_their_own_bitmaps_back_as_old_ones_go() {
        let r = RetryRecords::new(0);
        let budget = r.budget_per_shard();
        let per = budget / 5 - OVERHEAD;
        let stream = 7u64;
        let mut model = std::collections::HashMap::new();
        for step in 0..50u64 {
            // Sizes vary, and some ids come again with another request.
            let seq = if step % 9 == 4 { step - 2 } else { step };
            let len = per - (step as usize % 3) * 7;
            let bitmap: Vec<u8> = (0..len).map(|i| (step as usize * 31 + i) as u8).collect();
            r.insert((stream, seq), len as u32 * 8, bitmap.clone());
            model.insert(seq, bitmap);
            let s = r.lock(stream);
            assert!(
                s.bits.len() <= 2 * budget,
                "dropped bitmaps are compacted away"
            );
            assert_eq!(s.order.back(), Some(&(stream, seq)));
            for id in &s.order {
                let want = &model[&id.1];
                assert_eq!(
                    s.get(id),
                    Some((want.len() as u32 * 8, &want[..])),
                    "{id:?}"
                );
            }
        }
    }
}
