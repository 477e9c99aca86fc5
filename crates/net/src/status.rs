//! The status probe behind `webdedup status` (the seed's `dedup_check.py`): asks
//! every server of a block map how it is.

use crate::client::{ClientOptions, Conn, ConnError};
use crate::wire::{ErrorCode, Role};
use std::net::{TcpStream, ToSocketAddrs};
use webdedup_store::server_map::ServerMap;

/// One server as the probe found it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServerReport {
    pub server: String,
    /// What the server said (`ready`, `migrating`, `finished`, `starting`), or why
    /// it said nothing: `stopped` (nothing listens at its address: stopped, or
    /// never started, or died), `auth required` (it runs and wants the token),
    /// `auth failed` (it refused ours), `unreachable` (no answer at all).
    pub state: String,
    pub keys: Option<u64>,
    pub journal_present: Option<bool>,
    /// Why it is not answering, or anything else worth saying.
    pub note: Option<String>,
    /// The server's whole status, when it answered.
    pub details: Option<serde_json::Value>,
}

impl ServerReport {
    /// Whether this server is as it should be for workers to run.
    pub fn healthy(&self) -> bool {
        matches!(self.state.as_str(), "ready" | "finished")
    }
}

/// Probes every server of `map` (in map order).
pub fn probe(map: &ServerMap, opts: &ClientOptions) -> Vec<ServerReport> {
    map.servers
        .iter()
        .map(|s| {
            let addr = &s.addr;
            let got =
                Conn::connect(addr, Role::Status, None, opts).and_then(|mut c| c.status(addr));
            match got {
                Ok(v) => ServerReport {
                    server: addr.to_string(),
                    state: v["state"].as_str().unwrap_or("unknown").to_owned(),
                    keys: v["keys"].as_u64(),
                    journal_present: v["journal_present"].as_bool(),
                    note: (v["map_fingerprint"].as_str()
                        != Some(&format!("{:016x}", crate::wire::map_fingerprint(map))))
                    .then(|| "serves by a different block map".to_owned()),
                    details: Some(v),
                },
                Err(e) => {
                    let (state, note) = unanswered(addr, &e, opts);
                    ServerReport {
                        server: addr.to_string(),
                        state: state.into(),
                        keys: None,
                        journal_present: None,
                        note: Some(note),
                        details: None,
                    }
                }
            }
        })
        .collect()
}

/// Why a server gave no status: a refused handshake says it runs; otherwise a
/// refused TCP connection means nothing listens there (a server stopped cleanly
/// and one that died look the same from outside: its log tells).
fn unanswered(
    addr: &webdedup_store::server_map::ServerAddr,
    e: &ConnError,
    opts: &ClientOptions,
) -> (&'static str, String) {
    if let ConnError::Refused {
        code: ErrorCode::AuthFailed,
        message,
    } = e
    {
        return if opts.secret.is_none() {
            (
                "auth required",
                "it runs and requires a token: give --auth-token-file".into(),
            )
        } else {
            ("auth failed", message.clone())
        };
    }
    let listening = (addr.host.as_str(), addr.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|sa| TcpStream::connect_timeout(&sa, opts.connect_timeout));
    match listening {
        Some(Err(c)) if c.kind() == std::io::ErrorKind::ConnectionRefused => (
            "stopped",
            format!("nothing listens at {addr} (stopped, not started, or died: see its log)"),
        ),
        _ => ("unreachable", format!("not answering: {e}")),
    }
}
