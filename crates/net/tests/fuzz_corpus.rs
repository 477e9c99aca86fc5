//! Replays the checked-in corpus of the cargo-fuzz target `wire` (`fuzz/corpus/wire`,
//! and `fuzz/regressions/wire` if any) through the target's own code
//! (`fuzz/harness/wire.rs`): no input may panic.

#[path = "../../../fuzz/harness/wire.rs"]
mod harness;
#[path = "../../../fuzz/harness/replay.rs"]
mod replay;

#[test]
fn wire_fuzz_corpus_replays_cleanly() {
    replay::replay("wire", 50, harness::run);
}
