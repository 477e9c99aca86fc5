//! Retry records: the verdicts of each worker request by (stream, sequence
//! number), so that a retried request is answered as its first attempt was.
//!
//! Sharded by stream so that requests of different workers do not contend; within
//! a shard, a request holds the lock from lookup to recording, so two attempts of
//! one request (a reconnect racing the first attempt) cannot both insert. Memory is
//! bounded: beyond the budget the oldest records go first (a worker only retries
//! its recent requests, or, after a restart, those of its unfinished files).

use anyhow::{Context, Result};
use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::path::Path;

const SHARDS: usize = 64;
/// Per-record overhead counted against the budget (map entry, queue entry, box).
const OVERHEAD: usize = 64;

/// A request's verdicts: how many keys, and their bitmap.
type Verdicts = (u32, Box<[u8]>);

#[derive(Default)]
pub(crate) struct Shard {
    map: HashMap<(u64, u64), Verdicts>,
    order: VecDeque<(u64, u64)>,
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
                if let Some((n, bits)) = s.map.get(id) {
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
    pub fn get(&self, id: &(u64, u64)) -> Option<&Verdicts> {
        self.map.get(id)
    }

    pub fn insert(&mut self, id: (u64, u64), n: u32, bitmap: Vec<u8>, budget: usize) {
        let size = bitmap.len() + OVERHEAD;
        if self
            .map
            .insert(id, (n, bitmap.into_boxed_slice()))
            .is_none()
        {
            self.order.push_back(id);
            self.bytes += size;
        }
        while self.bytes > budget && self.order.len() > 1 {
            if let Some(old) = self.order.pop_front() {
                if let Some((_, b)) = self.map.remove(&old) {
                    self.bytes -= b.len() + OVERHEAD;
                }
            }
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
            back.lock(1).get(&(1, 2)).map(|(n, b)| (*n, b.to_vec())),
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
}
