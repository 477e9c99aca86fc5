//! Snapshot save/load speed and size: N random keys (like xxh3 outputs) inserted,
//! saved, then loaded twice (the second load reads from a warm page cache; both are
//! printed). Also prints what an Elias-Fano coding of the same quotients would take,
//! the alternative to the Rice code that was measured against.
//! Usage: cargo run --release -p webdedup-store --example persist_bench -- [KEYS] [DIR]

mod common;

use common::{arg, cpu_seconds, Keys};
use std::time::Instant;
use webdedup_store::{MemStore, Store, StoreMeta, DEFAULT_BLOCKS};

fn main() {
    let n: usize = arg(0, 10_000_000);
    let dir = arg(1, std::env::temp_dir());
    let meta = StoreMeta {
        hash: "xxh3-64".into(),
        normalization: "loose".into(),
        blocks: DEFAULT_BLOCKS,
        key_kind: "bench".into(),
    };
    let store = MemStore::with_capacity(DEFAULT_BLOCKS, n);
    let mut random = Keys::new();
    let mut keys = vec![0u64; 1 << 16];
    let mut seen = Vec::new();
    let mut done = 0;
    while done < n {
        let m = keys.len().min(n - done);
        random.fill(&mut keys[..m]);
        store.test_and_insert(&keys[..m], &mut seen).unwrap();
        done += m;
    }
    let path = dir.join(format!("persist_bench_{n}.snap"));
    let saved = store.save(&path, &meta).unwrap();
    let keys_in = store.len();
    // Elias-Fano of each block's quotients: n * (2 + ceil(log2(U / n))) bits.
    let u = u64::MAX / DEFAULT_BLOCKS as u64 + 1;
    let mut ef_bits = 0f64;
    for b in 0..DEFAULT_BLOCKS {
        let c = store.block_keys(b).len() as f64;
        if c > 0.0 {
            ef_bits += c * (2.0 + (u as f64 / c).log2().ceil().max(0.0));
        }
    }
    drop(store);
    let t = Instant::now();
    let (cold, _) = MemStore::load(&path, &meta, 0).unwrap();
    let first = t.elapsed().as_secs_f64();
    assert_eq!(cold.len(), keys_in);
    drop(cold);
    let t = Instant::now();
    let cpu = cpu_seconds();
    let (warm, info) = MemStore::load(&path, &meta, 0).unwrap();
    let second = t.elapsed().as_secs_f64();
    let load_cpu = cpu_seconds() - cpu;
    assert_eq!(warm.len(), keys_in);
    println!(
        "{{\"keys\": {keys_in}, \"threads\": {}, \"save_seconds\": {:.3}, \"save_keys_per_second\": {:.0}, \"snapshot_bytes\": {}, \"bytes_per_key\": {:.3}, \"elias_fano_bytes_per_key\": {:.3}, \"load_seconds_first\": {first:.3}, \"load_seconds_warm\": {second:.3}, \"load_keys_per_second_warm\": {:.0}, \"load_cpu_seconds_warm\": {load_cpu:.3}, \"load_keys_per_cpu_second\": {:.0}}}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        saved.seconds,
        keys_in as f64 / saved.seconds,
        info.bytes,
        info.bytes_per_key(),
        ef_bits / 8.0 / keys_in as f64,
        keys_in as f64 / second,
        keys_in as f64 / load_cpu
    );
    let _ = std::fs::remove_file(&path);
}
