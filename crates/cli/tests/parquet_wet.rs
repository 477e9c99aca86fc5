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

use common::corpus_formats::*;
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap()
}

/// (id, status) of every `.dd` line under `out`, files in sorted order.
fn dd_entries(out: &Path) -> Vec<(String, String)> {
    dd_lines(out)
        .iter()
        .map(|l| {
            let get = |name| attr(l, name).unwrap_or_else(|| panic!("{name} in {l}"));
            (get("id"), get("status"))
        })
        .collect()
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
        let jf = dedup_figures(&jsonl_sample_dir(), &jo, extra);
        let pf = dedup_figures(&pq, &po, &[&["-t", "2"], extra].concat());
        let vf = dedup_figures(&sample_dir(), &vo, extra);
        // Same documents kept and dropped, same paragraphs kept per document.
        let (j, p) = (dd_entries(&jo), dd_entries(&po));
        assert_eq!(j.len(), 380);
        assert_eq!(j, p, "{mode}");
        for field in DECISION_FIGURES {
            assert_eq!(jf[field], pf[field], "{mode}: {field}");
            assert_eq!(vf[field], pf[field], "{mode}: {field} (verticals)");
        }
        assert!(pf["paragraphs_retained"].as_u64() < pf["paragraphs_read"].as_u64());
    }

    // The output: the input's schema, the kept rows in input order, their text
    // the JSON Lines output's text, every other column as read.
    let (jo, po) = (t.join("j-exact"), t.join("p-exact"));
    for (name, _) in tree(&pq) {
        let input = pq.join(&name);
        let output = po.join(name.replace(".parquet", ".dedup.parquet"));
        let (in_schema, in_rows) = parquet_rows(&input);
        let (out_schema, out_rows) = parquet_rows(&output);
        assert_eq!(in_schema, out_schema, "{name}");
        let jname = name.replace(".parquet", ".dedup.jsonl.gz");
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

/// The bytes of each column chunk of each row group of a Parquet file.
fn column_chunk_bytes(path: &Path) -> Vec<Vec<Vec<u8>>> {
    let bytes = fs::read(path).unwrap();
    let meta = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(path).unwrap())
        .unwrap()
        .metadata()
        .clone();
    meta.row_groups()
        .iter()
        .map(|rg| {
            rg.columns()
                .iter()
                .map(|c| {
                    let (start, len) = c.byte_range();
                    bytes[start as usize..(start + len) as usize].to_vec()
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_row_group_written_whole_and_unchanged_is_copied_as_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // Row group 0: ten documents nothing repeats. Row group 1: five of them again
    // and five new ones. Row group 2: ten new ones, one with a paragraph of row
    // group 0.
    let doc = |i: usize, text: String| {
        serde_json::json!({"id": format!("d{i}"), "text": text,
            "metadata": {"url": format!("https://example.org/{i}"), "title": format!("Page {i}"), "lang": "en"}})
    };
    // Words of letters only (loose normalization makes every digit 0).
    let name = |i: usize| -> String {
        [i / 26, i % 26]
            .map(|d| (b'a' + d as u8) as char)
            .iter()
            .collect()
    };
    let own = |i: usize| {
        let w = name(i);
        format!(
            "Document {w} opens with words of its own, written for this test alone.\n\
             Its second line, {w} again, is its own too, and long enough to count."
        )
    };
    let mut docs: Vec<serde_json::Value> = (0..10).map(|i| doc(i, own(i))).collect();
    docs.extend((10..20).map(|i| doc(i, if i % 2 == 0 { own(i - 10) } else { own(i) })));
    docs.extend((20..30).map(|i| doc(i, own(i))));
    docs[25]["text"] = format!(
        "{}\nIts second line, {} again, is its own too, and long enough to count.",
        own(25),
        name(3)
    )
    .into();
    let pq = t.join("in");
    fs::create_dir_all(&pq).unwrap();
    let input = pq.join("part.parquet");
    write_parquet(&docs, &input, 10, Compression::SNAPPY);
    let before = column_chunk_bytes(&input);
    assert_eq!(before.len(), 3);

    let out = t.join("out");
    ok(&dedup(&pq, &out, &["--dd"]));
    let output = out.join("part.dedup.parquet");
    let after = column_chunk_bytes(&output);
    assert_eq!(after.len(), 3);
    // Kept whole with its texts as read: every column chunk as stored.
    assert_eq!(after[0], before[0], "row group 0 copied as stored");
    // Rows dropped or texts cut: encoded again (fewer ids; the text column never
    // dictionary-encoded, unlike the input's).
    assert_ne!(after[1][1], before[1][1], "row group 1 encoded again");
    assert_ne!(after[2][0], before[2][0], "row group 2 encoded again");
    let (_, rows) = parquet_rows(&output);
    let ids: Vec<&str> = rows.iter().map(|r| r[1].as_deref().unwrap()).collect();
    let want: Vec<String> = (0..30)
        .filter(|i| !(10..20).contains(i) || i % 2 == 1)
        .map(|i| format!("d{i}"))
        .collect();
    assert_eq!(ids, want);
    let (_, in_rows) = parquet_rows(&input);
    assert_eq!(rows[..10], in_rows[..10]);
    assert_eq!(rows[20 - 5], in_rows[20]);
    assert_eq!(
        rows[25 - 5][0].as_deref(),
        Some(own(25).as_str()),
        "the repeated paragraph removed"
    );

    // With --mark every row group is written as read: the column chunks as stored.
    let marked = t.join("marked");
    ok(&dedup(&pq, &marked, &["--mark"]));
    assert_eq!(
        column_chunk_bytes(&marked.join("part.dedup.parquet")),
        before
    );
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
    let (_, out_rows) = parquet_rows(&out.join("a.dedup.parquet"));
    assert_eq!(in_rows, out_rows, "bad rows pass through");
    let out = t.join("out-a2");
    let o = dedup(
        &no_text,
        &out,
        &["--text-field", "body", "--drop-bad-records"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(parquet_rows(&out.join("a.dedup.parquet")).1.len(), 0);

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
        fs::File::open(out.join("b.dedup.parquet")).unwrap(),
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
    assert!(out.join("a.dedup.parquet").exists());
}

/// The records of an (uncompressed) WARC file: (header, block), checking that
/// each block is as long as its `Content-Length` says and followed by `\r\n\r\n`.
fn warc_records(mut data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let end = data.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let header = String::from_utf8(data[..end].to_vec()).unwrap();
        let len: usize = header
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let block = data[end..end + len].to_vec();
        assert_eq!(&data[end + len..end + len + 4], b"\r\n\r\n", "{header}");
        data = &data[end + len + 4..];
        out.push((header, block));
    }
    out
}

fn header<'a>(h: &'a str, name: &str) -> Option<&'a str> {
    h.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

#[test]
fn wet_records_decide_as_jsonl_and_are_written_as_valid_warc() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // One crawl a file, as WET files, gzip per record; and the same as JSON Lines
    // without titles (WET has none).
    let (wet, jl) = (t.join("wet"), t.join("jl"));
    for (name, _) in tree(&jsonl_sample_dir()) {
        let docs = jsonl_docs(&jsonl_sample_dir().join(&name));
        let w = wet.join(name.replace(".jsonl.gz", ".warc.wet.gz"));
        fs::create_dir_all(w.parent().unwrap()).unwrap();
        fs::write(&w, wet_file(&docs, true)).unwrap();
        let j = jl.join(&name);
        fs::create_dir_all(j.parent().unwrap()).unwrap();
        fs::copy(jsonl_sample_dir().join(&name), &j).unwrap();
    }
    for (mode, extra) in [("exact", &[][..]), ("near", &["-n"][..])] {
        let (wo, jo) = (t.join(format!("w-{mode}")), t.join(format!("j-{mode}")));
        ok(&dedup(&wet, &wo, &[&["--dd", "-t", "2"], extra].concat()));
        ok(&dedup(
            &jl,
            &jo,
            &[&["--dd", "--title-field", "no.such.field"], extra].concat(),
        ));
        let j = dd_entries(&jo);
        let w: Vec<(String, String)> = dd_entries(&wo)
            .into_iter()
            .map(|(id, st)| (id[13..id.len() - 4].to_string(), st)) // &lt;urn:test:ID&gt;
            .collect();
        assert_eq!(w.len(), 380, "the warcinfo records are not documents");
        assert_eq!(w, j, "{mode}");
    }
    // Each record its own gzip member; kept records with their kept text, a
    // correct Content-Length and recomputed digests; the warcinfo record as read.
    let (wo, jo) = (t.join("w-exact"), t.join("j-exact"));
    for (name, _) in tree(&jl) {
        let wname = name.replace(".jsonl.gz", ".dedup.warc.wet.gz");
        let bytes = fs::read(wo.join(&wname)).unwrap();
        let mut members = 0;
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let mut d = flate2::bufread::GzDecoder::new(rest);
            std::io::copy(&mut d, &mut std::io::sink()).unwrap();
            rest = d.into_inner();
            members += 1;
        }
        let records = warc_records(&decompress(&bytes));
        assert_eq!(members, records.len(), "one gzip member a record");
        let kept = jsonl_docs(&jo.join(name.replace(".jsonl.gz", ".dedup.jsonl.gz")));
        assert_eq!(records.len(), kept.len() + 1);
        assert_eq!(header(&records[0].0, "WARC-Type"), Some("warcinfo"));
        for ((h, block), doc) in records[1..].iter().zip(&kept) {
            let id = header(h, "WARC-Record-ID").unwrap();
            assert_eq!(&id[10..id.len() - 1], doc["id"].as_str().unwrap());
            assert_eq!(block, doc["text"].as_str().unwrap().as_bytes());
            assert_eq!(
                header(h, "WARC-Block-Digest").unwrap(),
                webdedup_formats::warc_out::sha1_base32(block)
            );
        }
    }
}

#[test]
fn a_truncated_wet_record_is_reported_with_its_offset_and_passed_through() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let docs = jsonl_docs(&jsonl_sample_dir().join("cc-2023-14/part-00000.jsonl.gz"));
    let full = wet_file(&docs[..5], false);
    let last = wet_file(&docs[4..5], false).len() - wet_file(&[], false).len();
    let cut = full.len() - last / 2;
    let dir = t.join("in");
    fs::create_dir_all(&dir).unwrap();
    let f = dir.join("a.warc.wet");
    fs::write(&f, &full[..cut]).unwrap();
    let (out, stats) = (t.join("out"), t.join("s.json"));
    let o = dedup(&dir, &out, &["--json", s(&stats), "--dd"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let offset = full.len() - last;
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}:offset {offset}: ", f.display())),
        "{err}"
    );
    assert!(err.contains("record passed through unchanged"), "{err}");
    let st = json(&stats);
    assert_eq!(st["documents_read"], 4);
    assert_eq!(st["bad_records"], 1);
    let written = fs::read(out.join("a.dedup.warc.wet")).unwrap();
    assert!(
        written.ends_with(&full[offset..cut]),
        "the truncated record is passed through as read"
    );
    assert_eq!(
        warc_records(&written[..written.len() - (cut - offset)]).len(),
        5
    );
    let out2 = t.join("out2");
    let o = dedup(&dir, &out2, &["--drop-bad-records"]);
    assert_eq!(o.status.code(), Some(1));
    let written = fs::read(out2.join("a.dedup.warc.wet")).unwrap();
    assert_eq!(warc_records(&written).len(), 5);
}

/// `--mark`'s attributes lines of every file under `out`: (id, paragraph spans,
/// document span).
type Marks = Vec<(String, Vec<(u64, u64)>, Option<(u64, u64)>)>;

fn marks(out: &Path) -> Marks {
    tree(out)
        .into_iter()
        .filter(|(n, _)| n.ends_with(".attributes.jsonl"))
        .flat_map(|(_, b)| {
            String::from_utf8(b)
                .unwrap()
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    let spans = |name: &str| -> Vec<(u64, u64)> {
                        v["attributes"][name]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|s| {
                                assert_eq!(s[2].as_f64(), Some(1.0));
                                (s[0].as_u64().unwrap(), s[1].as_u64().unwrap())
                            })
                            .collect()
                    };
                    let doc = spans("webdedup_duplicate_document");
                    assert!(doc.len() <= 1);
                    (
                        v["id"].as_str().unwrap().to_string(),
                        spans("webdedup_duplicate_paragraphs"),
                        doc.first().copied(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The lines of `text` outside the character spans `dropped`, joined again.
fn without(text: &str, dropped: &[(u64, u64)]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut kept = Vec::new();
    let mut pos = 0u64;
    for line in text.split('\n') {
        let n = line.chars().count() as u64;
        if !dropped.iter().any(|&(a, b)| a == pos && b == pos + n) {
            kept.push(line);
        }
        pos += n + 1;
    }
    assert_eq!(pos - 1, chars.len() as u64);
    kept.join("\n")
}

#[test]
fn mark_writes_inputs_unchanged_and_attributes_that_give_the_dedup_output() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (jo, jm) = (t.join("j"), t.join("jm"));
    ok(&dedup(&jsonl_sample_dir(), &jo, &["--dd"]));
    let o = dedup(&jsonl_sample_dir(), &jm, &["--dd", "--mark"]);
    ok(&o);
    // The outputs are the inputs; the decisions are the same (`.dd`).
    for (name, bytes) in tree(&jsonl_sample_dir()) {
        let out = jm.join(name.replace(".jsonl.gz", ".dedup.jsonl.gz"));
        assert_eq!(decompress(&fs::read(out).unwrap()), decompress(&bytes));
    }
    assert_eq!(dd_entries(&jo), dd_entries(&jm));
    // Removing the marked spans gives the dedup output's texts; documents dropped
    // whole have a document span over their whole text.
    let m = marks(&jm);
    assert_eq!(m.len(), 380);
    let mut kept_texts = HashMap::new();
    for (name, _) in tree(&jo).iter().filter(|(n, _)| n.ends_with(".gz")) {
        for d in jsonl_docs(&jo.join(name)) {
            kept_texts.insert(
                d["id"].as_str().unwrap().to_string(),
                d["text"].as_str().unwrap().to_string(),
            );
        }
    }
    let inputs: Vec<serde_json::Value> = tree(&jsonl_sample_dir())
        .iter()
        .flat_map(|(n, _)| jsonl_docs(&jsonl_sample_dir().join(n)))
        .collect();
    let (mut partly, mut whole) = (0, 0);
    for ((id, paras, doc), input) in m.iter().zip(&inputs) {
        assert_eq!(Some(id.as_str()), input["id"].as_str());
        let text = input["text"].as_str().unwrap();
        match (kept_texts.get(id), doc) {
            (Some(kept), None) => {
                assert_eq!(&without(text, paras), kept, "{id}");
                partly += !paras.is_empty() as u32;
            }
            (None, Some(span)) => {
                assert_eq!(*span, (0, text.chars().count() as u64), "{id}");
                whole += 1;
            }
            other => panic!("{id}: {other:?}"),
        }
    }
    assert!(partly > 100 && whole > 40, "{partly} {whole}");

    // Verticals (ids from their `id` attribute, offsets in the text `to-jsonl`
    // makes of them), Parquet and WET mark the same spans.
    let vm = t.join("vm");
    ok(&dedup(&sample_dir(), &vm, &["--mark"]));
    for (name, bytes) in tree(&sample_dir())
        .iter()
        .filter(|(n, _)| n.ends_with(".gz"))
    {
        let out = vm.join(name.replace(".vert.gz", ".vert.dedup"));
        assert_eq!(fs::read(out).unwrap(), decompress(bytes), "{name}");
    }
    assert_eq!(marks(&vm), m, "verticals");
    let pq = t.join("pq");
    parquet_sample(&pq, 64);
    let pm = t.join("pm");
    ok(&dedup(&pq, &pm, &["--mark"]));
    assert_eq!(marks(&pm), m, "parquet");
    for (name, _) in tree(&pq) {
        assert_eq!(
            parquet_rows(&pq.join(&name)),
            parquet_rows(&pm.join(name.replace(".parquet", ".dedup.parquet"))),
            "all rows as read"
        );
    }
    let wet = t.join("wet");
    for (name, _) in tree(&jsonl_sample_dir()) {
        let docs = jsonl_docs(&jsonl_sample_dir().join(&name));
        let w = wet.join(name.replace(".jsonl.gz", ".warc.wet"));
        fs::create_dir_all(w.parent().unwrap()).unwrap();
        fs::write(&w, wet_file(&docs, false)).unwrap();
    }
    let wm = t.join("wm");
    ok(&dedup(&wet, &wm, &["--mark"]));
    for (name, bytes) in tree(&wet) {
        assert_eq!(
            fs::read(wm.join(name.replace(".warc.wet", ".dedup.warc.wet"))).unwrap(),
            bytes
        );
    }
    let wmarks: Marks = marks(&wm)
        .into_iter()
        .filter_map(|(id, p, d)| {
            Some((
                id.strip_prefix("<urn:test:")?
                    .strip_suffix('>')?
                    .to_string(),
                p,
                d,
            ))
        })
        .collect();
    assert_eq!(wmarks.len(), 380);
    for (w, j) in wmarks.iter().zip(&m) {
        assert_eq!(w.0, j.0);
        // Without titles (WET has none) the decisions may differ only where a
        // URL+title repeat decided; the spans of kept documents agree.
        if w.2.is_none() && j.2.is_none() {
            assert_eq!(w.1, j.1, "{}", w.0);
        }
    }
}

/// The sample as Parquet (row groups of `group` rows) and as WET files, one crawl
/// a directory, the first `docs` documents of each sample file. Two crawls' WET
/// files are gzipped per record, the third is one zstd frame (as some mirrors
/// recompress them).
fn small_samples(t: &Path, docs: usize, group: usize) -> [(&'static str, PathBuf); 2] {
    let (pq, wet) = (t.join("pq"), t.join("wet"));
    for (name, _) in tree(&jsonl_sample_dir()) {
        let all = jsonl_docs(&jsonl_sample_dir().join(&name));
        let d = &all[..docs.min(all.len())];
        let p = pq.join(name.replace(".jsonl.gz", ".parquet"));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        write_parquet(d, &p, group, Compression::SNAPPY);
        let (w, bytes) = if name.starts_with("cc-2024-33") {
            (
                name.replace(".jsonl.gz", ".warc.wet.zst"),
                zstd::encode_all(&wet_file(d, false)[..], 3).unwrap(),
            )
        } else {
            (name.replace(".jsonl.gz", ".warc.wet.gz"), wet_file(d, true))
        };
        let w = wet.join(w);
        fs::create_dir_all(w.parent().unwrap()).unwrap();
        fs::write(&w, bytes).unwrap();
    }
    [("parquet", pq), ("wet", wet)]
}

fn batch_run(input: &Path, out: &Path, work: &Path, extra: &[&str]) -> std::process::Output {
    webdedup(
        &[
            &[
                "batch",
                "run",
                "-i",
                s(input),
                "-o",
                s(out),
                "-w",
                s(work),
                "-t",
                "2",
                "--dd",
                "--task-count",
                "3",
            ],
            extra,
        ]
        .concat(),
    )
}

#[test]
fn batch_mode_on_parquet_and_wet_equals_stream_mode_with_and_without_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (name, input) in &small_samples(t, 1000, 30) {
        let stream = t.join(format!("{name}-stream"));
        ok(&dedup(input, &stream, &["--dd"]));
        assert!(dd_entries(&stream).iter().any(|(_, st)| st == "D"));
        let batch = t.join(format!("{name}-batch"));
        ok(&batch_run(
            input,
            &batch,
            &t.join(format!("{name}-work")),
            &[],
        ));
        assert!(
            tree(&batch) == tree(&stream),
            "{name}: batch outputs differ"
        );
        if *name == "wet" {
            // The zstd WET file is read (its offsets the decompressed data's) and
            // written zstd-compressed: the bytes the same file uncompressed gives.
            let out = stream.join("cc-2024-33/part-00000.dedup.warc.wet.zst");
            let data = fs::read(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
            assert!(data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]));
            // The same files with this one decompressed: the same decisions.
            let plain_wet = t.join("plain-wet");
            for (n, bytes) in tree(input) {
                let (n, bytes) = match n.strip_suffix(".zst") {
                    Some(stem) => (stem.to_string(), zstd::decode_all(&bytes[..]).unwrap()),
                    None => (n, bytes),
                };
                fs::create_dir_all(plain_wet.join(&n).parent().unwrap()).unwrap();
                fs::write(plain_wet.join(&n), bytes).unwrap();
            }
            let plain_out = t.join("plain-wet-out");
            ok(&dedup(&plain_wet, &plain_out, &["--dd"]));
            let want = fs::read(plain_out.join("cc-2024-33/part-00000.dedup.warc.wet")).unwrap();
            assert!(zstd::decode_all(&data[..]).unwrap() == want);
            assert!(warc_records(&want).len() > 50);
        }

        // Crawl by crawl with a store: stream and batch mode (publishing at the
        // end of each run) give the same outputs and the same snapshot.
        let (s_store, b_store) = (
            t.join(format!("{name}-s-store")),
            t.join(format!("{name}-b-store")),
        );
        for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
            let s_out = t.join(format!("{name}-s-{crawl}"));
            ok(&dedup(
                &input.join(crawl),
                &s_out,
                &["--dd", "--store", s(&s_store)],
            ));
            let b_out = t.join(format!("{name}-b-{crawl}"));
            ok(&batch_run(
                &input.join(crawl),
                &b_out,
                &t.join(format!("{name}-w-{crawl}")),
                &["--store", s(&b_store)],
            ));
            assert!(
                tree(&s_out) == tree(&b_out),
                "{name} {crawl}: outputs differ"
            );
        }
        assert!(
            fs::read(s_store.join("store.snap")).unwrap()
                == fs::read(b_store.join("store.snap")).unwrap(),
            "{name}: the stores differ"
        );
    }
}

#[test]
fn feedback_on_parquet_and_wet_is_confirmed_by_check_exact_and_near() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (name, input) in &small_samples(t, 1000, 30) {
        for (mode, extra, check_extra) in [
            ("exact", &[][..], &[][..]),
            ("near", &["-n"][..], &["--near"][..]),
        ] {
            let out = t.join(format!("{name}-{mode}"));
            ok(&dedup(input, &out, &[&["-f", "--dd"], extra].concat()));
            // The same outputs as without feedback.
            let plain = t.join(format!("{name}-{mode}-plain"));
            ok(&dedup(input, &plain, &[&["--dd"], extra].concat()));
            let without_feedback: Vec<_> = tree(&out)
                .into_iter()
                .filter(|(n, _)| !n.ends_with(".dropped") && n != "files.idx")
                .collect();
            let names =
                |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            let plain_tree = tree(&plain);
            assert_eq!(
                names(&without_feedback),
                names(&plain_tree),
                "{name} {mode}"
            );
            for ((n, a), (_, b)) in without_feedback.iter().zip(&plain_tree) {
                assert!(a == b, "{name} {mode}: {n} differs");
            }
            let o = webdedup(
                &[
                    &["check", "-i", s(input), "-o", s(&out), "--json", "-"],
                    check_extra,
                ]
                .concat(),
            );
            ok(&o);
            let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(
                r["mismatches"].as_array().unwrap().len(),
                0,
                "{name} {mode}: {r}"
            );
            assert!(r["confirmed"].as_u64().unwrap() > 500, "{name} {mode}: {r}");
            if mode == "exact" {
                assert_eq!(r["confirmed"], r["checked"], "{name}: {r}");
            }
        }
    }
}

#[test]
fn a_killed_parquet_or_wet_run_restores_to_the_same_bytes_and_store() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (name, input) in &small_samples(t, 28, 5) {
        assert_restores_after_faults(
            t,
            name,
            &[
                "commit:4",
                "output-bytes:40000",
                "rename:2",
                "stop:2",
                "stop:5",
            ],
            |out, store| {
                owned(&command_args(
                    "dedup",
                    input,
                    out,
                    &["--dd", "--chunk-bytes", "30000", "--store", s(store)],
                ))
            },
        );
    }
}

