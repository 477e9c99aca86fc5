//! One connection: the handshake, then requests until the peer leaves, idles out
//! or misbehaves. A client that sends garbage is disconnected and logged; the
//! server goes on serving everyone else.

use super::Shared;
use crate::auth;
use crate::wire::{self, ErrorCode, KeysRequest, Msg, Role, ServerState};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use webdedup_store::Location;

/// Time a client has to complete the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Keys per frame when streaming a block to its new owner.
const FETCH_CHUNK: usize = 1 << 16;

pub(crate) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    limit: Arc<Semaphore>,
    knot_only: bool,
) {
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: wait rather than spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let permit = match limit.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                shared
                    .counters
                    .rejected_connections
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    "{peer}: refused, {} connections already",
                    shared.cfg.max_connections
                );
                tokio::spawn(refuse_busy(sock));
                continue;
            }
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            shared.counters.connections.fetch_add(1, Ordering::Relaxed);
            shared
                .counters
                .connections_total
                .fetch_add(1, Ordering::Relaxed);
            if let Err(why) = handle(sock, peer, &shared, knot_only).await {
                tracing::warn!("{peer}: disconnected: {why}");
            }
            shared.counters.connections.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
}

async fn refuse_busy(mut sock: TcpStream) {
    let mut out = Vec::new();
    wire::encode(
        &Msg::Error {
            req: 0,
            code: ErrorCode::Busy,
            message: "too many connections".into(),
        },
        &mut out,
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), sock.write_all(&out)).await;
}

/// Why a connection ended badly (logged).
type Why = String;

async fn handle(
    sock: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    knot_only: bool,
) -> Result<(), Why> {
    let (r, w) = sock.into_split();
    let mut r = BufReader::with_capacity(1 << 16, r);
    let mut w = BufWriter::with_capacity(1 << 16, w);
    let mut first = [0u8; 8];
    match tokio::time::timeout(
        HANDSHAKE_TIMEOUT.max(shared.cfg.idle_timeout),
        r.read_exact(&mut first),
    )
    .await
    {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => return Ok(()), // closed before saying anything (a port probe)
        Err(_) => return Err("said nothing".into()),
    }
    if knot_only || first != wire::PREAMBLE {
        if shared.cfg.auth.is_some() {
            shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
            return Err(
                "not a webdedup client, and the KNOT protocol is off on an authenticated server"
                    .into(),
            );
        }
        return knot(first, r, w, shared).await;
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut r, &mut w, shared)).await {
        Ok(Ok(_role)) => {}
        Ok(Err(why)) => return Err(why),
        Err(_) => return Err("handshake timed out".into()),
    }
    serve_requests(r, w, peer, shared).await
}

async fn read_frame(
    r: &mut BufReader<OwnedReadHalf>,
    body: &mut Vec<u8>,
    max: u32,
    idle: Duration,
) -> Result<bool, Why> {
    let mut head = [0u8; 4];
    match tokio::time::timeout(idle, r.read_exact(&mut head)).await {
        Err(_) => return Err(format!("idle for {} s", idle.as_secs())),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Ok(Err(e)) => return Err(e.to_string()),
        Ok(Ok(_)) => {}
    }
    let len = wire::frame_len(head, max).map_err(|e| e.to_string())?;
    body.clear();
    body.resize(len, 0);
    match tokio::time::timeout(idle, r.read_exact(body)).await {
        Err(_) => Err("stalled in the middle of a frame".into()),
        Ok(Err(e)) => Err(format!("frame cut short: {e}")),
        Ok(Ok(_)) => Ok(true),
    }
}

async fn send(w: &mut BufWriter<OwnedWriteHalf>, msg: &Msg) -> Result<(), Why> {
    let mut out = Vec::new();
    wire::encode(msg, &mut out);
    w.write_all(&out).await.map_err(|e| e.to_string())?;
    w.flush().await.map_err(|e| e.to_string())
}

