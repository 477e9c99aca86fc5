//! What durability costs: the same dedup run over DIR without a journal (the plain
//! runner), then with `--store` and the journal under each fsync mode (`off`,
//! `batch`, `always`). Modes are interleaved and each is timed REPS times (best
//! kept), so a burst of load from other processes does not favour one mode.
//! The snapshot save at the end is timed apart.
//! Usage: cargo run --release -p webdedup-dedup --example journal_overhead -- DIR [THREADS] [REPS]

use std::time::Instant;
use webdedup_dedup::{run, run_persistent, Persistence, RunConfig};
use webdedup_store::{MemStore, SyncMode, DEFAULT_BLOCKS};

fn main() {
    let mut args = std::env::args().skip(1);
    let input = std::path::PathBuf::from(
        args.next()
            .expect("usage: journal_overhead DIR [THREADS] [REPS]"),
    );
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let modes: [(&str, Option<SyncMode>); 4] = [
        ("no journal", None),
        ("journal, fsync off", Some(SyncMode::Off)),
        ("journal, fsync batch", Some("batch".parse().unwrap())),
        ("journal, fsync always", Some(SyncMode::Always)),
    ];
    let mut best = [f64::MAX; 4];
    let mut save = [0f64; 4];
    let mut bytes_in = 0;
    let quiet = |_: &str| {};
    for _ in 0..reps {
        for (i, (_, mode)) in modes.iter().enumerate() {
            let out = tmp.path().join("out");
            let store_dir = tmp.path().join("store");
            let _ = std::fs::remove_dir_all(&out);
            let _ = std::fs::remove_dir_all(&store_dir);
            let mut cfg = RunConfig::new(&input, &out);
            cfg.threads = threads;
            let t = Instant::now();
            let stats = match mode {
                None => {
                    let store = MemStore::new(DEFAULT_BLOCKS);
                    run(&cfg, &store, &quiet).unwrap()
                }
                Some(m) => {
                    cfg.sync = *m != SyncMode::Off;
                    let p = Persistence {
                        store_dir: Some(store_dir.clone()),
                        restore: false,
                        fsync: *m,
                        blocks: DEFAULT_BLOCKS,
                        capacity: 0,
                    };
                    let state = webdedup_dedup::RunState::new(&cfg.options);
                    let (stats, rep) = run_persistent(&cfg, &p, &state, None, &quiet).unwrap();
                    save[i] = rep.saved.map_or(0.0, |s| s.seconds);
                    stats
                }
            };
            let secs = t.elapsed().as_secs_f64() - save[i];
            best[i] = best[i].min(secs);
            bytes_in = stats.bytes_in;
        }
    }
    println!(
        "input {:.1} MB, {threads} threads, best of {reps}",
        bytes_in as f64 / 1e6
    );
    for (i, (name, _)) in modes.iter().enumerate() {
        println!(
            "{name:<24} {:.3} s  {:>6.1} MB/s  {:+.1}% vs no journal{}",
            best[i],
            bytes_in as f64 / 1e6 / best[i],
            100.0 * (best[i] / best[0] - 1.0),
            if save[i] > 0.0 {
                format!("  (+ snapshot save {:.3} s)", save[i])
            } else {
                String::new()
            }
        );
    }
}
