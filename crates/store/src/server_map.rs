//! The block map (the seed's `hashmap.conf`): how many blocks the key space has,
//! which servers there are, and which server owns each block. Workers route by
//! it, servers serve by it, `webdedup distribute` writes it.
//!
//! The readable layout (blank lines and `#` comments allowed):
//!
//! ```text
//! blocks 1999
//! server 0 10.0.0.1:1234 weight 1
//! server 1 10.0.0.2:1234 weight 1
//! 0-0 0          # blocks FIRST-LAST (or one block) and their owner's index
//! 1 1
//! ```
//!
//! The KNOT clients' layout (also read): nine header tokens
//! `blocks B servers S port P format knot 1`, then one `block server-index host`
//! triple per block.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// The port KNOT clients expect a server on.
pub const DEFAULT_PORT: u16 = 1234;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerAddr {
    pub host: String,
    pub port: u16,
}

impl ServerAddr {
    /// `host`, `host:port`, `[v6]` or `[v6]:port` (the port defaults to 1234).
    pub fn parse(s: &str) -> Result<ServerAddr, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty server address".into());
        }
        let port = |p: &str| {
            p.parse::<u16>()
                .map_err(|_| format!("bad port '{p}' in '{s}'"))
        };
        if let Some(rest) = s.strip_prefix('[') {
            let (host, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("unclosed '[' in '{s}'"))?;
            let port = match after {
                "" => DEFAULT_PORT,
                a => port(
                    a.strip_prefix(':')
                        .ok_or_else(|| format!("junk after ']' in '{s}'"))?,
                )?,
            };
            return Ok(ServerAddr {
                host: host.into(),
                port,
            });
        }
        match s.matches(':').count() {
            0 => Ok(ServerAddr {
                host: s.into(),
                port: DEFAULT_PORT,
            }),
            1 => {
                let (h, p) = s.split_once(':').unwrap();
                if h.is_empty() {
                    return Err(format!("no host in '{s}'"));
                }
                Ok(ServerAddr {
                    host: h.into(),
                    port: port(p)?,
                })
            }
            // A bare IPv6 address.
            _ => Ok(ServerAddr {
                host: s.into(),
                port: DEFAULT_PORT,
            }),
        }
    }
}