async fn handshake(
    r: &mut BufReader<OwnedReadHalf>,
    w: &mut BufWriter<OwnedWriteHalf>,
    shared: &Arc<Shared>,
) -> Result<Role, Why> {
    let mut body = Vec::new();
    let bad = |shared: &Shared, why: String| {
        shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        why
    };
    if !read_frame(r, &mut body, 4096, HANDSHAKE_TIMEOUT)
        .await
        .map_err(|e| bad(shared, e))?
    {
        return Err("left during the handshake".into());
    }
    let nonce = match wire::decode(&body) {
        Ok(Msg::Hello { version, nonce }) => {
            if version != wire::VERSION {
                let message = format!(
                    "protocol version {version}; this server speaks {}",
                    wire::VERSION
                );
                let _ = send(
                    w,
                    &Msg::Error {
                        req: 0,
                        code: ErrorCode::Version,
                        message: message.clone(),
                    },
                )
                .await;
                return Err(message);
            }
            nonce
        }
        Ok(other) => return Err(bad(shared, format!("expected a hello, got {other:?}"))),
        Err(e) => return Err(bad(shared, e.to_string())),
    };
    let challenge = auth::random::<32>();
    send(
        w,
        &Msg::Challenge {
            version: wire::VERSION,
            auth_required: shared.cfg.auth.is_some(),
            challenge,
        },
    )
    .await?;
    if !read_frame(r, &mut body, 8192, HANDSHAKE_TIMEOUT)
        .await
        .map_err(|e| bad(shared, e))?
    {
        return Err("left during the handshake".into());
    }
    let (mac, role, settings) = match wire::decode(&body) {
        Ok(Msg::Auth {
            mac,
            role,
            settings,
        }) => (mac, role, settings),
        Ok(other) => {
            return Err(bad(
                shared,
                format!("expected an auth message, got {other:?}"),
            ))
        }
        Err(e) => return Err(bad(shared, e.to_string())),
    };
    let mut proof = [0u8; 32];
    if let Some(secret) = &shared.cfg.auth {
        if !secret.verify_client(&challenge, &nonce, &mac) {
            shared
                .counters
                .auth_failures
                .fetch_add(1, Ordering::Relaxed);
            let _ = send(
                w,
                &Msg::Error {
                    req: 0,
                    code: ErrorCode::AuthFailed,
                    message: "authentication failed".into(),
                },
            )
            .await;
            return Err("authentication failed (wrong or no token)".into());
        }
        proof = secret.server_proof(&challenge, &nonce);
    }
    if role == Role::Worker {
        let Some(s) = settings else {
            return Err(bad(shared, "a worker without settings".into()));
        };
        let problem = if s.map != shared.fingerprint {
            Some(format!(
                "the worker routes by another block map (fingerprint {:016x}, this server's {:016x}, from {})",
                s.map,
                shared.fingerprint,
                shared.cfg.map.display()
            ))
        } else {
            shared.adopt_meta(&s.meta).err()
        };
        if let Some(message) = problem {
            let _ = send(
                w,
                &Msg::Error {
                    req: 0,
                    code: ErrorCode::Mismatch,
                    message: message.clone(),
                },
            )
            .await;
            return Err(message);
        }
    }
    send(
        w,
        &Msg::Ready {
            state: shared.state(),
            index: shared.me.map_or(u32::MAX, |i| i as u32),
            max_frame: shared.cfg.max_frame,
            mac: proof,
        },
    )
    .await?;
    Ok(role)
}

