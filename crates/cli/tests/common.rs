//! Helpers shared by the CLI tests: run the real `webdedup` binary.

#![allow(dead_code)]

#[path = "common/corpus_formats.rs"]
pub mod corpus_formats;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn webdedup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(args)
        .output()
        .expect("run webdedup")
}

pub fn dedup(input: &Path, output: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "dedup",
        "-i",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "-q",
    ];
    args.extend_from_slice(extra);
    webdedup(&args)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn read(p: impl AsRef<Path>) -> String {
    let p = p.as_ref();
    String::from_utf8(std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display())))
        .unwrap()
}

/// The sample shipped in the repository.
pub fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini")
}

/// Every file under `dir`, relative path -> bytes, sorted.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The JSON Lines sample shipped in the repository (the same documents as
/// `sample_dir()`, converted by `webdedup to-jsonl`).
pub fn jsonl_sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini-jsonl")
}

/// Decompresses gzip or zstd (by magic), or returns plain bytes as they are.
pub fn decompress(data: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    if data.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(data)
            .read_to_end(&mut out)
            .unwrap();
    } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        out = zstd::decode_all(data).unwrap();
    } else {
        out = data.to_vec();
    }
    out
}

/// The Parquet sample shipped in the repository (the JSON Lines sample in
/// FineWeb's layout, written by `common::corpus_formats::write_parquet`).
pub fn parquet_sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini-parquet")
}

/// The WET sample shipped in the repository (the JSON Lines sample as Common
/// Crawl WET files, written by `common::corpus_formats::wet_file`).
pub fn wet_sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini-wet")
}

/// A loopback port no other test of this process was given: the kernel's pick,
/// retried when it repeats one handed out before (the kernel may give a port again
/// once its probe socket is closed, and tests run in parallel threads).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap();
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// One crawl of the shipped vertical sample, decompressed, and the byte offset of
/// each `<doc ` line in it (for tests that cut a few documents out).
pub fn sample_crawl_docs(crawl: &str) -> (Vec<u8>, Vec<usize>) {
    let gz = std::fs::read(sample_dir().join(crawl).join("part-00000.vert.gz")).unwrap();
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let starts = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"<doc ") && (i == 0 || text[i - 1] == b'\n'))
        .collect();
    (text, starts)
}

/// A WARC response record (uncompressed).
pub fn warc_response(uri: &str, date: &str, body: &str) -> Vec<u8> {
    let block = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{body}");
    format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n\
         WARC-Record-ID: <urn:uuid:{uri}>\r\nContent-Type: application/http; msgtype=response\r\n\
         Content-Length: {}\r\n\r\n{block}\r\n\r\n",
        block.len()
    )
    .into_bytes()
}