impl fmt::Display for ServerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerEntry {
    pub addr: ServerAddr,
    /// Share of the blocks relative to the others (default 1).
    pub weight: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerMap {
    pub blocks: u32,
    pub servers: Vec<ServerEntry>,
    /// `owner[block]`: index into `servers`.
    pub owner: Vec<u32>,
}

/// A problem with a map or servers file: where (file and line, 0 for the whole
/// file) and what.
#[derive(Debug, thiserror::Error)]
#[error("{origin}:{line}: {reason}")]
pub struct MapError {
    pub origin: String,
    pub line: usize,
    pub reason: String,
}

impl MapError {
    fn new(origin: &str, line: usize, reason: impl Into<String>) -> MapError {
        MapError {
            origin: origin.into(),
            line,
            reason: reason.into(),
        }
    }
}

fn read_text(path: &Path) -> Result<String, MapError> {
    std::fs::read_to_string(path)
        .map_err(|e| MapError::new(&path.display().to_string(), 0, e.to_string()))
}

/// A map or servers file's lines as (line number, line, its words with the `#`
/// comment dropped).
fn lines_and_words(text: &str) -> impl Iterator<Item = (usize, &str, Vec<&str>)> {
    text.lines().enumerate().map(|(i, line)| {
        let words = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        (i + 1, line, words)
    })
}

/// Every entry of `given`, or an error for the first one missing (`missing` says
/// which, by its index).
fn all_given<T>(
    given: Vec<Option<T>>,
    origin: &str,
    missing: impl Fn(usize) -> String,
) -> Result<Vec<T>, MapError> {
    given
        .into_iter()
        .enumerate()
        .map(|(i, g)| g.ok_or_else(|| MapError::new(origin, 0, missing(i))))
        .collect()
}

/// Adds the server at `addr`, refusing one already listed.
fn push_server(servers: &mut Vec<ServerEntry>, addr: &str, weight: f64) -> Result<(), String> {
    let addr = ServerAddr::parse(addr)?;
    if servers.iter().any(|e| e.addr == addr) {
        return Err(format!("server {addr} listed twice"));
    }
    servers.push(ServerEntry { addr, weight });
    Ok(())
}

/// A servers file: one `host[:port]` a line, optionally followed by a weight.
pub fn parse_servers(text: &str, origin: &str) -> Result<Vec<ServerEntry>, MapError> {
    let mut out: Vec<ServerEntry> = Vec::new();
    for (n, line, words) in lines_and_words(text) {
        let err = |reason: String| MapError::new(origin, n, reason);
        let (addr, weight) = match words.as_slice() {
            [] => continue,
            [a] => (a, 1.0),
            [a, w] => (
                a,
                positive_weight(w)
                    .ok_or_else(|| err(format!("weight '{w}' is not a positive number")))?,
            ),
            _ => {
                return Err(err(format!(
                    "expected 'host[:port] [weight]', got '{}'",
                    line.trim()
                )))
            }
        };
        push_server(&mut out, addr, weight).map_err(err)?;
    }
    Ok(out)
}

/// A server's weight: a finite number above 0.
fn positive_weight(w: &str) -> Option<f64> {
    w.parse::<f64>().ok().filter(|w| w.is_finite() && *w > 0.0)
}

pub fn read_servers_file(path: &Path) -> Result<Vec<ServerEntry>, MapError> {
    parse_servers(&read_text(path)?, &path.display().to_string())
}

impl ServerMap {
    /// Parses either layout (see the module docs); every block must have exactly
    /// one owner.
    pub fn parse(text: &str, origin: &str) -> Result<ServerMap, MapError> {
        let first = text
            .lines()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .unwrap_or("");
        let toks: Vec<&str> = first.split_whitespace().collect();
        if toks.len() == 9 && toks[0] == "blocks" && toks[6] == "format" && toks[7] == "knot" {
            return Self::parse_knot(text, origin);
        }
        let mut blocks: Option<u32> = None;
        let mut servers: Vec<ServerEntry> = Vec::new();
        let mut owner: Vec<Option<u32>> = Vec::new();
        let mut ranges = Vec::new();
        for (n, line, words) in lines_and_words(text) {
            let err = |reason: String| MapError::new(origin, n, reason);
            match words.as_slice() {
                [] => {}
                ["blocks", b] => {
                    if blocks.is_some() {
                        return Err(err("block count given twice".into()));
                    }
                    let b: u32 = b
                        .parse()
                        .ok()
                        .filter(|&b| b > 0)
                        .ok_or_else(|| err(format!("bad block count '{b}'")))?;
                    blocks = Some(b);
                    owner = vec![None; b as usize];
                }
                ["server", idx, a, rest @ ..] => {
                    if idx.parse::<usize>().ok() != Some(servers.len()) {
                        return Err(err(format!(
                            "server index {idx}: expected {}",
                            servers.len()
                        )));
                    }
                    let weight = match rest {
                        [] => 1.0,
                        ["weight", w] => {
                            positive_weight(w).ok_or_else(|| err(format!("bad weight '{w}'")))?
                        }
                        _ => {
                            return Err(err(format!(
                                "expected 'server INDEX HOST:PORT [weight W]', got '{}'",
                                line.trim()
                            )))
                        }
                    };
                    push_server(&mut servers, a, weight).map_err(err)?;
                }
                [range, s] => {
                    let (a, b) = range.split_once('-').unwrap_or((range, range));
                    let a: u32 = a.parse().map_err(|_| err(format!("bad block '{a}'")))?;
                    let b: u32 = b.parse().map_err(|_| err(format!("bad block '{b}'")))?;
                    let s: u32 = s
                        .parse()
                        .map_err(|_| err(format!("bad server index '{s}'")))?;
                    if a > b {
                        return Err(err(format!("empty block range {a}-{b}")));
                    }
                    ranges.push((n, a, b, s));
                }
                _ => return Err(err(format!("cannot read '{}'", line.trim()))),
            }
        }
        let blocks = blocks.ok_or_else(|| MapError::new(origin, 0, "no 'blocks N' line"))?;
        if servers.is_empty() {
            return Err(MapError::new(origin, 0, "no servers"));
        }
        for (n, a, b, s) in ranges {
            let err = |reason: String| MapError::new(origin, n, reason);
            if s as usize >= servers.len() {
                return Err(err(format!(
                    "server index {s}, but only {} servers",
                    servers.len()
                )));
            }
            if b >= blocks {
                return Err(err(format!(
                    "block {b} out of range (blocks 0-{})",
                    blocks - 1
                )));
            }
            for k in a..=b {
                if owner[k as usize].replace(s).is_some() {
                    return Err(err(format!("block {k} assigned twice")));
                }
            }
        }
        Self::complete(blocks, servers, owner, origin)
    }

