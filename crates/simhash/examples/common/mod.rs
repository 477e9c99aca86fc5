//! What the fingerprint benchmarks share: their arguments and their synthetic
//! fingerprints.
#![allow(dead_code)] // each benchmark uses a part

/// Positional argument `i` (1: the first), or `default` when absent; one that does
/// not parse stops the benchmark, naming it.
pub fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    match std::env::args().nth(i) {
        None => default,
        Some(a) => a
            .parse()
            .unwrap_or_else(|_| panic!("argument {i}: cannot read '{a}'")),
    }
}

/// The next number of the splitmix64 sequence in `s`.
pub fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` random fingerprints drawn from `s`, the last 1% replaced by near neighbours
/// (1..=k bits away) of the first 1%.
pub fn planted_fingerprints(n: usize, k: u64, s: &mut u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|_| splitmix(s)).collect();
    for i in 0..n / 100 {
        let mut x = v[i];
        for _ in 0..1 + splitmix(s) % k.max(1) {
            x ^= 1 << (splitmix(s) % 64);
        }
        v[n - 1 - i] = x;
    }
    v
}
