//! All-pairs and single-query speed on synthetic fingerprints.
//!
//! `cargo run --release -p webdedup-simhash --example search_bench -- N K THREADS [QUERIES [BLOCKS]]`
//! (BLOCKS forces the block count of the all-pairs plan instead of the cost model.)
//!
//! N random 64-bit fingerprints plus 1% planted near neighbours (1..=K bits away from a
//! random member), distinct. Prints the plan, wall time of `all_pairs`, pairs found,
//! and the mean time of one `TableSet::query` against the N fingerprints.
mod common;

use common::{arg, planted_fingerprints, splitmix};
use std::time::Instant;
use webdedup_simhash::search::{Plan, TableSet};

fn main() {
    let n: usize = arg(1, 10_000_000);
    let k: u32 = arg(2, 3);
    let threads: usize = arg(3, 2);
    let queries: usize = arg(4, 100_000);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .unwrap();
    let mut s = 42u64;
    let mut v = planted_fingerprints(n, k as u64, &mut s);
    v.sort_unstable();
    v.dedup();
    let t = Instant::now();
    let plan = match std::env::args().nth(5).and_then(|b| b.parse().ok()) {
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