/// The Parquet files the Python tests read (`python/tests/data/web3-mini-parquet`:
/// the test environment has no pyarrow): each crawl's first 20 documents of the
/// JSON Lines sample, written by the `parquet` crate in row groups of 7.
/// `WEBDEDUP_REGENERATE=1` rewrites them (after a `parquet` upgrade, say).
#[test]
fn the_python_tests_parquet_files_are_the_jsonl_sample_written_by_the_parquet_crate() {
    let tmp = tempfile::tempdir().unwrap();
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/tests/data/web3-mini-parquet");
    for (name, _) in tree(&jsonl_sample_dir()) {
        let docs = jsonl_docs(&jsonl_sample_dir().join(&name));
        let rel = name.replace(".jsonl.gz", ".parquet");
        let fresh = tmp.path().join("f.parquet");
        write_parquet(&docs[..20], &fresh, 7, Compression::SNAPPY);
        let want = fs::read(&fresh).unwrap();
        if std::env::var_os("WEBDEDUP_REGENERATE").is_some() {
            fs::create_dir_all(shipped.join(&rel).parent().unwrap()).unwrap();
            fs::write(shipped.join(&rel), &want).unwrap();
        }
        let got = fs::read(shipped.join(&rel)).unwrap_or_default();
        assert!(
            got == want,
            "{rel}: the shipped file differs from what the parquet crate writes now \
             (WEBDEDUP_REGENERATE=1 cargo test -p webdedup --test parquet_wet the_python)"
        );
    }
}

