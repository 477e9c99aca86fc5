//! The worker's side: a blocking connection ([`Conn`]) and [`RemoteStore`], the
//! [`Store`] that asks the hash servers of a block map.
//!
//! A request is split by owner; every server's share is sent before any answer is
//! read, so all servers work at once, and a large share goes as several frames
//! back to back (pipelined: the server answers the first while the next arrives).
//! Each worker thread holds its own connection to each server, so with N threads
//! N requests are in flight per server.
//!
//! Failures: a dropped connection is retried with exponential backoff, resending
//! the same (stream, sequence) ids, so the server answers from its retry records
//! and nothing is counted twice; a server that stays unreachable for
//! `give_up_after` is an error naming it. So is a server that stays busy (all its
//! connection slots taken, or no memory for frames): `Busy` is retried with
//! backoff like a dropped connection. A server that is migrating is waited for.

use crate::auth::{self, Secret};
use crate::wire::{self, ErrorCode, Msg, Role, ServerState, Settings};
use parking_lot::Mutex;
use std::io::{BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};
use webdedup_store::server_map::{ServerAddr, ServerMap};
use webdedup_store::{
    Answer, BatchId, BlockMap, Location, Op, Request, Store, StoreError, StoreMeta,
};
use webdedup_text::shown::escape_controls;

/// How a client connects and how long it keeps trying.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub secret: Option<Secret>,
    pub connect_timeout: Duration,
    /// Give up on a server unreachable this long.
    pub give_up_after: Duration,
    pub max_frame: u32,
    /// Keys per frame: larger shares are split (and pipelined). A server holds
    /// each frame it is answering twice over (the frame, and its keys and
    /// locations decoded: 48 B a located key), so its memory grows with this.
    pub frame_keys: usize,
    /// Say when waiting (for a migration, a restarting server).
    pub verbose: bool,
}

/// How long a worker waits for a server that stays unreachable before giving up
/// (`--server-timeout`, the Python classes' `server_timeout`).
pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(120);

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            secret: None,
            connect_timeout: Duration::from_secs(5),
            give_up_after: DEFAULT_GIVE_UP_AFTER,
            max_frame: wire::DEFAULT_MAX_FRAME,
            // 8,192 keys: a located frame and its decoding take 0.4 MB of a
            // server's memory while it answers (1.6 MB at 32,768: at 1M MinHash
            // documents a server's peak RSS was 1.5-3.3 MB over its RSS at the
            // end, 0.1-0.6 MB with 8,192).
            frame_keys: 1 << 13,
            verbose: true,
        }
    }
}

/// Why a call failed: `Io` may pass (reconnect and retry), `Refused` will not.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("{0}")]
    Io(String),
    #[error("{message}")]
    Refused { code: ErrorCode, message: String },
}

/// One authenticated connection to a server.
pub struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
    pub state: ServerState,
    pub index: u32,
    max_frame: u32,
    /// The largest frame body the server accepts (told in the handshake).
    pub server_max_frame: u32,
    /// The key set the server serves (told in the handshake).
    pub store_id: u64,
    body: Vec<u8>,
}

fn io(addr: &ServerAddr) -> impl Fn(std::io::Error) -> ConnError + '_ {
    move |e| ConnError::Io(format!("{addr}: {e}"))
}

impl Conn {
    pub fn connect(
        addr: &ServerAddr,
        role: Role,
        settings: Option<&Settings>,
        opts: &ClientOptions,
    ) -> Result<Conn, ConnError> {
        let sock_addrs = (addr.host.as_str(), addr.port)
            .to_socket_addrs()
            .map_err(|e| ConnError::Io(format!("{addr}: cannot resolve: {e}")))?;
        let mut last = ConnError::Io(format!("{addr}: no address"));
        for sa in sock_addrs {
            match TcpStream::connect_timeout(&sa, opts.connect_timeout) {
                Ok(s) => return Self::handshake(s, addr, role, settings, opts),
                Err(e) => last = ConnError::Io(format!("{addr}: {e}")),
            }
        }
        Err(last)
    }

