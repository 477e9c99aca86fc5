//! The Parquet and WET samples shipped in `sample/` hold exactly the documents of
//! the JSON Lines sample (which `formats.rs` checks against the verticals), so the
//! README's examples on them show the same decisions.
//!
//! To (re)write them after the JSON Lines sample changed:
//! `WEBDEDUP_WRITE_SAMPLES=1 cargo test -p webdedup --test shipped_samples -- --test-threads 1`
//! (one thread: the decisions test reads what the others write).

mod common;

use common::corpus_formats::{gzip_members, jsonl_docs, parquet_rows, wet_file, write_parquet};
use common::*;
use parquet::basic::{Compression, ZstdLevel};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// Row groups of the shipped Parquet files: small enough that a file has several.
const ROW_GROUP: usize = 64;

fn writing() -> bool {
    std::env::var_os("WEBDEDUP_WRITE_SAMPLES").is_some()
}

fn jsonl_files() -> Vec<String> {
    let names: Vec<String> = tree(&jsonl_sample_dir())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(
        names.len() >= 3,
        "the JSON Lines sample has one file a crawl"
    );
    names
}

/// For each file of the JSON Lines sample: its documents and the path of its
/// conversion in `dir` (the name ending in `ext`), which `write` writes first
/// when the samples are being rewritten.
fn conversions(
    dir: PathBuf,
    ext: &str,
    write: impl Fn(&[Value], &Path),
) -> Vec<(Vec<Value>, PathBuf)> {
    let mut all = Vec::new();
    for name in jsonl_files() {
        let docs = jsonl_docs(&jsonl_sample_dir().join(&name));
        let path = dir.join(name.replace(".jsonl.gz", ext));
        if writing() {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            write(&docs, &path);
        }
        all.push((docs, path));
    }
    all
}

#[test]
fn the_parquet_sample_holds_the_jsonl_sample_row_for_row() {
    let write = |docs: &[Value], path: &Path| {
        let codec = Compression::ZSTD(ZstdLevel::try_new(9).unwrap());
        write_parquet(docs, path, ROW_GROUP, codec);
    };
    for (docs, path) in conversions(parquet_sample_dir(), ".parquet", write) {
        let (schema, rows) = parquet_rows(&path);
        let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(columns, ["text", "id", "url", "title", "language", "n"]);
        assert_eq!(rows.len(), docs.len(), "{}", path.display());
        for (i, (row, doc)) in rows.iter().zip(&docs).enumerate() {
            let want = [
                doc["text"].as_str(),
                doc["id"].as_str(),
                doc["metadata"]["url"].as_str(),
                doc["metadata"]["title"].as_str(),
                doc["metadata"]["lang"].as_str(),
            ]
            .map(|v| v.map(str::to_owned));
            assert_eq!(row[..5], want, "{}: row {i}", path.display());
            assert_eq!(row[5].as_deref(), Some(i.to_string().as_str()));
        }
    }
}

#[test]
fn the_wet_sample_holds_the_jsonl_sample_record_for_record() {
    let write = |docs: &[Value], path: &Path| fs::write(path, wet_file(docs, true)).unwrap();
    for (docs, path) in conversions(wet_sample_dir(), ".warc.wet.gz", write) {
        let shipped = fs::read(&path).unwrap();
        // One gzip member a record, as Common Crawl writes WET files.
        assert_eq!(
            decompress(&shipped),
            decompress(&wet_file(&docs, true)),
            "{}",
            path.display()
        );
        assert_eq!(
            gzip_members(&shipped),
            docs.len() + 1,
            "{}: a gzip member a record",
            path.display()
        );
    }
}

#[test]
fn the_three_samples_give_the_same_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let figures = |input: &Path, name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let o = dedup(input, &out, &[&["--json", "-"], extra].concat());
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let f = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{name}: no {k}"));
        [
            f("documents_read"),
            f("documents_kept"),
            f("documents_dropped"),
            f("paragraphs_retained"),
        ]
    };
    let jsonl = figures(&jsonl_sample_dir(), "jsonl", &[]);
    assert!(
        jsonl[2] > 0,
        "the sample has duplicate documents: {jsonl:?}"
    );
    assert_eq!(figures(&parquet_sample_dir(), "parquet", &[]), jsonl);
    // WET has no titles, so no URL+title key: the JSON Lines run without titles.
    let untitled = figures(
        &jsonl_sample_dir(),
        "jsonl-untitled",
        &["--title-field", "no.such.field"],
    );
    assert_eq!(figures(&wet_sample_dir(), "wet", &[]), untitled);
}

/// `simhash` reads the three samples with the readers `dedup` uses: the same
/// documents in the same order give the same fingerprints, the ids come from the
/// id field / column and the WARC-Record-ID. `similar --dedup` refuses Parquet (a
/// row has no bytes of its own to copy) and says who rewrites it.
#[test]
fn simhash_fingerprints_the_three_samples_alike() {
    let fingerprints = |input: &Path| {
        let o = webdedup(&["simhash", "-q", input.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", input.display(), stderr(&o));
        assert!(stderr(&o).is_empty(), "no problems: {}", stderr(&o));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let mut cols = l.split('\t');
                let id = cols.next().unwrap().to_string();
                (id, cols.next().unwrap().to_string())
            })
            .collect::<Vec<_>>()
    };
    let jsonl = fingerprints(&jsonl_sample_dir());
    let parquet = fingerprints(&parquet_sample_dir());
    let wet = fingerprints(&wet_sample_dir());
    assert!(jsonl.len() > 100, "{} documents", jsonl.len());
    assert_eq!(
        parquet, jsonl,
        "Parquet: same ids (the id column), same fingerprints"
    );
    assert_eq!(wet.len(), jsonl.len());
    for ((wid, wfp), (jid, jfp)) in wet.iter().zip(&jsonl) {
        assert_eq!(wfp, jfp, "WET record {wid} against {jid}");
        assert!(
            wid.starts_with("<urn:") && wid.contains(jid.as_str()),
            "a WET document is named by its WARC-Record-ID: {wid} ({jid})"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let parquet = parquet_sample_dir();
    let o = webdedup(&[
        "similar",
        "-k",
        "3",
        "--dedup",
        "--output-dir",
        s(&out),
        s(&parquet),
    ]);
    assert_fails_saying(&o, 2, ".parquet: --dedup writes");
    assert_says(&o, "webdedup minhash");
    // Pairs are found in Parquet as in JSON Lines.
    let pairs = |input: &Path| {
        let o = webdedup(&["similar", "-k", "3", "-q", s(input)]);
        ok(&o);
        o.stdout
    };
    assert_eq!(pairs(&parquet_sample_dir()), pairs(&jsonl_sample_dir()));
}
