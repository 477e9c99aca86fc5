//! One connection: the handshake, then requests until the peer leaves, idles out
//! or misbehaves. A client that sends garbage is disconnected and logged; the
//! server goes on serving everyone else.
//!
//! Limits (see `admission` and `connection`): the handshake (or a KNOT client's
//! first hash) must come within [`HANDSHAKE_TIMEOUT`] before the connection takes
//! one of `--max-connections` slots; frames are read into buffers that grow only
//! as bytes arrive, under the server's frame budget.
//!
//! Work that may block (waiting for the gate while a save holds it, fsyncs,
//! migration and status locks) runs in `block_in_place`, so the runtime's worker
//! threads keep accepting and reading while a save holds the gate or a disk is
//! slow. Key requests take a fast path inline when they cannot wait long: the
//! gate is free (`try_read`) and the journal does not fsync each record; what
//! remains are short shard locks and a write to the page cache. (A hand-off to
//! `block_in_place` per request doubled the server's CPU per KNOT hash.)
//!
//! Stopping: once the server is closing, a request that has not taken the gate
//! yet is refused (`Busy`, never verdicts), so nothing acknowledged can miss the
//! final save.

use super::admission::InRoom;
use super::answer::{answer_keys, answer_located, error_frame, insert, stopping, Answered, Gate};
use super::connection::{Connection, ReadError, Why};
use super::Shared;
use crate::auth;
use crate::wire::{self, ErrorCode, LocatedRequest, Msg, Role, ServerState};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use webdedup_store::{Answer, Location, SyncMode};

/// Time a connection has, from its accept, to complete the handshake (a KNOT
/// client: to send its first hash).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Keys per frame when streaming a block to its new owner.
const FETCH_CHUNK: usize = 1 << 16;
/// Answers are written once no request is waiting, or once this many bytes are.
const FLUSH_AT: usize = 64 << 10;
/// Scratch buffers larger than this are freed after their request, so an idle
/// connection keeps only small buffers whatever it sent before.
const SCRATCH_KEEP: usize = 16 << 10;

/// What every connection task is handed: the shutdown signal (`true` once the
/// server stops), and a sender whose drop tells the server this task is done.
#[derive(Clone)]
pub(crate) struct Lifeline {
    pub stop: watch::Receiver<bool>,
    pub _done: mpsc::Sender<()>,
}

impl Lifeline {
    async fn stopping(&mut self) {
        let _ = self.stop.wait_for(|&s| s).await;
    }
}

