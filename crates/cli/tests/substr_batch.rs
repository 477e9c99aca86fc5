//! `webdedup batch substr`: ExactSubstr's rule through the real binary.

mod common;
use common::corpus_formats::{jsonl_docs, parquet_rows, wet_file, write_parquet};
use common::*;
use std::fs;
use std::path::Path;

/// `webdedup batch substr ARGS`.
fn batch_substr(args: &[&str]) -> std::process::Output {
    webdedup(&[&["batch", "substr"], args].concat())
}

/// `batch substr -q INPUT -o OUT --length 200` (spans of 200 bytes: a sample's
/// boilerplate, not its short phrases), listing the spans in `spans` if given.
fn strike_200(input: &Path, out: &Path, spans: Option<&Path>) {
    let mut args = vec!["-q", s(input), "-o", s(out), "--length", "200"];
    if let Some(spans) = spans {
        args.extend(["--spans", s(spans)]);
    }
    ok(&batch_substr(&args));
}

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
    ok(&batch_substr(&["-q", s(&input), "-o", s(&out)]));
    assert_eq!(
        texts(&out.join("a.dedup.jsonl")),
        ["firstone", "nothing repeated here", "thirdthree", ""]
    );
    let out = dir.path().join("first");
    let o = batch_substr(&[s(&input), "-o", s(&out), "--keep-first", "--json", "-"]);
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
fn threads_and_shards_give_the_same_outputs_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    // A slice of each crawl, in each format: every writer runs beside the others.
    let input = dir.path().join("in");
    let docs = |crawl: &str| {
        jsonl_docs(&jsonl_sample_dir().join(format!("{crawl}/part-00000.jsonl.gz")))[..40].to_vec()
    };
    let jsonl: String = docs("cc-2023-14")
        .iter()
        .map(|d| d.to_string() + "\n")
        .collect();
    write_file(&input.join("j/part.jsonl"), jsonl);
    fs::create_dir_all(input.join("p")).unwrap();
    let codec = parquet::basic::Compression::SNAPPY;
    write_parquet(
        &docs("cc-2023-50"),
        &input.join("p/part.parquet"),
        16,
        codec,
    );
    write_file(
        &input.join("w/part.warc.wet"),
        wet_file(&docs("cc-2024-33"), false),
    );
    let vertical = String::from_utf8(decompress(
        &fs::read(sample_dir().join("cc-2023-50/part-00000.vert.gz")).unwrap(),
    ))
    .unwrap();
    let forty: String = vertical.split_inclusive("</doc>\n").take(40).collect();
    write_file(&input.join("v/part.vert"), forty);
    let one = dir.path().join("one");
    let many = dir.path().join("many");
    for (out, extra) in [(&one, ["-t", "1"]), (&many, ["-t", "3"])] {
        let spans = out.with_extension("tsv");
        let mut args = vec!["batch", "substr", "-q", s(&input), "-o", s(out), "-f"];
        args.extend(["--spans", s(&spans)]);
        args.extend(extra);
        // 1 MB of suffix arrays: the text in shards built three at a time.
        if out == &many {
            args.extend(["--max-memory", "1"]);
        }
        ok(&webdedup(&args));
    }
    let files = tree(&one);
    assert_eq!(files.len(), 4 * 2 + 1, "outputs, reports and files.idx");
    assert!(files.iter().all(|(_, bytes)| !bytes.is_empty()));
    assert_eq!(files, tree(&many));
    assert_eq!(
        read(one.with_extension("tsv")),
        read(many.with_extension("tsv"))
    );
}

#[test]
fn outputs_are_the_inputs_without_their_spans() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let spans = dir.path().join("spans.tsv");
    strike_200(&jsonl_sample_dir(), &out, Some(&spans));
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
    strike_200(&input, &out, Some(&spans));
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
        strike_200(&sample, &out, None);
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
    let o = batch_substr(&[s(&jsonl_sample_dir()), "-o", s(&out), "--length", "0"]);
    assert_fails_saying(&o, 2, "--length 0");
}

/// Characters `range` of `text`.
fn chars(text: &str, range: std::ops::Range<usize>) -> String {
    text.chars().skip(range.start).take(range.len()).collect()
}

#[test]
fn mark_keeps_the_inputs_and_lists_the_characters_struck() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_sample_dir().join("cc-2023-50/part-00000.jsonl.gz");
    let (struck, marked) = (dir.path().join("struck"), dir.path().join("marked"));
    for (out, mark) in [(&struck, None), (&marked, Some("--mark"))] {
        let mut args = vec!["batch", "substr", "-q", s(&input), "-o", s(out)];
        args.extend(["--length", "200", "--keep-first"]);
        args.extend(mark);
        ok(&webdedup(&args));
    }
    let read_in = String::from_utf8(decompress(&fs::read(&input).unwrap())).unwrap();
    assert_eq!(read(marked.join("part-00000.dedup.jsonl")), read_in);
    let want = texts(&struck.join("part-00000.dedup.jsonl"));
    let attrs = read(marked.join("part-00000.dedup.attributes.jsonl"));
    assert_eq!(attrs.lines().count(), want.len());
    let mut spans = 0;
    for ((doc, line), want) in read_in.lines().zip(attrs.lines()).zip(&want) {
        let doc: serde_json::Value = serde_json::from_str(doc).unwrap();
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["id"], doc["id"]);
        let text = doc["text"].as_str().unwrap();
        // The input's text without the characters listed is the struck text.
        let mut kept = String::new();
        let mut at = 0;
        for span in line["attributes"]["webdedup_repeated_spans"]
            .as_array()
            .unwrap()
        {
            let (a, b) = (
                span[0].as_u64().unwrap() as usize,
                span[1].as_u64().unwrap() as usize,
            );
            assert_eq!(span[2], 1.0);
            kept += &chars(text, at..a);
            at = b;
            spans += 1;
        }
        kept += &chars(text, at..text.chars().count());
        assert_eq!(&kept, want, "{}", line["id"]);
    }
    assert!(spans > 10, "{spans} spans");
}

