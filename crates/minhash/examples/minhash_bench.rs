//! Signature + banding speed per thread, on documents held in memory.
//!
//! `cargo run --release -p webdedup-minhash --example minhash_bench -- [--params 'SETTINGS'] FILES...`
//!
//! Reads the documents of FILES (verticals, JSON Lines, Parquet, WET: the project's
//! one reader, as whole texts), then on ONE thread: shingles only (normalization +
//! shingle hashes), signatures, signatures + band keys, and classic k-permutation
//! MinHash for comparison. Prints MB/s of
//! document text (UTF-8 bytes) by wall clock and by the thread's CPU time (the
//! machine is shared: CPU time is what one core gives). Last, "in-memory
//! pipeline": read the files again (decompress, parse), sign, band and decide
//! every document against a hash map of the kept documents' band keys, on one
//! thread: a per-core figure to set beside datatrove's CPU time.
use std::path::Path;
use std::time::Instant;
use webdedup_formats::chunk::DEFAULT_MAX_LINE_BYTES;
use webdedup_formats::problems::Problems;
use webdedup_formats::read::ReadSettings;
use webdedup_formats::texts::{read_file_texts, Text};
use webdedup_minhash::reference::Classic;
use webdedup_minhash::{MinHasher, Params, Shingler};
use webdedup_study::load_docs;

fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn timed(name: &str, mb: f64, reps: usize, mut f: impl FnMut() -> u64) {
    let mut best_cpu = f64::MAX;
    let mut best_wall = f64::MAX;
    let mut check = 0;
    for _ in 0..reps {
        let (w, c) = (Instant::now(), cpu_seconds());
        check = f();
        best_cpu = best_cpu.min(cpu_seconds() - c);
        best_wall = best_wall.min(w.elapsed().as_secs_f64());
    }
    println!(
        "{name}: cpu_mb_per_s={:.1} wall_mb_per_s={:.1} (best of {reps}; check {check:016x})",
        mb / best_cpu,
        mb / best_wall
    );
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut params = Params::default();
    let mut reps = 3;
    while args.first().is_some_and(|a| a.starts_with("--")) {
        let a = args.remove(0);
        let v = args.remove(0);
        match a.as_str() {
            "--params" => params = Params::parse(&v).unwrap(),
            "--reps" => reps = v.parse().unwrap(),
            _ => panic!("unknown option {a}"),
        }
    }
    let t = Instant::now();
    let texts: Vec<String> = load_docs(&args).into_iter().map(|d| d.text).collect();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let mb = bytes as f64 / 1e6;
    println!(
        "read docs={} text_mb={mb:.1} read_seconds={:.2}; {}; threshold {:.3}",
        texts.len(),
        t.elapsed().as_secs_f64(),
        params.describe(),
        params.banding().threshold()
    );
    let mut shingler = Shingler::new(params.shingling, params.norm);
    timed("shingles only", mb, reps, || {
        let mut x = 0u64;
        for s in &texts {
            shingler.for_each(s.as_bytes(), |h| x ^= h);
        }
        x
    });
    let mut m = MinHasher::new(params).unwrap();
    timed("signatures", mb, reps, || {
        let mut x = 0u64;
        for s in &texts {
            if let Some(sig) = m.signature(s.as_bytes()) {
                x = x.rotate_left(1) ^ sig[0] as u64;
            }
        }
        x
    });
    let mut keys = Vec::new();
    timed("signatures + band keys", mb, reps, || {
        let mut x = 0u64;
        for s in &texts {
            keys.clear();
            m.signature_and_keys(s.as_bytes(), &mut keys);
            for k in &keys {
                x ^= k;
            }
        }
        x
    });
    {
        let (w, c) = (Instant::now(), cpu_seconds());
        let mut owner: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
        let (mut docs, mut dropped) = (0u32, 0u32);
        let mut keys = Vec::new();
        let (read, problems) = (ReadSettings::default(), Problems::new(false));
        for f in &args {
            read_file_texts(
                Path::new(f),
                &read,
                DEFAULT_MAX_LINE_BYTES,
                &problems,
                &mut |t| {
                    if let Text::Doc { text, .. } = t {
                        keys.clear();
                        m.signature_and_keys(text.as_bytes(), &mut keys);
                        if keys.iter().any(|k| owner.contains_key(k)) {
                            dropped += 1;
                        } else {
                            for &k in &keys {
                                owner.entry(k).or_insert(docs);
                            }
                        }
                        docs += 1;
                    }
                },
            );
        }
        println!(
            "in-memory pipeline (read + signatures + bands + decisions, no verification): docs={docs} dropped={dropped} cpu_s={:.2} wall_s={:.2}",
            cpu_seconds() - c,
            w.elapsed().as_secs_f64()
        );
    }
    let classic = Classic::new(params.hashes);
    let mut hashes = Vec::new();
    timed(
        "classic k-permutation signatures (reference)",
        mb,
        1,
        || {
            let mut x = 0u64;
            for s in &texts {
                hashes.clear();
                shingler.for_each(s.as_bytes(), |h| hashes.push(h));
                if let Some(sig) = classic.signature(hashes.iter().copied()) {
                    x = x.rotate_left(1) ^ sig[0] as u64;
                }
            }
            x
        },
    );
}