pub(crate) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    knot_only: bool,
    mut life: Lifeline,
) {
    loop {
        let (sock, peer) = tokio::select! {
            biased;
            _ = life.stopping() => return,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    shared.throttle.warn(format_args!("accept failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = sock.set_nodelay(true);
        let shared = shared.clone();
        let life = life.clone();
        tokio::spawn(async move {
            let c = &shared.counters;
            c.connections.fetch_add(1, Ordering::Relaxed);
            c.connections_total.fetch_add(1, Ordering::Relaxed);
            if let Err(why) = handle(sock, &shared, knot_only, life).await {
                shared
                    .throttle
                    .warn(format_args!("{peer}: disconnected: {why}"));
            }
            shared.counters.connections.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// How a connection introduced itself.
enum Opened {
    /// Closed before saying anything (a port probe).
    Probe,
    /// A KNOT client: its first hashes are in the buffer.
    Knot,
    /// Our handshake, up to the `Ready` (not sent yet): the role and the proof.
    Client(Role, [u8; 32]),
}

async fn handle(
    sock: TcpStream,
    shared: &Arc<Shared>,
    knot_only: bool,
    mut life: Lifeline,
) -> Result<(), Why> {
    let mut conn = Connection::new(sock, shared.budget.clone());
    let mut room: InRoom = shared.admission.enter();
    let opened = tokio::select! {
        biased;
        _ = life.stopping() => return Ok(()),
        _ = room.evicted() => {
            return Err("evicted from the handshake: too many connections in handshake, and this one was the oldest".into())
        }
        r = tokio::time::timeout(HANDSHAKE_TIMEOUT, open(&mut conn, shared, knot_only)) => match r {
            Err(_) => return Err(format!("no handshake within {} s", HANDSHAKE_TIMEOUT.as_secs())),
            Ok(r) => r?,
        },
    };
    drop(room);
    let busy = || {
        shared
            .counters
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        format!(
            "refused: {} connections already",
            shared.cfg.max_connections
        )
    };
    match opened {
        Opened::Probe => Ok(()),
        Opened::Knot => {
            let Some(_slot) = shared.admission.slot() else {
                return Err(busy());
            };
            knot(conn, shared, life).await
        }
        Opened::Client(_role, proof) => {
            let Some(_slot) = shared.admission.slot() else {
                let why = busy();
                let _ = send(
                    &mut conn,
                    shared,
                    &Msg::Error {
                        req: 0,
                        code: ErrorCode::Busy,
                        message: "too many connections; retry".into(),
                    },
                )
                .await;
                return Err(why);
            };
            send(
                &mut conn,
                shared,
                &Msg::Ready {
                    state: shared.state(),
                    index: shared.me.map_or(u32::MAX, |i| i as u32),
                    max_frame: shared.cfg.max_frame,
                    mac: proof,
                    store_id: shared.store_id,
                },
            )
            .await?;
            serve_requests(conn, shared, life).await
        }
    }
}

/// The first bytes: our preamble and handshake, or (on a KNOT server) a hash.
async fn open(conn: &mut Connection, shared: &Arc<Shared>, knot_only: bool) -> Result<Opened, Why> {
    match conn.fill(wire::PREAMBLE.len()).await {
        Ok(true) => {}
        Ok(false) if conn.buffered().is_empty() => return Ok(Opened::Probe),
        Ok(false) => return Err(format!("left after {} bytes", conn.buffered().len())),
        Err(e) => return Err(e.to_string()),
    }
    if knot_only || conn.buffered()[..8] != wire::PREAMBLE {
        if shared.cfg.serves_knot() {
            return Ok(Opened::Knot);
        }
        shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        return Err(
            "not a webdedup client (no preamble); the KNOT one-hash protocol is off (see --knot)"
                .into(),
        );
    }
    conn.consume(wire::PREAMBLE.len());
    let (role, proof) = handshake(conn, shared).await?;
    Ok(Opened::Client(role, proof))
}

/// Writes `bytes`, giving up on a peer that does not read for the idle timeout.
async fn write(conn: &mut Connection, shared: &Shared, bytes: &[u8]) -> Result<(), Why> {
    match tokio::time::timeout(shared.cfg.idle_timeout, conn.write_all(bytes)).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "not reading its answers for {} s",
            shared.cfg.idle_timeout.as_secs()
        )),
    }
}

async fn send(conn: &mut Connection, shared: &Shared, msg: &Msg) -> Result<(), Why> {
    let mut out = Vec::new();
    wire::encode(msg, &mut out);
    write(conn, shared, &out).await
}

/// Says why before hanging up (best effort: the client may be gone).
async fn say_error(conn: &mut Connection, code: ErrorCode, message: String) {
    let mut out = Vec::new();
    wire::encode(
        &Msg::Error {
            req: 0,
            code,
            message,
        },
        &mut out,
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), conn.write_all(&out)).await;
}

/// Reads one handshake frame (at most `max` bytes).
async fn handshake_frame(conn: &mut Connection, shared: &Shared, max: u32) -> Result<Msg, Why> {
    let bad = |why: String| {
        shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        why
    };
    let at = match conn.read_frame(max, HANDSHAKE_TIMEOUT).await {
        Ok(Some(at)) => at,
        Ok(None) => return Err("left during the handshake".into()),
        Err(e) => return Err(bad(e.to_string())),
    };
    let msg = wire::decode(conn.body(&at)).map_err(|e| bad(e.to_string()));
    conn.finish_frame(at);
    msg
}

/// Hello, challenge, auth; checks the token and a worker's settings. Returns
/// the role and the server's proof for the `Ready`, which the caller sends once
/// the connection has a slot.
async fn handshake(conn: &mut Connection, shared: &Arc<Shared>) -> Result<(Role, [u8; 32]), Why> {
    let bad = |why: String| {
        shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        why
    };
    let nonce = match handshake_frame(conn, shared, 4096).await? {
        Msg::Hello { version, nonce } => {
            if version != wire::VERSION {
                let message = format!(
                    "protocol version {version}; this server speaks {}",
                    wire::VERSION
                );
                say_error(conn, ErrorCode::Version, message.clone()).await;
                return Err(message);
            }
            nonce
        }
        other => return Err(bad(format!("expected a hello, got {}", kind_name(&other)))),
    };
    let challenge = auth::random::<32>();
    send(
        conn,
        shared,
        &Msg::Challenge {
            version: wire::VERSION,
            auth_required: shared.cfg.auth.is_some(),
            challenge,
        },
    )
    .await?;
    let (mac, role, settings) = match handshake_frame(conn, shared, 8192).await? {
        Msg::Auth {
            mac,
            role,
            settings,
        } => (mac, role, settings),
        other => {
            return Err(bad(format!(
                "expected an auth message, got {}",
                kind_name(&other)
            )))
        }
    };
    let mut proof = [0u8; 32];
    if let Some(secret) = &shared.cfg.auth {
        if !secret.verify_client(&challenge, &nonce, &mac) {
            shared
                .counters
                .auth_failures
                .fetch_add(1, Ordering::Relaxed);
            say_error(conn, ErrorCode::AuthFailed, "authentication failed".into()).await;
            return Err("authentication failed (wrong or no token)".into());
        }
        proof = secret.server_proof(&challenge, &nonce);
    }
    if role == Role::Worker {
        let Some(s) = settings else {
            return Err(bad("a worker without settings".into()));
        };
        let problem = if s.map != shared.fingerprint {
            Some(format!(
                "the worker routes by another block map (fingerprint {:016x}, this server's {:016x}, from {})",
                s.map,
                shared.fingerprint,
                shared.cfg.map.display()
            ))
        } else {
            // Journal creation may touch the disk: off the runtime's workers.
            tokio::task::block_in_place(|| shared.adopt_meta(&s.meta)).err()
        };
        if let Some(message) = problem {
            say_error(conn, ErrorCode::Mismatch, message.clone()).await;
            return Err(message);
        }
    }
    Ok((role, proof))
}

/// A message's kind, for logs (never its contents: they come from anyone).
fn kind_name(msg: &Msg) -> &'static str {
    match msg {
        Msg::Hello { .. } => "hello",
        Msg::Challenge { .. } => "challenge",
        Msg::Auth { .. } => "auth",
        Msg::Ready { .. } => "ready",
        Msg::TestAndInsert { .. } => "test-and-insert",
        Msg::Test { .. } => "test",
        Msg::Verdicts { .. } => "verdicts",
        Msg::Error { .. } => "error",
        Msg::StatusRequest { .. } => "status request",
        Msg::Status { .. } => "status",
        Msg::FetchBlock { .. } => "fetch-block",
        Msg::BlockKeys { .. } => "block keys",
        Msg::ReleaseBlock { .. } => "release-block",
        Msg::TestLocated { .. } => "test-located",
        Msg::TestAndInsertLocated { .. } => "test-and-insert-located",
        Msg::LocatedVerdicts { .. } => "located verdicts",
    }
}

/// Buffers a connection reuses between requests (trimmed after large ones).
#[derive(Default)]
struct Scratch {
    keys: Vec<u64>,
    /// A located request's locations, then the originals of its keys found.
    locs: Vec<Location>,
    originals: Vec<Location>,
    seen: Vec<bool>,
    out: Vec<u8>,
}

impl Scratch {
    fn trim(&mut self) {
        if self.keys.capacity() * 8 > SCRATCH_KEEP {
            self.keys = Vec::new();
        }
        if self.locs.capacity() * 16 > SCRATCH_KEEP {
            self.locs = Vec::new();
        }
        if self.originals.capacity() * 16 > SCRATCH_KEEP {
            self.originals = Vec::new();
        }
        if self.seen.capacity() > SCRATCH_KEEP {
            self.seen = Vec::new();
        }
        if self.out.capacity() > SCRATCH_KEEP {
            self.out = Vec::new();
        }
    }
}

/// After a request: go on, or hang up (saying why in the log when it is a fault).
enum Next {
    Go,
    Close(Option<Why>),
}

async fn serve_requests(
    mut conn: Connection,
    shared: &Arc<Shared>,
    mut life: Lifeline,
) -> Result<(), Why> {
    let max = shared.cfg.max_frame;
    let mut s = Scratch::default();
    loop {
        let read = tokio::select! {
            biased;
            _ = life.stopping() => {
                // Between requests: everything read so far is answered.
                return write(&mut conn, shared, &s.out).await;
            }
            r = conn.read_frame(max, shared.cfg.idle_timeout) => r,
        };
        let at = match read {
            Ok(Some(at)) => at,
            Ok(None) => return write(&mut conn, shared, &s.out).await,
            Err(e) => {
                let _ = write(&mut conn, shared, &s.out).await;
                let code = match e {
                    ReadError::Bad(_) => {
                        shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
                        ErrorCode::BadFrame
                    }
                    ReadError::Busy(_) => {
                        shared
                            .counters
                            .rejected_connections
                            .fetch_add(1, Ordering::Relaxed);
                        ErrorCode::Busy
                    }
                };
                let why = e.to_string();
                say_error(&mut conn, code, why.clone()).await;
                return Err(why);
            }
        };
        let (next, frame_bytes) = {
            let body = conn.body(&at);
            let next = match fast_gate(shared).filter(|_| wire::is_keys_request(body)) {
                Some(gate) => answer(shared, body, &mut s, Some(gate)),
                None => tokio::task::block_in_place(|| answer(shared, body, &mut s, None)),
            };
            (next, body.len())
        };
        conn.finish_frame(at);
        if s.out.len() >= FLUSH_AT || !conn.frame_buffered(max) || !matches!(next, Next::Go) {
            write(&mut conn, shared, &s.out).await?;
            s.out.clear();
        }
        s.trim();
        // What the request was decoded into is gone: the heap's free pages go back.
        webdedup_store::request_buffers_freed(frame_bytes);
        match next {
            Next::Go => {}
            Next::Close(None) => return Ok(()),
            Next::Close(Some(why)) => return Err(why),
        }
    }
}

/// The gate, shared, if taking it cannot wait (no save holds it) and the
/// journal does not fsync each record: a request may then run inline.
fn fast_gate(shared: &Shared) -> Option<Gate<'_>> {
    if shared.cfg.fsync == SyncMode::Always && shared.journal.lock().is_some() {
        return None;
    }
    shared.gate.try_read()
}

/// Answers one request into `s.out`. Blocking unless `gate` is given (a key
/// request taken on the fast path, with the gate already held); otherwise it
/// runs in `block_in_place`.
fn answer(shared: &Shared, body: &[u8], s: &mut Scratch, gate: Option<Gate>) -> Next {
    let bad = |why: String| {
        shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        Next::Close(Some(why))
    };
    let done = match wire::decode_keys_request(body, &mut s.keys) {
        Ok(Some(req)) => answer_keys(shared, req, &s.keys, &mut s.seen, &mut s.out, gate),
        Ok(None) => match wire::decode_located_request(body, &mut s.keys, &mut s.locs) {
            Ok(Some(req)) => {
                let (req, id, locs) = match req {
                    LocatedRequest::Test { req, id } => (req, id, None),
                    LocatedRequest::TestAndInsert { req, id } => (req, id, Some(&s.locs[..])),
                };
                let answer = Answer {
                    seen: &mut s.seen,
                    originals: &mut s.originals,
                };
                answer_located(shared, req, id, &s.keys, locs, answer, &mut s.out)
            }
            Ok(None) => match wire::decode(body) {
                Ok(msg) => return answer_other(shared, msg, &mut s.out),
                Err(e) => return bad(e.to_string()),
            },
            Err(e) => return bad(e.to_string()),
        },
        Err(e) => return bad(e.to_string()),
    };
    if webdedup_store::fault::armed() && webdedup_store::fault::reached("server-stop", 1) {
        // Tests: stop as on SIGTERM after this many answered key requests.
        shared.shutdown.notify_one();
    }
    match done {
        Answered::Yes => Next::Go,
        Answered::Stopping => Next::Close(None),
    }
}

/// Everything but key requests, answered into `out`.
fn answer_other(shared: &Shared, msg: Msg, out: &mut Vec<u8>) -> Next {
    match msg {
        Msg::StatusRequest { req } => wire::encode(
            &Msg::Status {
                req,
                json: shared.status_json().to_string(),
            },
            out,
        ),
        Msg::FetchBlock { req, block } => {
            if let Err((code, why)) = fetch_block(shared, req, block, out) {
                error_frame(out, req, code, why);
            }
        }
        Msg::ReleaseBlock { req, block } => {
            if block >= shared.map.blocks || shared.owned[block as usize] {
                error_frame(
                    out,
                    req,
                    ErrorCode::WrongOwner,
                    format!("block {block} is this server's under its map: not releasing it"),
                );
                return Next::Go;
            }
            let result = {
                let Some(_gate) = shared.enter() else {
                    stopping(out, req);
                    return Next::Close(None);
                };
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
                    wire::encode(
                        &Msg::Verdicts {
                            req,
                            n: 0,
                            bitmap: Vec::new(),
                        },
                        out,
                    );
                    shared.migration_step();
                }
                Err(e) => error_frame(out, req, ErrorCode::Internal, e),
            }
        }
        other => {
            shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
            return Next::Close(Some(format!("unexpected message: {}", kind_name(&other))));
        }
    }
    Next::Go
}