#[test]
fn the_report_names_each_span_and_its_first_copy() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let docs = corpus();
    jsonl(&input.join("a"), "x.jsonl", &docs[..2]);
    jsonl(&input.join("b"), "y.jsonl", &docs[2..]);
    for keep_first in [false, true] {
        let out = dir.path().join(format!("out-{keep_first}"));
        let mut args = vec!["batch", "substr", "-q", s(&input), "-o", s(&out), "-f"];
        args.extend(["--length", "40"]);
        args.extend(keep_first.then_some("--keep-first"));
        ok(&webdedup(&args));
        // `files.idx` names the inputs by id; the text of a document by FILE:LINE.
        let files: std::collections::BTreeMap<String, String> = read(out.join("files.idx"))
            .lines()
            .map(|l| l.split_once('\t').unwrap())
            .map(|(id, rel)| (id.to_owned(), rel.to_owned()))
            .collect();
        let text_at = |file: &str, line: &str| {
            let rel = &files[file];
            let line: usize = line.parse().unwrap();
            let doc = read(input.join(rel))
                .lines()
                .nth(line - 1)
                .unwrap()
                .to_owned();
            let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
            (rel.clone(), line, doc["text"].as_str().unwrap().to_owned())
        };
        let mut lines = Vec::new();
        for part in ["a/x", "b/y"] {
            lines.extend(
                read(out.join(format!("{part}.dedup.spans")))
                    .lines()
                    .map(str::to_owned),
            );
        }
        // Keep-first: the second half of document 0 repeats its first half.
        assert_eq!(lines.len(), 3, "{lines:?}");
        for l in &lines {
            let (span, first) = l.split_once('\t').unwrap();
            let f: Vec<&str> = span.split(':').collect();
            let (a, b) = f[2].split_once('-').unwrap();
            let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
            let (rel, line, text) = text_at(f[0], f[1]);
            let g: Vec<&str> = first.split(':').collect();
            let (first_rel, first_line, first_text) = text_at(g[0], g[1]);
            let start: usize = g[2].parse().unwrap();
            // The span starts with the window its first copy starts with.
            assert_eq!(
                chars(&text, a..a + 40),
                chars(&first_text, start..start + 40),
                "{l}"
            );
            assert!(b - a >= 40, "{l}");
            if keep_first {
                assert!((first_rel, first_line, start) < (rel, line, a), "{l}");
            }
        }
    }
}

#[test]
fn a_run_killed_and_restored_gives_the_uninterrupted_outputs() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    // Twelve small inputs, written one after the other (-t 1).
    let input = dir.path().join("in");
    let sample = |crawl: &str| jsonl_docs(&jsonl_sample_dir().join(crawl))[..60].to_vec();
    let mut docs = sample("cc-2023-14/part-00000.jsonl.gz");
    docs.extend(sample("cc-2023-50/part-00000.jsonl.gz"));
    for (i, part) in docs.chunks(10).enumerate() {
        let lines: String = part.iter().map(|d| d.to_string() + "\n").collect();
        write_file(&input.join(format!("part-{i:02}.jsonl")), lines);
    }
    let args = |out: &Path| {
        let mut a = owned(&["batch", "substr", "-q", "-f", "-t", "1"]);
        a.extend(owned(&[s(&input), "-o", s(out), "--length", "100"]));
        a
    };
    let want = dir.path().join("want");
    ok(&webdedup_fault(&args(&want), None));
    let out = dir.path().join("out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(args(&out))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // SIGKILL once the first output is in place (or after the run, if it was
    // quicker than this loop).
    let finished = || -> Vec<std::path::PathBuf> {
        let mut done = Vec::new();
        walk(&out, |p| {
            if p.to_string_lossy().ends_with(".dedup.jsonl") {
                done.push(p.to_owned());
            }
            true
        });
        done
    };
    while finished().is_empty() && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let _ = child.kill();
    let killed = !child.wait().unwrap().success();
    let inodes: Vec<(std::path::PathBuf, u64)> = finished()
        .into_iter()
        .map(|p| {
            let ino = fs::metadata(&p).unwrap().ino();
            (p, ino)
        })
        .collect();
    println!("killed: {killed}; {} outputs in place", inodes.len());
    let mut again = args(&out);
    again.push("-r".into());
    ok(&webdedup_fault(&again, None));
    assert_eq!(tree(&out), tree(&want), "killed: {killed}");
    // The outputs finished before the kill were not written again.
    for (p, ino) in inodes {
        assert_eq!(fs::metadata(&p).unwrap().ino(), ino, "{}", p.display());
    }
}