    fn complete(
        blocks: u32,
        servers: Vec<ServerEntry>,
        owner: Vec<Option<u32>>,
        origin: &str,
    ) -> Result<ServerMap, MapError> {
        let owner = all_given(owner, origin, |b| format!("block {b} has no owner"))?;
        Ok(ServerMap {
            blocks,
            servers,
            owner,
        })
    }

    fn parse_knot(text: &str, origin: &str) -> Result<ServerMap, MapError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        let (hn, head) = lines.next().unwrap();
        let err = |n: usize, reason: String| MapError::new(origin, n + 1, reason);
        let h: Vec<&str> = head.split_whitespace().collect();
        let num = |s: &str| {
            s.parse::<u32>()
                .map_err(|_| err(hn, format!("bad number '{s}' in the header")))
        };
        if h[2] != "servers" || h[4] != "port" {
            return Err(err(
                hn,
                "expected 'blocks B servers S port P format knot 1'".into(),
            ));
        }
        let (blocks, nservers, port) = (num(h[1])?, num(h[3])?, num(h[5])?);
        if blocks == 0 || port > u16::MAX as u32 {
            return Err(err(hn, "bad block count or port".into()));
        }
        let mut servers: Vec<Option<ServerEntry>> = vec![None; nservers as usize];
        let mut owner = vec![None; blocks as usize];
        for (n, line) in lines {
            let t: Vec<&str> = line.split_whitespace().collect();
            let [b, s, host] = t.as_slice() else {
                return Err(err(
                    n,
                    format!("expected 'block server-index host', got '{}'", line.trim()),
                ));
            };
            let b: u32 = b
                .parse()
                .ok()
                .filter(|&b| b < blocks)
                .ok_or_else(|| err(n, format!("bad block '{b}'")))?;
            let s: u32 = s
                .parse()
                .ok()
                .filter(|&s| s < nservers)
                .ok_or_else(|| err(n, format!("bad server index '{s}'")))?;
            let addr = ServerAddr {
                host: (*host).into(),
                port: port as u16,
            };
            match &servers[s as usize] {
                Some(e) if e.addr != addr => {
                    return Err(err(n, format!("server {s} is {} and {addr}", e.addr)))
                }
                _ => servers[s as usize] = Some(ServerEntry { addr, weight: 1.0 }),
            }
            if owner[b as usize].replace(s).is_some() {
                return Err(err(n, format!("block {b} assigned twice")));
            }
        }
        let servers = all_given(servers, origin, |i| format!("server {i} owns no block"))?;
        Self::complete(blocks, servers, owner, origin)
    }

    pub fn read(path: &Path) -> Result<ServerMap, MapError> {
        Self::parse(&read_text(path)?, &path.display().to_string())
    }

    /// The readable layout, blocks in runs of one owner.
    pub fn to_text(&self) -> String {
        use fmt::Write;
        let mut s = String::from("# webdedup block map: blocks, servers (index address weight), block ranges and their owner\n");
        let _ = writeln!(s, "blocks {}", self.blocks);
        for (i, e) in self.servers.iter().enumerate() {
            let _ = writeln!(s, "server {i} {} weight {}", e.addr, e.weight);
        }
        let mut b = 0;
        while b < self.blocks as usize {
            let o = self.owner[b];
            let mut end = b;
            while end + 1 < self.owner.len() && self.owner[end + 1] == o {
                end += 1;
            }
            if end == b {
                let _ = writeln!(s, "{b} {o}");
            } else {
                let _ = writeln!(s, "{b}-{end} {o}");
            }
            b = end + 1;
        }
        s
    }

    /// The KNOT clients' layout. It has one port for all servers, so a map whose
    /// servers listen on different ports cannot be written in it (the clients would
    /// ask the wrong port): refused, naming the servers that differ.
    pub fn to_knot_text(&self) -> Result<String, String> {
        use fmt::Write;
        let port = self.servers.first().map_or(DEFAULT_PORT, |s| s.addr.port);
        let other = self.servers_off_port(port);
        if !other.is_empty() {
            return Err(format!(
                "the KNOT layout has one port for all servers, but {} do not listen on port {port} as {} does; give every server one port",
                other.join(", "),
                self.servers[0].addr
            ));
        }
        let mut s = format!(
            "blocks {} servers {} port {port} format knot 1\n",
            self.blocks,
            self.servers.len()
        );
        for (b, &o) in self.owner.iter().enumerate() {
            let _ = writeln!(s, "{b} {o} {}", self.servers[o as usize].addr.host);
        }
        Ok(s)
    }

