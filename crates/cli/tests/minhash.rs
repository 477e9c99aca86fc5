//! `webdedup minhash` as a real process: the same outputs for any thread count,
//! chunk size and store (embedded, `--store DIR`, hash servers on loopback),
//! verticals and their JSON Lines conversion, kill (fault injection) + `--restore`
//! byte-identical, malformed input reported, every dropped document naming its
//! original.

mod common;
mod server_procs;

use common::*;
use server_procs::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// `webdedup minhash -i INPUT -o OUTPUT -q --dd EXTRA...` as arguments.
fn minhash_args<'a>(input: &'a Path, output: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = command_args("minhash", input, output, &["--dd"]);
    args.extend_from_slice(extra);
    args
}

fn minhash(input: &Path, output: &Path, extra: &[&str]) -> Output {
    webdedup(&minhash_args(input, output, extra))
}

/// An uninterrupted run over the sample with `extra` and a store: its
/// outputs (`dir/ref`) and its store (`dir/ref-store`).
fn reference_with_store(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    let (reference, store) = (dir.join("ref"), dir.join("ref-store"));
    let args = [extra, &["--store", s(&store)]].concat();
    ok(&minhash(&sample_dir(), &reference, &args));
    (reference, store)
}

/// Every pairs line of a run: (document, original, jaccard).
fn pairs(out: &[(String, Vec<u8>)]) -> Vec<(String, String, String)> {
    let mut v = Vec::new();
    for (name, bytes) in out {
        if name.ends_with(".pairs") {
            for line in String::from_utf8(bytes.clone()).unwrap().lines() {
                let f: Vec<&str> = line.split('\t').collect();
                assert_eq!(f.len(), 3, "{name}: {line}");
                v.push((f[0].into(), f[1].into(), f[2].into()));
            }
        }
    }
    v
}

#[test]
fn threads_chunks_and_every_store_give_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_dir();
    let reference = dir.path().join("ref");
    let o = minhash(&input, &reference, &["-t", "1"]);
    ok(&o);
    let want = outputs(&reference);
    let found = pairs(&want);
    assert!(
        found.len() > 50,
        "the sample has near-duplicates: {found:?}"
    );

    for (i, extra) in [
        vec!["-t", "2"],
        vec!["-t", "2", "--chunk-bytes", "10000"],
        vec!["-t", "1", "--chunk-bytes", "3000"],
    ]
    .iter()
    .enumerate()
    {
        let out = dir.path().join(format!("t{i}"));
        let o = minhash(&input, &out, extra);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        assert_same_files(&format!("{extra:?}"), &outputs(&out), &want);
    }

    // A store directory: the same outputs, and its snapshot holds band keys of
    // these settings only.
    let store = dir.path().join("store");
    let out = dir.path().join("stored");
    let o = minhash(
        &input,
        &out,
        &["-t", "2", "--store", store.to_str().unwrap()],
    );
    ok(&o);
    assert_same_files("--store DIR", &outputs(&out), &want);
    let o = dedup(
        &input,
        &dir.path().join("exact"),
        &["--store", store.to_str().unwrap()],
    );
    assert!(
        !o.status.success(),
        "a band-key store must refuse paragraph keys"
    );
    assert_says(&o, "minhash-bands-v1");

    // Two hash servers on loopback.
    let mut cluster = Cluster::start(dir.path(), 2);
    let out = dir.path().join("servers");
    let o = minhash(&input, &out, &["-t", "2", "-s", cluster.map_arg()]);
    cluster.stop();
    ok(&o);
    assert_same_files("-s MAP", &outputs(&out), &want);
}

#[test]
fn verticals_and_their_jsonl_conversion_drop_the_same_documents() {
    let dir = tempfile::tempdir().unwrap();
    let (v, j) = (dir.path().join("v"), dir.path().join("j"));
    assert!(minhash(&sample_dir(), &v, &[]).status.success());
    let o = minhash(&jsonl_sample_dir(), &j, &["-t", "2"]);
    ok(&o);
    let statuses = |d: &Path| -> Vec<String> {
        let mut s = Vec::new();
        for (n, b) in outputs(d) {
            if n.ends_with(".dd") {
                for l in String::from_utf8(b).unwrap().lines() {
                    s.push(l.split("status=").nth(1).unwrap().to_string());
                }
            }
        }
        s
    };
    assert_eq!(statuses(&v), statuses(&j));
    // JSON Lines names documents by their ids.
    let p = pairs(&outputs(&j));
    assert!(!p.is_empty());
    assert!(
        p.iter().all(|(d, o, _)| d.len() == 16 && o.len() == 16),
        "{p:?}"
    );
}

