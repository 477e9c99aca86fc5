//! `webdedup minhash -s MAP` across hash server restarts and across workers, with
//! real server processes on loopback: a server killed (fault injection, like
//! kill -9) and restarted from its journal, stopped (as by SIGTERM) and restarted
//! from its snapshot, or killed and left down until the worker gives up and is
//! restored with `-r`, changes no decision; a server that comes back without its
//! keys stops the worker (exit 2); several workers on one set of servers decide as
//! one worker where no verification is asked, and count every unverified drop.

mod common;
mod server_procs;

use common::*;
use server_procs::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// JSON Lines files with many near-duplicates within and across files, and short
/// documents whose band keys also meet by chance (so verification matters: a
/// match whose original's signature is lost is a different decision).
fn corpus(dir: &Path, files: usize, docs: usize) -> PathBuf {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let word = |n: u64| format!("w{}", n % 4000);
    let bases: Vec<Vec<String>> = (0..150)
        .map(|_| {
            let len = 60 + next() % 120;
            (0..len).map(|_| word(next())).collect()
        })
        .collect();
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut id = 0;
    for f in 0..files {
        let mut text = String::new();
        for _ in 0..docs {
            id += 1;
            let words: Vec<String> = if next() % 10 < 4 {
                let base = &bases[(next() % bases.len() as u64) as usize];
                let rate = [0, 1, 3, 6, 10][(next() % 5) as usize];
                base.iter()
                    .map(|w| {
                        if next() % 100 < rate {
                            word(next())
                        } else {
                            w.clone()
                        }
                    })
                    .collect()
            } else {
                let len = 60 + next() % 120;
                (0..len).map(|_| word(next())).collect()
            };
            text.push_str(&format!(
                "{{\"id\":\"d{id}\",\"text\":\"{}\"}}\n",
                words.join(" ")
            ));
        }
        std::fs::write(input.join(format!("part-{f}.jsonl")), text).unwrap();
    }
    input
}

fn run_args<'a>(input: &'a Path, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = command_args(
        "minhash",
        input,
        out,
        &["--dd", "--chunk-bytes", "20000", "-t", "2"],
    );
    a.extend_from_slice(extra);
    a
}

