//! A hostile world for the hash server (issue 16): real `webdedup server`
//! processes on loopback, attacked by stray and malicious peers, each scenario
//! bounded in time and count. After every attack an ordinary worker (or client)
//! must still be served, the server's memory (VmRSS from /proc) must stay within
//! the budget the README states, and nothing acknowledged may be lost.
//!
//! - S1: a stray connection (an HTTP request, 8 random bytes) changes nothing.
//! - S2: announced frames cost nothing; frames in flight stay within the budget.
//! - S3: silent strangers never lock an authenticated worker out.
//! - S4: `--metrics` beyond loopback needs a token; HTTP `/status` hides files.
//! - S5: SIGTERM while clients send loses no acknowledged key.
//! - slowloris, random frames, a KNOT client with another map in a loop.

mod common;
mod server_procs;

use common::*;
use server_procs::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webdedup_net::wire::{self, Msg, Role, Settings};
use webdedup_store::StoreMeta;

/// What the README states a connection may cost the server at most, beyond the
/// frame budget (its 8 KiB read buffer, the task, the socket's bookkeeping).
const PER_CONNECTION: u64 = 16 << 10;
/// The default `--frame-memory`.
const FRAME_MEMORY: u64 = 128 << 20;

/// The server's resident memory, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kb << 10
}

/// The README's budget for `connections` connections: the server as started,
/// each connection, and the frame budget twice (received frame bytes, and the
/// keys decoded from the frames being answered).
fn budget(baseline: u64, connections: u64) -> u64 {
    baseline + connections * PER_CONNECTION + 2 * FRAME_MEMORY
}

/// Lets this process open `n` sockets (and the server it starts inherits it).
fn allow_open_files(n: u64) {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        if lim.rlim_cur < n as libc::rlim_t {
            lim.rlim_cur = lim.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
        }
        assert!(
            lim.rlim_cur >= n as libc::rlim_t,
            "this test needs {n} open files; the hard limit is {} (ulimit -Hn)",
            lim.rlim_max
        );
    }
}

/// A server's status over the wire (authenticated with `token` if given).
fn status(port: u16, token: Option<&Path>) -> serde_json::Value {
    let opts = webdedup_net::ClientOptions {
        secret: token.map(|t| webdedup_net::auth::Secret::read(t).unwrap()),
        ..Default::default()
    };
    let a = addr(port);
    let mut c = webdedup_net::client::Conn::connect(&a, Role::Status, None, &opts).expect("status");
    c.status(&a).expect("status")
}

fn counter(status: &serde_json::Value, name: &str) -> u64 {
    status[name]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} in {status}"))
}

/// Settings a worker of `map` with our own key kind sends.
fn settings(map: &webdedup_store::server_map::ServerMap) -> Settings {
    Settings {
        meta: StoreMeta {
            hash: "xxh3-64".into(),
            normalization: "none".into(),
            blocks: map.blocks,
            key_kind: "hostile-test".into(),
        },
        map: wire::map_fingerprint(map),
    }
}

/// A small deterministic generator (xorshift64*), so failures replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Asks a KNOT server about `keys` (pipelined); its answers, `0` or `1` each.
fn knot_ask(c: &mut TcpStream, keys: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(keys.len() * 8);
    for k in keys {
        out.extend_from_slice(&k.to_be_bytes());
    }
    c.write_all(&out).unwrap();
    let mut answers = vec![0u8; keys.len()];
    c.read_exact(&mut answers).unwrap();
    answers
}

/// A stray connection: `bytes`, then whatever comes back until the server hangs
/// up (or 2 s pass).
fn stray(port: u16, bytes: &[u8]) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(bytes).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = c.read_to_end(&mut Vec::new());
}

fn sample_worker_succeeds(dir: &Path, name: &str, map: &Path, extra: &[&str]) {
    let o = worker(&sample_dir(), &dir.join(name), map, extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "worker {name}: {}", stderr(&o));
}

