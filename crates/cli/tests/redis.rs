//! The Redis / Valkey store against real `redis-server` processes on loopback: one
//! node, and a 3-master Cluster built with `redis-cli --cluster create`.
//! (`scripts/deps.sh` installs Debian's redis-server; the tests fail, they do not
//! skip, when it is missing.)

mod common;
use common::redis_server::{cli, Node};
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Cluster {
    nodes: Vec<Node>,
}

impl Cluster {
    fn start() -> Cluster {
        let nodes: Vec<Node> = (0..3).map(|_| Node::start(true)).collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let o = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        let start = Instant::now();
        while !nodes
            .iter()
            .all(|n| cli(n.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
        {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "cluster did not become ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Cluster { nodes }
    }

    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis://{}", hosts.join(","))
    }
}

/// Output files without the run's salt file.
fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(name, _)| !name.ends_with(".webdedup.run-id"))
        .collect()
}

fn embedded(tmp: &Path, extra: &[&str]) -> Vec<(String, Vec<u8>)> {
    let out = tmp.join(format!("embedded{}", extra.join("")));
    let mut args = vec!["--dd", "-t", "1"];
    args.extend_from_slice(extra);
    let o = dedup(&sample_dir(), &out, &args);
    ok(&o);
    outputs(&out)
}

fn on_store(url: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--dd", "--store", url, "--capacity", "100000"];
    args.extend_from_slice(extra);
    dedup(&sample_dir(), out, &args)
}

#[test]
fn single_node_outputs_equal_the_embedded_store_in_exact_and_near_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    for (i, extra) in [&["-t", "2"][..], &["-t", "1", "-n"][..]]
        .iter()
        .enumerate()
    {
        cli(node.port, &["FLUSHALL"]);
        let out = tmp.path().join(format!("redis{i}"));
        let o = on_store(&node.url(), &out, extra);
        ok(&o);
        let want_extra: Vec<&str> = extra.iter().filter(|a| **a == "-n").copied().collect();
        assert!(
            outputs(&out) == embedded(tmp.path(), &want_extra),
            "outputs differ ({extra:?})"
        );
    }
    // The layout: buckets are intsets, the settings are recorded.
    let settings = cli(node.port, &["HGET", "wd:settings", "layout"]);
    assert!(settings.starts_with("buckets-v1 bits="), "{settings}");
    let some_bucket = cli(node.port, &["--scan", "--pattern", "wd:{*}:[0-9a-f]*"]);
    let bucket = some_bucket
        .lines()
        .find(|k| !k.contains(":r:"))
        .expect("a bucket");
    assert_eq!(
        cli(node.port, &["OBJECT", "ENCODING", bucket]).trim(),
        "intset"
    );
}

#[test]
fn cluster_outputs_equal_the_embedded_store() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster::start();
    let out = tmp.path().join("cluster");
    let o = on_store(&cluster.url(), &out, &["-t", "2"]);
    ok(&o);
    assert!(outputs(&out) == embedded(tmp.path(), &[]), "outputs differ");
    // Every master holds some buckets.
    for n in &cluster.nodes {
        let keys: u64 = cli(n.port, &["DBSIZE"]).trim().parse().unwrap();
        assert!(keys > 0, "node {} holds nothing", n.port);
    }
}

#[test]
fn a_restored_run_is_answered_from_its_retry_records_not_its_own_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let out = tmp.path().join("out");
    let o = on_store(&node.url(), &out, &["-t", "1"]);
    ok(&o);
    let want = outputs(&out);
    // As if the run died before finishing its last output: the keys of that file
    // are in Redis already. --restore redoes it with the same salt.
    let last = out.join("cc-2024-33/part-00000.vert.dedup");
    std::fs::remove_file(&last).unwrap();
    let o = on_store(&node.url(), &out, &["-t", "1", "--restore"]);
    ok(&o);
    assert!(outputs(&out) == want, "the restored output differs");
    // A fresh run (new salt) into another directory sees everything as seen.
    let again = tmp.path().join("again");
    let o = on_store(&node.url(), &again, &["-t", "1"]);
    ok(&o);
    assert!(read(again.join("cc-2024-33/part-00000.vert.dedup")).is_empty());
}

#[test]
fn a_restored_near_run_is_answered_from_its_retry_records_not_its_own_ngrams() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let out = tmp.path().join("out");
    let o = on_store(&node.url(), &out, &["-t", "1", "-n"]);
    ok(&o);
    let want = outputs(&out);
    // As if the run died after the insert round of its last file: that file's
    // n-grams are in Redis. Its test round, redone, must not find them.
    let last = out.join("cc-2024-33/part-00000.vert.dedup");
    assert!(!read(&last).is_empty(), "the last output keeps text");
    std::fs::remove_file(&last).unwrap();
    let o = on_store(&node.url(), &out, &["-t", "1", "-n", "--restore"]);
    ok(&o);
    assert!(outputs(&out) == want, "the restored output differs");
}

