//! `webdedup batch substr`: ExactSubstr's rule through the real binary.

mod common;
use common::corpus_formats::parquet_rows;
use common::*;
use std::fs;
use std::path::Path;

/// A JSON Lines file of `texts`, ids `d0`, `d1`, ...
fn jsonl(dir: &Path, name: &str, texts: &[String]) {
    let mut out = String::new();
    for (i, t) in texts.iter().enumerate() {
        out += &serde_json::json!({"id": format!("d{i}"), "text": t, "n": i}).to_string();
        out.push('\n');
    }
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join(name), out).unwrap();
}

/// The texts of an output JSON Lines file, by line.
fn texts(path: &Path) -> Vec<String> {
    read(path)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn corpus() -> Vec<String> {
    let shared = "a sentence long enough to be struck, repeated in three documents of the corpus; "
        .repeat(2);
    vec![
        format!("first {shared}end one"),
        "nothing repeated here".to_owned(),
        format!("third {shared}end three"),
        format!("{shared}"),
    ]
}

#[test]
fn every_copy_or_all_but_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    jsonl(&input, "a.jsonl", &corpus());
    let out = dir.path().join("all");
    ok(&webdedup(&[
        "batch",
        "substr",
        "-q",
        s(&input),
        "-o",
        s(&out),
    ]));
    assert_eq!(
        texts(&out.join("a.dedup.jsonl")),
        ["firstone", "nothing repeated here", "thirdthree", ""]
    );
    let out = dir.path().join("first");
    let o = webdedup(&[
        "batch",
        "substr",
        s(&input),
        "-o",
        s(&out),
        "--keep-first",
        "--json",
        "-",
    ]);
    ok(&o);
    let want = corpus();
    assert_eq!(
        texts(&out.join("a.dedup.jsonl")),
        [want[0].as_str(), "nothing repeated here", "thirdthree", ""]
    );
    // The other fields of a changed record are as read (serde_json wrote the
    // input's keys sorted).
    let line = read(out.join("a.dedup.jsonl"))
        .lines()
        .nth(2)
        .unwrap()
        .to_owned();
    assert_eq!(line, r#"{"id":"d2","n":2,"text":"thirdthree"}"#);
    let figures: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(figures["documents_changed"], 2);
    // Document 2 loses " SHARED end " (its spaces repeat too), document 3 SHARED.
    assert_eq!(figures["bytes_struck"], 2 * want[3].len() as u64 + 5);
}

#[test]
fn shards_give_the_same_outputs_and_spans() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let sharded = dir.path().join("sharded");
    let sample = jsonl_sample_dir();
    for (out, extra) in [(&one, None), (&sharded, Some("1"))] {
        let spans = out.join("spans.tsv");
        let mut args = vec![
            "batch",
            "substr",
            "-q",
            s(&sample),
            "-o",
            s(out),
            "--spans",
            s(&spans),
        ];
        // 1 MB of suffix arrays: the 4 MB of sample text in several shards.
        if let Some(mb) = extra {
            args.extend(["--max-memory", mb]);
        }
        ok(&webdedup(&args));
    }
    assert!(!read(one.join("spans.tsv")).is_empty());
    assert_eq!(tree(&one), tree(&sharded));
}

#[test]
fn outputs_are_the_inputs_without_their_spans() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let spans = dir.path().join("spans.tsv");
    ok(&webdedup(&[
        "batch",
        "substr",
        "-q",
        s(&jsonl_sample_dir()),
        "-o",
        s(&out),
        "--spans",
        s(&spans),
        "--length",
        "200",
    ]));
    let input = jsonl_sample_dir().join("cc-2023-50/part-00000.jsonl.gz");
    let read_in: Vec<serde_json::Value> = String::from_utf8(decompress(&fs::read(&input).unwrap()))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got = texts(&out.join("cc-2023-50/part-00000.dedup.jsonl"));
    assert_eq!(got.len(), read_in.len());
    let name = input.display().to_string();
    for (doc, kept) in read_in.iter().zip(&got) {
        let text = doc["text"].as_str().unwrap();
        let id = doc["id"].as_str().unwrap();
        let mut want = String::new();
        let mut at = 0;
        for line in read(&spans).lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if f[0].ends_with(name.rsplit("sample/").next().unwrap()) && f[1] == id {
                let (a, b): (usize, usize) = (f[2].parse().unwrap(), f[3].parse().unwrap());
                assert!(b - a >= 200, "{line}");
                let (a, b) = (a.max(at), b);
                let (mut a, mut b) = (a, b.min(text.len()));
                while !text.is_char_boundary(a) {
                    a -= 1;
                }
                while !text.is_char_boundary(b) {
                    b += 1;
                }
                want.push_str(&text[at..a.max(at)]);
                at = b.max(at);
            }
        }
        want.push_str(&text[at..]);
        assert_eq!(kept, &want, "{id}");
    }
}