/// Answers a fetch of block `block` with its keys in chunks, the last one marked
/// (an empty block: one empty chunk), or says why not.
fn fetch_block(
    shared: &Shared,
    req: u32,
    block: u32,
    out: &mut Vec<u8>,
) -> Result<(), (ErrorCode, String)> {
    if block >= shared.map.blocks {
        return Err((ErrorCode::BadFrame, format!("no block {block}")));
    }
    if shared.migration.lock().released.contains(&block) {
        let why = format!("block {block} was handed over already");
        return Err((ErrorCode::Released, why));
    }
    let keys = {
        let _gate = shared.gate.read();
        shared.store.block_keys(block)
    };
    let chunks: Vec<&[u64]> = match keys.is_empty() {
        true => vec![&[]],
        false => keys.chunks(FETCH_CHUNK).collect(),
    };
    for (i, c) in chunks.iter().enumerate() {
        let last = i + 1 == chunks.len();
        let keys = c.to_vec();
        wire::encode(
            &Msg::BlockKeys {
                req,
                block,
                last,
                keys,
            },
            out,
        );
    }
    Ok(())
}

/// The KNOT one-hash protocol: 8 bytes in (a big-endian 64-bit hash), one ASCII
/// byte out, `1` seen before, `0` new. Its block is the hash modulo the block
/// count, as for every key. Hashes that arrive together are answered together
/// (one journal record), in order, as if asked one by one.
async fn knot(mut conn: Connection, shared: &Arc<Shared>, mut life: Lifeline) -> Result<(), Why> {
    let (mut keys, mut seen, mut answers) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let whole = conn.buffered().len() / 8;
        if whole > 0 {
            keys.clear();
            keys.extend(
                conn.buffered()[..whole * 8]
                    .chunks_exact(8)
                    .map(|c| u64::from_be_bytes(c.try_into().unwrap())),
            );
            let r = match fast_gate(shared) {
                Some(gate) => knot_answer(shared, &keys, &mut seen, &mut answers, Some(gate)),
                None => tokio::task::block_in_place(|| {
                    knot_answer(shared, &keys, &mut seen, &mut answers, None)
                }),
            };
            conn.consume(answers.len() * 8);
            write(&mut conn, shared, &answers).await?;
            r?;
        }
        let read = tokio::select! {
            biased;
            _ = life.stopping() => return Ok(()),
            r = tokio::time::timeout(shared.cfg.idle_timeout, conn.read_some()) => r,
        };
        match read {
            Err(_) => return Err("KNOT client idle".into()),
            Ok(Err(e)) => return Err(e.to_string()),
            Ok(Ok(0)) => return Ok(()),
            Ok(Ok(_)) => {}
        }
    }
}