    /// The addresses of the servers that do not listen on `port`, in server order.
    pub fn servers_off_port(&self, port: u16) -> Vec<String> {
        self.servers
            .iter()
            .filter(|s| s.addr.port != port)
            .map(|s| s.addr.to_string())
            .collect()
    }

    pub fn owner_of_key(&self, key: u64) -> usize {
        self.owner[crate::block_of(key, self.blocks) as usize] as usize
    }

    pub fn blocks_of(&self, server: usize) -> Vec<u32> {
        (0..self.blocks)
            .filter(|&b| self.owner[b as usize] as usize == server)
            .collect()
    }

    pub fn index_of(&self, addr: &ServerAddr) -> Option<usize> {
        self.servers.iter().position(|e| &e.addr == addr)
    }

    /// Blocks per server, in server order.
    pub fn counts(&self) -> Vec<u32> {
        let mut c = vec![0; self.servers.len()];
        for &o in &self.owner {
            c[o as usize] += 1;
        }
        c
    }

    /// Blocks per server address.
    pub fn counts_by_addr(&self) -> HashMap<&ServerAddr, u32> {
        self.servers
            .iter()
            .zip(self.counts())
            .map(|(e, c)| (&e.addr, c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(addr: &str, weight: f64) -> ServerEntry {
        ServerEntry {
            addr: ServerAddr::parse(addr).unwrap(),
            weight,
        }
    }

    fn sample() -> ServerMap {
        ServerMap {
            blocks: 10,
            servers: vec![entry("10.0.0.1", 1.0), entry("node-b:4000", 2.5)],
            owner: vec![0, 0, 0, 1, 1, 0, 1, 1, 1, 0],
        }
    }

    #[test]
    fn both_layouts_round_trip() {
        let m = sample();
        assert_eq!(ServerMap::parse(&m.to_text(), "t").unwrap(), m);
        assert!(
            m.to_text().contains("0-2 0\n3-4 1\n5 0\n"),
            "{}",
            m.to_text()
        );
        let knot = ServerMap {
            servers: vec![entry("a", 1.0), entry("b", 1.0)],
            ..m
        };
        let text = knot.to_knot_text().unwrap();
        assert_eq!(text.lines().next().unwrap().split_whitespace().count(), 9);
        assert_eq!(ServerMap::parse(&text, "k").unwrap(), knot);
        let mut ports = knot.clone();
        ports.servers[1].addr.port = 99;
        let e = ports.to_knot_text().unwrap_err();
        assert!(e.contains("b:99") && e.contains("one port"), "{e}");
    }

    #[test]
    fn addresses_parse_with_default_port_and_ipv6() {
        assert_eq!(
            ServerAddr::parse("h").unwrap(),
            ServerAddr {
                host: "h".into(),
                port: 1234
            }
        );
        assert_eq!(ServerAddr::parse("h:99").unwrap().port, 99);
        assert_eq!(
            ServerAddr::parse("[::1]:5").unwrap(),
            ServerAddr {
                host: "::1".into(),
                port: 5
            }
        );
        assert_eq!(ServerAddr::parse("[::1]:5").unwrap().to_string(), "[::1]:5");
        assert!(ServerAddr::parse("h:x").is_err());
        assert!(ServerAddr::parse(":1").is_err());
    }

    #[test]
    fn bad_maps_name_the_line_and_reason() {
        for (map, says) in [
            (
                "blocks 3\nserver 0 a:1\n0-1 0\n1 0\n2 0\n",
                "m:4: block 1 assigned twice",
            ),
            (
                "blocks 3\nserver 0 a:1\n0-1 0\n",
                "m:0: block 2 has no owner",
            ),
            ("blocks 3\nserver 0 a:1\n0-2 1\n", "m:3: server index 1"),
            (
                "blocks 3\nserver 0 a:1\nserver 1 a:1\n",
                "m:3: server a:1 listed twice",
            ),
            ("nonsense here now\n", "m:1: cannot read"),
        ] {
            let e = ServerMap::parse(map, "m").unwrap_err().to_string();
            assert!(e.starts_with(says), "{map:?}: {e}");
        }
    }

    #[test]
    fn servers_files_take_weights_and_comments() {
        let s = parse_servers("# cluster\na:1 2\n\nb\n", "f").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].weight, 2.0);
        assert_eq!(s[1].addr.port, 1234);
        assert_eq!(
            parse_servers("a 0\n", "f").unwrap_err().to_string(),
            "f:1: weight '0' is not a positive number"
        );
        assert!(parse_servers("a\na\n", "f")
            .unwrap_err()
            .to_string()
            .contains("f:2"));
    }
}