/// The `<doc>` blocks of a vertical, by id.
fn vertical_docs(text: &str) -> std::collections::BTreeMap<String, String> {
    let mut docs = std::collections::BTreeMap::new();
    for block in text.split_inclusive("</doc>\n") {
        let id = attr(block.lines().next().unwrap(), "id").unwrap();
        docs.insert(id, block.to_owned());
    }
    docs
}

#[test]
fn verticals_lose_the_token_lines_of_their_spans_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let spans = dir.path().join("spans.tsv");
    // One crawl: a test in seconds.
    let input = sample_dir().join("cc-2023-14/part-00000.vert.gz");
    ok(&webdedup(&[
        "batch",
        "substr",
        "-q",
        s(&input),
        "-o",
        s(&out),
        "--spans",
        s(&spans),
        "--length",
        "200",
    ]));
    let struck: std::collections::BTreeSet<String> = read(&spans)
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().to_owned())
        .collect();
    let input = String::from_utf8(decompress(&fs::read(input).unwrap())).unwrap();
    let output = read(out.join("part-00000.vert.dedup"));
    // The output is the input without some of its lines, in order ...
    let mut lines = input.lines();
    for kept in output.lines() {
        assert!(
            lines.any(|l| l == kept),
            "{kept:?} not in the input's order"
        );
    }
    // ... every document kept, byte for byte when it has no span.
    let (before, after) = (vertical_docs(&input), vertical_docs(&output));
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let mut changed = 0;
    for (id, doc) in &before {
        if struck.contains(id) {
            changed += usize::from(after[id] != *doc);
            // What goes is token lines, or paragraphs whole with their tags.
            let gone: Vec<&str> = doc.lines().filter(|l| !after[id].contains(l)).collect();
            assert!(gone.iter().all(|l| !l.starts_with("<doc")), "{id}");
        } else {
            assert_eq!(after[id], *doc, "{id} has no span");
        }
    }
    assert!(changed > 10, "{changed} documents changed");
}

#[test]
fn parquet_rows_get_their_struck_texts_and_keep_their_other_columns() {
    let dir = tempfile::tempdir().unwrap();
    let rel = "cc-2023-50/part-00000";
    let mut texts_of = Vec::new();
    for (sample, name) in [
        (jsonl_sample_dir(), "jsonl"),
        (parquet_sample_dir(), "parquet"),
    ] {
        let out = dir.path().join(name);
        ok(&webdedup(&[
            "batch",
            "substr",
            "-q",
            s(&sample),
            "-o",
            s(&out),
            "--length",
            "200",
        ]));
        texts_of.push(out.join(format!("{rel}.dedup.{name}")));
    }
    let want = texts(&texts_of[0]);
    let (schema, rows) = parquet_rows(&texts_of[1]);
    let (in_schema, in_rows) = parquet_rows(&parquet_sample_dir().join(format!("{rel}.parquet")));
    assert_eq!(schema, in_schema);
    assert_eq!(rows.len(), in_rows.len());
    let mut changed = 0;
    for (i, (row, read_in)) in rows.iter().zip(&in_rows).enumerate() {
        // The text as the JSON Lines run struck it, every other column as read.
        assert_eq!(row[0].as_deref(), Some(want[i].as_str()), "row {i}");
        assert_eq!(row[1..], read_in[1..], "row {i}");
        changed += usize::from(row[0] != read_in[0]);
    }
    assert!(changed > 10, "{changed} rows changed");
}

#[test]
fn a_bad_length_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = webdedup(&[
        "batch",
        "substr",
        s(&jsonl_sample_dir()),
        "-o",
        s(&out),
        "--length",
        "0",
    ]);
    assert_fails_saying(&o, 2, "--length 0");
}
