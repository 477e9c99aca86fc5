//! Hash servers as real processes on loopback: `webdedup server` and workers
//! (`webdedup dedup -s MAP`), crashes (kill -9) of servers and workers,
//! migration 2 -> 3 -> 2 servers, the KNOT protocol, auth, hostile clients.

mod common;
mod server_procs;

use common::*;
use server_procs::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use webdedup_net::wire::Msg;
use webdedup_store::server_map::ServerMap;

/// Finished `.dedup` outputs under `dir` (read while a worker writes there).
fn finished_outputs(dir: &Path) -> usize {
    let mut n = 0;
    walk(dir, |p| {
        n += usize::from(p.extension().is_some_and(|x| x == "dedup") && !p.is_dir());
        true
    });
    n
}

#[test]
fn three_servers_answer_one_worker_exactly_as_the_embedded_store() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(tmp.path(), 3);
    for near in [false, true] {
        let extra: &[&str] = if near {
            &["-t", "1", "--near"]
        } else {
            &["-t", "1"]
        };
        let want = tmp.path().join(format!("embedded-{near}"));
        ok(&dedup(&sample_dir(), &want, &[&["--dd"], extra].concat()));
        // Fresh servers per mode would be cleaner; a second key kind is refused,
        // so the near run uses its own servers below.
        if near {
            break;
        }
        let out = tmp.path().join("remote");
        ok(&cluster.run_worker(&sample_dir(), &out, extra));
        assert!(
            outputs(&out) == outputs(&want),
            "remote outputs differ from the embedded store's"
        );
    }
}

#[test]
fn near_mode_on_servers_equals_the_embedded_store() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(tmp.path(), 2);
    let want = tmp.path().join("embedded");
    ok(&dedup(&sample_dir(), &want, &["--dd", "-t", "1", "--near"]));
    let out = tmp.path().join("remote");
    ok(&cluster.run_worker(&sample_dir(), &out, &["-t", "1", "--near"]));
    assert!(outputs(&out) == outputs(&want));
    // Other settings than the servers' keys are refused, naming the difference.
    let other = tmp.path().join("other");
    let o = cluster.run_worker(&sample_dir(), &other, &["--normalize", "none"]);
    assert_fails_saying(&o, 2, "normalization");
}

#[test]
fn a_server_killed_mid_run_restarts_from_its_journal_and_the_outputs_are_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let input = big_input(tmp.path(), 8);
    let want = tmp.path().join("want");
    let o = dedup(&input, &want, &["--dd", "-t", "1"]);
    assert!(o.status.success());
    let out = tmp.path().join("out");
    worker_through_a_server_crash(tmp.path(), &input, &out, &["-t", "1"]);
    assert!(
        outputs(&out) == outputs(&want),
        "outputs differ from an uninterrupted run's"
    );
}

/// Runs a worker with `extra` on 3 persistent servers, kills one with kill -9
/// once its journal has grown, brings it back from the journal, and waits for the
/// worker (which must succeed).
fn worker_through_a_server_crash(dir: &Path, input: &Path, out: &Path, extra: &[&str]) {
    let mut cluster = Cluster::persistent(dir, 3);
    let child = worker(input, out, &cluster.map, extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let it get going, then kill -9 a server and bring it back from its journal.
    let journal = PathBuf::from(format!(
        "{}.journal",
        snap_path(dir, cluster.ports[1]).display()
    ));
    let started = Instant::now();
    while std::fs::metadata(&journal).map_or(0, |m| m.len()) < 20_000 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no journal growth"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    cluster.servers[1].kill9();
    std::thread::sleep(Duration::from_millis(300));
    cluster.restart(1);
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "worker failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        read(&cluster.servers[1].log).contains("replayed the journal"),
        "{}",
        read(&cluster.servers[1].log)
    );
}

