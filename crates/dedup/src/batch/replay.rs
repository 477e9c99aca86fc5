//! The filter phase's store: the stream runner's requests answered from the
//! resolved first occurrences, so that the one engine decides as in stream mode.

use super::*;

/// Answers the stream runner's requests from the resolved first occurrences: per
/// input file (by its stream id), the keys that are new in it; an asked key is new
/// the first time it is asked in that file if listed, seen otherwise.
pub(super) struct Replay {
    pub new: Mutex<HashMap<u64, HashSet<u64>>>,
    /// Substring mode's feedback: where the keys this task's files ask again were
    /// first seen (what a located insert answers for them).
    pub originals: HashMap<u64, Location>,
}

impl Store for Replay {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        match (req.op(), req.id()) {
            (Op::TestAndInsert, Some(id)) => {
                out.seen.clear();
                let mut map = self.new.lock();
                let set = map.entry(id.stream).or_default();
                out.seen.extend(req.keys().iter().map(|k| !set.remove(k)));
                Ok(())
            }
            (Op::TestAndInsertLocated(_), Some(id)) => {
                out.clear();
                let mut map = self.new.lock();
                let set = map.entry(id.stream).or_default();
                for k in req.keys() {
                    let seen = !set.remove(k);
                    let original = match seen {
                        true => self.originals.get(k).copied(),
                        false => None,
                    };
                    out.push(seen, original.unwrap_or(Location::UNKNOWN));
                }
                Ok(())
            }
            (Op::TestAndInsert | Op::TestAndInsertLocated(_), None) => {
                Err(StoreError::Unsupported(format!(
                    "batch filter: a request of {} keys without a chunk identity",
                    req.keys().len()
                )))
            }
            (op, _) => Err(op.unsupported()),
        }
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