#[test]
fn other_settings_are_refused_and_a_dead_node_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let o = on_store(&node.url(), &tmp.path().join("a"), &[]);
    ok(&o);
    let o = on_store(&node.url(), &tmp.path().join("b"), &["--normalize", "none"]);
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "normalization 'loose' in the store, 'none' in this run");

    let url = node.url();
    drop(node);
    let o = on_store(&url, &tmp.path().join("c"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, &url);
    assert!(!tmp
        .path()
        .join("c/cc-2023-14/part-00000.vert.dedup")
        .exists());
}

#[test]
fn killing_a_cluster_node_mid_run_stops_with_an_error_never_wrong_output() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start();
    // Enough input for the run to last well past the kill.
    let input = big_input(tmp.path(), 6);
    let want_dir = tmp.path().join("want");
    let o = dedup(&input, &want_dir, &["-t", "1"]);
    assert!(o.status.success());
    let out = tmp.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(["dedup", "-q", "-t", "1", "--capacity", "100000", "-i"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .args(["--store", &cluster.url()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(cluster.nodes.remove(1));
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "expected a fatal store error: {err}"
    );
    assert!(err.contains("store"), "{err}");
    // Whatever was finished before the error is exactly what an uninterrupted run wrote.
    for (name, bytes) in outputs(&out) {
        if name.ends_with(".dedup") {
            let want = std::fs::read(want_dir.join(&name)).unwrap();
            assert!(bytes == want, "{name} differs");
        }
    }
}

#[test]
fn cdx_dups_on_redis_equals_the_embedded_store() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let mut cdx = String::from(" CDX N b a m s k r M S V g\n");
    for (d, k) in [
        ("20071001", "abc"),
        ("20071002", "abc"),
        ("20071003", "def"),
        ("20071004", "abc"),
        ("20071005", "def"),
    ] {
        cdx += &format!(
            "org,example)/ {d} http://example.org/ text/html 200 {k} - - 100 0 a.warc.gz\n"
        );
    }
    let f: PathBuf = tmp.path().join("a.cdx");
    std::fs::write(&f, cdx).unwrap();
    let mem = webdedup(&["cdx", "dups", f.to_str().unwrap()]);
    let red = webdedup(&["cdx", "dups", "--store", &node.url(), f.to_str().unwrap()]);
    assert!(
        mem.status.success() && red.status.success(),
        "{}",
        stderr(&red)
    );
    assert_eq!(String::from_utf8_lossy(&mem.stdout).lines().count(), 3);
    assert_eq!(mem.stdout, red.stdout);
    // The versions persist in Redis: a second run finds all five seen.
    let again = webdedup(&["cdx", "dups", "--store", &node.url(), f.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&again.stdout).lines().count(), 5);
}

/// Issue 19, the README's flow: after `dedup --store redis://X`, `cdx dups --store
/// redis://X` and `warc dedup --store redis://X` work on the same database. Their
/// key sets live in namespaces of their own (no settings the user never chose
/// clash, no keys mix), and each command finds its own keys again.
#[test]
fn dedup_cdx_and_warc_share_one_database_without_clashing() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let url = node.url();
    let o = dedup(&sample_dir(), &tmp.path().join("out"), &["--store", &url]);
    ok(&o);

    let mut cdx = String::new();
    for (d, k) in [
        ("20071001", "abc"),
        ("20071002", "abc"),
        ("20071003", "def"),
    ] {
        cdx += &format!(
            "org,example)/ {d} http://example.org/ text/html 200 {k} - - 100 0 a.warc.gz\n"
        );
    }
    let f = tmp.path().join("crawl-1.cdx");
    std::fs::write(&f, cdx).unwrap();
    let mem = webdedup(&["cdx", "dups", f.to_str().unwrap()]);
    let red = webdedup(&["cdx", "dups", "--store", &url, f.to_str().unwrap()]);
    ok(&red);
    assert_eq!(red.stdout, mem.stdout, "the dedup keys must not leak in");

    let body = "a page long enough that its revisit record is smaller ".repeat(20);
    let warc = tmp.path().join("in.warc");
    let mut bytes = warc_response("http://example.org/a", "2024-01-01T00:00:00Z", &body);
    bytes.extend(warc_response(
        "http://example.org/b",
        "2024-01-02T00:00:00Z",
        &body,
    ));
    std::fs::write(&warc, bytes).unwrap();
    let o = webdedup(&[
        "warc",
        "dedup",
        "--store",
        &url,
        "-i",
        warc.to_str().unwrap(),
        "-o",
        tmp.path().join("wout/").to_str().unwrap(),
        "--locations",
        tmp.path().join("firsts.tsv").to_str().unwrap(),
    ]);
    ok(&o);
    assert!(read(tmp.path().join("wout/in.warc")).contains("WARC-Type: revisit"));

    // The dedup key set is untouched: a second crawl run finds the first one's keys.
    let o = dedup(&sample_dir(), &tmp.path().join("again"), &["--store", &url]);
    ok(&o);
    assert!(read(tmp.path().join("again/cc-2024-33/part-00000.vert.dedup")).is_empty());
    // Two namespaces, each with its settings.
    assert!(cli(node.port, &["HGET", "wd:settings", "key_kind"]).starts_with("vertical"));
    assert!(cli(node.port, &["HGET", "wd:archive:settings", "key_kind"]).starts_with("url+digest"));
}

