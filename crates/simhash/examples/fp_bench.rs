//! Fingerprinting speed per thread, per tokenizer, on documents held in memory.
//!
//! `cargo run --release -p webdedup-simhash --example fp_bench -- [SHINGLE] FILES...`
//!
//! Reads the documents of FILES (verticals, JSONL...), then fingerprints all their
//! texts on ONE thread with each tokenizer and prints MB/s of document text (UTF-8
//! bytes, words joined by spaces). Reading/decompression is timed separately.
use std::time::Instant;
use webdedup_simhash::tokenize::{Fingerprinter, Settings, Tokenizer, Weights};
use webdedup_study::load_docs;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let shingle: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(5);
    if args.first().is_some_and(|s| s.parse::<usize>().is_ok()) {
        args.remove(0);
    }
    let t = Instant::now();
    let texts: Vec<String> = load_docs(&args).into_iter().map(|d| d.text).collect();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let read = t.elapsed().as_secs_f64();
    println!(
        "read docs={} text_mb={:.1} read_seconds={:.2} read_mb_per_s={:.1}",
        texts.len(),
        bytes as f64 / 1e6,
        read,
        bytes as f64 / 1e6 / read
    );
    if std::env::var("FP_ONLY").is_err() {
        use unicode_segmentation::UnicodeSegmentation;
        let t = Instant::now();
        let n: usize = texts.iter().map(|s| s.unicode_words().count()).sum();
        let el = t.elapsed().as_secs_f64();
        println!(
            "unicode_words only: words={n} mb_per_s={:.1}",
            bytes as f64 / 1e6 / el
        );
    }
    for (tok, weights) in [
        (Tokenizer::Unicode, Weights::Distinct),
        (Tokenizer::Unicode, Weights::Count),
        (Tokenizer::Chars(3), Weights::Distinct),
        (Tokenizer::Charabia, Weights::Distinct),
    ] {
        // FP_ONLY=unicode (etc.) restricts the run to one tokenizer, FP_ONLY=unicode/distinct
        // to one tokenizer and weights (for profiling).
        if std::env::var("FP_ONLY")
            .is_ok_and(|o| o != tok.to_string() && o != format!("{tok}/{weights}"))
        {
            continue;
        }
        let mut f = Fingerprinter::new(Settings {
            tokenizer: tok,
            shingle,
            weights,
        });
        let t = Instant::now();
        let cpu0 = thread_cpu_seconds();
        let mut x = 0u64;
        for s in &texts {
            x ^= f.fingerprint(s).unwrap_or(0);
        }
        let el = t.elapsed().as_secs_f64();
        // CPU time of this thread too: on a shared machine the wall clock also
        // counts the time other processes had the core.
        let cpu = thread_cpu_seconds() - cpu0;
        println!("tokenizer={tok} weights={weights} shingle={shingle} threads=1 seconds={el:.2} mb_per_s={:.1} cpu_seconds={cpu:.2} cpu_mb_per_s={:.1} (xor {x:016x})", bytes as f64 / 1e6 / el, bytes as f64 / 1e6 / cpu);
    }
}

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`, nanoseconds
/// on the CPU); 0 where it cannot be read.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}
