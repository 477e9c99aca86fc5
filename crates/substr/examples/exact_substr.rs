//! ExactSubstr's rule over a corpus, for the benchmarks: prints every struck
//! span as `DOC\tSTART\tEND` (the document's number in input order, byte offsets
//! in its text) and can write the same texts as ExactSubstr's tool reads them,
//! to compare the two (bench/substr_peer.sh).
//!
//! ```text
//! exact_substr [--length L] [--keep-first] [--max-memory MB]
//!              [--peer-data FILE] INPUT...
//! ```
//!
//! `--peer-data FILE` writes the texts as their `load_dataset_hf.py` does
//! (before each text `\xff\xff` and its number from 1, 4 bytes little-endian)
//! and `FILE.starts`, one line a document: where its text starts in FILE and its
//! length.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;
use webdedup_formats::problems::Problems;
use webdedup_substr::run::{find, input_files, Reading};
use webdedup_substr::sarray::BYTES_PER_SHARD_BYTE;
use webdedup_substr::{Keep, Settings};

fn main() {
    let mut settings = Settings::default();
    let mut peer: Option<PathBuf> = None;
    let mut inputs = Vec::new();
    let mut args = std::env::args().skip(1);
    let number = |v: Option<String>, flag: &str| -> usize {
        v.and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            eprintln!("exact_substr: {flag} takes a number");
            std::process::exit(2)
        })
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--length" => settings.length = number(args.next(), "--length").max(1),
            "--keep-first" => settings.keep = Keep::First,
            "--max-memory" => {
                settings.shard_bytes =
                    number(args.next(), "--max-memory").max(1) * (1 << 20) / BYTES_PER_SHARD_BYTE
            }
            "--peer-data" => peer = args.next().map(PathBuf::from),
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    let files = input_files(&inputs).unwrap_or_else(|e| fail(&e.to_string()));
    let reading = Reading::default();
    let started = Instant::now();
    let found = find(&files, &reading, &settings, false, &Problems::new(false))
        .unwrap_or_else(|e| fail(&e.to_string()));
    eprintln!(
        "exact_substr: {} documents, {} bytes of text, {} spans, {} bytes struck, {:.2} s",
        found.docs.len(),
        found.text_bytes,
        found.spans(),
        found.bytes_struck(),
        started.elapsed().as_secs_f64()
    );
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (i, d) in found.docs.iter().enumerate() {
        for s in &d.spans {
            let _ = writeln!(out, "{i}\t{}\t{}", s.start, s.end);
        }
    }
    let _ = out.flush();
    if let Some(path) = peer {
        write_peer_data(&path, &files, &reading).unwrap_or_else(|e| fail(&e.to_string()));
    }
}

fn fail(why: &str) -> ! {
    eprintln!("exact_substr: error: {why}");
    std::process::exit(2)
}

/// The texts in ExactSubstr's layout, read again through the same reader.
fn write_peer_data(path: &PathBuf, files: &[PathBuf], reading: &Reading) -> std::io::Result<()> {
    let mut data = BufWriter::new(std::fs::File::create(path)?);
    let mut starts = BufWriter::new(std::fs::File::create(format!("{}.starts", path.display()))?);
    let (mut at, mut uid) = (0u64, 0u32);
    let problems = Problems::quiet();
    for f in files {
        webdedup_formats::texts::read_file_texts(
            f,
            &reading.read,
            reading.max_line_bytes,
            &problems,
            &mut |t| {
                if let webdedup_formats::texts::Text::Doc { text, .. } = t {
                    uid += 1;
                    let _ = data.write_all(b"\xff\xff");
                    let _ = data.write_all(&uid.to_le_bytes());
                    let _ = data.write_all(text.as_bytes());
                    let _ = writeln!(starts, "{}\t{}", at + 6, text.len());
                    at += 6 + text.len() as u64;
                }
            },
        );
    }
    data.flush()?;
    starts.flush()
}