/// Issue 19: a database first used with `--capacity N` keeps its layout; a run that
/// does not name one adopts it, a run naming another is refused with a message that
/// names the flag.
#[test]
fn a_layout_is_adopted_unless_another_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let url = node.url();
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec!["--store", url.as_str()];
        args.extend_from_slice(extra);
        dedup(&sample_dir(), &tmp.path().join(name), &args)
    };
    let o = run("a", &["--capacity", "100000"]);
    ok(&o);
    let layout = cli(node.port, &["HGET", "wd:settings", "layout"]);
    let o = run("b", &[]);
    ok(&o);
    let o = run("c", &["--capacity", "100000"]);
    ok(&o);
    let o = run("d", &["--capacity", "500000000"]);
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "--capacity");
    assert_eq!(cli(node.port, &["HGET", "wd:settings", "layout"]), layout);
}

/// Issue 19: without `--capacity`, a small run does not pay for hundreds of
/// thousands of buckets (2^28 keys were assumed: a bucket of its own for almost
/// every key of the sample, about 75 bytes a key), and the user is told which
/// layout a new database got.
#[test]
fn a_small_run_without_capacity_costs_few_bytes_a_key() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let o = dedup(
        &sample_dir(),
        &tmp.path().join("out"),
        &["--store", &node.url()],
    );
    ok(&o);
    assert_says(&o, "laid out for about 1,048,576 keys");
    let json = tmp.path().join("stats.json");
    let o = dedup(
        &sample_dir(),
        &tmp.path().join("embedded"),
        &["--json", json.to_str().unwrap()],
    );
    assert!(o.status.success());
    let stats: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    let keys = stats["keys_stored"].as_u64().unwrap();
    // What the key set costs: every key of it (buckets and retry records), as Redis
    // counts them (not the server's own overhead).
    let bytes: u64 = cli(
        node.port,
        &[
            "EVAL",
            "local t = 0 for _, k in ipairs(redis.call('KEYS', 'wd:*')) do \
             t = t + redis.call('MEMORY', 'USAGE', k) end return t",
            "0",
        ],
    )
    .trim()
    .parse()
    .unwrap();
    let per_key = bytes as f64 / keys as f64;
    assert!(per_key < 30.0, "{per_key:.1} bytes a key for {keys} keys");
}

/// Issue 19: Redis keeps no key count, so the summary says so instead of
/// "Keys stored: 0" (the embedded store's summary counts them).
#[test]
fn the_redis_summary_does_not_claim_zero_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let sample = sample_dir().join("cc-2023-14");
    let out = tmp.path().join("out");
    let url = node.url();
    // Not quiet: the summary line is what is checked.
    let o = webdedup(&["dedup", s(&sample), "-o", s(&out), "--store", &url]);
    ok(&o);
    assert_says(&o, "keys stored not counted by this store");
    assert!(!stderr(&o).contains(" 0 keys stored"), "{}", stderr(&o));
    let out2 = tmp.path().join("out2");
    let o = webdedup(&["dedup", s(&sample), "-o", s(&out2)]);
    ok(&o);
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("webdedup dedup:"))
        .unwrap();
    assert!(
        line.contains("keys stored (") && line.contains("bytes per key"),
        "{line}"
    );
}

