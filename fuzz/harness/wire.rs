//! The hash server's frame decoding on arbitrary bytes, shared by the cargo-fuzz
//! target `wire` and the corpus replay test of `webdedup-net`
//! (`crates/net/tests/fuzz_corpus.rs`): never a panic.

/// Runs one input through every decoding entry point of the wire protocol.
pub fn run(data: &[u8]) {
    let _ = webdedup_net::wire::decode(data);
    let mut keys = Vec::new();
    let _ = webdedup_net::wire::decode_keys_request(data, &mut keys);
    if data.len() >= 4 {
        let _ = webdedup_net::wire::frame_len(data[..4].try_into().unwrap(), 1 << 20);
    }
}
