//! One store identity (issue 27): every store kind (a store directory, Redis, the
//! hash servers) records the settings that give its keys their meaning, and a run
//! with other settings is refused the same way: exit status 2 and one message,
//! `SETTING 'STORED' in the store, 'THIS' in this run`, whatever the store.
//!
//! Real parts only: `redis-server` on loopback (as `redis.rs`), `webdedup server`
//! processes (as `servers.rs`).

mod common;
mod server_procs;

use common::redis_server::{cli, Node};
use common::*;
use server_procs::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A small vertical input: a few documents with long paragraphs (made here, so
/// the test does not depend on the samples' contents).
fn input(dir: &Path) -> PathBuf {
    let d = dir.join("in");
    std::fs::create_dir_all(&d).unwrap();
    let mut text = String::new();
    for doc in 0..6 {
        text += &format!("<doc id=\"{doc}\" url=\"http://example.org/{doc}\" title=\"t{doc}\">\n");
        for p in 0..4 {
            text += "<p>\n";
            for w in 0..40 {
                text += &format!("word{} w{}\n", (doc * 7 + p * 3 + w) % 50, w % 9);
            }
            text += "</p>\n";
        }
        text += "</doc>\n";
    }
    std::fs::write(d.join("a.vert"), text).unwrap();
    d
}

/// A pair of incompatible settings: the first run's flags, the second run's, and
/// what the refusal must say.
struct Pair {
    name: &'static str,
    /// `dedup` or `minhash`, and the flags.
    first: (&'static str, &'static [&'static str]),
    second: (&'static str, &'static [&'static str]),
    says: &'static str,
}

const PAIRS: &[Pair] = &[
    Pair {
        name: "onion rules, then webdedup's",
        first: ("dedup", &["-n", "--near-rules", "onion"]),
        second: ("dedup", &["-n"]),
        says: "normalization 'onion' in the store, 'loose' in this run",
    },
    // The other way round: the store's keys are webdedup's n-grams of normalized
    // words, the run's would be onion's token lines as written.
    Pair {
        name: "webdedup's rules, then onion's",
        first: ("dedup", &["-n"]),
        second: ("dedup", &["-n", "--near-rules", "onion"]),
        says: "normalization 'loose' in the store, 'onion' in this run",
    },
    Pair {
        name: "normalization loose, then none",
        first: ("dedup", &[]),
        second: ("dedup", &["--normalize", "none"]),
        says: "normalization 'loose' in the store, 'none' in this run",
    },
    Pair {
        name: "n-gram size 5, then 7",
        first: ("dedup", &["-n", "--ngram", "5"]),
        second: ("dedup", &["-n"]),
        says: "n-gram size '5' in the store, '7' in this run",
    },
    Pair {
        name: "exact keys, then MinHash bands",
        first: ("dedup", &[]),
        second: ("minhash", &[]),
        says: "key kind 'vertical-v1",
    },
    Pair {
        name: "1999 blocks, then 101",
        first: ("dedup", &["--blocks", "1999"]),
        second: ("dedup", &["--blocks", "101"]),
        says: "block count '1999' in the store, '101' in this run",
    },
];

fn run(
    cmd: &str,
    input: &Path,
    out: &Path,
    store: &[&str],
    flags: &[&str],
) -> std::process::Output {
    webdedup(&command_args(cmd, input, out, &[store, flags].concat()))
}

/// Runs every pair on fresh stores of one kind (`store(i)` gives the store flags
/// of pair `i`) and returns, per pair, the refusal's text after the setting's
/// name (the part every store kind must share).
fn refusals(tmp: &Path, kind: &str, skip: &[&str], store: impl Fn(usize) -> Vec<String>) {
    let input = input(tmp);
    for (i, pair) in PAIRS.iter().enumerate() {
        if skip.contains(&pair.name) {
            continue;
        }
        let flags = store(i);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let out = tmp.join(format!("{kind}-{i}-a"));
        let o = run(pair.first.0, &input, &out, &flags, pair.first.1);
        assert!(
            o.status.success(),
            "{kind}, {}: the first run failed: {}",
            pair.name,
            stderr(&o)
        );
        let out = tmp.join(format!("{kind}-{i}-b"));
        let o = run(pair.second.0, &input, &out, &flags, pair.second.1);
        let err = stderr(&o);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{kind}, {}: the second run was not refused: {err}",
            pair.name
        );
        assert!(
            err.starts_with("webdedup: error: ") && err.lines().count() == 1,
            "{kind}, {}: not one error line: {err}",
            pair.name
        );
        assert!(
            err.contains("holds keys made with other settings: ") && err.contains(pair.says),
            "{kind}, {}: the refusal does not say \"{}\": {err}",
            pair.name,
            pair.says
        );
    }
}

#[test]
fn a_store_directory_refuses_other_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_owned();
    refusals(tmp.path(), "dir", &[], |i| {
        vec![
            "--store".into(),
            root.join(format!("store-{i}")).display().to_string(),
        ]
    });
}

#[test]
fn a_redis_key_set_refuses_other_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let redis = Node::start(false);
    // Each pair starts on an empty database. MinHash is not run on Redis at all
    // (it needs first-seen locations, which Redis does not keep).
    let url = redis.url();
    refusals(
        tmp.path(),
        "redis",
        &["exact keys, then MinHash bands"],
        |_| {
            cli(redis.port, &["FLUSHALL"]);
            vec!["--store".into(), url.clone()]
        },
    );
    // What the key set records is the run's identity: onion's rules and the
    // n-gram size too, not only the normalization flag.
    cli(redis.port, &["FLUSHALL"]);
    let o = run(
        "dedup",
        &input(tmp.path()),
        &tmp.path().join("recorded"),
        &["--store", &url],
        &["-n", "--near-rules", "onion", "--ngram", "5"],
    );
    ok(&o);
    let settings = cli(redis.port, &["HGETALL", "wd:settings"]);
    assert!(
        settings.contains("onion") && settings.contains("n-gram size=5"),
        "{settings}"
    );
}

#[test]
fn hash_servers_refuse_other_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_owned();
    // A fresh pair of servers (and map) per pair of settings.
    let servers = std::cell::RefCell::new(Vec::new());
    refusals(tmp.path(), "servers", &[], |i| {
        let dir = root.join(format!("servers-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let ports = [free_port(), free_port()];
        let map = dir.join("map");
        write_map(&map, &ports, |b| b % 2);
        for &p in &ports {
            servers
                .borrow_mut()
                .push(Server::persistent(&dir, &map, p, &[]));
        }
        vec!["-s".into(), map.display().to_string()]
    });
}

/// Batch mode's work folder records its settings and refuses others the same way
/// (normalization, block count: the pairs batch mode has; it is exact mode only).
#[test]
fn a_batch_work_folder_refuses_other_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let input = input(tmp.path());
    for (i, (first, second, says)) in [
        (
            &["--normalize", "loose"][..],
            &["--normalize", "none"][..],
            "normalization 'loose' in the store, 'none' in this run",
        ),
        (
            &["--blocks", "1999"][..],
            &["--blocks", "101"][..],
            "blocks '1999' in the store, '101' in this run",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let work = tmp.path().join(format!("work-{i}"));
        let hash = |flags: &[&str]| {
            Command::new(env!("CARGO_BIN_EXE_webdedup"))
                .args(["batch", "hash", "-i"])
                .arg(&input)
                .arg("-w")
                .arg(&work)
                .args(["--task-count", "1", "--task-index", "0"])
                .args(flags)
                .output()
                .unwrap()
        };
        let o = hash(first);
        ok(&o);
        let o = hash(second);
        assert_fails_saying(&o, 2, "holds keys made with other settings: ");
        assert_says(&o, says);
    }
}

/// A Redis key set made before the block count was recorded (it never changed
/// Redis's keys) is used as it is and gets this run's count recorded; from then
/// on another count is refused like any other setting.
#[test]
fn a_redis_key_set_without_a_recorded_block_count_adopts_the_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let redis = Node::start(false);
    let url = redis.url();
    let input = input(tmp.path());
    let store = ["--store", url.as_str()];
    let o = run("dedup", &input, &tmp.path().join("a"), &store, &[]);
    ok(&o);
    cli(redis.port, &["HDEL", "wd:settings", "blocks"]);
    let o = run(
        "dedup",
        &input,
        &tmp.path().join("b"),
        &store,
        &["--blocks", "101"],
    );
    ok(&o);
    assert_eq!(
        cli(redis.port, &["HGET", "wd:settings", "blocks"]).trim(),
        "101"
    );
    let o = run("dedup", &input, &tmp.path().join("c"), &store, &[]);
    assert_fails_saying(&o, 2, "block count '101' in the store, '1999' in this run");
}