#[test]
fn s1_a_stray_connection_changes_nothing_and_workers_are_served_across_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let mut s = Server::persistent(tmp.path(), &map, port, &[]);
    // curl http://127.0.0.1:PORT/
    stray(
        port,
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n",
    );
    // 8 random bytes, a few times (every block is this server's).
    let mut rng = Rng(0x5151_5151);
    for _ in 0..10 {
        stray(port, &rng.next().to_be_bytes());
    }
    sample_worker_succeeds(tmp.path(), "a", &map, &[]);
    s.stop();
    let snap = snap_path(tmp.path(), port);
    let meta = webdedup_store::snapshot::read_meta(&snap).unwrap();
    assert_eq!(meta.hash, "xxh3-64", "{meta:?}");
    assert_ne!(meta.key_kind, "knot-one-hash", "{meta:?}");
    // Across a restart from the snapshot: the same stray bytes, the same worker.
    let _s = Server::persistent(tmp.path(), &map, port, &[]);
    stray(port, b"GET / HTTP/1.0\r\n\r\n");
    sample_worker_succeeds(tmp.path(), "b", &map, &[]);
    let st = status(port, None);
    assert!(counter(&st, "bad_frames") >= 1, "{st}");
    assert_eq!(counter(&st, "knot_requests"), 0, "{st}");
}

#[test]
fn s1_a_knot_server_refuses_workers_naming_its_own_settings_and_the_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, _, knot, map) = knot_server(tmp.path());
    let mut c = TcpStream::connect(("127.0.0.1", knot)).unwrap();
    assert_eq!(knot_ask(&mut c, &[42]), b"0");
    let o = worker(&sample_dir(), &tmp.path().join("o"), &map, &[])
        .output()
        .unwrap();
    assert_fails_saying(
        &o,
        2,
        "hash 'client-64' in the store, 'xxh3-64' in this run",
    );
}

#[test]
fn s2_announced_frames_cost_nothing_and_frames_in_flight_stay_within_the_budget() {
    const SILENT: usize = 1000;
    const SENDERS: usize = 6;
    allow_open_files(2 * (SILENT + SENDERS) as u64 + 200);
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let s = Server::start(tmp.path(), &map, port, &[]);
    let pid = s.child.as_ref().unwrap().id();
    let baseline = rss(pid);
    let over = |connections: usize| -> Option<String> {
        let (now, limit) = (rss(pid), budget(baseline, connections as u64));
        (now > limit).then(|| {
            format!("RSS {now} bytes with {connections} connections, over the budget of {limit} (started at {baseline})")
        })
    };
    // Status probes need no token on this server: each announces the largest
    // frame (64 MiB) and goes silent.
    let announce = (wire::DEFAULT_MAX_FRAME).to_le_bytes();
    let mut silent = Vec::new();
    for i in 0..SILENT {
        let mut c = open_as(port, Role::Status, None);
        c.write_all(&announce).unwrap();
        silent.push(c);
        if i % 50 == 49 {
            // Checked as we go: an unbounded server would take the machine down.
            std::thread::sleep(Duration::from_millis(50));
            if let Some(e) = over(i + 1) {
                panic!("{e}");
            }
        }
    }
    // Frames actually sent, more than the budget: 6 x 32 MiB of a 64 MiB frame.
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let mut c = open_as(port, Role::Status, None);
            std::thread::spawn(move || {
                c.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
                let _ = c.write_all(&announce);
                let chunk = vec![0xa5u8; 1 << 20];
                for _ in 0..32 {
                    if c.write_all(&chunk).is_err() {
                        break;
                    }
                }
                c
            })
        })
        .collect();
    let senders: Vec<TcpStream> = senders.into_iter().map(|t| t.join().unwrap()).collect();
    let connections = SILENT + SENDERS;
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(200));
        if let Some(e) = over(connections) {
            panic!("{e}");
        }
    }
    // Still serving, and telling how much of its budget is taken.
    let st = status(port, None);
    assert!(
        counter(&st, "frame_memory_bytes") <= counter(&st, "frame_memory_limit"),
        "{st}"
    );
    assert!(counter(&st, "frame_memory_bytes") > 0, "{st}");
    drop(senders);
    drop(silent);
}

#[test]
fn s3_silent_strangers_never_lock_out_an_authenticated_worker() {
    const STRANGERS: usize = 1030;
    allow_open_files(STRANGERS as u64 * 2 + 200);
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let token = token_file(tmp.path());
    let token_arg = token.to_str().unwrap();
    let s = Server::start(tmp.path(), &map, port, &["--auth-token-file", token_arg]);
    let pid = s.child.as_ref().unwrap().id();
    let baseline = rss(pid);
    let strangers: Vec<TcpStream> = (0..STRANGERS)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    sample_worker_succeeds(tmp.path(), "o", &map, &["--auth-token-file", token_arg]);
    let st = status(port, Some(&token));
    assert!(
        counter(&st, "evicted_connections") >= (STRANGERS - 1024) as u64,
        "{st}"
    );
    assert!(
        rss(pid) <= budget(baseline, STRANGERS as u64),
        "RSS {} with {STRANGERS} silent connections (started at {baseline})",
        rss(pid)
    );
    drop(strangers);
}

