//! `--clusters` of `webdedup minhash` and `webdedup batch run --minhash` with the
//! real binary: every document gets the name of its cluster's kept document (its
//! own when kept, its original's when dropped), the same on the embedded store,
//! `--store DIR` crawl after crawl and hash server processes, in batch mode for
//! any thread count, and under `--mark` as an attribute.

mod common;
mod server_procs;

use common::*;
use server_procs::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn minhash(input: &Path, out: &Path, extra: &[&str]) {
    let mut args = command_args("minhash", input, out, &["--dd", "--clusters"]);
    args.extend_from_slice(extra);
    ok(&webdedup(&args));
}

/// The TSV lines of a run's files ending in `suffix`, split in fields.
fn tsv(out: &Path, suffix: &str) -> Vec<Vec<String>> {
    lines_of(out, suffix)
        .iter()
        .map(|(_, l)| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Document → cluster, from the `.clusters` files.
fn clusters(out: &Path) -> BTreeMap<String, String> {
    tsv(out, ".clusters")
        .into_iter()
        .map(|f| (f[0].clone(), f[1].clone()))
        .collect()
}

/// Checks a run's clusters against its own decisions: one line per document
/// (as many as `.dd` lines), a dropped document's cluster is the original its
/// pairs line names, a kept one's is itself.
fn assert_clusters_follow_the_pairs(out: &Path, what: &str) -> BTreeMap<String, String> {
    let c = clusters(out);
    let lines = tsv(out, ".clusters").len();
    assert_eq!(lines, dd_lines(out).len(), "{what}: a line per document");
    assert_eq!(c.len(), lines, "{what}: documents named once");
    let pairs: BTreeMap<String, String> = tsv(out, ".pairs")
        .into_iter()
        .map(|f| (f[0].clone(), f[1].clone()))
        .collect();
    assert!(pairs.len() > 50, "{what}: the sample has near-duplicates");
    for (doc, cluster) in &c {
        match pairs.get(doc) {
            Some(original) => assert_eq!(cluster, original, "{what}: dropped {doc}"),
            None => assert_eq!(cluster, doc, "{what}: kept {doc}"),
        }
    }
    c
}

#[test]
fn every_store_names_the_same_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_sample_dir();
    let embedded = dir.path().join("embedded");
    minhash(&input, &embedded, &["-t", "2"]);
    let want = assert_clusters_follow_the_pairs(&embedded, "embedded");
    // Every cluster is a kept document's name, which is its own cluster.
    let kept: BTreeSet<&String> = want
        .iter()
        .filter(|(d, c)| d == c)
        .map(|(d, _)| d)
        .collect();
    assert!(want.values().all(|c| kept.contains(c)));
    assert!(kept.len() < want.len());

    let stored = dir.path().join("stored");
    let store = dir.path().join("store");
    minhash(&input, &stored, &["--store", s(&store)]);
    assert_same_files("--store DIR", &outputs(&stored), &outputs(&embedded));

    let mut servers = Cluster::start(dir.path(), 2);
    let on_servers = dir.path().join("servers");
    let args = [
        command_args("minhash", &input, &on_servers, &["--dd", "--clusters"]),
        vec!["-t", "2", "-s", servers.map_arg()],
    ]
    .concat();
    let o = webdedup(&args);
    servers.stop();
    ok(&o);
    assert_same_files("-s MAP", &outputs(&on_servers), &outputs(&embedded));

    // Without --clusters nothing changes and no .clusters is written.
    let plain = dir.path().join("plain");
    ok(&webdedup(&command_args(
        "minhash",
        &input,
        &plain,
        &["--dd"],
    )));
    let without: Vec<_> = outputs(&embedded)
        .into_iter()
        .filter(|(n, _)| !n.ends_with(".clusters"))
        .collect();
    assert_same_files("without --clusters", &outputs(&plain), &without);
}

/// Crawl after crawl on one `--store DIR`: a document of a later crawl names
/// the kept document of an earlier one as its cluster, as one run over all does.
#[test]
fn crawl_after_crawl_names_earlier_crawls_kept_documents() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all");
    minhash(&jsonl_sample_dir(), &all, &[]);
    let want = assert_clusters_follow_the_pairs(&all, "one run");
    let store = dir.path().join("store");
    let mut got = BTreeMap::new();
    let mut across = 0;
    let mut seen = BTreeSet::new();
    for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
        let out = dir.path().join(crawl);
        minhash(
            &jsonl_sample_dir().join(crawl),
            &out,
            &["--store", s(&store), "-t", "2"],
        );
        let c = clusters(&out);
        across += c
            .values()
            .filter(|k| seen.contains(*k) && !c.contains_key(*k))
            .count();
        seen.extend(c.keys().cloned());
        got.extend(c);
    }
    assert_eq!(got, want, "crawl by crawl");
    assert!(across > 0, "some clusters reach into an earlier crawl");
}

#[test]
fn mark_carries_the_cluster_as_an_attribute() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("marked");
    minhash(&jsonl_sample_dir(), &out, &["--mark"]);
    let want = clusters(&out);
    let mut got = BTreeMap::new();
    for (n, b) in outputs(&out) {
        if n.ends_with(".attributes.jsonl") {
            for l in String::from_utf8(b).unwrap().lines() {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let span = &v["attributes"]["webdedup_minhash_cluster"][0];
                assert_eq!(span[0], 0, "{l}");
                assert!(span[1].as_u64().unwrap() > 0, "{l}");
                got.insert(
                    v["id"].as_str().unwrap().to_string(),
                    span[2].as_str().unwrap().to_string(),
                );
            }
        }
    }
    assert_eq!(got, want);
}

#[test]
fn batch_clusters_equal_stream_mode_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_sample_dir();
    let stream = dir.path().join("stream");
    minhash(&input, &stream, &[]);
    for (i, layout) in [
        vec!["-t", "1"],
        vec!["-t", "3", "--task-count", "3", "--partitions", "5"],
    ]
    .iter()
    .enumerate()
    {
        let (out, work) = (
            dir.path().join(format!("b{i}")),
            dir.path().join(format!("w{i}")),
        );
        let mut args = batch_run_args(
            &input,
            &out,
            &work,
            &["--minhash", "--clusters", "--dd", "-q"],
        );
        args.extend_from_slice(layout);
        let o = batch(&args, None);
        assert!(o.status.success(), "{layout:?}: {}", stderr(&o));
        assert_same_files(&format!("batch {layout:?}"), &tree(&out), &tree(&stream));
    }
    let o = batch(
        &batch_run_args(
            &input,
            &dir.path().join("x"),
            &dir.path().join("wx"),
            &["--clusters"],
        ),
        None,
    );
    assert_refused(&o, "--minhash");
}
