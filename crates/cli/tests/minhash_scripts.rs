//! `webdedup minhash` on a mixed-script slice (sample/scripts-mini: Debian
//! documentation in en, de, cs, ru, zh, ja and LibreOffice's Thai messages, each
//! document followed later by a lightly edited copy, `ID-c1-RATE`): the default
//! `auto:5` shingles drop the near copies in scripts without spaces that `words:5`
//! misses, in stream and batch mode; a store records the shingling and refuses
//! another.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn scripts_sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/scripts-mini")
}

const UNSPACED: [&str; 3] = ["zh", "ja", "th"];

/// The near copies of the slice, with the document each was made from.
fn copies() -> Vec<(String, String)> {
    let data = decompress(&std::fs::read(scripts_sample().join("scripts.jsonl.gz")).unwrap());
    let mut v = Vec::new();
    for line in String::from_utf8(data).unwrap().lines() {
        let doc: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = doc["id"].as_str().unwrap();
        if let Some((source, _)) = id.split_once("-c1-") {
            v.push((id.to_string(), source.to_string()));
        }
    }
    v
}

fn lang(id: &str) -> &str {
    id.split('-').next().unwrap()
}

fn run(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    ok(&webdedup(&command_args(
        "minhash",
        &scripts_sample(),
        &out,
        extra,
    )));
    out
}

#[test]
fn the_default_drops_the_near_copies_that_words_missed_in_scripts_without_spaces() {
    let dir = tempfile::tempdir().unwrap();
    let auto = drops(&run(dir.path(), "auto", &[]));
    let words = drops(&run(dir.path(), "words", &["--shingles", "words:5"]));
    let copies = copies();
    let langs: Vec<&str> = copies.iter().map(|(c, _)| lang(c)).collect();
    for l in ["en", "de", "cs", "ru", "zh", "ja", "th"] {
        assert!(langs.contains(&l), "the slice has near copies in {l}");
    }
    // auto:5: every near copy dropped, naming the document it was made from.
    for (copy, source) in &copies {
        assert_eq!(auto.get(copy), Some(source), "{copy} under auto:5");
    }
    // words:5 finds the copies in spaced scripts but misses copies in each script
    // without spaces (a Chinese line is one "word").
    for (copy, source) in &copies {
        if !UNSPACED.contains(&lang(copy)) {
            assert_eq!(words.get(copy), Some(source), "{copy} under words:5");
        }
    }
    for l in UNSPACED {
        let missed = copies
            .iter()
            .filter(|(c, _)| lang(c) == l && !words.contains_key(c))
            .count();
        assert!(
            missed > 0,
            "words:5 missed no {l} copy: the test shows nothing"
        );
    }
    // Nothing else changes: in spaced scripts auto:5 is words:5.
    let spaced = |m: &BTreeMap<String, String>| -> Vec<(String, String)> {
        m.iter()
            .filter(|(d, _)| !UNSPACED.contains(&lang(d)))
            .map(|(d, o)| (d.clone(), o.clone()))
            .collect()
    };
    assert_eq!(spaced(&auto), spaced(&words));
}

#[test]
fn batch_mode_decides_as_stream_mode_with_auto_shingles() {
    let dir = tempfile::tempdir().unwrap();
    let stream = run(dir.path(), "stream", &[]);
    let (out, work) = (dir.path().join("batch"), dir.path().join("work"));
    ok(&batch(
        &batch_run_args(&scripts_sample(), &out, &work, &["-q", "--minhash"]),
        None,
    ));
    assert_same_files("batch --minhash", &outputs(&out), &outputs(&stream));
}

#[test]
fn a_store_records_its_shingling_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    // A store made with words:5 keeps working with words:5 and refuses the new
    // default, naming both shingle settings; and the other way round.
    assert_minhash_store_refuses_other_settings(
        &scripts_sample(),
        dir.path(),
        (&["--shingles", "words:5"], "shingles=words:5"),
        (&[], "shingles=auto:5"),
    );
    // The store left is the default's: chars:5 is refused too.
    let o = minhash_with_store(
        &scripts_sample(),
        &dir.path().join("chars"),
        &dir.path().join("store"),
        &["--shingles", "chars:5"],
    );
    assert_fails_saying(&o, 2, "shingles=chars:5");
}

/// `--verify` estimates from a verification sketch of its own (`--verify-hashes`,
/// 256 values by default), and a store records it: a store made before it
/// (`--verify-hashes 0`: the band signature's own 112 bytes, whose settings line
/// ends at `norm=lower`) keeps working with `--verify-hashes 0` and refuses the new
/// default, naming both settings; and the other way round.
#[test]
fn a_store_records_its_verification_sketch_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    assert_minhash_store_refuses_other_settings(
        &scripts_sample(),
        dir.path(),
        (&["--verify-hashes", "0"], "rows=8 norm=lower'"),
        (&[], "norm=lower verify-hashes=256'"),
    );
}
