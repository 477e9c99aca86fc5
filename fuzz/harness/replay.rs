//! Replays a cargo-fuzz target's checked-in inputs through its harness, for the
//! crates' tests (`crates/*/tests/fuzz_corpus.rs`): the minimized corpus
//! (`fuzz/corpus/TARGET`) and the inputs of crashes found and fixed
//! (`fuzz/regressions/TARGET`, kept even when they add no coverage).

use std::path::{Path, PathBuf};

/// Runs `run` on every input of `target` (at least `at_least` of them) and
/// asserts that none panics, naming those that do.
pub fn replay(target: &str, at_least: usize, run: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [fuzz.join("corpus"), fuzz.join("regressions")] {
        if let Ok(entries) = std::fs::read_dir(dir.join(target)) {
            files.extend(entries.map(|e| e.unwrap().path()));
        }
    }
    files.sort();
    assert!(files.len() >= at_least, "{} inputs only", files.len());
    let failed: Vec<_> = files
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).unwrap();
            std::panic::catch_unwind(|| run(&data)).is_err()
        })
        .collect();
    assert!(failed.is_empty(), "failing corpus inputs: {failed:?}");
}
