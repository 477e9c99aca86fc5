//! Bit-level coding, least significant bit first: fixed-width fields and Rice
//! codes (snapshots' key gaps, batch mode's records).

pub struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    pub fn with_capacity(bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(bytes),
            acc: 0,
            n: 0,
        }
    }

    /// Appends the `k <= 56` low bits of `v`.
    #[inline]
    pub fn put(&mut self, v: u64, k: u32) {
        debug_assert!(k <= 56 && v >> k == 0);
        self.acc |= v << self.n;
        self.n += k;
        let whole = (self.n / 8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..whole]);
        self.acc = if whole == 8 {
            0
        } else {
            self.acc >> (whole * 8)
        };
        self.n -= whole as u32 * 8;
    }

    /// Appends the `k <= 64` low bits of `v`.
    pub fn put_wide(&mut self, v: u64, k: u32) {
        if k > 56 {
            self.put(v & 0xffff_ffff, 32);
            self.put(v >> 32, k - 32);
        } else {
            self.put(v, k);
        }
    }

    /// `u` zero bits, then a one bit.
    #[inline]
    pub fn unary(&mut self, mut u: u64) {
        while u >= 48 {
            self.put(0, 48);
            u -= 48;
        }
        self.put(1 << u, u as u32 + 1);
    }

    /// The Rice code of `v` with parameter `k`: `v >> k` in unary, then the `k`
    /// low bits.
    pub fn rice(&mut self, v: u64, k: u32) {
        self.unary(v >> k);
        if k > 0 {
            self.put_wide(v & (u64::MAX >> (64 - k)), k);
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// Reads what a [`BitWriter`] wrote. Reading past the end gives zero bits (never
/// a panic); callers check lengths or checksums.
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BitReader { data, pos: 0 }
    }

    /// Bits consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Skips `n` bits (after a [`BitReader::peek`] decoded them in place).
    #[inline]
    pub fn advance(&mut self, n: usize) {
        self.pos += n;
    }

    /// At least 57 valid bits starting at the current position (zeros past the end).
    #[inline]
    pub fn peek(&self) -> u64 {
        let byte = self.pos >> 3;
        let w = if byte + 8 <= self.data.len() {
            u64::from_le_bytes(self.data[byte..byte + 8].try_into().unwrap())
        } else {
            let mut b = [0u8; 8];
            if byte < self.data.len() {
                let rest = &self.data[byte..];
                b[..rest.len()].copy_from_slice(rest);
            }
            u64::from_le_bytes(b)
        };
        w >> (self.pos & 7)
    }

    /// The next `k <= 56` bits.
    #[inline]
    pub fn get(&mut self, k: u32) -> u64 {
        let v = if k == 0 {
            0
        } else {
            self.peek() & (u64::MAX >> (64 - k))
        };
        self.pos += k as usize;
        v
    }

    /// The next `k <= 64` bits.
    pub fn get_wide(&mut self, k: u32) -> u64 {
        if k > 56 {
            let lo = self.get(32);
            lo | self.get(k - 32) << 32
        } else {
            self.get(k)
        }
    }

    /// A unary count (zero bits before a one bit); `None` past the end.
    #[inline]
    pub fn unary(&mut self) -> Option<u64> {
        let limit = self.data.len() * 8;
        let mut acc = 0u64;
        loop {
            let w = self.peek();
            let tz = w.trailing_zeros();
            if tz <= 56 {
                self.pos += tz as usize + 1;
                return Some(acc + tz as u64);
            }
            acc += 56;
            self.pos += 56;
            if self.pos > limit {
                return None;
            }
        }
    }

    /// A Rice-coded value with parameter `k`; `None` past the end or if it does
    /// not fit 64 bits.
    pub fn rice(&mut self, k: u32) -> Option<u64> {
        let q = self.unary()?;
        let fits = match k {
            0 => true,
            64.. => q == 0,
            k => q >> (64 - k) == 0,
        };
        if !fits {
            return None;
        }
        let high = if k == 64 { 0 } else { q << k };
        Some(high | self.get_wide(k))
    }
}

/// Bits of the Rice code of `values` with parameter `k`.
pub fn rice_cost(values: &[u64], k: u32) -> u64 {
    values.iter().map(|&g| (g >> k) + 1 + k as u64).sum()
}

/// The cheapest Rice parameter for `values` (searched near the log of their mean).
pub fn best_rice_k(values: &[u64]) -> u32 {
    if values.is_empty() {
        return 0;
    }
    let mean = (values.iter().map(|&g| g as u128).sum::<u128>() / values.len() as u128) as u64;
    let guess = 63 - mean.max(1).leading_zeros();
    (guess.saturating_sub(2)..=(guess + 1).min(63))
        .min_by_key(|&k| rice_cost(values, k))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_rice_codes_round_trip() {
        let values = [0u64, 1, 5, 1 << 40, 1 << 50, 77];
        let mut w = BitWriter::with_capacity(0);
        for (i, &v) in values.iter().enumerate() {
            w.rice(v, i as u32 * 9 % 64);
            w.put_wide(v, 64);
            w.put(i as u64, 3);
        }
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(r.rice(i as u32 * 9 % 64), Some(v));
            assert_eq!(r.get_wide(64), v);
            assert_eq!(r.get(3), i as u64);
        }
        assert_eq!(BitReader::new(&[0, 0]).rice(3), None);
    }

    #[test]
    fn the_best_parameter_is_the_cheapest() {
        let values: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20)
            .collect();
        let k = best_rice_k(&values);
        assert!((0..64).all(|j| rice_cost(&values, k) <= rice_cost(&values, j)));
    }
}
