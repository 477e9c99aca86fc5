//! Answers to key requests (test, test-and-insert, and feedback mode's located
//! ones): admission (ready, and every key of a block this server owns), the store
//! operation, the journal record that must reach the OS before the answer goes
//! out, and the retry record that answers a retried request as its first attempt.
//! The caller (`conn`) reads the frames and decides where the work runs.

use super::Shared;
use crate::wire::{self, ErrorCode, KeysRequest, Msg, ServerState};
use std::sync::atomic::Ordering;
use webdedup_store::{Answer, Location};

/// The server's gate, held shared by a request.
pub(super) type Gate<'a> = parking_lot::RwLockReadGuard<'a, ()>;

/// Whether a request was answered or refused because the server is stopping.
pub(super) enum Answered {
    Yes,
    Stopping,
}

pub(super) fn error_frame(out: &mut Vec<u8>, req: u32, code: ErrorCode, message: String) {
    wire::encode(&Msg::Error { req, code, message }, out);
}

/// The refusal of a request that came after the server began to stop: never
/// verdicts, so nothing is acknowledged that the final save could miss.
pub(super) fn stopping(out: &mut Vec<u8>, req: u32) -> Answered {
    error_frame(
        out,
        req,
        ErrorCode::Busy,
        "the server is stopping; retry".into(),
    );
    Answered::Stopping
}

/// Whether a key request may be answered now (ready, and every key of a block
/// this server owns); otherwise writes the error answer to `out`. Counts it.
fn admit(shared: &Shared, req: u32, keys: &[u64], out: &mut Vec<u8>) -> bool {
    match shared.state() {
        ServerState::Ready => {}
        ServerState::Migrating | ServerState::Starting => {
            error_frame(
                out,
                req,
                ErrorCode::Migrating,
                "taking over blocks from their previous owners; retry".into(),
            );
            return false;
        }
        ServerState::Finished => {
            error_frame(
                out,
                req,
                ErrorCode::WrongOwner,
                "this server has handed every block over".into(),
            );
            return false;
        }
    }
    if let Some(&k) = keys
        .iter()
        .find(|&&k| !shared.owned[shared.rule.block(k) as usize])
    {
        let b = shared.rule.block(k);
        let owner = &shared.map.servers[shared.map.owner[b as usize] as usize].addr;
        error_frame(
            out,
            req,
            ErrorCode::WrongOwner,
            format!("block {b} belongs to {owner}, not to {}", shared.me_addr),
        );
        return false;
    }
    let c = &shared.counters;
    c.requests.fetch_add(1, Ordering::Relaxed);
    c.keys_tested
        .fetch_add(keys.len() as u64, Ordering::Relaxed);
    true
}

/// Test-and-insert or test: the hot path. Answers into `out`.
pub(super) fn answer_keys(
    shared: &Shared,
    req: KeysRequest,
    keys: &[u64],
    seen: &mut Vec<bool>,
    out: &mut Vec<u8>,
    gate: Option<Gate>,
) -> Answered {
    let req_no = match req {
        KeysRequest::TestAndInsert { req, .. } | KeysRequest::Test { req, .. } => req,
    };
    if !admit(shared, req_no, keys, out) {
        return Answered::Yes;
    }
    let Some(_gate) = shared.enter_holding(gate) else {
        return stopping(out, req_no);
    };
    match req {
        KeysRequest::Test { req, id: None } => {
            seen.clear();
            seen.extend(keys.iter().map(|&k| shared.store.contains(k)));
            verdicts(out, req, seen);
        }
        KeysRequest::Test { req, id: Some(id) } => {
            let mut shard = shared.retry.lock(id.0);
            if let Some((n, bits)) = shard.get(&id).filter(|(n, _)| *n as usize == keys.len()) {
                count_retried(shared);
                recorded_verdicts(out, req, n, bits);
                return Answered::Yes;
            }
            seen.clear();
            seen.extend(keys.iter().map(|&k| shared.store.contains(k)));
            match record_test(shared, &mut shard, id, seen) {
                Ok(()) => verdicts(out, req, seen),
                Err(e) => error_frame(out, req, ErrorCode::Internal, e),
            }
        }
        KeysRequest::TestAndInsert { req, id: None } => {
            match insert(shared, keys, None, seen, None) {
                Ok(_) => verdicts(out, req, seen),
                Err(e) => error_frame(out, req, ErrorCode::Internal, e),
            }
        }
        KeysRequest::TestAndInsert { req, id: Some(id) } => {
            let mut shard = shared.retry.lock(id.0);
            if let Some((n, bits)) = shard.get(&id) {
                if n as usize == keys.len() {
                    count_retried(shared);
                    recorded_verdicts(out, req, n, bits);
                    return Answered::Yes;
                }
                // Another request under the same id: answer it afresh.
            }
            match insert(shared, keys, None, seen, Some(id)) {
                Ok(bits) => {
                    verdicts(out, req, seen);
                    shard.insert(id, keys.len() as u32, bits, shared.retry.budget_per_shard());
                }
                Err(e) => error_frame(out, req, ErrorCode::Internal, e),
            }
        }
    }
    Answered::Yes
}