/// Every dropped document names an earlier, kept document whose text is a near
/// duplicate (estimated Jaccard at least the threshold), found in the input where
/// its name says.
#[test]
fn dropped_documents_name_their_original() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = minhash(&sample_dir(), &out, &["-t", "2"]);
    ok(&o);
    let tree = outputs(&out);
    // Statuses by document name (REL:LINE), from the .dd lists in input order.
    let mut kept = HashMap::new();
    let mut lines_of = HashMap::new();
    for (name, bytes) in &tree {
        let Some(rel) = name.strip_suffix(".dedup.dd") else {
            continue;
        };
        let rel = format!("{rel}.gz");
        let text = decompress(&std::fs::read(sample_dir().join(&rel)).unwrap());
        let text = String::from_utf8(text).unwrap();
        let doc_lines: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.starts_with("<doc"))
            .map(|(i, _)| i + 1)
            .collect();
        let dd = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(dd.lines().count(), doc_lines.len(), "{name}");
        for (l, line) in doc_lines.iter().zip(dd.lines()) {
            kept.insert(format!("{rel}:{l}"), line.contains("status=\"K\""));
        }
        lines_of.insert(rel, text.lines().map(String::from).collect::<Vec<_>>());
    }
    let p = pairs(&tree);
    assert!(!p.is_empty());
    for (doc, orig, j) in &p {
        assert_eq!(kept.get(doc), Some(&false), "{doc} is dropped");
        assert_eq!(
            kept.get(orig),
            Some(&true),
            "{doc}: original {orig} is kept"
        );
        let (rel, line) = orig.rsplit_once(':').unwrap();
        let line: usize = line.parse().unwrap();
        assert!(lines_of[rel][line - 1].starts_with("<doc"), "{orig}");
        assert!(orig.as_str() < doc.as_str() || rel == doc.rsplit_once(':').unwrap().0);
        let j: f64 = j.parse().unwrap_or_else(|_| panic!("{doc}: jaccard {j}"));
        assert!((0.8..=1.0).contains(&j), "{doc}: {j}");
    }
    // Without verification more documents are dropped (every band match).
    let lsh = dir.path().join("lsh");
    assert!(minhash(&sample_dir(), &lsh, &["--verify", "0"])
        .status
        .success());
    assert!(pairs(&outputs(&lsh)).len() >= p.len());
}

#[test]
fn kill_at_fault_points_then_restore_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_dir();
    let (reference, store_ref) = reference_with_store(dir.path(), &["--chunk-bytes", "20000"]);
    let want = (
        outputs(&reference),
        std::fs::read(store_ref.join("store.snap")).unwrap(),
        std::fs::read(store_ref.join("minhash.kept")).unwrap(),
    );
    for (i, (fault, threads)) in [
        ("commit:3", "1"),
        ("journal-record:20", "2"),
        ("output-bytes:1000000", "2"),
        ("rename:2", "1"),
        ("renamed:1", "2"),
        ("renamed:3", "1"),
        ("minhash-kept:1", "2"),
        ("snapshot-mid:1", "1"),
        ("snapshot-renamed:1", "2"),
    ]
    .iter()
    .enumerate()
    {
        let out = dir.path().join(format!("o{i}"));
        let store = dir.path().join(format!("s{i}"));
        let args = minhash_args(
            &input,
            &out,
            &[
                "--chunk-bytes",
                "20000",
                "-t",
                threads,
                "--store",
                s(&store),
            ],
        );
        let o = webdedup_fault(&args, Some(fault));
        assert!(
            !o.status.success() && stderr(&o).contains("fault injection: abort at"),
            "fault {fault} not reached: {}",
            stderr(&o)
        );
        // Without --restore the leftover state is refused, unless the journal holds
        // no record yet: the journal writer runs beside the committing thread, so a
        // kill at an early commit may come before its first record. Then nothing was
        // recorded, and a fresh run is allowed and must give the same result.
        let o = webdedup(&args);
        if o.status.success() {
            assert!(
                fault.starts_with("commit:"),
                "{fault}: a fresh run over leftovers was not refused"
            );
        } else {
            assert!(
                stderr(&o).contains("finish it first"),
                "{fault}: {}",
                stderr(&o)
            );
            let mut again = args.to_vec();
            again.push("--restore");
            let o = webdedup(&again);
            assert!(o.status.success(), "restore after {fault}: {}", stderr(&o));
        }
        let got = (
            outputs(&out),
            std::fs::read(store.join("store.snap")).unwrap(),
            std::fs::read(store.join("minhash.kept")).unwrap(),
        );
        assert_same_files(&format!("after {fault}"), &got.0, &want.0);
        assert!(got.1 == want.1, "after {fault}: the saved store differs");
        // Issue 27 D15: the side store is a function of the decisions.
        assert!(
            got.2 == want.2,
            "after {fault}: the saved side store differs"
        );
        assert!(!store.join("journal").exists(), "{fault}: journal left");
    }

    // Without a store directory (the journal in the output directory).
    let out = dir.path().join("nostore");
    let args = minhash_args(&input, &out, &["--chunk-bytes", "20000"]);
    let o = webdedup_fault(&args, Some("commit:5"));
    assert_ended_by(&o, "commit:5", "minhash");
    let mut again = args.to_vec();
    again.push("-r");
    let o = webdedup(&again);
    ok(&o);
    assert_same_files("no store directory", &outputs(&out), &want.0);
}