/// `--mark` on an input whose output has its compression writes the input file
/// itself, byte for byte (zstd in two frames at level 19, gzip at level 9: bytes
/// a compressor run again would not give back), plain inputs too. An input that
/// is not read as it is (a line dropped as too long, in its third chunk) is
/// written as read instead, as with `--compress none`.
#[test]
fn mark_copies_inputs_with_their_compression_and_writes_changed_ones_as_read() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let input = t.join("in");
    fs::create_dir_all(&input).unwrap();
    let line = |i: usize, text: &str| {
        format!(
            "{{\"id\":\"d{i}\",\"text\":\"{text}\\nparagraph {}\"}}\n",
            i % 3
        )
    };
    let body: String = (0..60).map(|i| line(i, "shared first line")).collect();
    let (first, second) = body.as_bytes().split_at(body.len() / 2);
    let mut zst = zstd::encode_all(first, 19).unwrap();
    zst.extend(zstd::encode_all(second, 19).unwrap());
    fs::write(input.join("a.jsonl.zst"), &zst).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(body.as_bytes()).unwrap();
    fs::write(input.join("b.jsonl.gz"), gz.finish().unwrap()).unwrap();
    fs::write(input.join("c.jsonl"), &body).unwrap();
    let long = "x".repeat(600);
    let changed: String = (0..30)
        .map(|i| line(i, if i == 20 { &long } else { "other line" }))
        .collect();
    fs::write(
        input.join("d.jsonl.zst"),
        zstd::encode_all(changed.as_bytes(), 19).unwrap(),
    )
    .unwrap();
    let args = ["--mark", "--chunk-bytes", "300", "--max-line-bytes", "500"];
    let (copied, plain) = (t.join("copied"), t.join("plain"));
    let o = dedup(&input, &copied, &args);
    assert_eq!(o.status.code(), Some(1), "the long line is reported");
    let o = dedup(
        &input,
        &plain,
        &[&args[..], &["--compress", "none"]].concat(),
    );
    assert_eq!(o.status.code(), Some(1));
    for (name, out) in [
        ("a.jsonl.zst", "a.dedup.jsonl.zst"),
        ("b.jsonl.gz", "b.dedup.jsonl.gz"),
        ("c.jsonl", "c.dedup.jsonl"),
    ] {
        assert_eq!(
            fs::read(copied.join(out)).unwrap(),
            fs::read(input.join(name)).unwrap(),
            "{name}"
        );
    }
    // d: the input without its long line, as `--compress none` writes it.
    let d = decompress(&fs::read(copied.join("d.dedup.jsonl.zst")).unwrap());
    let without_long: String = changed
        .lines()
        .filter(|l| !l.contains(&long))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(String::from_utf8(d.clone()).unwrap(), without_long);
    assert_eq!(d, fs::read(plain.join("d.dedup.jsonl")).unwrap());
    // The decisions do not depend on how the output was written.
    for name in ["a", "b", "c", "d"] {
        let attrs = format!("{name}.dedup.attributes.jsonl");
        assert_eq!(
            fs::read(copied.join(&attrs)).unwrap(),
            fs::read(plain.join(&attrs)).unwrap(),
            "{attrs}"
        );
    }
}