#[test]
fn a_worker_killed_mid_run_finishes_with_restore_and_the_outputs_are_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let input = big_input(tmp.path(), 8);
    let want = tmp.path().join("want");
    let o = dedup(&input, &want, &["--dd", "-t", "1"]);
    assert!(o.status.success());
    let cluster = Cluster::persistent(tmp.path(), 3);
    let out = tmp.path().join("out");
    let mut child = worker(&input, &out, &cluster.map, &["-t", "1"])
        .spawn()
        .unwrap();
    // Kill it once a few outputs are done (some finished, one under way).
    let started = Instant::now();
    while finished_outputs(&out) < 4 {
        assert!(started.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    ok(&cluster.run_worker(&input, &out, &["-t", "1", "--restore"]));
    assert!(
        outputs(&out) == outputs(&want),
        "restored outputs differ from an uninterrupted run's"
    );
}

#[test]
fn two_workers_on_three_servers_keep_every_paragraph_once_even_with_a_server_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let input = big_input(tmp.path(), 6);
    let mut cluster = Cluster::persistent(tmp.path(), 3);
    // Two workers over disjoint halves of the input, at once.
    let halves = [tmp.path().join("h0"), tmp.path().join("h1")];
    for (i, h) in halves.iter().enumerate() {
        for c in 0..6 {
            if c % 2 == i {
                std::fs::rename(input.join(format!("copy{c}")), h.join(format!("copy{c}")))
                    .or_else(|_| {
                        std::fs::create_dir_all(h).and_then(|_| {
                            std::fs::rename(
                                input.join(format!("copy{c}")),
                                h.join(format!("copy{c}")),
                            )
                        })
                    })
                    .unwrap();
            }
        }
    }
    let outs = [tmp.path().join("o0"), tmp.path().join("o1")];
    let children: Vec<Child> = (0..2)
        .map(|i| {
            worker(&halves[i], &outs[i], &cluster.map, &["-t", "2"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    cluster.servers[2].kill9();
    cluster.restart(2);
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // Which copy of a text is kept, and so which short paragraphs ride along with
    // it, depends on how the two workers interleave. What does not: every distinct
    // long paragraph is kept exactly once, as the embedded store keeps it over the
    // whole input. Paragraphs are read back with the tool's own planner, so "long"
    // and "the same" are the tool's.
    let all = tmp.path().join("all");
    std::fs::create_dir_all(&all).unwrap();
    for h in &halves {
        for e in std::fs::read_dir(h).unwrap() {
            let e = e.unwrap();
            std::fs::rename(e.path(), all.join(e.file_name())).unwrap();
        }
    }
    let want = tmp.path().join("want");
    let o = dedup(&all, &want, &["-t", "1", "--dd"]);
    assert!(o.status.success());
    let long_paragraph_keys = |dirs: &[&Path]| -> Vec<u64> {
        use webdedup_dedup::plan::{ChunkPlan, Planner};
        let mut planner = Planner::new(&webdedup_dedup::Options::default());
        let mut plan = ChunkPlan::default();
        let mut keys = Vec::new();
        for d in dirs {
            for (name, data) in outputs(d) {
                if name.ends_with(".dedup") {
                    let chunk = webdedup_formats::chunk::Chunk {
                        data,
                        first_line: 1,
                        last: true,
                        ..Default::default()
                    };
                    planner.plan(&chunk, &mut plan);
                    keys.extend(plan.paras.iter().filter(|p| p.long).map(|p| p.key));
                }
            }
        }
        keys.sort_unstable();
        keys
    };
    let remote = long_paragraph_keys(&[&outs[0], &outs[1]]);
    let wanted = long_paragraph_keys(&[&want]);
    assert!(
        remote.windows(2).all(|w| w[0] != w[1]),
        "a long paragraph was kept twice"
    );
    assert!(remote.len() > 1000, "{} long paragraphs", remote.len());
    assert!(
        remote == wanted,
        "the long paragraphs kept differ: {} against {}",
        remote.len(),
        wanted.len()
    );
}

fn status_ok(map: &Path) -> bool {
    Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(["status", "-m"])
        .arg(map)
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn migration_two_three_two_servers_loses_and_doubles_no_key() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let p = [free_port(), free_port(), free_port()];
    let map_a = d.join("map-a");
    let a = write_map(&map_a, &p[..2], |b| b % 2);
    // 1. Two servers, one worker over the first crawl.
    let only = |crawl: &str| {
        let dir = d.join(format!("in-{crawl}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            sample_dir().join(crawl).join("part-00000.vert.gz"),
            dir.join("part.vert.gz"),
        )
        .unwrap();
        dir
    };
    let mut s: Vec<Server> = p[..2]
        .iter()
        .map(|&port| Server::persistent(d, &map_a, port, &[]))
        .collect();
    let o = worker(&only("cc-2023-14"), &d.join("o1"), &map_a, &[])
        .output()
        .unwrap();
    ok(&o);
    s.iter_mut().for_each(Server::stop);
    let union = |ports: &[u16], map: &ServerMap| -> Vec<u64> {
        let mut all = Vec::new();
        for &port in ports {
            let path = snap_path(d, port);
            if !path.exists() {
                continue;
            }
            let keys = snapshot_keys(&path);
            let me = map.index_of(&addr(port));
            for &k in &keys {
                assert_eq!(
                    Some(map.owner_of_key(k)),
                    me,
                    "key {k:#x} saved by {port}, which does not own its block"
                );
            }
            all.extend(keys);
        }
        all.sort_unstable();
        all
    };
    let u1 = union(&p[..2], &a);
    assert!(u1.len() > 1000);

    // 2. Three servers: the third takes over a third of the blocks; a worker
    //    started at once waits for the migration, then runs on the new map.
    let map_b = d.join("map-b");
    let b = write_map(&map_b, &p, |b| b % 3);
    let from_a = ["--from-map", map_a.to_str().unwrap()];
    let mut s: Vec<Server> = p
        .iter()
        .map(|&port| Server::persistent(d, &map_b, port, &from_a))
        .collect();
    let o = worker(&only("cc-2023-50"), &d.join("o2"), &map_b, &[])
        .output()
        .unwrap();
    ok(&o);
    assert!(status_ok(&map_b));
    s.iter_mut().for_each(Server::stop);
    let u2 = union(&p, &b);
    assert!(
        u2.windows(2).all(|w| w[0] != w[1]),
        "a key saved by two servers"
    );
    assert!(
        u1.iter().all(|k| u2.binary_search(k).is_ok()),
        "keys lost in migration"
    );
    assert!(u2.len() > u1.len());
    assert!(
        snapshot_keys(&snap_path(d, p[2])).len() > 100,
        "the new server took nothing over"
    );

    // 3. Back to two: the third server hands everything over and exits.
    let map_c = d.join("map-c");
    let c = write_map(&map_c, &p[..2], |b| b % 2);
    let from_b = ["--from-map", map_b.to_str().unwrap()];
    let mut s: Vec<Server> = p[..2]
        .iter()
        .map(|&port| Server::persistent(d, &map_c, port, &from_b))
        .collect();
    let me = format!("127.0.0.1:{}", p[2]);
    let mut leaving = Server::persistent(d, &map_c, p[2], &[&from_b[..], &["--me", &me]].concat());
    leaving.wait_exit(Duration::from_secs(60));
    assert!(read(&leaving.log).contains("every block handed over"));
    let started = Instant::now();
    while !status_ok(&map_c) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "servers not ready after migration"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    s.iter_mut().for_each(Server::stop);
    let u3 = union(&p[..2], &c);
    assert!(
        u3 == u2,
        "the key sets differ after 3 -> 2: {} vs {}",
        u3.len(),
        u2.len()
    );
    assert!(
        snapshot_keys(&snap_path(d, p[2])).is_empty(),
        "the excluded server kept keys"
    );
}

#[test]
fn knot_one_hash_protocol_answers_ascii_digits_on_both_ports() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, port, knot, _) = knot_server(tmp.path());
    for p in [port, knot] {
        let mut c = TcpStream::connect(("127.0.0.1", p)).unwrap();
        let hash: u64 = 0x0123_4567_89ab_cdef ^ p as u64;
        let mut answer = [0u8; 1];
        c.write_all(&hash.to_be_bytes()).unwrap();
        c.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"0", "new");
        c.write_all(&hash.to_be_bytes()).unwrap();
        c.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"1", "seen");
        // Pipelined: three hashes in one write, three answers.
        let mut batch = Vec::new();
        for h in [hash, hash + 1, hash + 1] {
            batch.extend_from_slice(&h.to_be_bytes());
        }
        c.write_all(&batch).unwrap();
        let mut three = [0u8; 3];
        c.read_exact(&mut three).unwrap();
        assert_eq!(&three, b"101");
    }
}

#[test]
fn a_retried_request_gets_its_first_verdicts_even_after_a_server_crash() {
    let tmp = tempfile::tempdir().unwrap();
    // A worker's settings first (the server adopts them), then raw requests.
    let (port, map, mut s) = server_with_settings(tmp.path());
    let keys: Vec<u64> = (1..=100u64)
        .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let ask = |c: &mut TcpStream, id: Option<(u64, u64)>| ask_keys(c, id, true, &keys);
    let mut c = handshake(port);
    assert!(ask(&mut c, Some((42, 1))).iter().all(|&v| !v), "new keys");
    assert!(
        ask(&mut c, Some((42, 1))).iter().all(|&v| !v),
        "a retry is answered as the first attempt"
    );
    assert!(
        ask(&mut c, Some((42, 2))).iter().all(|&v| v),
        "another request sees them"
    );
    s.kill9();
    let _s = Server::persistent(tmp.path(), &map, port, &[]);
    let mut c = handshake(port);
    assert!(
        ask(&mut c, Some((42, 1))).iter().all(|&v| !v),
        "retry records survive kill -9"
    );
    assert!(
        ask(&mut c, None).iter().all(|&v| v),
        "the keys survive kill -9"
    );
}

#[test]
fn a_retried_test_gets_its_first_verdicts_after_its_keys_were_inserted() {
    use webdedup_net::wire;
    use webdedup_store::Location;
    let tmp = tempfile::tempdir().unwrap();
    let (port, map, mut s) = server_with_settings(tmp.path());
    // Near mode's two rounds: a test of a chunk's n-grams, then an insert of the
    // kept ones; a retried chunk (restore) redoes both.
    let keys: Vec<u64> = (1..=100u64)
        .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555)
        .collect();
    let bits = |bitmap: &[u8]| -> Vec<bool> { (0..100).map(|i| wire::bit(bitmap, i)).collect() };
    let ask =
        |c: &mut TcpStream, id: Option<(u64, u64)>, insert: bool| ask_keys(c, id, insert, &keys);
    let located = |c: &mut TcpStream, id: Option<(u64, u64)>, insert: bool| -> Vec<bool> {
        let mut out = Vec::new();
        let keys: Vec<u64> = keys.iter().map(|k| k ^ 0xaaaa_0000).collect();
        let msg = if insert {
            let locs = vec![Location { file: 9, record: 1 }; keys.len()];
            Msg::TestAndInsertLocated {
                req: 8,
                id,
                keys,
                locs,
            }
        } else {
            Msg::TestLocated { req: 8, id, keys }
        };
        wire::encode(&msg, &mut out);
        c.write_all(&out).unwrap();
        match recv(c) {
            Msg::LocatedVerdicts {
                req: 8,
                n: 100,
                bitmap,
                ..
            } => bits(&bitmap),
            other => panic!("{other:?}"),
        }
    };
    let mut c = handshake(port);
    assert!(ask(&mut c, Some((42, 3)), false).iter().all(|&v| !v));
    assert!(ask(&mut c, Some((42, 4)), true).iter().all(|&v| !v));
    assert!(located(&mut c, Some((43, 3)), false).iter().all(|&v| !v));
    assert!(located(&mut c, Some((43, 4)), true).iter().all(|&v| !v));
    assert!(
        ask(&mut c, Some((42, 3)), false).iter().all(|&v| !v),
        "a retried test is answered as its first attempt"
    );
    assert!(
        located(&mut c, Some((43, 3)), false).iter().all(|&v| !v),
        "a retried located test is answered as its first attempt"
    );
    assert!(ask(&mut c, None, false).iter().all(|&v| v), "keys inserted");
    s.kill9();
    let _s = Server::persistent(tmp.path(), &map, port, &[]);
    let mut c = handshake(port);
    assert!(
        ask(&mut c, Some((42, 3)), false).iter().all(|&v| !v),
        "a test's retry record survives kill -9"
    );
    assert!(
        located(&mut c, Some((43, 3)), false).iter().all(|&v| !v),
        "a located test's retry record survives kill -9"
    );
    assert!(located(&mut c, None, false).iter().all(|&v| v), "keys kept");
}