async fn serve_requests(
    mut r: BufReader<OwnedReadHalf>,
    mut w: BufWriter<OwnedWriteHalf>,
    peer: SocketAddr,
    shared: &Arc<Shared>,
) -> Result<(), Why> {
    let mut body = Vec::new();
    let mut keys = Vec::new();
    let mut seen = Vec::new();
    let mut out = Vec::new();
    loop {
        match read_frame(
            &mut r,
            &mut body,
            shared.cfg.max_frame,
            shared.cfg.idle_timeout,
        )
        .await
        {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(why) => {
                shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
                // Say why before hanging up (best effort: the client may be gone).
                let _ = tokio::time::timeout(
                    Duration::from_secs(1),
                    send(
                        &mut w,
                        &Msg::Error {
                            req: 0,
                            code: ErrorCode::BadFrame,
                            message: why.clone(),
                        },
                    ),
                )
                .await;
                return Err(why);
            }
        }
        out.clear();
        match wire::decode_keys_request(&body, &mut keys) {
            Ok(Some(req)) => answer_keys(shared, req, &keys, &mut seen, &mut out),
            Ok(None) => match wire::decode(&body) {
                Ok(Msg::TestLocated { req, keys }) => {
                    answer_located(shared, req, None, &keys, None, &mut out)
                }
                Ok(Msg::TestAndInsertLocated {
                    req,
                    id,
                    keys,
                    locs,
                }) => answer_located(shared, req, id, &keys, Some(&locs), &mut out),
                Ok(msg) => {
                    if let Some(end) = answer_other(shared, msg, &mut w).await? {
                        return end;
                    }
                }
                Err(e) => {
                    shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
                    return Err(format!("{peer}: {e}"));
                }
            },
            Err(e) => {
                shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
                return Err(e.to_string());
            }
        }
        if !out.is_empty() {
            w.write_all(&out).await.map_err(|e| e.to_string())?;
        }
        // Answer at once unless more requests are already here (pipelined).
        if r.buffer().is_empty() {
            w.flush().await.map_err(|e| e.to_string())?;
        }
    }
}

