//! `webdedup minhash` keeps digits in its shingles by default (`--shingle-norm
//! lower`, issue 32): two release pages that differ only in their numbers are not
//! copies, while a page with one word changed still is. `--shingle-norm loose`
//! (the default before: digits folded to 0) drops such a page as before; a store
//! records the setting and refuses the other; batch mode decides as stream mode.
//! The same normalization is `dedup`'s `--normalize lower`.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A release table of `rows` lines; `seed` sets every number in it.
fn release_table(seed: u32, rows: u32) -> String {
    (0..rows)
        .map(|i| {
            let (major, minor, size) = (seed + i, (seed * 7 + i * 3) % 97, 1000 + seed * 31 + i);
            format!("package libalpha{i} version {major}.{minor} released on day {size} with build {} of the tree", size * 3)
        })
        .collect::<Vec<_>>()
        .join(". ")
}

const PROSE: &str = "the committee met on a cold morning to discuss the library budget and \
    the repair of the old reading room where the roof had leaked all winter long; after \
    a long debate the members agreed to ask the town council for a grant, to move the \
    rare books to the basement until the work was done, and to open the reading room \
    again in the spring with new shelves, new lamps and a small exhibition of maps";

/// The input: a release table, the same table with other numbers only (not a
/// copy), a prose page and the same page with one word changed (a near copy).
fn input(dir: &Path) -> PathBuf {
    let docs = [
        ("table", release_table(1, 30)),
        ("table-renumbered", release_table(40, 30)),
        ("prose", PROSE.to_string()),
        ("prose-edited", PROSE.replace("maps", "charts")),
    ];
    let lines: Vec<String> = docs
        .iter()
        .map(|(id, text)| serde_json::json!({"id": id, "text": text}).to_string())
        .collect();
    let path = dir.join("in/pages.jsonl");
    write_file(&path, lines.join("\n") + "\n");
    path.parent().unwrap().to_path_buf()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(d, o)| (d.to_string(), o.to_string()))
        .collect()
}

#[test]
fn pages_differing_only_in_their_numbers_are_kept_by_default_and_dropped_with_loose() {
    let dir = tempfile::tempdir().unwrap();
    let input = input(dir.path());
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        ok(&webdedup(&command_args("minhash", &input, &out, extra)));
        drops(&out)
    };
    assert_eq!(run("default", &[]), expected(&[("prose-edited", "prose")]));
    assert_eq!(
        run("lower", &["--shingle-norm", "lower"]),
        expected(&[("prose-edited", "prose")])
    );
    assert_eq!(
        run("loose", &["--shingle-norm", "loose"]),
        expected(&[("prose-edited", "prose"), ("table-renumbered", "table")])
    );
}

#[test]
fn batch_mode_keeps_digits_as_stream_mode_does() {
    let dir = tempfile::tempdir().unwrap();
    let input = input(dir.path());
    for (name, extra) in [
        ("default", &[][..]),
        ("loose", &["--shingle-norm", "loose"][..]),
    ] {
        let stream = dir.path().join(format!("stream-{name}"));
        ok(&webdedup(&command_args("minhash", &input, &stream, extra)));
        let out = dir.path().join(format!("batch-{name}"));
        let work = dir.path().join(format!("work-{name}"));
        let args = [&["-q", "--minhash"][..], extra].concat();
        ok(&batch(&batch_run_args(&input, &out, &work, &args), None));
        assert_same_files(name, &outputs(&out), &outputs(&stream));
    }
}

#[test]
fn a_store_records_the_shingles_normalization_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let input = input(dir.path());
    // The old default's store, and the new default's.
    assert_minhash_store_refuses_other_settings(
        &input,
        dir.path(),
        (&["--shingle-norm", "loose"], "norm=loose"),
        (&[], "norm=lower"),
    );
}

#[test]
fn an_unknown_shingle_norm_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = input(dir.path());
    let o = webdedup(&command_args(
        "minhash",
        &input,
        &dir.path().join("out"),
        &["--shingle-norm", "none"],
    ));
    assert_fails_saying(&o, 2, "'lower' or 'loose', not 'none'");
}

#[test]
fn dedup_normalize_lower_keeps_paragraphs_that_differ_only_in_their_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let line = |id: &str, v: &str| {
        let text = format!("Release {v} of the tool fixes the crash on start, speeds up the import of large files and adds a dark theme.");
        serde_json::json!({"id": id, "text": text}).to_string() + "\n"
    };
    let input = dir.path().join("in");
    write_file(
        &input.join("pages.jsonl"),
        line("a", "1.2.3") + &line("b", "4.5.6"),
    );
    let kept = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        ok(&dedup(&input, &out, extra));
        let (_, bytes) = outputs(&out)
            .into_iter()
            .find(|(n, _)| n.ends_with("pages.dedup.jsonl"))
            .expect("the kept documents");
        String::from_utf8(bytes).unwrap()
    };
    assert!(kept("lower", &["--normalize", "lower"]).contains("Release 4.5.6"));
    assert!(!kept("loose", &["--normalize", "loose"]).contains("Release 4.5.6"));
}

/// A run's `--json` names the shingles' normalization beside the other MinHash
/// settings, so a report (or a user) can tell which rule dropped a document.
#[test]
fn the_json_names_the_shingle_normalization() {
    let dir = tempfile::tempdir().unwrap();
    let input = input(dir.path());
    for (name, extra) in [
        ("lower", &[][..]),
        ("loose", &["--shingle-norm", "loose"][..]),
    ] {
        let out = dir.path().join(name);
        let json = dir.path().join(format!("{name}.json"));
        let args = [&["--json", s(&json)][..], extra].concat();
        ok(&webdedup(&command_args("minhash", &input, &out, &args)));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["minhash"]["shingle_norm"], name, "{v}");
    }
}
