//! Replays the checked-in corpus of the cargo-fuzz target `vertical`
//! (`fuzz/corpus/vertical`) and its regressions (`fuzz/regressions/vertical`) through
//! the target's own code (`fuzz/harness/vertical.rs`): no input may panic, and every
//! output must be a subsequence of its input's lines.
//! New inputs come from `bench/fuzz.sh` (then minimized with `cargo fuzz cmin`).

#[path = "../../../fuzz/harness/vertical.rs"]
mod harness;

use std::path::Path;

#[test]
fn vertical_fuzz_corpus_replays_cleanly() {
    // The minimized corpus, and the inputs of crashes found and fixed (kept even
    // when they add no coverage).
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = Vec::new();
    for dir in [
        fuzz.join("corpus/vertical"),
        fuzz.join("regressions/vertical"),
    ] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(entries.map(|e| e.unwrap().path()));
        }
    }
    files.sort();
    assert!(files.len() >= 100, "{} inputs only", files.len());
    let failed: Vec<_> = files
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).unwrap();
            std::panic::catch_unwind(|| harness::run(&data)).is_err()
        })
        .collect();
    assert!(failed.is_empty(), "failing corpus inputs: {failed:?}");
}
