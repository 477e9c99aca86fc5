//! What the store's benchmarks share: reading their arguments, making their keys.

/// Positional argument `i` (0: the first after the program's name), or `default`
/// when it is absent or does not parse.
pub fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args()
        .nth(i + 1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds (user + system) of this process so far: on a shared machine, a
/// rate per CPU second moves less with the load than one per wall second.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Random keys, like xxh3 outputs: splitmix64 from a fixed seed, so every run
/// inserts the same keys.
pub struct Keys(u64);

impl Keys {
    pub fn new() -> Keys {
        Keys(0x9E37_79B9_7F4A_7C15)
    }

    /// Overwrites `keys` with the next random keys.
    #[inline]
    pub fn fill(&mut self, keys: &mut [u64]) {
        for k in keys {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            *k = z ^ (z >> 31);
        }
    }
}
