//! Synthetic load of the embedded store: N random keys inserted in batches, then the
//! same keys again (all seen). Prints inserts/s (per wall and per CPU second),
//! table bytes a key and RSS a key. `located` as the fourth argument inserts each
//! key with a location, as MinHash on a hash server does (14 band keys a
//! document, one line of one file each).
//! Usage: cargo run --release -p webdedup-store --example store_bench -- [KEYS] [BATCH] [BLOCKS] [located]

mod common;

use common::{arg, cpu_seconds, Keys};
use std::time::Instant;
use webdedup_store::{Location, MemStore, Store, DEFAULT_BLOCKS};

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
    let n: usize = arg(0, 50_000_000);
    let batch: usize = arg(1, 4096);
    let rss0 = rss_bytes();
    let blocks: u32 = arg(2, DEFAULT_BLOCKS);
    let located = arg(3, String::new()) == "located";
    let store = MemStore::new(blocks);
    let mut seen = Vec::with_capacity(batch);
    let (mut locs, mut originals) = (Vec::with_capacity(batch), Vec::new());
    let mut random = Keys::new();
    let mut keys = vec![0u64; batch];
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let mut done = 0;
    let mut new = 0usize;
    while done < n {
        let m = batch.min(n - done);
        random.fill(&mut keys[..m]);
        if located {
            locs.clear();
            locs.extend((done..done + m).map(|i| Location {
                file: 1,
                record: i as u64 / 14 + 1,
            }));
            store
                .test_and_insert_located(&keys[..m], &locs, &mut seen, &mut originals)
                .unwrap();
        } else {
            store.test_and_insert(&keys[..m], &mut seen).unwrap();
        }
        new += seen.iter().filter(|&&s| !s).count();
        done += m;
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let rss = rss_bytes().saturating_sub(rss0);
    println!(
        "{{\"keys\": {n}, \"located\": {located}, \"new\": {new}, \"batch\": {batch}, \"blocks\": {blocks}, \"insert_seconds\": {secs:.3}, \"inserts_per_second\": {:.0}, \"insert_cpu_seconds\": {cpu:.3}, \"inserts_per_cpu_second\": {:.0}, \"table_bytes_per_key\": {:.2}, \"rss_bytes_per_key\": {:.2}}}",
        n as f64 / secs,
        n as f64 / cpu,
        store.memory_bytes() as f64 / store.len() as f64,
        rss as f64 / store.len() as f64
    );
}
