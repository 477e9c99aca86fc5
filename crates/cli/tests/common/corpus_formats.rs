//! The JSON Lines sample in the other formats users keep corpora in: Parquet in
//! FineWeb's layout (written by the `parquet` crate, as users' tools write it) and
//! Common Crawl WET. Tests build their inputs with these; the shipped
//! `sample/web3-mini-parquet` and `sample/web3-mini-wet` were made by them too.

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::fs;
use std::path::Path;
use std::sync::Arc;

/// The documents of a JSON Lines file (gzip, zstd or plain): every line parsed.
pub fn jsonl_docs(path: &Path) -> Vec<serde_json::Value> {
    String::from_utf8(super::decompress(&fs::read(path).unwrap()))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The FineWeb-like schema (with a number column, which must come through
/// unchanged too).
pub fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("text", DataType::Utf8, true),
        Field::new("id", DataType::Utf8, false),
        Field::new("url", DataType::Utf8, true),
        Field::new("title", DataType::Utf8, true),
        Field::new("language", DataType::Utf8, true),
        Field::new("n", DataType::Int64, false),
    ]))
}

/// Writes `docs` (dolma-layout JSON values) as Parquet: row groups of `group`
/// rows, `codec` pages.
pub fn write_parquet(docs: &[serde_json::Value], path: &Path, group: usize, codec: Compression) {
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

/// Every row of a Parquet file: its schema and each row's values as text.
pub fn parquet_rows(path: &Path) -> (Arc<Schema>, Vec<Vec<Option<String>>>) {
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

/// A WARC record: header lines (without `Content-Length`), then the block.
pub fn warc_record(headers: &[(&str, String)], block: &[u8]) -> Vec<u8> {
    let mut r = b"WARC/1.0\r\n".to_vec();
    for (k, v) in headers {
        r.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", block.len()).as_bytes());
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

/// Common Crawl's WET layout: a `warcinfo` record, then a `conversion` record a
/// document (its text the block, its id in `WARC-Record-ID`). Each record its
/// own gzip member with `gz`, as Common Crawl writes them.
pub fn wet_file(docs: &[serde_json::Value], gz: bool) -> Vec<u8> {
    let mut records = vec![warc_record(
        &[
            ("WARC-Type", "warcinfo".into()),
            ("WARC-Date", "2024-08-01T00:00:00Z".into()),
            ("WARC-Record-ID", "<urn:uuid:info>".into()),
            ("Content-Type", "application/warc-fields".into()),
        ],
        b"software: webdedup tests\r\n",
    )];
    for d in docs {
        let text = d["text"].as_str().unwrap().as_bytes();
        records.push(warc_record(
            &[
                ("WARC-Type", "conversion".into()),
                (
                    "WARC-Target-URI",
                    d["metadata"]["url"].as_str().unwrap().into(),
                ),
                ("WARC-Date", "2024-08-01T00:00:00Z".into()),
                (
                    "WARC-Record-ID",
                    format!("<urn:test:{}>", d["id"].as_str().unwrap()),
                ),
                (
                    "WARC-Block-Digest",
                    webdedup_formats::warc_out::sha1_base32(text),
                ),
                ("Content-Type", "text/plain".into()),
            ],
            text,
        ));
    }
    records
        .iter()
        .flat_map(|r| if gz { super::gzip(r) } else { r.clone() })
        .collect()
}

/// How many gzip members `data` holds (each decoded to its end in turn).
pub fn gzip_members(mut data: &[u8]) -> usize {
    let mut n = 0;
    while !data.is_empty() {
        let mut d = flate2::bufread::GzDecoder::new(data);
        std::io::copy(&mut d, &mut std::io::sink()).unwrap();
        data = d.into_inner();
        n += 1;
    }
    n
}
