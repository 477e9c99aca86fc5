//! The status probe behind `webdedup status` (the seed's `dedup_check.py`): asks
//! every server of a block map how it is.

use crate::client::{ClientOptions, Conn};
use crate::wire::Role;
use webdedup_store::server_map::ServerMap;

/// One server as the probe found it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServerReport {
    pub server: String,
    /// `ready`, `migrating`, `finished`, `starting`, or `crashed` (not answering).
    pub state: String,
    pub keys: Option<u64>,
    pub journal_present: Option<bool>,
    /// Why it counts as crashed, or anything else worth saying.
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
                Err(e) => ServerReport {
                    server: addr.to_string(),
                    state: "crashed".into(),
                    keys: None,
                    journal_present: None,
                    note: Some(format!("not answering: {e}")),
                    details: None,
                },
            }
        })
        .collect()
}
