//! Migration (seed 2.3.4): a server started with a new block map (`--from-map`
//! naming the previous one) takes over the blocks it gained from their previous
//! owners, which hand them over and drop them.
//!
//! Pull, block by block, so that no key is lost or doubled whatever crashes:
//! 1. the new owner fetches the block's keys from the old owner, inserts them and
//!    journals them (`M`), and makes the journal durable;
//! 2. only then does it tell the old owner to release the block; the old owner
//!    drops it and journals that (`R`) before acknowledging;
//! 3. the new owner journals the block as taken over (`F`).
//!
//! A crash before 2 leaves the block with the old owner (fetched again after a
//! restart); a crash between 2 and 3 makes the refetch answer "released", and the
//! keys are already in the new owner's journal. Workers are told "migrating,
//! retry" until every gained block is in.

use super::Shared;
use crate::client::{ClientOptions, Conn, ConnError};
use crate::wire::{ErrorCode, Msg, Role};
use std::collections::BTreeMap;
use std::time::Duration;
use webdedup_store::server_map::ServerAddr;

/// Works out which blocks to take over and to hand over, from the two maps and
/// what earlier runs already did.
pub(crate) fn plan(shared: &Shared) {
    let Some(old) = &shared.old_map else {
        return;
    };
    let me = &shared.me_addr;
    let mut m = shared.migration.lock();
    let (fetched, released) = (m.fetched.clone(), m.released.clone());
    m.incoming.clear();
    m.outgoing.clear();
    for b in 0..shared.map.blocks {
        let old_owner = &old.servers[old.owner[b as usize] as usize].addr;
        let new_owner = &shared.map.servers[shared.map.owner[b as usize] as usize].addr;
        if old_owner == new_owner {
            continue;
        }
        if new_owner == me && !fetched.contains(&b) {
            m.incoming.insert(b);
        }
        if old_owner == me && !released.contains(&b) {
            m.outgoing.insert(b);
        }
    }
    tracing::info!(
        incoming = m.incoming.len(),
        outgoing = m.outgoing.len(),
        "migration from {}",
        shared
            .cfg
            .from_map
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
}

/// Takes over every incoming block (runs on its own thread until done).
pub(crate) fn take_over(shared: &Shared) {
    let old = shared
        .old_map
        .as_ref()
        .expect("take_over runs with a previous map");
    let mut by_owner: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for &b in &shared.migration.lock().incoming {
        by_owner
            .entry(old.owner[b as usize] as usize)
            .or_default()
            .push(b);
    }
    let opts = ClientOptions {
        secret: shared.cfg.auth.clone(),
        verbose: false,
        ..Default::default()
    };
    for (owner, blocks) in by_owner {
        let addr = old.servers[owner].addr.clone();
        let mut delay = Duration::from_millis(100);
        let mut pending = blocks.as_slice();
        while !pending.is_empty() {
            match take_blocks(shared, &addr, pending, &opts) {
                Ok(done) => pending = &pending[done..],
                Err((done, e)) => {
                    pending = &pending[done..];
                    tracing::warn!("taking over blocks from {addr}: {e}; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
    shared.migration_step();
}

/// Takes over `blocks` from `addr` in order; returns how many were done (and the
/// error that stopped it).
fn take_blocks(
    shared: &Shared,
    addr: &ServerAddr,
    blocks: &[u32],
    opts: &ClientOptions,
) -> Result<usize, (usize, String)> {
    let mut conn = Conn::connect(addr, Role::Peer, None, opts).map_err(|e| (0, e.to_string()))?;
    // Adopt the previous owner's key settings if this server has none yet.
    if shared.meta.lock().is_none() {
        let status = conn.status(addr).map_err(|e| (0, e.to_string()))?;
        if let Some(s) = status.get("settings").filter(|s| !s.is_null()) {
            let meta = webdedup_store::StoreMeta {
                hash: s["hash"].as_str().unwrap_or_default().into(),
                normalization: s["normalization"].as_str().unwrap_or_default().into(),
                blocks: s["blocks"].as_u64().unwrap_or(0) as u32,
                key_kind: s["key_kind"].as_str().unwrap_or_default().into(),
            };
            shared.adopt_meta(&meta).map_err(|e| (0, e))?;
        }
    }
    for (done, &block) in blocks.iter().enumerate() {
        take_block(shared, &mut conn, addr, block).map_err(|e| (done, e))?;
    }
    Ok(blocks.len())
}

fn take_block(
    shared: &Shared,
    conn: &mut Conn,
    addr: &ServerAddr,
    block: u32,
) -> Result<(), String> {
    let mut out = Vec::new();
    crate::wire::encode(&Msg::FetchBlock { req: block, block }, &mut out);
    conn.send(&out).map_err(|e| e.to_string())?;
    let mut keys = Vec::new();
    let mut released_already = false;
    loop {
        match conn.recv(addr) {
            Ok(Msg::BlockKeys {
                block: b,
                last,
                keys: k,
                ..
            }) if b == block => {
                keys.extend(k);
                if last {
                    break;
                }
            }
            Ok(other) => return Err(format!("unexpected {other:?}")),
            Err(ConnError::Refused {
                code: ErrorCode::Released,
                ..
            }) => {
                released_already = true;
                break;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut block_tag = Vec::with_capacity(5);
    block_tag.extend_from_slice(&block.to_le_bytes());
    if !released_already {
        if let Some(&k) = keys
            .iter()
            .find(|&&k| webdedup_store::block_of(k, shared.map.blocks) != block)
        {
            return Err(format!(
                "{addr} sent key {k:#x}, which is not of block {block}"
            ));
        }
        {
            // Never after the final save began: these keys would be in no file.
            let Some(_gate) = shared.enter() else {
                return Err("the server is stopping".into());
            };
            shared.store.insert_all(&keys);
            if let Some(j) = shared.journal() {
                let tag = [&[b'M'][..], &block_tag].concat();
                j.append(&tag, &keys)
                    .and_then(|_| j.sync())
                    .map_err(|e| format!("journal: {e}"))?;
            }
        }
        out.clear();
        crate::wire::encode(&Msg::ReleaseBlock { req: block, block }, &mut out);
        conn.send(&out).map_err(|e| e.to_string())?;
        match conn.recv(addr) {
            Ok(Msg::Verdicts { .. }) => {}
            Ok(other) => return Err(format!("unexpected {other:?}")),
            Err(e) => return Err(e.to_string()),
        }
    }
    {
        let Some(_gate) = shared.enter() else {
            return Err("the server is stopping".into());
        };
        if let Some(j) = shared.journal() {
            let tag = [&[b'F'][..], &block_tag].concat();
            j.append(&tag, &[])
                .and_then(|_| j.flush_to_os())
                .map_err(|e| format!("journal: {e}"))?;
        }
    }
    let mut m = shared.migration.lock();
    m.incoming.remove(&block);
    m.fetched.insert(block);
    tracing::debug!("took over block {block} ({} keys) from {addr}", keys.len());
    Ok(())
}