/// Outputs keep their format's extension (`STEM.dedup.EXT`), so `*.parquet` globs
/// and readers that go by extension find them; side files are `STEM.dedup.dd`;
/// verticals keep the KNOT seed's `REL.dedup`. `status` finds them by the same
/// names, and two inputs that would share them are refused.
#[test]
fn outputs_keep_their_formats_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = webdedup(&[
        "dedup",
        s(&parquet_sample_dir()),
        "-o",
        s(&out),
        "-q",
        "--dd",
    ]);
    ok(&o);
    let dir = out.join("cc-2023-14");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["part-00000.dedup.dd", "part-00000.dedup.parquet"]);
    let o = webdedup(&["status", s(&parquet_sample_dir()), "-o", s(&out)]);
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("3 finished"), "{shown}");
    // JSON Lines and WET: the compression after the extension.
    let o = webdedup(&[
        "dedup",
        s(&wet_sample_dir()),
        "-o",
        s(&tmp.path().join("w")),
        "-q",
    ]);
    ok(&o);
    assert!(tmp
        .path()
        .join("w/cc-2023-14/part-00000.dedup.warc.wet.gz")
        .exists());
    // Two inputs named alike but for the format share their side files: refused.
    let two = tmp.path().join("two");
    fs::create_dir_all(&two).unwrap();
    fs::write(two.join("a.jsonl"), "{\"text\":\"one\"}\n").unwrap();
    fs::write(two.join("a.jsonl.gz"), gzip(b"{\"text\":\"two\"}\n")).unwrap();
    let o = webdedup(&["dedup", s(&two), "-o", s(&tmp.path().join("t")), "-q"]);
    assert_fails_saying(&o, 2, "would both be written to");
}
