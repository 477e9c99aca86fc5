//! Writes a synthetic fingerprint file for benchmarking `webdedup similar`.
//!
//! `cargo run --release -p webdedup-simhash --example make_fps -- N FILE [K]`
//!
//! N documents in the TSV that `webdedup simhash` writes (settings header, then
//! `ID HEX SIGNED P1 P2 P3 P4`), ids `https://example.org/doc/I`: random 64-bit
//! fingerprints, of which the last 1% are planted near neighbours (1..=K bits, default
//! 3, away from one of the first 1%), as `search_bench` makes them. Same N, same file.
mod common;

use common::planted_fingerprints;
use std::io::{BufWriter, Write};
use webdedup_simhash::core::{parts, to_signed};
use webdedup_simhash::fingerprints::FP_HEADER_PREFIX;
use webdedup_simhash::tokenize::Settings;

fn main() -> std::io::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).map_or(10_000_000, |s| s.parse().expect("N"));
    let path = a.get(2).expect("usage: make_fps N FILE [K]");
    let k: u64 = a.get(3).map_or(3, |s| s.parse().expect("K"));
    let mut s = 42u64;
    let v = planted_fingerprints(n, k, &mut s);
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    writeln!(w, "{FP_HEADER_PREFIX}{}", Settings::default().describe())?;
    for (i, &fp) in v.iter().enumerate() {
        let p = parts(fp);
        writeln!(
            w,
            "https://example.org/doc/{i}\t{fp:016x}\t{}\t{}\t{}\t{}\t{}",
            to_signed(fp),
            p[0],
            p[1],
            p[2],
            p[3]
        )?;
    }
    w.flush()
}