fn spawn_worker(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn assert_same(what: &str, got: &Path, want: &Path) {
    assert_same_files(
        &format!("{what}, against an uninterrupted run"),
        &outputs(got),
        &outputs(want),
    );
}

/// Pairs lines whose Jaccard is `-` (unverified).
fn unverified_lines(out: &Path) -> u64 {
    tree(out)
        .iter()
        .filter(|(n, _)| n.ends_with(".pairs"))
        .flat_map(|(_, b)| {
            String::from_utf8(b.clone())
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|l| l.ends_with("\t-"))
        .count() as u64
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
    input: PathBuf,
    reference: PathBuf,
    map: PathBuf,
    ports: Vec<u16>,
}

/// A corpus, an uninterrupted run's outputs (embedded store: the same bytes as
/// on servers) and a block map over two loopback ports.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 4, 400);
    let reference = dir.path().join("ref");
    let o = webdedup(&run_args(&input, &reference, &[]));
    ok(&o);
    assert_eq!(unverified_lines(&reference), 0);
    let (ports, map) = spread_map(dir.path(), 2);
    Setup {
        dir,
        input,
        reference,
        map,
        ports,
    }
}

impl Setup {
    /// A worker's arguments ([`run_args`]) on the servers of the map.
    fn on_servers<'a>(&'a self, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
        run_args(&self.input, out, &[&["-s", s(&self.map)], extra].concat())
    }

    /// Server `i`, persistent (its snapshot and journal in the test's folder),
    /// with the fault point `fault` armed if given.
    fn server(&self, i: usize, fault: Option<&str>) -> Server {
        let (d, port) = (self.dir.path(), self.ports[i]);
        match fault {
            Some(f) => Server::persistent_with_fault(d, &self.map, port, f),
            None => Server::persistent(d, &self.map, port, &[]),
        }
    }
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

/// A server killed mid-run (it aborts at its 6th journal record, as kill -9
/// would) and restarted from its journal: the worker retries, and every output,
/// pairs report included, is an uninterrupted run's.
#[test]
fn a_server_killed_mid_run_and_restarted_from_its_journal_changes_no_decision() {
    let s = setup();
    let d = s.dir.path();
    let mut servers = [s.server(0, None), s.server(1, Some("journal-record:6"))];
    let out = d.join("out");
    let json_path = d.join("figures.json");
    let worker = spawn_worker(&s.on_servers(&out, &["--json", json_path.to_str().unwrap()]));
    assert!(!servers[1].wait_end(), "the server was to abort");
    assert!(read(&servers[1].log).contains("fault injection: abort at journal-record"));
    servers[1] = s.server(1, None);
    let o = finish(worker);
    ok(&o);
    assert!(
        read(&servers[1].log).contains("replayed the journal"),
        "{}",
        read(&servers[1].log)
    );
    assert_same("server killed and restarted", &out, &s.reference);
    assert_eq!(json(&json_path)["documents_dropped_unverified"], 0);
}

/// A server stopped mid-run as by SIGTERM (it drains and saves its snapshot, its
/// retry records and its first-seen locations) and restarted from them.
#[test]
fn a_server_stopped_mid_run_and_restarted_from_its_snapshot_changes_no_decision() {
    let s = setup();
    let d = s.dir.path();
    let mut servers = [s.server(0, None), s.server(1, Some("server-stop:8"))];
    let out = d.join("out");
    let worker = spawn_worker(&s.on_servers(&out, &[]));
    assert!(servers[1].wait_end(), "{}", read(&servers[1].log));
    assert!(
        Path::new(&format!("{}.locations", snap_path(d, s.ports[1]).display())).exists(),
        "the locations are saved beside the snapshot"
    );
    servers[1] = s.server(1, None);
    let o = finish(worker);
    ok(&o);
    assert!(!read(&servers[1].log).contains("replayed the journal"));
    assert_same("server stopped and restarted", &out, &s.reference);
}

/// A server killed and left down: the worker gives up (exit 2, saying so); with
/// the server back from its journal, `-r` finishes with an uninterrupted run's
/// bytes (the keys the first attempt inserted name its own documents, which the
/// restored run keeps again).
#[test]
fn a_server_killed_and_not_restarted_then_restore_changes_no_decision() {
    let s = setup();
    let d = s.dir.path();
    let mut servers = [s.server(0, Some("journal-record:10")), s.server(1, None)];
    let out = d.join("out");
    let mut args = s.on_servers(&out, &["--server-timeout", "2"]);
    let o = finish(spawn_worker(&args));
    assert_fails_saying(&o, 2, "webdedup: error:");
    assert!(!servers[0].wait_end());
    servers[0] = s.server(0, None);
    args.push("-r");
    let o = webdedup(&args);
    ok(&o);
    assert_same("server down, then -r", &out, &s.reference);
}

/// A server that comes back without its keys (no snapshot, no journal: a new
/// key set) is noticed: the worker stops with exit 2 and says what to do,
/// instead of going on with decisions the lost keys would have changed; so does
/// a later `-r` of that run.
#[test]
fn a_server_back_without_its_keys_stops_the_worker() {
    let s = setup();
    let d = s.dir.path();
    let mut servers = [
        Server::start(d, &s.map, s.ports[0], &[]),
        Server::start_env(
            d,
            &s.map,
            s.ports[1],
            &[],
            &[("WEBDEDUP_FAULT", "server-stop:8")],
        ),
    ];
    let out = d.join("out");
    let worker = spawn_worker(&s.on_servers(&out, &[]));
    assert!(servers[1].wait_end());
    servers[1] = Server::start(d, &s.map, s.ports[1], &[]);
    let o = finish(worker);
    assert_fails_saying(&o, 2, "came back without the keys it had acknowledged");
    assert_says(&o, "--restore");
    // A restore is refused too: the run id file names the key sets it began on.
    let o = webdedup(&s.on_servers(&out, &["-r"]));
    assert_fails_saying(&o, 2, "serves another key set than when the run began");
}

/// Two workers on one set of servers, one after the other over two halves of
/// the input, against one worker over the whole input in the same order:
/// without verification (`--verify 0`) every decision is the same (`.dedup` and
/// `.dd` bytes); with it, the second worker drops a match with the first
/// worker's document unverified, and says how many.
#[test]
fn two_workers_decide_as_one_without_verification_and_count_unverified_drops() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = corpus(d, 4, 300);
    // One worker over a/ and b/ (sorted: a first), two workers over each.
    for (half, files) in [("a", [0, 1]), ("b", [2, 3])] {
        std::fs::create_dir_all(input.join(half)).unwrap();
        for f in files {
            let name = format!("part-{f}.jsonl");
            std::fs::rename(input.join(&name), input.join(half).join(&name)).unwrap();
        }
    }
    for (verify, tag) in [("0", "lsh"), ("0.8", "verified")] {
        let mut cluster = Cluster::start(d, 2);
        let one = d.join(format!("one-{tag}"));
        let o = webdedup(&run_args(&input, &one, &["--verify", verify]));
        ok(&o);
        let mut figures = Vec::new();
        for half in ["a", "b"] {
            let out = d.join(format!("{half}-{tag}"));
            let o = webdedup(&run_args(
                &input.join(half),
                &out,
                &["--verify", verify, "-s", cluster.map_arg(), "--json", "-"],
            ));
            ok(&o);
            figures.push(serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap());
        }
        cluster.stop();
        let file = |dir: &str, rel: &str| std::fs::read(d.join(dir).join(rel)).unwrap();
        let mut differ = 0;
        for (half, f) in [("a", 0), ("a", 1), ("b", 2), ("b", 3)] {
            for ext in ["dedup.jsonl", "dedup.dd"] {
                let rel = format!("part-{f}.{ext}");
                let same = file(&format!("one-{tag}"), &format!("{half}/{rel}"))
                    == file(&format!("{half}-{tag}"), &rel);
                if verify == "0" || half == "a" {
                    assert!(same, "{tag}: {half}/{rel} differs from one worker's");
                }
                differ += !same as u32;
            }
        }
        let b = d.join(format!("b-{tag}"));
        if verify == "0" {
            assert!(figures[1].get("documents_dropped_unverified").is_none());
        } else {
            // The first worker knows every original it meets; the second does
            // not know the first's, and says how many it dropped unverified.
            assert_eq!(figures[0]["documents_dropped_unverified"], 0);
            let unverified = figures[1]["documents_dropped_unverified"].as_u64().unwrap();
            assert!(unverified > 0, "{}", figures[1]);
            assert_eq!(unverified, unverified_lines(&b));
            assert!(differ > 0, "verification is what differs");
        }
    }
}