#[test]
fn malformed_input_is_reported_and_the_rest_processed() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    let text = "one two three four five six seven eight nine ten eleven twelve";
    let doc = |id: &str, t: &str| format!("{{\"id\":\"{id}\",\"text\":\"{t}\"}}\n");
    let body = [
        doc("a", text),
        "{not json\n".to_string(),
        doc("b", &format!("{text} thirteen")),
        doc("c", "something else entirely, with other words in it"),
    ]
    .concat();
    std::fs::write(input.join("x.jsonl"), body).unwrap();
    let out = dir.path().join("out");
    let o = minhash(&input, &out, &["--verify", "0"]);
    assert_fails_saying(&o, 1, "x.jsonl:2:");
    let kept = read(out.join("x.dedup.jsonl"));
    assert!(kept.contains("\"a\"") && kept.contains("\"c\"") && kept.contains("{not json"));
    assert!(!kept.contains("\"b\""), "{kept}");
    assert_eq!(
        read(out.join("x.dedup.pairs"))
            .lines()
            .next()
            .unwrap()
            .split('\t')
            .take(2)
            .collect::<Vec<_>>(),
        ["b", "a"]
    );
}

#[test]
fn redis_and_bad_settings_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = minhash(&sample_dir(), &out, &["--store", "redis://127.0.0.1:1"]);
    assert_fails_saying(&o, 2, "Redis / Valkey backend does not keep");
    let o = minhash(&sample_dir(), &out, &["--bands", "20", "--rows", "8"]);
    assert_fails_saying(&o, 2, "bands x rows");
    let o = minhash(&sample_dir(), &out, &["-n"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `--store DIR` crawl by crawl gives the same decisions, originals and Jaccard
/// estimates as one run over all crawls (the side store of kept documents is saved
/// with the store), and the same key set.
#[test]
fn crawl_by_crawl_equals_one_run_over_all() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all");
    let all_store = dir.path().join("all-store");
    let o = minhash(
        &jsonl_sample_dir(),
        &all,
        &["--store", all_store.to_str().unwrap()],
    );
    ok(&o);
    let store = dir.path().join("store");
    let mut pieces = Vec::new();
    for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
        let out = dir.path().join(crawl);
        let o = minhash(
            &jsonl_sample_dir().join(crawl),
            &out,
            &["--store", store.to_str().unwrap(), "-t", "2"],
        );
        assert!(o.status.success(), "{crawl}: {}", stderr(&o));
        for (n, b) in outputs(&out) {
            if n != "files.idx" {
                pieces.push((format!("{crawl}/{n}"), b));
            }
        }
    }
    pieces.sort();
    let want: Vec<_> = outputs(&all)
        .into_iter()
        .filter(|(n, _)| n != "files.idx")
        .collect();
    assert_same_files("crawl by crawl", &pieces, &want);
    assert!(pairs(&want).iter().all(|(_, o, j)| o != "-" && j != "-"));
    assert_same_store(&store, &all_store, "crawl by crawl");
}

/// The inode of every finished output's file (main, `.dd`, `.pairs`): a file
/// written again is a new inode, since outputs are renamed into place.
fn inodes(dir: &Path) -> Vec<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    tree(dir)
        .into_iter()
        .filter(|(n, _)| n.contains(".dedup") && !n.ends_with(".tmp"))
        .map(|(n, _)| {
            let ino = std::fs::metadata(dir.join(&n)).unwrap().ino();
            (n, ino)
        })
        .collect()
}