#[test]
fn s4_metrics_beyond_loopback_need_a_token_and_http_status_hides_the_servers_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let metrics = free_port();
    let mut open = std::process::Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(["server", "-m", map.to_str().unwrap()])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--metrics", &format!("0.0.0.0:{metrics}")])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A server that wrongly started would run until killed: give it a bound.
    let started = Instant::now();
    let status_code = loop {
        if let Some(s) = open.try_wait().unwrap() {
            break s.code();
        }
        if started.elapsed() > Duration::from_secs(20) {
            open.kill().unwrap();
            open.wait().unwrap();
            panic!("--metrics 0.0.0.0 without a token started a server");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    open.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status_code, Some(2), "{err}");
    assert!(err.contains("--auth-token-file"), "{err}");
    // With a token: served, but HTTP /status says nothing of pid, files, map.
    let token = token_file(tmp.path());
    let snap = tmp.path().join("s.snap");
    let _s = Server::start(
        tmp.path(),
        &map,
        port,
        &[
            "--auth-token-file",
            s(&token),
            "--metrics",
            &format!("127.0.0.1:{metrics}"),
            "-o",
            snap.to_str().unwrap(),
        ],
    );
    let mut m = TcpStream::connect(("127.0.0.1", metrics)).unwrap();
    m.write_all(b"GET /status HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    m.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.0 200"), "{text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    for hidden in ["pid", "journal", "save", "map_fingerprint"] {
        assert!(body.get(hidden).is_none(), "{hidden} in {body}");
    }
    assert_eq!(body["state"], "ready", "{body}");
    // The authenticated status still has them.
    let st = status(port, Some(&token));
    assert!(st["pid"].as_u64().is_some(), "{st}");
    assert!(st["save"].as_str().unwrap().ends_with("s.snap"), "{st}");
}

/// Sends fresh keys from `threads` clients until the server goes away; returns
/// the keys answered "new". `client` runs one thread's requests: it gets the
/// thread number, a key generator, and where to put the keys answered new, and
/// returns when its connection fails.
fn send_until_stopped(
    threads: usize,
    s: &mut Server,
    client: impl Fn(usize, &mut Rng, &Mutex<Vec<u64>>, &AtomicU64) + Send + Sync + 'static,
) -> Vec<u64> {
    let new = Arc::new(Mutex::new(Vec::new()));
    let answered = Arc::new(AtomicU64::new(0));
    let client = Arc::new(client);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (new, answered, client) = (new.clone(), answered.clone(), client.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((t as u64 + 1) * 0x1234_5678_9abc));
                client(t, &mut rng, &new, &answered);
            })
        })
        .collect();
    // Stop while requests fly.
    let started = Instant::now();
    while answered.load(Ordering::Relaxed) < 20_000 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    s.stop();
    for h in handles {
        h.join().unwrap();
    }
    let new = new.lock().unwrap().clone();
    assert!(new.len() > 1000, "only {} keys answered new", new.len());
    new
}

#[test]
fn s5_sigterm_while_knot_clients_send_loses_no_acknowledged_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let knot = free_port();
    let knot_arg = knot.to_string();
    let extra = ["--knot-port", knot_arg.as_str(), "--fsync", "off"];
    let mut s = Server::persistent(tmp.path(), &map, port, &extra);
    let new = send_until_stopped(16, &mut s, move |_, rng, new, answered| {
        let Ok(mut c) = TcpStream::connect(("127.0.0.1", knot)) else {
            return;
        };
        loop {
            let key = rng.next();
            if c.write_all(&key.to_be_bytes()).is_err() {
                return;
            }
            let mut a = [0u8; 1];
            if c.read_exact(&mut a).is_err() {
                return;
            }
            if a[0] == b'0' {
                new.lock().unwrap().push(key);
            }
            answered.fetch_add(1, Ordering::Relaxed);
        }
    });
    let _s = Server::persistent(tmp.path(), &map, port, &extra);
    let mut c = TcpStream::connect(("127.0.0.1", knot)).unwrap();
    let lost: Vec<u64> = new
        .chunks(4096)
        .flat_map(|keys| {
            let answers = knot_ask(&mut c, keys);
            keys.iter()
                .zip(answers)
                .filter(|(_, a)| *a != b'1')
                .map(|(&k, _)| k)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} keys answered new were lost by SIGTERM",
        lost.len(),
        new.len()
    );
}

