use webdedup_minhash::*;
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};
fn sum(sig: &[u32]) -> u64 {
    let b: Vec<u8> = sig.iter().flat_map(|v| v.to_le_bytes()).collect();
    xxh3_64(&b)
}
fn main() {
    let text = "The quick brown fox jumps over the lazy dog. Pack my box with 5 dozen liquor jugs!";
    let mut s = Shingler::new(Shingling::Words(5));
    println!("{:?}", s.shingles(text.as_bytes()));
    println!(
        "h0 {:#018x}",
        xxh3_64_with_seed(b"the quick brown fox jumps", SHINGLE_SEED)
    );
    for (t, p) in [
        (text, Params::default()),
        ("Hello, World!", Params::default()),
        (
            "我们的世界很美丽，我们的世界很大。",
            Params {
                shingling: Shingling::Chars(3),
                ..Params::default()
            },
        ),
        (
            text,
            Params {
                shingling: Shingling::Words(3),
                hashes: 16,
                bands: 4,
                rows: 4,
            },
        ),
    ] {
        let mut m = MinHasher::new(p).unwrap();
        let mut keys = vec![];
        let sig = m
            .signature_and_keys(t.as_bytes(), &mut keys)
            .unwrap()
            .to_vec();
        println!(
            "{} | {:?}\n  first8 {:?}\n  sum {:#018x}\n  keys3 {:x?}",
            p.describe(),
            t,
            &sig[..8],
            sum(&sig),
            &keys[..3]
        );
    }
    let mut m = MinHasher::new(Params::default()).unwrap();
    let a = m.signature(text.as_bytes()).unwrap().to_vec();
    let b = m
        .signature(
            "The quick brown fox jumps over the lazy cat. Pack my box with 5 dozen liquor jugs!"
                .as_bytes(),
        )
        .unwrap()
        .to_vec();
    println!("est {}", estimate_jaccard(&a, &b));
    let mut s3 = Shingler::new(Shingling::Chars(3));
    println!(
        "{:?}",
        s3.shingles("我们的世界很美丽，我们的世界很大。".as_bytes())
    );
}
