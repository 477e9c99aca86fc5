//! Parquet and WET through `webdedup dedup`, and `--mark` for every format: the
//! same decisions as the vertical and JSON Lines samples (exact and near), Parquet
//! outputs with the input's schema and row order, WET outputs with correct
//! `Content-Length`s, bad input (a missing column, a damaged page, a truncated
//! record) reported with its row or offset and passed through, and attributes
//! files whose spans give the dedup output back.
//!
//! Parquet files are written here by the `parquet` crate from the JSON Lines
//! sample (the FineWeb layout of `../shared/corpus/web3-parquet`), WET files from
//! the same documents (a `conversion` record each).

mod common;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(o: &std::process::Output) {
    assert!(o.status.success(), "{:?}: {}", o.status, stderr(o));
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap()
}

/// (id, status) of every `.dd` line under `out`, files in sorted order.
fn dd_entries(out: &Path) -> Vec<(String, String)> {
    let attr = |line: &str, name: &str| {
        let key = format!(" {name}=\"");
        let i = line
            .find(&key)
            .unwrap_or_else(|| panic!("{name} in {line}"))
            + key.len();
        line[i..i + line[i..].find('"').unwrap()].to_string()
    };
    tree(out)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".dd"))
        .flat_map(|(_, bytes)| {
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(|l| (attr(l, "id"), attr(l, "status")))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The documents of a JSON Lines file (decompressed): every line parsed.
fn jsonl_docs(path: &Path) -> Vec<serde_json::Value> {
    String::from_utf8(decompress(&fs::read(path).unwrap()))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The FineWeb-like schema of the test files (with a number column, which
/// must come through unchanged too).
fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("text", DataType::Utf8, true),
        Field::new("id", DataType::Utf8, false),
        Field::new("url", DataType::Utf8, true),
        Field::new("title", DataType::Utf8, true),
        Field::new("language", DataType::Utf8, true),
        Field::new("n", DataType::Int64, false),
    ]))
}

/// Writes `docs` as Parquet: row groups of `group` rows, `codec` pages.
fn write_parquet(docs: &[serde_json::Value], path: &Path, group: usize, codec: Compression) {
    let col = |f: &dyn Fn(&serde_json::Value) -> Option<String>| -> ArrayRef {
        Arc::new(StringArray::from(docs.iter().map(f).collect::<Vec<_>>()))
    };
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            col(&|d| d["text"].as_str().map(str::to_owned)),
            col(&|d| d["id"].as_str().map(str::to_owned)),
            col(&|d| d["metadata"]["url"].as_str().map(str::to_owned)),
            col(&|d| d["metadata"]["title"].as_str().map(str::to_owned)),
            col(&|d| d["metadata"]["lang"].as_str().map(str::to_owned)),
            Arc::new(Int64Array::from_iter_values(0..docs.len() as i64)),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_row_count(Some(group))
        .build();
    let mut w =
        ArrowWriter::try_new(fs::File::create(path).unwrap(), schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// The Parquet version of the JSON Lines sample, file for file, under `dir`.
fn parquet_sample(dir: &Path, group: usize) {
    for (name, _) in tree(&jsonl_sample_dir()) {
        let docs = jsonl_docs(&jsonl_sample_dir().join(&name));
        let out = dir.join(name.replace(".jsonl.gz", ".parquet"));
        fs::create_dir_all(out.parent().unwrap()).unwrap();
        write_parquet(&docs, &out, group, Compression::SNAPPY);
    }
}

/// Every row of a Parquet file: its schema and each row's values as text.
fn parquet_rows(path: &Path) -> (Arc<Schema>, Vec<Vec<Option<String>>>) {
    let b = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(path).unwrap()).unwrap();
    let schema = b.schema().clone();
    let mut rows = Vec::new();
    for batch in b.build().unwrap() {
        let batch = batch.unwrap();
        for r in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| {
                        if c.is_null(r) {
                            None
                        } else if let Some(a) = c.as_any().downcast_ref::<StringArray>() {
                            Some(a.value(r).to_string())
                        } else {
                            let a = c.as_any().downcast_ref::<Int64Array>().unwrap();
                            Some(a.value(r).to_string())
                        }
                    })
                    .collect(),
            );
        }
    }
    (schema, rows)
}

