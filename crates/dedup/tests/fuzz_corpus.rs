//! Replays the checked-in corpus of the cargo-fuzz target `vertical`
//! (`fuzz/corpus/vertical`) and its regressions (`fuzz/regressions/vertical`) through
//! the target's own code (`fuzz/harness/vertical.rs`): no input may panic, and every
//! output must be a subsequence of its input's lines.
//! New inputs come from `bench/fuzz.sh` (then minimized with `cargo fuzz cmin`).

#[path = "../../../fuzz/harness/vertical.rs"]
mod harness;
#[path = "../../../fuzz/harness/replay.rs"]
mod replay;

#[test]
fn vertical_fuzz_corpus_replays_cleanly() {
    replay::replay("vertical", 100, harness::run);
}