    fn handshake(
        s: TcpStream,
        addr: &ServerAddr,
        role: Role,
        settings: Option<&Settings>,
        opts: &ClientOptions,
    ) -> Result<Conn, ConnError> {
        s.set_nodelay(true).map_err(io(addr))?;
        s.set_read_timeout(Some(Duration::from_secs(30).max(opts.connect_timeout)))
            .map_err(io(addr))?;
        let w = s.try_clone().map_err(io(addr))?;
        let mut c = Conn {
            r: BufReader::with_capacity(1 << 16, s),
            w,
            state: ServerState::Starting,
            index: 0,
            max_frame: opts.max_frame,
            server_max_frame: wire::DEFAULT_MAX_FRAME,
            store_id: 0,
            body: Vec::new(),
        };
        let nonce = auth::random::<16>();
        let mut out = wire::PREAMBLE.to_vec();
        wire::encode(
            &Msg::Hello {
                version: wire::VERSION,
                nonce,
            },
            &mut out,
        );
        c.send(&out).map_err(io(addr))?;
        let (auth_required, challenge) = match c.recv(addr)? {
            Msg::Challenge {
                version,
                auth_required,
                challenge,
            } if version == wire::VERSION => (auth_required, challenge),
            Msg::Challenge { version, .. } => {
                return Err(ConnError::Refused {
                    code: ErrorCode::Version,
                    message: format!(
                        "{addr} speaks protocol version {version}, this client {}",
                        wire::VERSION
                    ),
                })
            }
            other => {
                return Err(ConnError::Io(format!(
                    "{addr}: unexpected {other:?} in the handshake"
                )))
            }
        };
        let mac = match (&opts.secret, auth_required) {
            (Some(s), _) => s.client_proof(&challenge, &nonce),
            (None, true) => {
                return Err(ConnError::Refused {
                    code: ErrorCode::AuthFailed,
                    message: format!("{addr} requires authentication: give --auth-token-file"),
                })
            }
            (None, false) => [0; 32],
        };
        out.clear();
        wire::encode(
            &Msg::Auth {
                mac,
                role,
                settings: settings.cloned(),
            },
            &mut out,
        );
        c.send(&out).map_err(io(addr))?;
        match c.recv(addr)? {
            Msg::Ready {
                state,
                index,
                max_frame,
                mac,
                store_id,
            } => {
                if let (Some(secret), true) = (&opts.secret, auth_required) {
                    if !secret.verify_server(&challenge, &nonce, &mac) {
                        return Err(ConnError::Refused {
                            code: ErrorCode::AuthFailed,
                            message: format!("{addr} could not prove it knows the token"),
                        });
                    }
                }
                c.state = state;
                c.index = index;
                c.server_max_frame = max_frame;
                c.store_id = store_id;
                // Requests may wait on a busy server longer than a handshake.
                let _ =
                    c.w.set_read_timeout(Some(opts.give_up_after.max(Duration::from_secs(30))));
                Ok(c)
            }
            other => Err(ConnError::Io(format!(
                "{addr}: unexpected {other:?} in the handshake"
            ))),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.w.write_all(bytes)
    }

    /// Reads one message; an `Error` message becomes [`ConnError::Refused`].
    pub fn recv(&mut self, addr: &ServerAddr) -> Result<Msg, ConnError> {
        let mut head = [0u8; 4];
        self.r.read_exact(&mut head).map_err(io(addr))?;
        let len = wire::frame_len(head, self.max_frame)
            .map_err(|e| ConnError::Io(format!("{addr}: {e}")))?;
        self.body.clear();
        self.body.resize(len, 0);
        self.r.read_exact(&mut self.body).map_err(io(addr))?;
        match wire::decode(&self.body) {
            Ok(Msg::Error { code, message, .. }) => Err(ConnError::Refused {
                code,
                message: format!("{addr}: {message}"),
            }),
            Ok(m) => Ok(m),
            Err(e) => Err(ConnError::Io(format!("{addr}: {e}"))),
        }
    }

    /// The server's status (JSON, see the server's `status_json`).
    pub fn status(&mut self, addr: &ServerAddr) -> Result<serde_json::Value, ConnError> {
        let mut out = Vec::new();
        wire::encode(&Msg::StatusRequest { req: 1 }, &mut out);
        self.send(&out).map_err(io(addr))?;
        match self.recv(addr)? {
            Msg::Status { json, .. } => serde_json::from_str(&json)
                .map_err(|e| ConnError::Io(format!("{addr}: bad status: {e}"))),
            other => Err(ConnError::Io(format!("{addr}: unexpected {other:?}"))),
        }
    }
}

/// The key set id each server of `map` serves (told in the handshake, see
/// [`wire::Msg::Ready`]), in map order. A server that cannot be reached (it may
/// be restarting) is retried with backoff for `give_up_after`, then named in
/// the error.
pub fn store_ids(map: &ServerMap, opts: &ClientOptions) -> Result<Vec<u64>, String> {
    map.servers
        .iter()
        .map(
            |s| match connect_retrying(&s.addr, Role::Status, None, opts) {
                Ok(c) => Ok(c.store_id),
                Err(ConnectFailure::Refused(_, message)) | Err(ConnectFailure::GaveUp(message)) => {
                    Err(message)
                }
            },
        )
        .collect()
}

/// Why [`connect_retrying`] gave up.
enum ConnectFailure {
    /// The server said no (not "busy"): retrying would not help.
    Refused(ErrorCode, String),
    /// Unreachable or busy for `give_up_after`.
    GaveUp(String),
}

/// Connects to `addr`, retrying with backoff while it is unreachable or busy (it
/// may be restarting), for `give_up_after`; once the delay reaches a second, each
/// retry is said on stderr (`verbose`), the address and error escaped: the address
/// is the map file's, the error the network's.
fn connect_retrying(
    addr: &ServerAddr,
    role: Role,
    settings: Option<&Settings>,
    opts: &ClientOptions,
) -> Result<Conn, ConnectFailure> {
    let started = Instant::now();
    let mut delay = Duration::from_millis(50);
    loop {
        match Conn::connect(addr, role, settings, opts) {
            Ok(c) => return Ok(c),
            Err(ConnError::Refused { code, message }) if code != ErrorCode::Busy => {
                return Err(ConnectFailure::Refused(code, message))
            }
            Err(ConnError::Refused { message: e, .. }) | Err(ConnError::Io(e)) => {
                if started.elapsed() >= opts.give_up_after {
                    return Err(ConnectFailure::GaveUp(format!(
                        "server {addr} unreachable for {} s: {e}",
                        started.elapsed().as_secs()
                    )));
                }
                if opts.verbose && delay >= Duration::from_secs(1) {
                    eprintln!(
                        "{}",
                        escape_controls(&format!(
                            "webdedup: server {addr} unreachable ({e}); retrying"
                        ))
                    );
                }
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// The servers of a block map as one [`Store`].
pub struct RemoteStore {
    map: ServerMap,
    rule: BlockMap,
    settings: Settings,
    opts: ClientOptions,
    salt: u64,
    /// Idle connections per server (a thread takes one for a request).
    pools: Vec<Mutex<Vec<Conn>>>,
    /// The key set each server served at the first connection: a server that
    /// answers later with another one lost what it had acknowledged.
    store_ids: Vec<Mutex<Option<u64>>>,
}

/// A share of one request for one server: which keys (positions in the request).
struct Share {
    server: usize,
    positions: Vec<u32>,
    keys: Vec<u64>,
    /// Feedback mode's inserts: each key's location.
    locs: Vec<Location>,
}

impl RemoteStore {
    /// Connects to every server of `map` once (settings and map are checked
    /// then: a mismatch is an error now, not at the first request).
    pub fn connect(
        map: ServerMap,
        meta: StoreMeta,
        opts: ClientOptions,
        salt: u64,
    ) -> Result<RemoteStore, StoreError> {
        // The block map fixes the servers' block count: it is their record of it.
        let servers = StoreMeta {
            blocks: map.blocks,
            ..meta.clone()
        };
        if let Some(m) = meta.mismatch(&servers, "the block map's servers") {
            return Err(StoreError::Mismatch(m));
        }
        let settings = Settings {
            map: wire::map_fingerprint(&map),
            meta,
        };
        let store = RemoteStore {
            rule: BlockMap::new(map.blocks),
            pools: map.servers.iter().map(|_| Mutex::new(Vec::new())).collect(),
            store_ids: map.servers.iter().map(|_| Mutex::new(None)).collect(),
            map,
            settings,
            opts,
            salt,
        };
        for server in 0..store.map.servers.len() {
            let c = store.connect_with_retry(server)?;
            store.pools[server].lock().push(c);
        }
        Ok(store)
    }

    fn addr(&self, server: usize) -> &ServerAddr {
        &self.map.servers[server].addr
    }

    fn refused(&self, code: ErrorCode, message: String) -> StoreError {
        match code {
            ErrorCode::Mismatch | ErrorCode::Version => StoreError::Mismatch(message),
            _ => StoreError::Unavailable(message),
        }
    }

    /// Connects, retrying with backoff until `give_up_after` (a busy server too).
    fn connect_with_retry(&self, server: usize) -> Result<Conn, StoreError> {
        match connect_retrying(
            self.addr(server),
            Role::Worker,
            Some(&self.settings),
            &self.opts,
        ) {
            Ok(c) => self.same_store(server, c),
            Err(ConnectFailure::Refused(code, message)) => Err(self.refused(code, message)),
            Err(ConnectFailure::GaveUp(message)) => Err(StoreError::Unavailable(message)),
        }
    }

    /// `c`, if its server still serves the key set it served at the first
    /// connection. A server restarted from its snapshot and journal does; one
    /// that came back without them forgot keys (and first-seen locations) it had
    /// acknowledged, and going on would change decisions: that is an error.
    fn same_store(&self, server: usize, c: Conn) -> Result<Conn, StoreError> {
        let mut first = self.store_ids[server].lock();
        match *first {
            None => *first = Some(c.store_id),
            Some(id) if id != c.store_id => {
                return Err(StoreError::Unavailable(format!(
                    "server {} came back without the keys it had acknowledged (its key set \
                     is {:016x}, was {id:016x}: restarted without its snapshot and journal?); \
                     going on would change decisions. Bring it back with its files (-i, -j) \
                     and finish with --restore, or start the run again on fresh servers",
                    self.addr(server),
                    c.store_id
                )))
            }
            Some(_) => {}
        }
        Ok(c)
    }

    fn take(&self, server: usize) -> Result<Conn, StoreError> {
        if let Some(c) = self.pools[server].lock().pop() {
            return Ok(c);
        }
        self.connect_with_retry(server)
    }

    fn split(&self, keys: &[u64], locs: &[Location]) -> Vec<Share> {
        let mut shares: Vec<Share> = Vec::new();
        let mut slot = vec![usize::MAX; self.map.servers.len()];
        for (i, &k) in keys.iter().enumerate() {
            let server = self.map.owner[self.rule.block(k) as usize] as usize;
            if slot[server] == usize::MAX {
                slot[server] = shares.len();
                shares.push(Share {
                    server,
                    positions: Vec::new(),
                    keys: Vec::new(),
                    locs: Vec::new(),
                });
            }
            let s = &mut shares[slot[server]];
            s.positions.push(i as u32);
            s.keys.push(k);
            if let Some(&l) = locs.get(i) {
                s.locs.push(l);
            }
        }
        shares
    }

    /// Sends one server's share as frames; returns how many frames.
    fn send_share(
        &self,
        conn: &mut Conn,
        share: &Share,
        id: Option<BatchId>,
        op: Op,
    ) -> std::io::Result<usize> {
        let fk = self.frame_keys(conn, op);
        let mut out = Vec::with_capacity(share.keys.len() * 8 + 64);
        let parts = share.keys.chunks(fk);
        let n = parts.len();
        for (part, chunk) in parts.enumerate() {
            // Each frame has its own id: (salted stream, seq * 1024 + part).
            let wire_id = id.map(|id| {
                (
                    id.stream ^ self.salt,
                    id.seq.wrapping_mul(1024).wrapping_add(part as u64),
                )
            });
            let req = part as u32;
            match (op.located(), op.inserts()) {
                (false, insert) => wire::encode_keys_request(req, wire_id, insert, chunk, &mut out),
                (true, false) => wire::encode(
                    &Msg::TestLocated {
                        req,
                        id: wire_id,
                        keys: chunk.to_vec(),
                    },
                    &mut out,
                ),
                (true, true) => {
                    let locs = share.locs[part * fk..part * fk + chunk.len()].to_vec();
                    wire::encode(
                        &Msg::TestAndInsertLocated {
                            req,
                            id: wire_id,
                            keys: chunk.to_vec(),
                            locs,
                        },
                        &mut out,
                    )
                }
            }
        }
        conn.send(&out)?;
        Ok(n)
    }

    /// Keys per frame: ours, or fewer if the server takes smaller frames (a
    /// located insert sends 24 bytes a key).
    fn frame_keys(&self, conn: &Conn, op: Op) -> usize {
        let per_key = if op.located() && op.inserts() { 24 } else { 8 };
        let fits = (conn.server_max_frame as usize).saturating_sub(64) / per_key;
        self.opts.frame_keys.min(fits).max(1)
    }

    /// Reads the answers to `frames` frames of `share` into `seen` (and, for a
    /// located request, the originals of the keys found into `originals`).
    fn read_share(
        &self,
        conn: &mut Conn,
        share: &Share,
        frames: usize,
        op: Op,
        out: &mut Answer,
    ) -> Result<(), ConnError> {
        let addr = self.addr(share.server);
        let fk = self.frame_keys(conn, op);
        let misfit = || ConnError::Io(format!("{addr}: an answer that does not fit the request"));
        for _ in 0..frames {
            let (req, n, bitmap, found) = match conn.recv(addr)? {
                Msg::Verdicts { req, n, bitmap } if !op.located() => (req, n, bitmap, Vec::new()),
                Msg::LocatedVerdicts {
                    req,
                    n,
                    bitmap,
                    originals,
                } if op.located() => (req, n, bitmap, originals),
                other => return Err(ConnError::Io(format!("{addr}: unexpected {other:?}"))),
            };
            let start = req as usize * fk;
            let end = (start + fk).min(share.keys.len());
            if start >= share.keys.len() || n as usize != end - start {
                return Err(misfit());
            }
            let mut found = found.into_iter();
            for (j, &pos) in share.positions[start..end].iter().enumerate() {
                let s = wire::bit(&bitmap, j);
                out.seen[pos as usize] = s;
                if s && op.located() {
                    out.originals[pos as usize] = found.next().ok_or_else(misfit)?;
                }
            }
            if found.next().is_some() {
                return Err(misfit());
            }
        }
        Ok(())
    }

    /// Each server's status (`Err` text for the unreachable ones).
    pub fn statuses(&self) -> Vec<Result<serde_json::Value, String>> {
        (0..self.map.servers.len())
            .map(|s| {
                let addr = self.addr(s);
                let mut c = Conn::connect(addr, Role::Status, None, &self.opts)
                    .map_err(|e| e.to_string())?;
                c.status(addr).map_err(|e| e.to_string())
            })
            .collect()
    }

    fn sum_status(&self, field: &str) -> u64 {
        self.statuses()
            .iter()
            .filter_map(|s| s.as_ref().ok().and_then(|v| v[field].as_u64()))
            .sum()
    }
}

impl Store for RemoteStore {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let (id, keys, op) = (req.id(), req.keys(), req.op());
        out.seen.clear();
        out.seen.resize(keys.len(), false);
        if op.located() {
            out.originals.clear();
            out.originals.resize(keys.len(), Location::UNKNOWN);
        }
        if keys.is_empty() {
            return Ok(());
        }
        let mut pending = self.split(keys, op.locs());
        let started = Instant::now();
        let mut last_said = Instant::now();
        let mut delay = Duration::from_millis(20);
        loop {
            // Send every share first, then read: all servers work at once.
            let mut sent = Vec::with_capacity(pending.len());
            let mut failed = Vec::new();
            let mut last_error = String::new();
            for share in pending {
                let mut conn = self.take(share.server)?;
                match self.send_share(&mut conn, &share, id, op) {
                    Ok(frames) => sent.push((share, conn, frames)),
                    Err(e) => {
                        last_error = format!("{}: {e}", self.addr(share.server));
                        failed.push(share);
                    }
                }
            }
            let mut migrating = false;
            for (share, mut conn, frames) in sent {
                match self.read_share(&mut conn, &share, frames, op, out) {
                    Ok(()) => self.pools[share.server].lock().push(conn),
                    Err(ConnError::Refused {
                        code: ErrorCode::Migrating,
                        ..
                    }) => {
                        // The rest of this connection's answers are unread: drop it.
                        migrating = true;
                        failed.push(share);
                    }
                    Err(ConnError::Refused { code, message }) if code != ErrorCode::Busy => {
                        return Err(self.refused(code, message))
                    }
                    // Busy (a stopping server, no memory for frames): the rest of
                    // this connection's answers will not come; retry elsewhen.
                    Err(ConnError::Refused { message: e, .. }) | Err(ConnError::Io(e)) => {
                        last_error = e;
                        failed.push(share);
                    }
                }
            }
            if failed.is_empty() {
                return Ok(());
            }
            if migrating {
                // Waiting for a migration has no deadline: say so now and then.
                if self.opts.verbose && last_said.elapsed() >= Duration::from_secs(30) {
                    eprintln!(
                        "webdedup: waiting for a migration to end ({} s)",
                        started.elapsed().as_secs()
                    );
                    last_said = Instant::now();
                }
            } else if started.elapsed() >= self.opts.give_up_after {
                return Err(StoreError::Unavailable(format!(
                    "gave up after {} s: {last_error}",
                    started.elapsed().as_secs()
                )));
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_millis(500));
            pending = failed;
        }
    }

    fn len(&self) -> u64 {
        self.sum_status("keys")
    }

    fn memory_bytes(&self) -> u64 {
        self.sum_status("memory_bytes")
    }

    fn blocks(&self) -> u32 {
        self.map.blocks
    }
}