/// Feedback mode's requests: `locs` given, test and insert (keeping each new
/// key's location), else test only; the answer carries the first-seen location of
/// every key found. A retried insert (same id, same size) gets its first
/// attempt's verdicts, with the locations the store holds now.
pub(super) fn answer_located(
    shared: &Shared,
    req: u32,
    id: Option<(u64, u64)>,
    keys: &[u64],
    locs: Option<&[Location]>,
    answer: Answer,
    out: &mut Vec<u8>,
) -> Answered {
    use webdedup_store::Store;
    if !admit(shared, req, keys, out) {
        return Answered::Yes;
    }
    let Answer { seen, originals } = answer;
    let Some(_gate) = shared.enter() else {
        return stopping(out, req);
    };
    let bits = match (locs, id) {
        (None, id) => {
            let mut shard = id.map(|id| (id, shared.retry.lock(id.0)));
            let recorded = recorded_bits(shard.as_ref(), keys.len());
            if let Err(e) = shared.store.test_located(keys, seen, originals) {
                error_frame(out, req, ErrorCode::Internal, e.to_string());
                return Answered::Yes;
            }
            match (recorded, shard.as_mut()) {
                // A retried test: its first verdicts, the locations held now.
                (Some(bits), _) => {
                    count_retried(shared);
                    unpack_seen(&bits, keys.len(), seen);
                    bits
                }
                (None, Some((id, s))) => {
                    if let Err(e) = record_test(shared, s, *id, seen) {
                        error_frame(out, req, ErrorCode::Internal, e);
                        return Answered::Yes;
                    }
                    let mut bits = Vec::new();
                    wire::pack_bits(seen, &mut bits);
                    bits
                }
                (None, None) => {
                    let mut bits = Vec::new();
                    wire::pack_bits(seen, &mut bits);
                    bits
                }
            }
        }
        (Some(locs), id) => {
            let mut shard = id.map(|id| (id, shared.retry.lock(id.0)));
            let recorded = recorded_bits(shard.as_ref(), keys.len());
            match recorded {
                Some(bits) => {
                    count_retried(shared);
                    if let Err(e) = shared.store.test_located(keys, seen, originals) {
                        error_frame(out, req, ErrorCode::Internal, e.to_string());
                        return Answered::Yes;
                    }
                    unpack_seen(&bits, keys.len(), seen);
                    bits
                }
                None => match insert(shared, keys, Some((locs, &mut *originals)), seen, id) {
                    Ok(bits) => {
                        if let Some((id, s)) = shard.as_mut() {
                            s.insert(
                                *id,
                                keys.len() as u32,
                                bits.clone(),
                                shared.retry.budget_per_shard(),
                            );
                        }
                        bits
                    }
                    Err(e) => {
                        error_frame(out, req, ErrorCode::Internal, e);
                        return Answered::Yes;
                    }
                },
            }
        }
    };
    let found = seen
        .iter()
        .zip(originals.iter())
        .filter(|(&s, _)| s)
        .map(|(_, &o)| o)
        .collect();
    wire::encode(
        &Msg::LocatedVerdicts {
            req,
            n: keys.len() as u32,
            bitmap: bits,
            originals: found,
        },
        out,
    );
    Answered::Yes
}

