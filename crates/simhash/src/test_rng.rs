//! The tests' pseudo-random numbers: xorshift64, the same sequence from the same
//! (nonzero) seed.

pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
