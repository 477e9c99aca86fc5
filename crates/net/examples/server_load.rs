//! Load generator for `bench/server.sh`: C connections to one server, each
//! sending batches of B fresh random keys as test-and-insert requests with ids,
//! D requests in flight per connection; prints keys per second.
//!
//! usage: server_load HOST:PORT MAP TOTAL_KEYS CONNECTIONS BATCH DEPTH

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Instant;
use webdedup_net::wire::{self, Msg, Role, Settings};
use webdedup_store::server_map::ServerMap;
use webdedup_store::StoreMeta;

fn recv(r: &mut impl Read) -> Msg {
    let mut head = [0u8; 4];
    r.read_exact(&mut head).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(head) as usize];
    r.read_exact(&mut body).unwrap();
    wire::decode(&body).unwrap()
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let addr = &a[1];
    let map = ServerMap::read(std::path::Path::new(&a[2])).unwrap();
    let total: u64 = a[3].parse().unwrap();
    let conns: u64 = a[4].parse().unwrap();
    let batch: usize = a[5].parse().unwrap();
    let depth: usize = a[6].parse().unwrap();
    let meta = StoreMeta {
        hash: "xxh3-64".into(),
        normalization: "none".into(),
        blocks: map.blocks,
        key_kind: "bench".into(),
    };
    let settings = Settings {
        meta,
        map: wire::map_fingerprint(&map),
    };
    let started = Instant::now();
    let threads: Vec<_> = (0..conns)
        .map(|c| {
            let settings = settings.clone();
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_nodelay(true).unwrap();
                let mut out = wire::PREAMBLE.to_vec();
                wire::encode(
                    &Msg::Hello {
                        version: wire::VERSION,
                        nonce: [0; 16],
                    },
                    &mut out,
                );
                s.write_all(&out).unwrap();
                let mut r = BufReader::with_capacity(1 << 16, s.try_clone().unwrap());
                let _ = recv(&mut r);
                out.clear();
                wire::encode(
                    &Msg::Auth {
                        mac: [0; 32],
                        role: Role::Worker,
                        settings: Some(settings),
                    },
                    &mut out,
                );
                s.write_all(&out).unwrap();
                assert!(matches!(recv(&mut r), Msg::Ready { .. }));
                let per = total / conns;
                let requests = per as usize / batch;
                // Keys: a splitmix64 sequence per connection (distinct, random-looking).
                let mut x = c.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555;
                let mut next_key = || {
                    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = x;
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    z ^ (z >> 31)
                };
                let mut keys = vec![0u64; batch];
                let mut in_flight = 0;
                let mut sent = 0;
                let mut done = 0;
                while done < requests {
                    while in_flight < depth && sent < requests {
                        keys.iter_mut().for_each(|k| *k = next_key());
                        out.clear();
                        wire::encode_keys_request(
                            sent as u32,
                            Some((c, sent as u64)),
                            true,
                            &keys,
                            &mut out,
                        );
                        s.write_all(&out).unwrap();
                        sent += 1;
                        in_flight += 1;
                    }
                    match recv(&mut r) {
                        Msg::Verdicts { .. } => {}
                        other => panic!("{other:?}"),
                    }
                    in_flight -= 1;
                    done += 1;
                }
                (requests * batch) as u64
            })
        })
        .collect();
    let keys: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "keys={keys} seconds={secs:.3} keys_per_second={:.0}",
        keys as f64 / secs
    );
}