#[test]
fn s5_sigterm_while_workers_send_loses_no_acknowledged_key() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let map_path = tmp.path().join("map");
    let map = write_map(&map_path, &[port], |_| 0);
    let mut s = Server::persistent(tmp.path(), &map_path, port, &["--fsync", "off"]);
    let settings = settings(&map);
    let theirs = settings.clone();
    let new = send_until_stopped(8, &mut s, move |t, rng, new, answered| {
        let mut c = open_as(port, Role::Worker, Some(&theirs));
        let mut out = Vec::new();
        for seq in 0u64.. {
            let keys: Vec<u64> = (0..64).map(|_| rng.next()).collect();
            out.clear();
            wire::encode_keys_request(1, Some((t as u64, seq)), true, &keys, &mut out);
            if c.write_all(&out).is_err() {
                return;
            }
            let mut head = [0u8; 4];
            if c.read_exact(&mut head).is_err() {
                return;
            }
            let mut body = vec![0u8; u32::from_le_bytes(head) as usize];
            if c.read_exact(&mut body).is_err() {
                return;
            }
            match wire::decode(&body) {
                Ok(Msg::Verdicts { bitmap, .. }) => {
                    let mut new = new.lock().unwrap();
                    new.extend(
                        keys.iter()
                            .enumerate()
                            .filter(|&(i, _)| !wire::bit(&bitmap, i))
                            .map(|(_, &k)| k),
                    );
                    answered.fetch_add(keys.len() as u64, Ordering::Relaxed);
                }
                // Refused (the server is stopping): nothing acknowledged.
                _ => return,
            }
        }
    });
    let _s = Server::persistent(tmp.path(), &map_path, port, &["--fsync", "off"]);
    let mut c = open_as(port, Role::Worker, Some(&settings));
    let mut lost = 0;
    for keys in new.chunks(4096) {
        let mut out = Vec::new();
        wire::encode_keys_request(9, None, false, keys, &mut out);
        c.write_all(&out).unwrap();
        match recv(&mut c) {
            Msg::Verdicts { bitmap, .. } => {
                lost += (0..keys.len()).filter(|&i| !wire::bit(&bitmap, i)).count();
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        lost,
        0,
        "{lost} of {} keys answered new were lost by SIGTERM",
        new.len()
    );
}

#[test]
fn slowloris_connections_are_dropped_at_the_handshake_deadline_and_never_keep_a_worker_out() {
    const SLOW: usize = 24;
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let _s = Server::start(tmp.path(), &map, port, &["--max-connections", "8"]);
    // Our own handshake, one byte every 400 ms: 8 + 23 + ... bytes, far beyond
    // the 10 s a handshake may take.
    let hello = hello(wire::VERSION, 3);
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..SLOW)
        .map(|_| {
            let (hello, stop) = (hello.clone(), stop.clone());
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            std::thread::spawn(move || -> Option<Duration> {
                let started = Instant::now();
                let mut c = c;
                c.set_read_timeout(Some(Duration::from_millis(400)))
                    .unwrap();
                for &b in hello.iter().cycle() {
                    if stop.load(Ordering::Relaxed) {
                        return None;
                    }
                    if c.write_all(&[b]).is_err() {
                        return Some(started.elapsed());
                    }
                    // The server hangs up: EOF or a reset.
                    let mut buf = [0u8; 256];
                    match c.read(&mut buf) {
                        Ok(0) => return Some(started.elapsed()),
                        Err(e)
                            if e.kind() != std::io::ErrorKind::WouldBlock
                                && e.kind() != std::io::ErrorKind::TimedOut =>
                        {
                            return Some(started.elapsed())
                        }
                        _ => {}
                    }
                }
                None
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    sample_worker_succeeds(tmp.path(), "o", &map, &[]);
    // Every slow connection is dropped, within a bound far above the deadline.
    let watchdog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(40));
            stop.store(true, Ordering::Relaxed);
        })
    };
    let dropped: Vec<Option<Duration>> = slow.into_iter().map(|t| t.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    drop(watchdog);
    let kept = dropped.iter().filter(|d| d.is_none()).count();
    assert_eq!(
        kept, 0,
        "{kept} of {SLOW} slowloris connections still open after 40 s"
    );
}

#[test]
fn random_frames_never_crash_the_server_nor_grow_it_and_workers_are_served() {
    const PEERS: usize = 200;
    allow_open_files(2 * PEERS as u64 + 200);
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let s = Server::start(tmp.path(), &map, port, &[]);
    let pid = s.child.as_ref().unwrap().id();
    let baseline = rss(pid);
    let mut rng = Rng(0xfeed_f00d);
    let mut kept = Vec::new();
    for i in 0..PEERS {
        let mut c = match i % 4 {
            // After a complete handshake: a random length (up to the largest
            // frame), a random body of up to 64 KiB.
            0 | 1 => open_as(port, Role::Status, None),
            // Our preamble, then anything.
            2 => {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.write_all(&wire::PREAMBLE).unwrap();
                c
            }
            // Anything at all.
            _ => TcpStream::connect(("127.0.0.1", port)).unwrap(),
        };
        let len = (rng.next() % (wire::DEFAULT_MAX_FRAME as u64 + 1)) as u32;
        let mut bytes = len.to_le_bytes().to_vec();
        let body = (rng.next() % (64 << 10)) as usize;
        bytes.extend((0..body).map(|_| rng.next() as u8));
        c.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        let _ = c.write_all(&bytes);
        if rng.next().is_multiple_of(2) {
            let _ = c.shutdown(Shutdown::Write);
        }
        kept.push(c);
        if i % 20 == 19 {
            std::thread::sleep(Duration::from_millis(50));
            let (now, limit) = (rss(pid), budget(baseline, i as u64 + 1));
            assert!(
                now <= limit,
                "RSS {now} after {} random peers, over {limit}",
                i + 1
            );
        }
    }
    // Complete random frames too: every kind byte, random fields.
    for kind in 0..=255u8 {
        let mut c = open_as(port, Role::Peer, None);
        let mut body = vec![kind];
        body.extend((0..(rng.next() % 64)).map(|_| rng.next() as u8));
        let mut frame = (body.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&body);
        let _ = c.write_all(&frame);
        let mut sink = Vec::new();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c.read_to_end(&mut sink);
    }
    let st = status(port, None);
    assert!(counter(&st, "bad_frames") >= 100, "{st}");
    drop(kept);
    sample_worker_succeeds(tmp.path(), "o", &map, &[]);
    assert!(
        rss(pid) <= budget(baseline, PEERS as u64),
        "RSS {} (started at {baseline})",
        rss(pid)
    );
}

#[test]
fn a_knot_client_with_another_map_reconnecting_in_a_loop_is_counted_and_logged_sparingly() {
    const TRIES: u64 = 2000;
    let tmp = tempfile::tempdir().unwrap();
    let (port, other, knot) = (free_port(), free_port(), free_port());
    let map = tmp.path().join("map");
    // This server owns the even blocks; the client asks about an odd one.
    write_map(&map, &[port, other], |b| b % 2);
    let s = Server::start(tmp.path(), &map, port, &["--knot-port", &knot.to_string()]);
    let odd = 1u64; // block 1
    for _ in 0..TRIES {
        let mut c = TcpStream::connect(("127.0.0.1", knot)).unwrap();
        let _ = c.write_all(&odd.to_be_bytes());
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        assert!(buf.is_empty(), "answered a hash of a block it does not own");
    }
    let st = status(port, None);
    assert!(counter(&st, "bad_frames") >= TRIES, "{st}");
    let log = read(&s.log);
    let lines = log.lines().filter(|l| l.contains("does not own")).count();
    assert!(
        lines <= 20,
        "{lines} log lines for {TRIES} connections of one client:\n{}",
        log.lines().take(30).collect::<Vec<_>>().join("\n")
    );
    // Its own blocks are still answered.
    let mut c = TcpStream::connect(("127.0.0.1", knot)).unwrap();
    assert_eq!(knot_ask(&mut c, &[2, 2]), b"01");
}

#[test]
fn a_worker_retries_a_busy_server_until_a_slot_frees() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let _s = Server::start(tmp.path(), &map, port, &["--max-connections", "1"]);
    // The only slot, held by a status probe past its handshake.
    let holder = open_as(port, Role::Status, None);
    let run = worker(
        &sample_dir(),
        &tmp.path().join("o"),
        &map,
        &["-t", "1", "--server-timeout", "60"],
    )
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    drop(holder);
    let o = run.wait_with_output().unwrap();
    ok(&o);
    let st = status(port, None);
    assert!(counter(&st, "rejected_connections") >= 1, "{st}");
}