/// Answers the KNOT hashes `keys` into `answers` (`0`/`1` each), up to the first
/// one this server may not answer: that one ends the connection.
fn knot_answer(
    shared: &Shared,
    keys: &[u64],
    seen: &mut Vec<bool>,
    answers: &mut Vec<u8>,
    gate: Option<Gate>,
) -> Result<(), Why> {
    answers.clear();
    if shared.state() != ServerState::Ready {
        return Err("KNOT client while migrating: the one-hash protocol cannot say 'retry'".into());
    }
    let owned = keys
        .iter()
        .position(|&k| !shared.owned[shared.rule.block(k) as usize])
        .unwrap_or(keys.len());
    if owned > 0 {
        let Some(_gate) = shared.enter_holding(gate) else {
            return Err("the server is stopping".into());
        };
        insert(shared, &keys[..owned], None, seen, None)?;
        answers.extend(seen.iter().map(|&s| if s { b'1' } else { b'0' }));
        let c = &shared.counters;
        c.knot_requests.fetch_add(owned as u64, Ordering::Relaxed);
        c.keys_tested.fetch_add(owned as u64, Ordering::Relaxed);
    }
    if owned < keys.len() {
        // Typically a client with another map, reconnecting in a loop: counted,
        // and logged through the throttle.
        shared.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        let block = shared.rule.block(keys[owned]);
        return Err(format!(
            "KNOT client sent a hash of block {block}, which this server does not own (a client with another map?)"
        ));
    }
    Ok(())
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
