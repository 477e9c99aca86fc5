//! The ordered step (store requests and decisions, one chunk at a time in input
//! order) as a real process: its share of the run's CPU time in `--json` and the
//! summary for every mode, and outputs that do not depend on the thread count.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// The modes whose ordered step differs: exact, near (`-n`) and MinHash.
const MODES: [(&str, &[&str]); 3] = [("dedup", &[]), ("dedup", &["-n"]), ("minhash", &[])];

/// A run of `command` over the sample into `out` with `extra`, not quiet: its
/// `--json` figures and its summary line.
fn run(command: &str, out: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let (input, json) = (sample_dir(), out.with_extension("json"));
    let fixed = [
        command,
        "-i",
        s(&input),
        "-o",
        s(out),
        "--dd",
        "--json",
        s(&json),
    ];
    let o = webdedup(&[&fixed[..], extra].concat());
    ok(&o);
    (serde_json::from_str(&read(&json)).unwrap(), stderr(&o))
}

#[test]
fn every_mode_reports_its_ordered_share_and_keeps_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (command, mode)) in MODES.iter().enumerate() {
        let what = format!("{command} {mode:?}");
        let reference = dir.path().join(format!("ref{i}"));
        ok(&webdedup(&command_args(
            command,
            &sample_dir(),
            &reference,
            &[&["--dd", "-t", "1"], *mode].concat(),
        )));
        for threads in ["1", "2"] {
            let out = dir.path().join(format!("out{i}-{threads}"));
            let (figures, summary) = run(command, &out, &[&["-t", threads], *mode].concat());
            let share = figures["ordered_share"].as_f64().expect(&what);
            assert!((0.0..=1.0).contains(&share), "{what}: share {share}");
            let ordered = figures["ordered_cpu_seconds"].as_f64().expect(&what);
            let all = figures["cpu_seconds"].as_f64().expect(&what);
            // Every chunk passes the step: its time is measured, not left at 0.
            assert!(ordered > 0.0 && all > 0.0, "{what}: {ordered} of {all}");
            let line = format!("ordered step {:.1}% of {:.2} s CPU", 100.0 * share, all);
            assert!(summary.contains(&line), "{what}: {line} not in {summary}");
            assert_same_files(&what, &outputs(&out), &outputs(&reference));
        }
    }
}

#[test]
fn many_threads_on_small_chunks_give_the_one_thread_outputs() {
    // Small chunks: many of them in flight at once, in every lane of the
    // block-split ordered step (exact mode), located (feedback) or not.
    let dir = tempfile::tempdir().unwrap();
    let variants: [&[&str]; 3] = [&[], &["-f"], &["--doc-check", "url-title"]];
    for (i, extra) in variants.iter().enumerate() {
        let one = dir.path().join(format!("one{i}"));
        let many = dir.path().join(format!("many{i}"));
        let small = ["--dd", "--chunk-bytes", "20000"];
        for (out, threads) in [(&one, "1"), (&many, "8")] {
            let args = [&small[..], &["-t", threads], *extra].concat();
            ok(&dedup(&sample_dir(), out, &args));
        }
        let want = outputs(&one);
        assert!(want.iter().any(|(n, _)| n.ends_with(".dd")), "{extra:?}");
        assert_same_files(&format!("-t 8 {extra:?}"), &outputs(&many), &want);
    }
}

/// A directory holding one input: the first 120 documents of the sample's
/// cc-2023-14, each followed by `copy(doc)`.
fn sample_with_copies(dir: &Path, copy: impl Fn(&[u8]) -> Vec<u8>) -> PathBuf {
    let (text, starts) = sample_crawl_docs("cc-2023-14");
    let mut input_text = Vec::new();
    for (i, &start) in starts.iter().enumerate().take(120) {
        let doc = &text[start..starts.get(i + 1).copied().unwrap_or(text.len())];
        input_text.extend_from_slice(doc);
        input_text.extend_from_slice(&copy(doc));
    }
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("copies.vert"), &input_text).unwrap();
    input
}

