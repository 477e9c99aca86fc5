//! The naive baseline of exact paragraph dedup: the loop anyone would write first,
//! with none of webdedup's rules (no documents, no short-paragraph rule, no
//! normalization beyond ASCII lowercase, no outputs). It reads vertical files
//! whole, walks their lines with memchr, joins each `<p>`'s tokens lowercased,
//! hashes the paragraph with xxh3 and asks a hash set whether it was seen.
//! `bench/all.sh` times it beside `webdedup dedup -t 1` on the same files, so
//! the exact mode's cost is tracked as a ratio to this loop.
//!
//! Usage: naive_loop FILE...   (prints paragraphs and repeats, to keep the work)

use memchr::memchr;
use rustc_hash::FxHashSet;
use xxhash_rust::xxh3::xxh3_64;

fn main() -> std::io::Result<()> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: naive_loop FILE...");
        std::process::exit(2);
    }
    let mut seen: FxHashSet<u64> = FxHashSet::default();
    let (mut paragraphs, mut repeats) = (0u64, 0u64);
    let mut para: Vec<u8> = Vec::new();
    let mut inside = false;
    for f in &files {
        let data = std::fs::read(f)?;
        let mut rest = &data[..];
        while !rest.is_empty() {
            let end = memchr(b'\n', rest).unwrap_or(rest.len());
            let line = &rest[..end];
            rest = &rest[(end + 1).min(rest.len())..];
            if line.starts_with(b"<p") {
                inside = true;
                para.clear();
            } else if line.starts_with(b"</p") {
                inside = false;
                paragraphs += 1;
                if !seen.insert(xxh3_64(&para)) {
                    repeats += 1;
                }
            } else if inside && !line.starts_with(b"<") {
                let token = line.split(|&b| b == b'\t').next().unwrap_or(line);
                para.extend(token.iter().map(u8::to_ascii_lowercase));
                para.push(b' ');
            }
        }
    }
    println!("{paragraphs} paragraphs, {repeats} repeats");
    Ok(())
}
