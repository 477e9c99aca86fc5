//! Same workload on three homes of the key set, in one run: N random 64-bit keys
//! in batches, from T client threads: the embedded `MemStore`, Redis with plain
//! pipelined `SET key 1 NX`, and Redis in the bucketed layout (`RedisStore`).
//! Prints keys/s and bytes per key (Redis: `used_memory` after minus before).
//!
//! Usage: redis_bench URL [KEYS] [THREADS] [BATCH]   (the database is flushed!)

use std::time::Instant;
use webdedup_redis::{RedisSettings, RedisStore};
use webdedup_store::{MemStore, Store};

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn used_memory(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

fn run(name: &str, n: usize, threads: usize, batch: usize, f: &(dyn Fn(&[u64]) + Sync)) -> f64 {
    let keys: Vec<Vec<u64>> = (0..threads)
        .map(|t| {
            let mut s = 42 + t as u64;
            (0..n / threads).map(|_| splitmix(&mut s)).collect()
        })
        .collect();
    let start = Instant::now();
    std::thread::scope(|sc| {
        for k in &keys {
            sc.spawn(move || {
                for b in k.chunks(batch) {
                    f(b);
                }
            });
        }
    });
    let secs = start.elapsed().as_secs_f64();
    println!("{name:28} {:>10.0} keys/s ({secs:.2} s)", n as f64 / secs);
    secs
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .get(1)
        .expect("usage: redis_bench URL [KEYS] [THREADS] [BATCH]");
    let n: usize = args.get(2).map_or(2_000_000, |s| s.parse().unwrap());
    let threads: usize = args.get(3).map_or(2, |s| s.parse().unwrap());
    let batch: usize = args.get(4).map_or(4096, |s| s.parse().unwrap());
    println!("{n} random keys, {threads} client threads, batches of {batch}");
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut con = client.get_connection().unwrap();

    let mem = MemStore::new(webdedup_store::DEFAULT_BLOCKS);
    run("embedded MemStore", n, threads, batch, &|b| {
        let mut seen = Vec::new();
        mem.test_and_insert(b, &mut seen).unwrap();
    });
    println!(
        "{:28} {:>10.2} bytes/key (tables)",
        "",
        mem.memory_bytes() as f64 / mem.len() as f64
    );

    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    let before = used_memory(&mut con);
    run("redis SET NX (pipelined)", n, threads, batch, &|b| {
        let mut c = client.get_connection().unwrap();
        let mut p = redis::pipe();
        for k in b {
            p.cmd("SET").arg(&k.to_le_bytes()[..]).arg(1).arg("NX");
        }
        let _: Vec<redis::Value> = p.query(&mut c).unwrap();
    });
    let after = used_memory(&mut con);
    println!(
        "{:28} {:>10.2} bytes/key (used_memory)",
        "",
        (after - before) as f64 / n as f64
    );

    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    let before = used_memory(&mut con);
    let meta = webdedup_store::StoreMeta {
        hash: "xxh3-64".into(),
        normalization: "bench".into(),
        blocks: webdedup_store::DEFAULT_BLOCKS,
        key_kind: "random".into(),
    };
    let settings = RedisSettings::for_keys(&meta, Some(n as u64));
    let store = RedisStore::open(url, None, settings, 0).unwrap();
    let bits = store.bucket_bits();
    run(
        &format!("redis buckets ({bits} bits)"),
        n,
        threads,
        batch,
        &|b| {
            let mut seen = Vec::new();
            store.test_and_insert(b, &mut seen).unwrap();
        },
    );
    let after = used_memory(&mut con);
    println!(
        "{:28} {:>10.2} bytes/key (used_memory)",
        "",
        (after - before) as f64 / n as f64
    );
}