#[test]
fn parquet_decides_as_jsonl_and_verticals_and_keeps_schema_and_row_order() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pq = t.join("pq");
    parquet_sample(&pq, 50);
    for (mode, extra) in [("exact", &[][..]), ("near", &["-n"][..])] {
        let (jo, po, vo) = (
            t.join(format!("j-{mode}")),
            t.join(format!("p-{mode}")),
            t.join(format!("v-{mode}")),
        );
        let (jj, pj, vj) = (
            t.join(format!("j-{mode}.json")),
            t.join(format!("p-{mode}.json")),
            t.join(format!("v-{mode}.json")),
        );
        ok(&dedup(
            &jsonl_sample_dir(),
            &jo,
            &[&["--dd", "--json", s(&jj)], extra].concat(),
        ));
        ok(&dedup(
            &pq,
            &po,
            &[&["--dd", "--json", s(&pj), "-t", "2"], extra].concat(),
        ));
        ok(&dedup(
            &sample_dir(),
            &vo,
            &[&["--dd", "--json", s(&vj)], extra].concat(),
        ));
        // Same documents kept and dropped, same paragraphs kept per document.
        let (j, p) = (dd_entries(&jo), dd_entries(&po));
        assert_eq!(j.len(), 380);
        assert_eq!(j, p, "{mode}");
        let (j, p, v) = (json(&jj), json(&pj), json(&vj));
        for field in [
            "documents_read",
            "documents_kept_whole",
            "documents_kept_partly",
            "documents_dropped_duplicate",
            "documents_dropped_all_paragraphs",
            "paragraphs_read",
            "paragraphs_retained",
            "keys_stored",
        ] {
            assert_eq!(j[field], p[field], "{mode}: {field}");
            assert_eq!(v[field], p[field], "{mode}: {field} (verticals)");
        }
        assert!(p["paragraphs_retained"].as_u64() < p["paragraphs_read"].as_u64());
    }

    // The output: the input's schema, the kept rows in input order, their text
    // the JSON Lines output's text, every other column as read.
    let (jo, po) = (t.join("j-exact"), t.join("p-exact"));
    for (name, _) in tree(&pq) {
        let input = pq.join(&name);
        let output = po.join(format!("{name}.dedup"));
        let (in_schema, in_rows) = parquet_rows(&input);
        let (out_schema, out_rows) = parquet_rows(&output);
        assert_eq!(in_schema, out_schema, "{name}");
        let jname = name.replace(".parquet", ".jsonl.dedup.gz");
        let kept: Vec<serde_json::Value> = jsonl_docs(&jo.join(jname));
        assert!(kept.len() > 50);
        assert_eq!(out_rows.len(), kept.len(), "{name}");
        let by_id: HashMap<&str, &Vec<Option<String>>> = in_rows
            .iter()
            .map(|r| (r[1].as_deref().unwrap(), r))
            .collect();
        let mut last_n = -1i64;
        for (row, doc) in out_rows.iter().zip(&kept) {
            assert_eq!(row[1].as_deref(), doc["id"].as_str(), "row order");
            assert_eq!(row[0].as_deref(), doc["text"].as_str(), "text");
            let orig = by_id[row[1].as_deref().unwrap()];
            assert_eq!(&row[1..], &orig[1..], "other columns unchanged");
            let n: i64 = row[5].as_deref().unwrap().parse().unwrap();
            assert!(n > last_n);
            last_n = n;
        }
    }

    // Outputs do not depend on threads or on how row groups are cut.
    let other = t.join("p-other");
    ok(&dedup(
        &pq,
        &other,
        &["--dd", "-t", "3", "--chunk-bytes", "20000"],
    ));
    let one = t.join("p-one");
    ok(&dedup(
        &pq,
        &one,
        &["--dd", "-t", "1", "--chunk-bytes", "20000"],
    ));
    assert!(
        tree(&other) == tree(&one),
        "outputs differ between thread counts"
    );
    assert_eq!(dd_entries(&other), dd_entries(&po));
}

#[test]
fn parquet_bad_input_is_reported_with_its_rows_and_passed_through() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let docs = jsonl_docs(&jsonl_sample_dir().join("cc-2023-14/part-00000.jsonl.gz"));
    let docs = &docs[..40];
    let dir = t.join("in");
    fs::create_dir_all(&dir).unwrap();

    // No column `text`: every row is a bad record, reported with its row.
    let no_text = dir.join("a.parquet");
    write_parquet(docs, &no_text, 16, Compression::UNCOMPRESSED);
    let out = t.join("out-a");
    let o = dedup(&no_text, &out, &["--text-field", "body", "--dd"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let f = no_text.display();
    assert!(
        err.contains(&format!(
            "{f}:row 1: no column 'body': record passed through unchanged"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{f}:row 17: no column 'body'")),
        "{err}"
    );
    let (_, in_rows) = parquet_rows(&no_text);
    let (_, out_rows) = parquet_rows(&out.join("a.parquet.dedup"));
    assert_eq!(in_rows, out_rows, "bad rows pass through");
    let out = t.join("out-a2");
    let o = dedup(
        &no_text,
        &out,
        &["--text-field", "body", "--drop-bad-records"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(parquet_rows(&out.join("a.parquet.dedup")).1.len(), 0);

    // A damaged page in the second row group: its rows are reported, the other
    // row groups deduplicated; the damaged row group is copied as stored.
    let damaged = dir.join("b.parquet");
    write_parquet(docs, &damaged, 16, Compression::UNCOMPRESSED);
    let meta = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(&damaged).unwrap())
        .unwrap()
        .metadata()
        .clone();
    let text_chunk = meta.row_group(1).column(0);
    let at = text_chunk.data_page_offset() as usize;
    let mut bytes = fs::read(&damaged).unwrap();
    for b in &mut bytes[at..at + 12] {
        *b = 0xff;
    }
    fs::write(&damaged, &bytes).unwrap();
    let out = t.join("out-b");
    let stats = t.join("b.json");
    let o = dedup(&damaged, &out, &["--json", s(&stats)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}:row 17: row group 1 (rows 17-32) cannot be decoded",
            damaged.display()
        )),
        "{err}"
    );
    assert!(err.contains("copied to the output as stored"), "{err}");
    let st = json(&stats);
    assert_eq!(st["documents_read"], 24, "rows 1-16 and 33-40 are read");
    assert_eq!(st["bad_records"], 16);
    let written = ParquetRecordBatchReaderBuilder::try_new(
        fs::File::open(out.join("b.parquet.dedup")).unwrap(),
    )
    .unwrap()
    .metadata()
    .clone();
    assert_eq!(written.num_row_groups(), 3);
    assert_eq!(written.row_group(1).num_rows(), 16);

    // Not Parquet at all (a damaged footer): the file is unreadable, the run
    // goes on.
    let torn = dir.join("c.parquet");
    fs::write(&torn, &bytes[..bytes.len() - 20]).unwrap();
    let out = t.join("out-c");
    let o = dedup(&dir, &out, &["--input-format", "parquet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{}: cannot read", torn.display())));
    assert!(out.join("a.parquet.dedup").exists());
}
