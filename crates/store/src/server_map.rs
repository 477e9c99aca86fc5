//! TEMPORARY minimal block map (replaced by the distribute branch's full version).

use std::fmt;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerAddr {
    pub host: String,
    pub port: u16,
}

pub const DEFAULT_PORT: u16 = 1234;

impl ServerAddr {
    pub fn parse(s: &str) -> Result<ServerAddr, String> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or("unclosed [")?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| format!("bad port '{p}'"))?,
                None => DEFAULT_PORT,
            };
            return Ok(ServerAddr { host: host.into(), port });
        }
        match s.rsplit_once(':') {
            Some((h, p)) => Ok(ServerAddr { host: h.into(), port: p.parse().map_err(|_| format!("bad port '{p}'"))? }),
            None => Ok(ServerAddr { host: s.into(), port: DEFAULT_PORT }),
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
    pub weight: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerMap {
    pub blocks: u32,
    pub servers: Vec<ServerEntry>,
    pub owner: Vec<u32>,
}

#[derive(Debug, thiserror::Error)]
#[error("{origin}:{line}: {reason}")]
pub struct MapError {
    pub origin: String,
    pub line: usize,
    pub reason: String,
}

impl ServerMap {
    pub fn parse(text: &str, origin: &str) -> Result<ServerMap, MapError> {
        let err = |line: usize, reason: String| MapError { origin: origin.into(), line, reason };
        let mut blocks = 0u32;
        let mut servers = Vec::new();
        let mut owner: Vec<Option<u32>> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
            match t.as_slice() {
                [] => {}
                ["blocks", n] => {
                    blocks = n.parse().map_err(|_| err(i + 1, "bad block count".into()))?;
                    owner = vec![None; blocks as usize];
                }
                ["server", _, a, "weight", w] => servers.push(ServerEntry {
                    addr: ServerAddr::parse(a).map_err(|e| err(i + 1, e))?,
                    weight: w.parse().map_err(|_| err(i + 1, "bad weight".into()))?,
                }),
                [range, s] => {
                    let (a, b) = range.split_once('-').unwrap_or((range, range));
                    let a: u32 = a.parse().map_err(|_| err(i + 1, "bad block".into()))?;
                    let b: u32 = b.parse().map_err(|_| err(i + 1, "bad block".into()))?;
                    let s: u32 = s.parse().map_err(|_| err(i + 1, "bad server".into()))?;
                    for k in a..=b {
                        *owner.get_mut(k as usize).ok_or_else(|| err(i + 1, "block out of range".into()))? = Some(s);
                    }
                }
                _ => return Err(err(i + 1, format!("cannot read '{line}'"))),
            }
        }
        let owner = owner
            .into_iter()
            .enumerate()
            .map(|(b, o)| o.ok_or_else(|| err(0, format!("block {b} has no owner"))))
            .collect::<Result<_, _>>()?;
        Ok(ServerMap { blocks, servers, owner })
    }

    pub fn read(path: &Path) -> Result<ServerMap, MapError> {
        let text = std::fs::read_to_string(path).map_err(|e| MapError {
            origin: path.display().to_string(),
            line: 0,
            reason: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn to_text(&self) -> String {
        let mut s = format!("blocks {}\n", self.blocks);
        for (i, e) in self.servers.iter().enumerate() {
            s += &format!("server {i} {} weight {}\n", e.addr, e.weight);
        }
        for (b, o) in self.owner.iter().enumerate() {
            s += &format!("{b} {o}\n");
        }
        s
    }

    pub fn owner_of_key(&self, key: u64) -> usize {
        self.owner[crate::block_of(key, self.blocks) as usize] as usize
    }

    pub fn blocks_of(&self, server: usize) -> Vec<u32> {
        (0..self.blocks).filter(|&b| self.owner[b as usize] as usize == server).collect()
    }

    pub fn index_of(&self, addr: &ServerAddr) -> Option<usize> {
        self.servers.iter().position(|e| &e.addr == addr)
    }
}
