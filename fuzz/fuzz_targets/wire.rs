//! The server's frame decoder on arbitrary bytes: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = webdedup_net::wire::decode(data);
    let mut keys = Vec::new();
    let _ = webdedup_net::wire::decode_keys_request(data, &mut keys);
    if data.len() >= 4 {
        let _ = webdedup_net::wire::frame_len(data[..4].try_into().unwrap(), 1 << 20);
    }
});