/// Tests and inserts (with `located`, keeping each new key's location and
/// pushing the originals of the others), journals the new keys (with their
/// locations, and with the verdicts when the request has an id) and hands the
/// record to the OS, all before the answer goes out, so a restarted server names
/// the same originals. The caller holds the gate (`Shared::enter`).
pub(super) fn insert(
    shared: &Shared,
    keys: &[u64],
    located: Option<(&[Location], &mut Vec<Location>)>,
    seen: &mut Vec<bool>,
    id: Option<(u64, u64)>,
) -> Result<Vec<u8>, String> {
    use webdedup_store::Store;
    // Taken once: a new key's location is kept only for the journal it goes to.
    let journal = shared.journal();
    let mut new_locs = Vec::new();
    let is_located = located.is_some();
    match located {
        Some((locs, originals)) => {
            let r = shared
                .store
                .test_and_insert_located(keys, locs, seen, originals);
            // A new key's location follows the keys in its journal record.
            if journal.is_some() {
                for (l, _) in locs.iter().zip(seen.iter()).filter(|(_, &s)| !s) {
                    new_locs.extend_from_slice(&[l.file, l.record]);
                }
            }
            r
        }
        None => shared.store.test_and_insert(keys, seen),
    }
    .map_err(|e| e.to_string())?;
    let mut bits = Vec::new();
    wire::pack_bits(seen, &mut bits);
    let mut new: Vec<u64> = keys
        .iter()
        .zip(seen.iter())
        .filter(|(_, &s)| !s)
        .map(|(&k, _)| k)
        .collect();
    shared
        .counters
        .keys_new
        .fetch_add(new.len() as u64, Ordering::Relaxed);
    let tag_byte = if is_located { b'L' } else { b'S' };
    if let Some(j) = &journal {
        let tag = match id {
            Some(id) => retry_tag(tag_byte, id, keys.len(), &bits),
            None if is_located => vec![b'L'],
            None => vec![b'K'],
        };
        new.extend_from_slice(&new_locs);
        if !new.is_empty() || id.is_some() {
            j.append(&tag, &new)
                .and_then(|_| j.flush_to_os())
                .map_err(|e| format!("journal: {e}"))?;
        }
    }
    Ok(bits)
}

/// Keeps a test's verdicts as its retry record, journaled (no keys: a test
/// inserts none) before the answer goes out, so a retried test after a restart
/// of either side is answered as the first attempt was, not from keys inserted
/// since (near mode inserts a chunk's kept n-grams right after testing them).
fn record_test(
    shared: &Shared,
    shard: &mut super::retry::Shard,
    id: (u64, u64),
    seen: &[bool],
) -> Result<(), String> {
    let mut bits = Vec::new();
    wire::pack_bits(seen, &mut bits);
    if let Some(j) = shared.journal() {
        j.append(&retry_tag(b'S', id, seen.len(), &bits), &[])
            .and_then(|_| j.flush_to_os())
            .map_err(|e| format!("journal: {e}"))?;
    }
    shard.insert(id, seen.len() as u32, bits, shared.retry.budget_per_shard());
    Ok(())
}

/// The journal tag of a request with an id: `kind` (`S` keys, `L` located keys),
/// the id (stream, sequence), the key count and the verdict bits, from which a
/// restarted server rebuilds the request's retry record.
fn retry_tag(kind: u8, (stream, seq): (u64, u64), n: usize, bits: &[u8]) -> Vec<u8> {
    let mut tag = Vec::with_capacity(21 + bits.len());
    tag.push(kind);
    tag.extend_from_slice(&stream.to_le_bytes());
    tag.extend_from_slice(&seq.to_le_bytes());
    tag.extend_from_slice(&(n as u32).to_le_bytes());
    tag.extend_from_slice(bits);
    tag
}

/// The verdict bits recorded for a retried request of `n` keys (a record of
/// another size is another request under the same id: answered afresh).
fn recorded_bits(
    shard: Option<&((u64, u64), parking_lot::MutexGuard<'_, super::retry::Shard>)>,
    n: usize,
) -> Option<Vec<u8>> {
    let (id, s) = shard?;
    s.get(id)
        .filter(|(m, _)| *m as usize == n)
        .map(|(_, b)| b.to_vec())
}

/// `seen` as the recorded verdicts of a retried request say.
fn unpack_seen(bits: &[u8], n: usize, seen: &mut Vec<bool>) {
    seen.clear();
    seen.extend((0..n).map(|i| wire::bit(bits, i)));
}

fn count_retried(shared: &Shared) {
    shared
        .counters
        .retried_requests
        .fetch_add(1, Ordering::Relaxed);
}

/// The verdicts a retried request got the first time, from its retry record.
fn recorded_verdicts(out: &mut Vec<u8>, req: u32, n: u32, bits: &[u8]) {
    wire::encode(
        &Msg::Verdicts {
            req,
            n,
            bitmap: bits.to_vec(),
        },
        out,
    );
}

fn verdicts(out: &mut Vec<u8>, req: u32, seen: &[bool]) {
    let mut bitmap = Vec::new();
    wire::pack_bits(seen, &mut bitmap);
    wire::encode(
        &Msg::Verdicts {
            req,
            n: seen.len() as u32,
            bitmap,
        },
        out,
    );
}
