//! Hash servers as real processes for the process tests (`servers.rs`,
//! `hostile_server.rs`): block maps on loopback ports, `webdedup server` started
//! and stopped, workers, the wire handshake by hand.

#![allow(dead_code)]

use crate::common::{free_port, read};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use webdedup_net::wire::{Msg, Role, Settings};
use webdedup_store::server_map::{ServerAddr, ServerEntry, ServerMap};

pub fn addr(port: u16) -> ServerAddr {
    ServerAddr {
        host: "127.0.0.1".into(),
        port,
    }
}

/// A block map over `ports` with block b owned by `owner(b)`.
pub fn write_map(path: &Path, ports: &[u16], owner: impl Fn(u32) -> u32) -> ServerMap {
    let blocks = 1999;
    let map = ServerMap {
        blocks,
        servers: ports
            .iter()
            .map(|&p| ServerEntry {
                addr: addr(p),
                weight: 1.0,
            })
            .collect(),
        owner: (0..blocks).map(owner).collect(),
    };
    std::fs::write(path, map.to_text()).unwrap();
    map
}

/// A fresh loopback port and the map `dir/map` that gives its server every block.
pub fn one_server_map(dir: &Path) -> (u16, PathBuf) {
    let port = free_port();
    let map = dir.join("map");
    write_map(&map, &[port], |_| 0);
    (port, map)
}

