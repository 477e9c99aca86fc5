//! What the benches on synthetic fingerprints share: the generator, the planted
//! near neighbours and the `N K THREADS` arguments.
// Each bench uses a part of it.
#![allow(dead_code)]

/// splitmix64: the next value of the stream whose state is `s` (a seed gives
/// the same stream on every machine).
pub fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` random fingerprints from the stream `s`, of which the last 1% are planted
/// near neighbours: 1..=`k` bits away from one of the first 1%.
pub fn planted(s: &mut u64, n: usize, k: u64) -> Vec<u64> {
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

/// `N K THREADS` from the command line `a` (defaults 10,000,000, 3 and 2), with
/// rayon's global pool built on THREADS threads.
pub fn sizes(a: &[String]) -> (usize, u32, usize) {
    let n: usize = a.get(1).map_or(10_000_000, |s| s.parse().unwrap());
    let k: u32 = a.get(2).map_or(3, |s| s.parse().unwrap());
    let threads: usize = a.get(3).map_or(2, |s| s.parse().unwrap());
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .unwrap();
    (n, k, threads)
}