/// D12 (issue 27): `warc dedup --store redis://` asks the store before it saves the
/// first captures' locations, so a run that fails in between (a full disk) leaves
/// versions in Redis whose first captures no output holds. The rerun, and the next
/// crawl, must give what an uninterrupted run gives: those versions are first
/// captured again, not taken for duplicates of captures nobody can name.
#[test]
fn warc_dedup_after_a_failed_run_gives_the_outputs_of_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(false);
    let url = node.url();
    let crawl = |name: &str, n: usize, day: usize| {
        let mut bytes = Vec::new();
        for i in 0..n {
            let body = format!("payload {} ", i % 5).repeat(200);
            bytes.extend(warc_response(
                &format!("http://example.org/{name}/{i}"),
                &format!("2024-01-{day:02}T00:00:{:02}Z", i % 60),
                &body,
            ));
        }
        let p = tmp.path().join(format!("{name}.warc"));
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let (one, two) = (crawl("one", 20, 1), crawl("two", 10, 2));
    let run = |input: &Path, out: &str, locations: &str, fault: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_webdedup"));
        c.args(["warc", "dedup", "--store", &url, "--json", "-"])
            .arg(input)
            .arg("-o")
            .arg(tmp.path().join(out).join(""))
            .arg("--locations")
            .arg(tmp.path().join(locations));
        if let Some(f) = fault {
            c.env("WEBDEDUP_FAULT", f);
        }
        c.output().unwrap()
    };
    let revisits = |o: &std::process::Output| -> u64 {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["revisits_written"].as_u64().unwrap()
    };

    // Uninterrupted: crawl one, then crawl two.
    let o = run(&one, "a1", "a.tsv", None);
    ok(&o);
    assert_eq!(revisits(&o), 15);
    let o = run(&two, "a2", "a.tsv", None);
    ok(&o);
    assert_eq!(revisits(&o), 10);

    // The same on an empty database, the first attempt at crawl one failing on a
    // full disk after the store was asked.
    cli(node.port, &["FLUSHALL"]);
    let o = run(&one, "b1", "b.tsv", Some("output-bytes:3000:enospc"));
    assert_fails_saying(&o, 2, "No space left on device");
    assert!(!tmp.path().join("b.tsv").exists());
    let o = run(&one, "b1", "b.tsv", None);
    ok(&o);
    assert_eq!(revisits(&o), 15, "{}", stderr(&o));
    let o = run(&two, "b2", "b.tsv", None);
    ok(&o);
    assert_eq!(revisits(&o), 10, "{}", stderr(&o));
    assert!(tree(&tmp.path().join("a1")) == tree(&tmp.path().join("b1")));
    assert!(tree(&tmp.path().join("a2")) == tree(&tmp.path().join("b2")));
    assert_eq!(
        read(tmp.path().join("a.tsv")),
        read(tmp.path().join("b.tsv"))
    );
}

/// D6 (issue 27): a password in the store URL is never shown: not in the note on a
/// new key set, not in errors (wrong password, node gone, out of memory), not in
/// the `--json` figures.
#[test]
fn a_password_in_the_store_url_is_never_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = "s3cretPW";
    let node = Node::start_with(false, &["--maxmemory-policy", "noeviction"], secret);
    let url = format!("redis://:{secret}@127.0.0.1:{}", node.port);
    let mut shown = Vec::new();
    // A new key set (the note), and a finished run's figures naming the store.
    let one = one_doc_input(tmp.path(), "one");
    let o = dedup(
        &one,
        &tmp.path().join("a"),
        &["--store", &url, "--json", "-"],
    );
    ok(&o);
    assert_says(&o, "a new key set");
    assert!(String::from_utf8_lossy(&o.stdout).contains("***"));
    shown.push(o);
    // The database is full: out of memory.
    cli(
        node.port,
        &[
            "-a",
            secret,
            "--no-auth-warning",
            "CONFIG",
            "SET",
            "maxmemory",
            "1",
        ],
    );
    let o = dedup(&sample_dir(), &tmp.path().join("b"), &["--store", &url]);
    assert_fails_saying(&o, 2, "OOM");
    shown.push(o);
    // The wrong password; a node that is not there; a URL with no host.
    let wrong = format!("redis://:{secret}x@127.0.0.1:{}", node.port);
    let gone = format!("redis://:{secret}@127.0.0.1:{}", free_port());
    let hostless = format!("redis://:{secret}@");
    for url in [&wrong, &gone, &hostless] {
        let o = dedup(&one, &tmp.path().join("c"), &["--store", url]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        shown.push(o);
    }
    let o = webdedup(&["cdx", "dups", "--store", &gone, "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    shown.push(o);
    for o in &shown {
        let all = format!("{}{}", stderr(o), String::from_utf8_lossy(&o.stdout));
        assert!(!all.contains(secret), "the password is shown: {all}");
    }
}