/// A persistent server on `one_server_map(dir)` that has adopted a worker's
/// settings (a run over the sample, which must succeed): raw requests may follow.
pub fn server_with_settings(dir: &Path) -> (u16, PathBuf, Server) {
    let (port, map) = one_server_map(dir);
    let s = Server::persistent(dir, &map, port, &[]);
    let o = worker(&crate::common::sample_dir(), &dir.join("o"), &map, &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    (port, map, s)
}

/// A keys request by hand (request 7, `keys`, a test-and-insert or a test) and its
/// verdicts.
pub fn ask_keys(
    c: &mut TcpStream,
    id: Option<(u64, u64)>,
    insert: bool,
    keys: &[u64],
) -> Vec<bool> {
    use webdedup_net::wire;
    let mut out = Vec::new();
    wire::encode_keys_request(7, id, insert, keys, &mut out);
    c.write_all(&out).unwrap();
    match recv(c) {
        Msg::Verdicts { req: 7, n, bitmap } if n as usize == keys.len() => {
            (0..keys.len()).map(|i| wire::bit(&bitmap, i)).collect()
        }
        other => panic!("{other:?}"),
    }
}

pub struct Server {
    pub child: Option<Child>,
    pub port: u16,
    pub log: PathBuf,
}

impl Server {
    pub fn start(dir: &Path, map: &Path, port: u16, extra: &[&str]) -> Server {
        Server::start_env(dir, map, port, extra, &[])
    }

    /// [`Server::start`] with environment variables (e.g. `WEBDEDUP_FAULT`).
    pub fn start_env(
        dir: &Path,
        map: &Path,
        port: u16,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let ready = dir.join(format!("ready-{port}"));
        let _ = std::fs::remove_file(&ready);
        let log = dir.join(format!("server-{port}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_webdedup"))
            .args(["server", "-m"])
            .arg(map)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--ready-file"])
            .arg(&ready)
            .args(extra)
            .envs(env.iter().copied())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .unwrap(),
            )
            .spawn()
            .unwrap();
        let mut s = Server {
            child: Some(child),
            port,
            log,
        };
        let started = Instant::now();
        while !ready.exists() {
            if let Some(status) = s.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("server {port} exited ({status}): {}", read(&s.log));
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "server {port} did not start: {}",
                read(&s.log)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// Starts a server that saves to `DIR/s-PORT.snap` and loads it if present.
    pub fn persistent(dir: &Path, map: &Path, port: u16, extra: &[&str]) -> Server {
        let snap = snap_path(dir, port);
        let snap = snap.to_str().unwrap();
        Server::start(dir, map, port, &[&["-i", snap, "-o", snap], extra].concat())
    }

    /// [`Server::persistent`] with the fault point `fault` armed.
    pub fn persistent_with_fault(dir: &Path, map: &Path, port: u16, fault: &str) -> Server {
        let snap = snap_path(dir, port);
        let snap = snap.to_str().unwrap();
        let env = [("WEBDEDUP_FAULT", fault)];
        Server::start_env(dir, map, port, &["-i", snap, "-o", snap], &env)
    }

    /// Waits for the server to end by itself (a fault injected into it); returns
    /// whether it exited cleanly.
    pub fn wait_end(&mut self) -> bool {
        let mut c = self.child.take().expect("a running server");
        c.wait().unwrap().success()
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// SIGTERM: save and stop; waits for the exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            unsafe_kill(c.id(), "TERM");
            let status = c.wait().unwrap();
            assert!(
                status.success(),
                "server {} stopped with {status}: {}",
                self.port,
                read(&self.log)
            );
        }
    }

    pub fn wait_exit(&mut self, within: Duration) {
        let c = self.child.as_mut().unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = c.try_wait().unwrap() {
                assert!(status.success(), "{}", read(&self.log));
                self.child = None;
                return;
            }
            assert!(
                started.elapsed() < within,
                "server {} did not exit: {}",
                self.port,
                read(&self.log)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub fn unsafe_kill(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// The keys of a saved server snapshot, sorted.
pub fn snapshot_keys(path: &Path) -> Vec<u64> {
    let meta = webdedup_store::snapshot::read_meta(path).unwrap();
    let (store, _) = webdedup_store::MemStore::load(path, &meta, 0).unwrap();
    let mut keys: Vec<u64> = (0..meta.blocks).flat_map(|b| store.block_keys(b)).collect();
    keys.sort_unstable();
    keys
}

pub fn snap_path(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!("s-{port}.snap"))
}

pub fn worker(input: &Path, out: &Path, map: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_webdedup"));
    c.args(["dedup", "-q", "--dd", "-i"])
        .arg(input)
        .arg("-o")
        .arg(out)
        .arg("-s")
        .arg(map)
        .args(extra);
    c
}

/// A client's first bytes: the preamble and a hello of protocol `version`.
pub fn hello(version: u16, nonce: u8) -> Vec<u8> {
    use webdedup_net::wire::{self, Msg};
    let mut out = wire::PREAMBLE.to_vec();
    wire::encode(
        &Msg::Hello {
            version,
            nonce: [nonce; 16],
        },
        &mut out,
    );
    out
}

/// A handshake by hand, up to `Ready` (no token): as `role`, with the worker's
/// `settings` if given.
pub fn open_as(port: u16, role: Role, settings: Option<&Settings>) -> TcpStream {
    use webdedup_net::wire;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(&hello(wire::VERSION, 7)).unwrap();
    assert!(matches!(recv(&mut s), Msg::Challenge { .. }));
    let mut out = Vec::new();
    wire::encode(
        &Msg::Auth {
            mac: [0; 32],
            role,
            settings: settings.cloned(),
        },
        &mut out,
    );
    s.write_all(&out).unwrap();
    match recv(&mut s) {
        Msg::Ready { .. } => s,
        other => panic!("expected ready, got {other:?}"),
    }
}

/// Speaks the wire protocol by hand: preamble, hello, auth, ready, as a peer.
pub fn handshake(port: u16) -> TcpStream {
    open_as(port, Role::Peer, None)
}

pub fn recv(s: &mut TcpStream) -> Msg {
    let mut head = [0u8; 4];
    s.read_exact(&mut head).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(head) as usize];
    s.read_exact(&mut body).unwrap();
    webdedup_net::wire::decode(&body).unwrap()
}

/// `n` fresh loopback ports and the map `dir/map` that gives block b to the
/// server on port b % n.
pub fn spread_map(dir: &Path, n: usize) -> (Vec<u16>, PathBuf) {
    let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let map = dir.join("map");
    write_map(&map, &ports, |b| b % n as u32);
    (ports, map)
}

/// `n` servers on a [`spread_map`], running until dropped (each [`Server`] is
/// killed on drop) or stopped.
pub struct Cluster {
    dir: PathBuf,
    pub ports: Vec<u16>,
    pub map: PathBuf,
    pub servers: Vec<Server>,
}

impl Cluster {
    /// `n` servers that keep their keys in memory only.
    pub fn start(dir: &Path, n: usize) -> Cluster {
        Cluster::with(dir, n, |map, port| Server::start(dir, map, port, &[]))
    }

    /// `n` servers that save to `snap_path(dir, port)` and load it if present.
    pub fn persistent(dir: &Path, n: usize) -> Cluster {
        Cluster::with(dir, n, |map, port| Server::persistent(dir, map, port, &[]))
    }

    fn with(dir: &Path, n: usize, start: impl Fn(&Path, u16) -> Server) -> Cluster {
        let (ports, map) = spread_map(dir, n);
        let servers = ports.iter().map(|&p| start(&map, p)).collect();
        Cluster {
            dir: dir.to_path_buf(),
            ports,
            map,
            servers,
        }
    }

    /// Starts server `i` again (killed or stopped before) from its snapshot and
    /// journal, as [`Server::persistent`].
    pub fn restart(&mut self, i: usize) -> &Server {
        self.servers[i] = Server::persistent(&self.dir, &self.map, self.ports[i], &[]);
        &self.servers[i]
    }

    /// Stops every server (SIGTERM: save) and returns the keys of their
    /// snapshots, sorted.
    pub fn saved_keys(&mut self) -> Vec<u64> {
        self.stop();
        let mut keys: Vec<u64> = (self.ports.iter())
            .flat_map(|&p| snapshot_keys(&snap_path(&self.dir, p)))
            .collect();
        keys.sort_unstable();
        keys
    }

    /// A worker ([`worker`]) on these servers, run to its end.
    pub fn run_worker(&self, input: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
        worker(input, out, &self.map, extra).output().unwrap()
    }

    /// The map as a command-line argument.
    pub fn map_arg(&self) -> &str {
        self.map.to_str().unwrap()
    }

    /// SIGTERM to every server (each saves and stops); waits for them.
    pub fn stop(&mut self) {
        for s in &mut self.servers {
            s.stop();
        }
    }
}

/// The token file `dir/token` (one token, as an operator writes it).
pub fn token_file(dir: &Path) -> PathBuf {
    let token = dir.join("token");
    std::fs::write(&token, "correct-horse-battery-staple-42\n").unwrap();
    token
}

/// A server on [`one_server_map`] that also answers the KNOT protocol on a
/// port of its own: the server, its port, the KNOT port and the map.
pub fn knot_server(dir: &Path) -> (Server, u16, u16, PathBuf) {
    let (port, map) = one_server_map(dir);
    let knot = free_port();
    let server = Server::start(dir, &map, port, &["--knot-port", &knot.to_string()]);
    (server, port, knot, map)
}