#[test]
fn hostile_clients_are_dropped_and_everyone_else_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let metrics = free_port();
    let token = token_file(tmp.path());
    let s = Server::start(
        tmp.path(),
        &map,
        port,
        &[
            "--auth-token-file",
            s(&token),
            "--max-frame",
            "4096",
            "--metrics",
            &format!("127.0.0.1:{metrics}"),
        ],
    );
    // Garbage instead of a preamble (and no KNOT on an authenticated server).
    let mut g = TcpStream::connect(("127.0.0.1", port)).unwrap();
    g.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    let _ = g.read_to_end(&mut buf);
    // A preamble, then a frame far over the limit.
    let mut g = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut out = webdedup_net::wire::PREAMBLE.to_vec();
    out.extend_from_slice(&u32::MAX.to_le_bytes());
    g.write_all(&out).unwrap();
    let _ = g.read_to_end(&mut buf);
    // Random bytes after the preamble.
    for seed in 0..20u64 {
        let mut g = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut out = webdedup_net::wire::PREAMBLE.to_vec();
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push(x as u8);
        }
        let _ = g.write_all(&out);
        let _ = g.read_to_end(&mut buf);
    }
    // Without the token, and with a wrong one: clear errors.
    let o = worker(&sample_dir(), &tmp.path().join("a"), &map, &[])
        .output()
        .unwrap();
    assert_fails_saying(&o, 2, "requires authentication");
    let wrong = tmp.path().join("wrong");
    std::fs::write(&wrong, "not-the-right-token-at-all\n").unwrap();
    let o = worker(
        &sample_dir(),
        &tmp.path().join("b"),
        &map,
        &["--auth-token-file", wrong.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_fails_saying(&o, 2, "authentication failed");
    // The right token: served, as if nothing had happened.
    let o = worker(
        &sample_dir(),
        &tmp.path().join("c"),
        &map,
        &["--auth-token-file", token.to_str().unwrap()],
    )
    .output()
    .unwrap();
    ok(&o);
    let log = read(&s.log);
    assert!(log.contains("disconnected"), "{log}");
    // Prometheus metrics count what happened.
    let mut m = TcpStream::connect(("127.0.0.1", metrics)).unwrap();
    m.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    m.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.0 200"), "{text}");
    let value = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(value("webdedup_bad_frames_total") >= 22.0, "{text}");
    assert!(value("webdedup_auth_failures_total") >= 1.0);
    assert!(value("webdedup_keys") > 1000.0);
    assert!(text.contains("webdedup_state{state=\"ready\"} 1"));
}

#[test]
fn listening_beyond_loopback_needs_a_token_and_status_reports_a_dead_server() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let o = webdedup(&[
        "server",
        "-m",
        map.to_str().unwrap(),
        "--listen",
        &format!("0.0.0.0:{port}"),
    ]);
    assert_fails_saying(&o, 2, "--auth-token-file");
    // Nobody listening: status says stopped and exits non-zero.
    let o = webdedup(&["status", "-m", map.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("stopped"), "{out}");
    // A worker gives up on it with an error naming it.
    let o = worker(
        &sample_dir(),
        &tmp.path().join("o"),
        &map,
        &["--server-timeout", "1"],
    )
    .output()
    .unwrap();
    assert_fails_saying(&o, 2, &format!("127.0.0.1:{port}"));
    // Unfinished and missing outputs are reported with the run's directories.
    let o = webdedup(&[
        "status",
        "-i",
        sample_dir().to_str().unwrap(),
        "-o",
        tmp.path().join("o").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("3 missing (100.0%)"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn distribute_writes_maps_servers_use_and_prints_the_seeds_report() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ports: Vec<u16> = (0..10).map(|_| free_port()).collect();
    let list = |n: usize| {
        ports[..n]
            .iter()
            .map(|p| format!("127.0.0.1:{p}\n"))
            .collect::<String>()
    };
    std::fs::write(d.join("two"), list(2)).unwrap();
    std::fs::write(d.join("ten"), list(10)).unwrap();
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let o = webdedup(&["distribute", "-s", &p("two"), "-o", &p("m2")]);
    ok(&o);
    let o = webdedup(&[
        "distribute",
        "-f",
        "-i",
        &p("m2"),
        "-s",
        &p("ten"),
        "-o",
        &p("m10"),
    ]);
    assert_eq!(
        stderr(&o),
        "Servers: 2 -> 10\nBlocks to be redistributed: 1599 (79.99%)\nAverage aberrancy: 0 blocks(0.0450225%)\nMax. aberrancy: 1 block(0.050025%)\n"
    );
    // The KNOT layout (one port for all servers) reads back as the same map.
    let hosts: String = (1..=10).map(|i| format!("127.0.0.{i}:1234\n")).collect();
    std::fs::write(d.join("hosts"), hosts).unwrap();
    let o = webdedup(&["distribute", "-s", &p("hosts"), "-o", &p("h10")]);
    ok(&o);
    let o = webdedup(&[
        "distribute",
        "-i",
        &p("h10"),
        "--knot",
        "-o",
        &p("h10.knot"),
    ]);
    ok(&o);
    let knot = ServerMap::read(&d.join("h10.knot")).unwrap();
    assert_eq!(knot.owner, ServerMap::read(&d.join("h10")).unwrap().owner);
    // The block count is fixed once used.
    let o = webdedup(&["distribute", "-i", &p("m2"), "-b", "7"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("fixed once used"));
    // A worker routes by a distributed map.
    let _servers: Vec<Server> = ports[..2]
        .iter()
        .map(|&port| Server::start(d, &d.join("m2"), port, &[]))
        .collect();
    let o = worker(&sample_dir(), &d.join("out"), &d.join("m2"), &[])
        .output()
        .unwrap();
    ok(&o);
}

#[test]
fn feedback_on_servers_equals_the_embedded_stores_and_check_confirms_it() {
    // The servers keep locations beside keys from the first located request on,
    // with no option: `dedup -f -s` gives the embedded store's `.dropped` files.
    for near in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let cluster = Cluster::start(tmp.path(), 3);
        let extra: &[&str] = if near {
            &["-t", "1", "-f", "--near"]
        } else {
            &["-t", "1", "-f"]
        };
        let want = tmp.path().join("embedded");
        ok(&dedup(&sample_dir(), &want, &[&["--dd"], extra].concat()));
        let out = tmp.path().join("remote");
        ok(&cluster.run_worker(&sample_dir(), &out, extra));
        let got = outputs(&out);
        assert!(
            got.iter()
                .any(|(n, b)| n.ends_with(".dropped") && b.windows(3).any(|w| w == b"<t>")),
            "no references written"
        );
        assert!(
            got == outputs(&want),
            "near={near}: remote feedback outputs differ from the embedded store's"
        );
        let report = check_report(&sample_dir(), &out, near);
        assert_eq!(
            report["mismatches"].as_array().unwrap().len(),
            0,
            "{report}"
        );
        assert_eq!(report["unknown_original"], 0, "{report}");
        assert!(report["references"].as_u64().unwrap() > 1000, "{report}");
    }
}

#[test]
fn feedback_survives_a_server_killed_mid_run() {
    // Locations are journaled with their keys: after a kill -9 and a restart
    // from the journal, the server names the same originals, so even the
    // `.dropped` references are an uninterrupted run's.
    let tmp = tempfile::tempdir().unwrap();
    let input = big_input(tmp.path(), 8);
    let want = tmp.path().join("want");
    let o = dedup(&input, &want, &["--dd", "-t", "1", "-f"]);
    assert!(o.status.success());
    let out = tmp.path().join("out");
    worker_through_a_server_crash(tmp.path(), &input, &out, &["-t", "1", "-f"]);
    assert!(
        outputs(&out) == outputs(&want),
        "outputs differ from an uninterrupted run's"
    );
    let report = check_report(&input, &out, false);
    assert_eq!(report["unknown_original"], 0, "{report}");
    assert_eq!(
        report["mismatches"].as_array().unwrap().len(),
        0,
        "{report}"
    );
    let known = report["confirmed"].as_u64().unwrap();
    assert!(known > 1000, "{report}");
}

#[test]
fn a_client_of_another_protocol_version_is_told_why() {
    use webdedup_net::wire::{self, ErrorCode};
    let tmp = tempfile::tempdir().unwrap();
    let (port, map) = one_server_map(tmp.path());
    let _s = Server::start(tmp.path(), &map, port, &[]);
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(&hello(wire::VERSION - 1, 1)).unwrap();
    match recv(&mut s) {
        Msg::Error { code, message, .. } => {
            assert_eq!(code, ErrorCode::Version);
            assert!(
                message.contains(&format!("protocol version {}", wire::VERSION - 1)),
                "{message}"
            );
        }
        other => panic!("expected a version error, got {other:?}"),
    }
}