fn error_frame(out: &mut Vec<u8>, req: u32, code: ErrorCode, message: String) {
    wire::encode(&Msg::Error { req, code, message }, out);
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
fn answer_keys(
    shared: &Shared,
    req: KeysRequest,
    keys: &[u64],
    seen: &mut Vec<bool>,
    out: &mut Vec<u8>,
) {
    let req_no = match req {
        KeysRequest::TestAndInsert { req, .. } | KeysRequest::Test { req } => req,
    };
    if !admit(shared, req_no, keys, out) {
        return;
    }
    let c = &shared.counters;
    let _gate = shared.gate.read();
    match req {
        KeysRequest::Test { req } => {
            seen.clear();
            seen.extend(keys.iter().map(|&k| shared.store.contains(k)));
            verdicts(out, req, seen);
        }
        KeysRequest::TestAndInsert { req, id: None } => {
            if let Err(e) = insert(shared, keys, None, seen, None) {
                return error_frame(out, req, ErrorCode::Internal, e);
            }
            verdicts(out, req, seen);
        }
        KeysRequest::TestAndInsert { req, id: Some(id) } => {
            let mut shard = shared.retry.lock(id.0);
            if let Some((n, bits)) = shard.get(&id) {
                if *n as usize == keys.len() {
                    c.retried_requests.fetch_add(1, Ordering::Relaxed);
                    wire::encode(
                        &Msg::Verdicts {
                            req,
                            n: *n,
                            bitmap: bits.to_vec(),
                        },
                        out,
                    );
                    return;
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
}

/// Feedback mode's requests: `locs` given, test and insert (keeping each new
/// key's location), else test only; the answer carries the first-seen location of
/// every key found. A retried insert (same id, same size) gets its first
/// attempt's verdicts, with the locations the store holds now.
fn answer_located(
    shared: &Shared,
    req: u32,
    id: Option<(u64, u64)>,
    keys: &[u64],
    locs: Option<&[Location]>,
    out: &mut Vec<u8>,
) {
    use webdedup_store::Store;
    if !admit(shared, req, keys, out) {
        return;
    }
    let (mut seen, mut originals) = (Vec::new(), Vec::new());
    let _gate = shared.gate.read();
    let bits = match (locs, id) {
        (None, _) => {
            if let Err(e) = shared.store.test_located(keys, &mut seen, &mut originals) {
                return error_frame(out, req, ErrorCode::Internal, e.to_string());
            }
            let mut bits = Vec::new();
            wire::pack_bits(&seen, &mut bits);
            bits
        }
        (Some(locs), id) => {
            let mut shard = id.map(|id| (id, shared.retry.lock(id.0)));
            let recorded = shard.as_ref().and_then(|(id, s)| {
                s.get(id)
                    .filter(|(n, _)| *n as usize == keys.len())
                    .map(|(_, b)| b.to_vec())
            });
            match recorded {
                Some(bits) => {
                    shared
                        .counters
                        .retried_requests
                        .fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = shared.store.test_located(keys, &mut seen, &mut originals) {
                        return error_frame(out, req, ErrorCode::Internal, e.to_string());
                    }
                    seen.clear();
                    seen.extend((0..keys.len()).map(|i| wire::bit(&bits, i)));
                    bits
                }
                None => match insert(shared, keys, Some((locs, &mut originals)), &mut seen, id) {
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
                    Err(e) => return error_frame(out, req, ErrorCode::Internal, e),
                },
            }
        }
    };
    let found = seen
        .iter()
        .zip(&originals)
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
}

/// Tests and inserts (with `located`, keeping each new key's location and
/// pushing the originals of the others), journals the new keys (with the
/// verdicts when the request has an id) and hands the record to the OS, all
/// before the answer goes out. Locations are not journaled: as in the seed, they
/// live as long as the process.
fn insert(
    shared: &Shared,
    keys: &[u64],
    located: Option<(&[Location], &mut Vec<Location>)>,
    seen: &mut Vec<bool>,
    id: Option<(u64, u64)>,
) -> Result<Vec<u8>, String> {
    use webdedup_store::Store;
    match located {
        Some((locs, originals)) => shared
            .store
            .test_and_insert_located(keys, locs, seen, originals),
        None => shared.store.test_and_insert(keys, seen),
    }
    .map_err(|e| e.to_string())?;
    let mut bits = Vec::new();
    wire::pack_bits(seen, &mut bits);
    let new: Vec<u64> = keys
        .iter()
        .zip(seen.iter())
        .filter(|(_, &s)| !s)
        .map(|(&k, _)| k)
        .collect();
    shared
        .counters
        .keys_new
        .fetch_add(new.len() as u64, Ordering::Relaxed);
    if let Some(j) = shared.journal() {
        let mut tag = Vec::with_capacity(21 + bits.len());
        match id {
            Some((stream, seq)) => {
                tag.push(b'S');
                tag.extend_from_slice(&stream.to_le_bytes());
                tag.extend_from_slice(&seq.to_le_bytes());
                tag.extend_from_slice(&(keys.len() as u32).to_le_bytes());
                tag.extend_from_slice(&bits);
            }
            None => tag.push(b'K'),
        }
        if !new.is_empty() || id.is_some() {
            j.append(&tag, &new)
                .and_then(|_| j.flush_to_os())
                .map_err(|e| format!("journal: {e}"))?;
        }
    }
    Ok(bits)
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

/// Everything but key requests. `Some(result)` ends the connection.
async fn answer_other(
    shared: &Arc<Shared>,
    msg: Msg,
    w: &mut BufWriter<OwnedWriteHalf>,
) -> Result<Option<Result<(), Why>>, Why> {
    match msg {
        Msg::StatusRequest { req } => {
            send(
                w,
                &Msg::Status {
                    req,
                    json: shared.status_json().to_string(),
                },
            )
            .await?;
        }
        Msg::FetchBlock { req, block } => {
            if block >= shared.map.blocks {
                send(
                    w,
                    &Msg::Error {
                        req,
                        code: ErrorCode::BadFrame,
                        message: format!("no block {block}"),
                    },
                )
                .await?;
                return Ok(None);
            }
            if shared.migration.lock().released.contains(&block) {
                send(
                    w,
                    &Msg::Error {
                        req,
                        code: ErrorCode::Released,
                        message: format!("block {block} was handed over already"),
                    },
                )
                .await?;
                return Ok(None);
            }
            let keys = {
                let _gate = shared.gate.read();
                shared.store.block_keys(block)
            };
            let mut chunks = keys.chunks(FETCH_CHUNK).peekable();
            if chunks.peek().is_none() {
                send(
                    w,
                    &Msg::BlockKeys {
                        req,
                        block,
                        last: true,
                        keys: Vec::new(),
                    },
                )
                .await?;
            }
            while let Some(c) = chunks.next() {
                let last = chunks.peek().is_none();
                send(
                    w,
                    &Msg::BlockKeys {
                        req,
                        block,
                        last,
                        keys: c.to_vec(),
                    },
                )
                .await?;
            }
        }
        Msg::ReleaseBlock { req, block } => {
            if block >= shared.map.blocks || shared.owned[block as usize] {
                send(
                    w,
                    &Msg::Error {
                        req,
                        code: ErrorCode::WrongOwner,
                        message: format!(
                            "block {block} is this server's under its map: not releasing it"
                        ),
                    },
                )
                .await?;
                return Ok(None);
            }
            let result = {
                let _gate = shared.gate.read();
                let dropped = shared.store.clear_block(block);
                let r = match shared.journal() {
                    Some(j) => {
                        let mut tag = vec![b'R'];
                        tag.extend_from_slice(&block.to_le_bytes());
                        j.append(&tag, &[])
                            .and_then(|_| j.sync())
                            .map_err(|e| e.to_string())
                    }
                    None => Ok(()),
                };
                tracing::info!("block {block} handed over ({dropped} keys)");
                r
            };
            match result {
                Ok(()) => {
                    {
                        let mut m = shared.migration.lock();
                        m.outgoing.remove(&block);
                        m.released.insert(block);
                    }
                    send(
                        w,
                        &Msg::Verdicts {
                            req,
                            n: 0,
                            bitmap: Vec::new(),
                        },
                    )
                    .await?;
                    shared.migration_step();
                }
                Err(e) => {
                    send(
                        w,
                        &Msg::Error {
                            req,
                            code: ErrorCode::Internal,
                            message: e,
                        },
                    )
                    .await?
                }
            }
        }
        other => {
            shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(Err(format!("unexpected message {other:?}"))));
        }
    }
    Ok(None)
}

/// The KNOT one-hash protocol: 8 bytes in (a big-endian 64-bit hash), one ASCII
/// byte out, `1` seen before, `0` new. Its block is the hash modulo the block
/// count, as for every key.
async fn knot(
    first: [u8; 8],
    mut r: BufReader<OwnedReadHalf>,
    mut w: BufWriter<OwnedWriteHalf>,
    shared: &Arc<Shared>,
) -> Result<(), Why> {
    let mut hash = first;
    let mut seen = Vec::with_capacity(1);
    loop {
        let key = u64::from_be_bytes(hash);
        if shared.state() != ServerState::Ready {
            return Err(
                "KNOT client while migrating: the one-hash protocol cannot say 'retry'".into(),
            );
        }
        let block = shared.rule.block(key);
        if !shared.owned[block as usize] {
            return Err(format!(
                "KNOT client sent a hash of block {block}, which this server does not own"
            ));
        }
        if shared.meta.lock().is_none() {
            // A store started for KNOT clients: its keys are theirs.
            shared.adopt_meta(&knot_meta(shared.map.blocks))?;
        }
        shared
            .counters
            .knot_requests
            .fetch_add(1, Ordering::Relaxed);
        shared.counters.keys_tested.fetch_add(1, Ordering::Relaxed);
        let answer = {
            let _gate = shared.gate.read();
            insert(shared, &[key], None, &mut seen, None)?;
            if seen[0] {
                b'1'
            } else {
                b'0'
            }
        };
        w.write_all(&[answer]).await.map_err(|e| e.to_string())?;
        if r.buffer().len() < 8 {
            w.flush().await.map_err(|e| e.to_string())?;
        }
        match tokio::time::timeout(shared.cfg.idle_timeout, r.read_exact(&mut hash)).await {
            Err(_) => return Err("KNOT client idle".into()),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Ok(Err(e)) => return Err(e.to_string()),
            Ok(Ok(_)) => {}
        }
    }
}

/// The settings of a store that only KNOT clients fill: hashes computed by them.
pub(crate) fn knot_meta(blocks: u32) -> webdedup_store::StoreMeta {
    webdedup_store::StoreMeta {
        hash: "client-64".into(),
        normalization: "client".into(),
        blocks,
        key_kind: "knot-one-hash".into(),
    }
}
