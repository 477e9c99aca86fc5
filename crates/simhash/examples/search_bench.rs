//! All-pairs and single-query speed on synthetic fingerprints.
//!
//! `cargo run --release -p webdedup-simhash --example search_bench -- N K THREADS [QUERIES [BLOCKS]]`
//! (BLOCKS forces the block count of the all-pairs plan instead of the cost model.)
//!
//! N random 64-bit fingerprints plus 1% planted near neighbours (1..=K bits away from a
//! random member), distinct. Prints the plan, wall time of `all_pairs`, pairs found,
//! and the mean time of one `TableSet::query` against the N fingerprints.
use std::time::Instant;
use webdedup_simhash::search::{Plan, TableSet};

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).map_or(10_000_000, |s| s.parse().unwrap());
    let k: u32 = a.get(2).map_or(3, |s| s.parse().unwrap());
    let threads: usize = a.get(3).map_or(2, |s| s.parse().unwrap());
    let queries: usize = a.get(4).map_or(100_000, |s| s.parse().unwrap());
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .unwrap();
    let mut s = 42u64;
    let mut v: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
    for i in 0..n / 100 {
        let mut x = v[i];
        for _ in 0..1 + (splitmix(&mut s) % k.max(1) as u64) {
            x ^= 1 << (splitmix(&mut s) % 64);
        }
        v[n - 1 - i] = x;
    }
    v.sort_unstable();
    v.dedup();
    let t = Instant::now();
    let plan = match a.get(5).and_then(|b| b.parse::<u32>().ok()) {
        Some(b) => Plan::new(k, b),
        None => Plan::choose(v.len(), k),
    };
    let pairs = plan.all_pairs(&v);
    let el = t.elapsed().as_secs_f64();
    println!(
        "all_pairs n={} k={} threads={} blocks={} tables={} min_prefix_bits={} pairs={} seconds={:.2}",
        v.len(),
        k,
        threads,
        plan.blocks(),
        plan.tables(),
        plan.min_prefix_bits(),
        pairs.len(),
        el
    );
    drop(pairs);
    if queries > 0 {
        let t = Instant::now();
        let plan = Plan::choose_for_queries(v.len(), k);
        let ts = TableSet::build(plan, &v);
        let build = t.elapsed().as_secs_f64();
        let mut out = Vec::new();
        let mut found = 0usize;
        let t = Instant::now();
        for i in 0..queries {
            let q = if i % 2 == 0 {
                v[i * 7 % v.len()] ^ 1
            } else {
                splitmix(&mut s)
            };
            ts.query(q, &mut out);
            found += out.len();
        }
        let per = t.elapsed().as_secs_f64() / queries as f64;
        println!(
            "query n={} k={} tables={} build_seconds={:.2} queries={} found={} microseconds_per_query={:.2}",
            v.len(),
            k,
            ts.plan.tables(),
            build,
            queries,
            found,
            per * 1e6
        );
    }
}