/// Issue 27 D1 and D15: `--restore` after a run that finished (or a kill after its
/// last output) leaves the finished outputs alone, as `dedup` does: before, it ran
/// the input again on the saved store and wrote every output empty ("Documents kept:
/// 0"), exit 0. A restore after a kill mid-run decides the finished outputs' documents
/// again (to rebuild the side store) without writing them. Two uninterrupted runs save
/// the same side store, byte for byte.
#[test]
fn restore_never_rewrites_a_finished_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_dir().join("../web3-mini-jsonl");
    let run = |name: &str, extra: &[&str], fault: Option<&str>| {
        let out = dir.path().join(format!("{name}-out"));
        let store = dir.path().join(format!("{name}-store"));
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_webdedup"));
        c.args(["minhash", "-i", input.to_str().unwrap(), "-o"])
            .arg(&out)
            .arg("--store")
            .arg(&store)
            .args(["--dd", "-q"])
            .args(extra);
        match fault {
            Some(f) => c.env("WEBDEDUP_FAULT", f),
            None => c.env_remove("WEBDEDUP_FAULT"),
        };
        let o = c.output().unwrap();
        let state = (
            outputs(&out),
            std::fs::read(store.join("store.snap")).ok(),
            std::fs::read(store.join("minhash.kept")).ok(),
        );
        (o, state, out)
    };
    let (o, want, ref_out) = run("ref", &[], None);
    ok(&o);
    // A finished run, then the same command with --restore: nothing is written.
    let before = inodes(&ref_out);
    let (o, got, _) = run("ref", &["-r"], None);
    ok(&o);
    assert_same_files("restore after a finished run", &got.0, &want.0);
    assert!(got.1 == want.1 && got.2 == want.2, "the store changed");
    assert_eq!(
        inodes(&ref_out),
        before,
        "a finished output was written again"
    );

    // Killed after its first and second outputs: they stay as they are.
    for fault in ["renamed:1", "renamed:2"] {
        let name = fault.replace(':', "-");
        let (o, _, out) = run(&name, &["-t", "1"], Some(fault));
        assert_says(&o, "fault injection");
        let before = inodes(&out);
        let (o, got, _) = run(&name, &["-t", "1", "-r"], None);
        assert!(o.status.success(), "{fault}: {}", stderr(&o));
        assert_same_files(fault, &got.0, &want.0);
        assert!(
            got.1 == want.1 && got.2 == want.2,
            "{fault}: the store differs"
        );
        assert!(!before.is_empty(), "{fault}: no finished output");
        let after = inodes(&out);
        for (name, ino) in &before {
            assert!(
                after.contains(&(name.clone(), *ino)),
                "{fault}: {name} written again"
            );
        }
    }

    let (o, again, _) = run("again", &[], None);
    ok(&o);
    assert!(again.2 == want.2, "two runs, two side stores");
    assert!(again.1 == want.1, "two runs, two snapshots");
}

/// A run stopped cleanly (the `stop` fault point sets the stop flag as a signal
/// would) exits 3 and saves nothing; `--restore` then gives the bytes of an
/// uninterrupted run.
#[test]
fn clean_stops_then_restore_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_dir();
    let common = ["--chunk-bytes", "20000", "-t", "2"];
    let (reference, store_ref) = reference_with_store(dir.path(), &common);
    for n in [1, 9, 40] {
        let out = dir.path().join(format!("o{n}"));
        let store = dir.path().join(format!("s{n}"));
        let mut args = minhash_args(&input, &out, &["--store", s(&store)]);
        args.extend(common);
        let fault = format!("stop:{n}");
        let o = webdedup_fault(&args, Some(&fault));
        assert_ended_by(&o, &fault, "minhash");
        assert!(
            !store.join("store.snap").exists(),
            "a stopped run saves nothing"
        );
        args.push("-r");
        let o = webdedup(&args);
        assert!(o.status.success(), "restore after stop:{n}: {}", stderr(&o));
        assert_same_files(&format!("stop:{n}"), &outputs(&out), &outputs(&reference));
        assert_same_store(&store, &store_ref, &format!("stop:{n}"));
    }
}

/// A worker on hash servers killed (fault injection, like kill -9) and restored
/// with `-r` gives the bytes of an uninterrupted run: the servers answer the
/// repeated requests from their retry records.
#[test]
fn worker_on_servers_killed_then_restored_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_dir();
    let reference = dir.path().join("ref");
    assert!(minhash(&input, &reference, &["--chunk-bytes", "20000"])
        .status
        .success());
    let mut cluster = Cluster::start(dir.path(), 2);
    let out = dir.path().join("out");
    let args = minhash_args(
        &input,
        &out,
        &["--chunk-bytes", "20000", "-t", "2", "-s", cluster.map_arg()],
    );
    let o = webdedup_fault(&args, Some("rename:2"));
    assert_ended_by(&o, "rename:2", "minhash");
    let mut again = args.to_vec();
    again.push("-r");
    let o = webdedup(&again);
    cluster.stop();
    ok(&o);
    assert_same_files(
        "-s, killed and restored",
        &outputs(&out),
        &outputs(&reference),
    );
}