/// Runs `command` over `input` in small chunks (`--chunk-bytes 5000`) with one
/// thread and with eight, into `dir/one{i}` and `dir/many{i}`; asserts both give
/// the same outputs and returns the one-thread output directory.
/// Runs `command` at `-t 1` and `-t 8` on small chunks, each run on a store
/// directory of its own when `stored` (else the mode's default store), and
/// asserts their outputs are the same; returns the one-thread output directory.
fn one_and_many(
    command: &str,
    input: &Path,
    dir: &Path,
    i: usize,
    extra: &[&str],
    stored: bool,
) -> PathBuf {
    let one = dir.join(format!("one{i}"));
    let many = dir.join(format!("many{i}"));
    for (out, threads) in [(&one, "1"), (&many, "8")] {
        let store = out.with_extension("store").to_string_lossy().into_owned();
        let with_store = ["--store", store.as_str()];
        let store_args: &[&str] = if stored { &with_store } else { &[] };
        let args = [
            &["--dd", "--chunk-bytes", "5000", "-t", threads],
            extra,
            store_args,
        ]
        .concat();
        ok(&webdedup(&command_args(command, input, out, &args)));
    }
    let what = format!("{command} -t 8 {extra:?} store dir: {stored}");
    assert_same_files(&what, &outputs(&many), &outputs(&one));
    one
}

#[test]
fn minhash_asked_ahead_gives_the_one_thread_outputs() {
    // Small chunks and many threads: chunks ask their tests before their turns
    // while earlier chunks still insert. Every document twice in a row: a copy
    // often starts the chunk after its original's, whose keys its early answers
    // miss and its turn corrects.
    let dir = tempfile::tempdir().unwrap();
    let input = sample_with_copies(dir.path(), |doc| doc.to_vec());
    // The compact band store (the default) and the plain table (`--store DIR`):
    // both take their inserts in block lanes after the gate.
    let variants: [(&[&str], bool); 3] = [(&[], false), (&["--verify", "0.5"], false), (&[], true)];
    for (i, (extra, stored)) in variants.into_iter().enumerate() {
        let one = one_and_many("minhash", &input, dir.path(), i, extra, stored);
        let pairs: usize = lines_of(&one, ".pairs").len();
        assert!(
            pairs >= 100,
            "{extra:?}: the copies are dropped ({pairs} pairs)"
        );
    }
}

#[test]
fn near_asked_ahead_gives_the_one_thread_outputs() {
    // Near mode builds and tests a chunk's n-grams before its turn. Every
    // document followed by a near copy (a word added to each paragraph: new
    // paragraph and document keys, the n-grams but a few the same): many copies
    // start the chunk after their original's, whose n-grams the early answers
    // miss and the turn corrects.
    let dir = tempfile::tempdir().unwrap();
    let input = sample_with_copies(dir.path(), |doc| {
        let copy = String::from_utf8_lossy(doc).replace("<p>\n", "<p>\nvariant\n");
        copy.into_bytes()
    });
    // The insert round follows the turn in block lanes, answered unasked there:
    // on the default store and on a store directory, located (`-f`) or not,
    // with onion's rules (no paragraph keys, smoothing).
    let variants: [(&[&str], bool); 4] = [
        (&["-n"], false),
        (&["-n", "-f"], false),
        (&["-n"], true),
        (&["-n", "--near-rules", "onion"], false),
    ];
    for (i, (extra, stored)) in variants.into_iter().enumerate() {
        let one = one_and_many("dedup", &input, dir.path(), i, extra, stored);
        let judged = lines_of(&one, ".dd")
            .iter()
            .filter(|(_, l)| !l.contains("status=\"K\""))
            .count();
        assert!(
            judged >= 50,
            "{extra:?}: the copies are kept ({judged} judged)"
        );
    }
}
