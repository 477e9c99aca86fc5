//! The server's frame decoder on arbitrary bytes: never a panic
//! (`harness/wire.rs`, which `cargo test -p webdedup-net` also runs over the
//! checked-in corpus). Run: `bench/fuzz.sh`, or `cd fuzz && cargo +nightly fuzz run wire`.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../harness/wire.rs"]
mod harness;

fuzz_target!(|data: &[u8]| harness::run(data));
