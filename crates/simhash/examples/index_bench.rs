//! The persisted index at scale: add N documents, save, load, prepare for k, query.
//!
//! `cargo run --release -p webdedup-simhash --example index_bench -- N K THREADS DIR`
mod common;

use common::{arg, splitmix};
use std::time::Instant;
use webdedup_simhash::index::FpIndex;
use webdedup_simhash::tokenize::Settings;

fn main() {
    let n: usize = arg(1, 10_000_000);
    let k: u32 = arg(2, 3);
    let threads: usize = arg(3, 2);
    let dir = arg(4, std::path::PathBuf::from("/tmp/webdedup-index-bench"));
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut s = 7u64;
    let mut fps: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
    fps.sort_unstable();
    fps.dedup();
    let ids: Vec<String> = (0..fps.len())
        .map(|i| format!("https://example.org/doc/{i}"))
        .collect();
    let settings = Settings::default();
    let t = Instant::now();
    let mut ix = FpIndex::open_or_create(&dir, settings).unwrap();
    ix.add(&fps, &ids);
    ix.save().unwrap();
    let save = t.elapsed().as_secs_f64();
    drop(ix);
    let size = std::fs::metadata(dir.join(webdedup_simhash::index::FILE_NAME))
        .unwrap()
        .len();
    let t = Instant::now();
    let mut ix = FpIndex::open_or_create(&dir, settings).unwrap();
    let load = t.elapsed().as_secs_f64();
    let t = Instant::now();
    ix.prepare(k);
    let prepare = t.elapsed().as_secs_f64();
    let view = ix.view().unwrap();
    let queries = 100_000;
    let mut out = Vec::new();
    let mut found = 0;
    let t = Instant::now();
    for i in 0..queries {
        let q = if i % 2 == 0 {
            fps[(i * 7919) % fps.len()] ^ 0b101
        } else {
            splitmix(&mut s)
        };
        view.tables.query(q, &mut out);
        found += out.len();
    }
    let per = t.elapsed().as_secs_f64() / queries as f64;
    println!(
        "index n={} k={k} threads={threads} file_mb={:.0} add_save_s={save:.2} load_s={load:.2} prepare_s={prepare:.2} queries={queries} found={found} us_per_query={:.2}",
        ix.len(),
        size as f64 / 1e6,
        per * 1e6
    );
    let _ = std::fs::remove_dir_all(&dir);
}
