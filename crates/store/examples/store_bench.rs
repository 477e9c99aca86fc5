//! Synthetic load of the embedded store: N random keys inserted in batches, then the
//! same keys again (all seen). Prints inserts/s, table bytes a key and RSS a key.
//! Usage: cargo run --release -p webdedup-store --example store_bench -- [KEYS] [BATCH]

use std::time::Instant;
use webdedup_store::{MemStore, Store};

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(50_000_000);
    let batch: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4096);
    let rss0 = rss_bytes();
    let store = MemStore::default();
    let mut seen = Vec::with_capacity(batch);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut keys = vec![0u64; batch];
    let mut next_key = move || {
        // splitmix64: random keys, like xxh3 outputs.
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let t = Instant::now();
    let mut done = 0;
    let mut new = 0usize;
    while done < n {
        let m = batch.min(n - done);
        for k in keys[..m].iter_mut() {
            *k = next_key();
        }
        store.test_and_insert(&keys[..m], &mut seen).unwrap();
        new += seen.iter().filter(|&&s| !s).count();
        done += m;
    }
    let secs = t.elapsed().as_secs_f64();
    let rss = rss_bytes().saturating_sub(rss0);
    println!(
        "{{\"keys\": {n}, \"new\": {new}, \"batch\": {batch}, \"insert_seconds\": {secs:.3}, \"inserts_per_second\": {:.0}, \"table_bytes_per_key\": {:.2}, \"rss_bytes_per_key\": {:.2}}}",
        n as f64 / secs,
        store.memory_bytes() as f64 / store.len() as f64,
        rss as f64 / store.len() as f64
    );
}
