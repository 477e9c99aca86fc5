//! Fuzzes the vertical reader and the policy: any bytes, cut into chunks of a
//! size taken from the input, must be planned and decided without a panic, and the
//! rendered output must be a subsequence of the input's lines (`harness/vertical.rs`,
//! which `cargo test -p webdedup-dedup` also runs over the checked-in corpus).
//! Run: `bench/fuzz.sh`, or `cd fuzz && cargo +nightly fuzz run vertical`.

#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../harness/vertical.rs"]
mod harness;

fuzz_target!(|data: &[u8]| harness::run(data));
