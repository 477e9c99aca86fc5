//! The vertical reader's line walk: a chunk's bytes classified 64 at a time into
//! bit masks (newlines; newlines and tabs) in one vector pass, and lines read off
//! the masks. A vertical's lines are mostly one short word (4-5 bytes on web
//! text), so a search started at every line (memchr, or 8 bytes at a time) costs
//! more in setting up than the line is long; with the masks a line costs a
//! trailing-zero count and a shift.
//!
//! Two kernels give the same masks: AVX2 (std::arch, chosen at run time where the
//! CPU has it) and a scalar twin; [`Kernel::Scalar`] forces the twin (the tests
//! compare them).

use std::ops::Range;

/// How a block of 64 bytes is classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(crate) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Kernel::Avx2;
        }
        Kernel::Scalar
    }

    /// Bit i of the first mask is set where byte i is `\n`; of the second, where it
    /// is `\n` or `\t`.
    #[inline]
    fn classify(self, block: &[u8; 64]) -> (u64, u64) {
        match self {
            Kernel::Scalar => classify_scalar(block),
            // SAFETY: `Avx2` is only made by `detect` when the CPU has AVX2 (and by
            // tests under the same check).
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { classify_avx2(block) },
        }
    }
}

fn classify_scalar(block: &[u8; 64]) -> (u64, u64) {
    let (mut nl, mut stop) = (0u64, 0u64);
    for (i, &b) in block.iter().enumerate() {
        nl |= ((b == b'\n') as u64) << i;
        stop |= ((b == b'\n' || b == b'\t') as u64) << i;
    }
    (nl, stop)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn classify_avx2(block: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::*;
    // SAFETY: two unaligned 32-byte loads inside the 64-byte block.
    let (lo, hi) = unsafe {
        (
            _mm256_loadu_si256(block.as_ptr() as *const __m256i),
            _mm256_loadu_si256(block.as_ptr().add(32) as *const __m256i),
        )
    };
    let nl = _mm256_set1_epi8(b'\n' as i8);
    let tab = _mm256_set1_epi8(b'\t' as i8);
    let mask = |v: __m256i| _mm256_movemask_epi8(v) as u32 as u64;
    let (nl_lo, nl_hi) = (_mm256_cmpeq_epi8(lo, nl), _mm256_cmpeq_epi8(hi, nl));
    let stop_lo = _mm256_or_si256(nl_lo, _mm256_cmpeq_epi8(lo, tab));
    let stop_hi = _mm256_or_si256(nl_hi, _mm256_cmpeq_epi8(hi, tab));
    (
        mask(nl_lo) | mask(nl_hi) << 32,
        mask(stop_lo) | mask(stop_hi) << 32,
    )
}

/// One line of a chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    /// The line without its newline.
    pub text: Range<usize>,
    /// Where its first tab-separated column (the token's word) ends.
    pub word_end: usize,
}

/// The lines of `data`, in order; the last one may lack its newline.
pub(crate) struct Lines<'a> {
    data: &'a [u8],
    kernel: Kernel,
    /// Start of the block the masks describe (a multiple of 64).
    base: usize,
    /// The block's newlines and stops (newlines and tabs) not yet passed.
    nl: u64,
    stop: u64,
    /// Where the next line starts.
    pos: usize,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(data: &'a [u8], kernel: Kernel) -> Self {
        let mut lines = Lines {
            data,
            kernel,
            base: 0,
            nl: 0,
            stop: 0,
            pos: 0,
        };
        lines.load();
        lines
    }

    /// Classifies the block at `base` (the last one padded with zero bytes, which
    /// are neither newlines nor tabs).
    #[inline]
    fn load(&mut self) {
        let (nl, stop) = match self.data.get(self.base..self.base + 64) {
            Some(b) => self
                .kernel
                .classify(b.try_into().expect("the range is 64 bytes")),
            None => {
                let rest = self.data.get(self.base..).unwrap_or_default();
                let mut b = [0u8; 64];
                b[..rest.len()].copy_from_slice(rest);
                self.kernel.classify(&b)
            }
        };
        (self.nl, self.stop) = (nl, stop);
    }

    /// Goes on from byte `pos` (a line start at or after the next line's): the
    /// lines before it are skipped (a paragraph the reader took whole).
    pub(crate) fn resume_at(&mut self, pos: usize) {
        debug_assert!(pos >= self.pos);
        self.pos = pos;
        if pos >= self.data.len() {
            return;
        }
        let base = pos & !63;
        if base != self.base {
            self.base = base;
            self.load();
        }
        let keep = u64::MAX << (pos - base);
        self.nl &= keep;
        self.stop &= keep;
    }

    /// Moves to the next block; false at the end of the data.
    #[inline]
    fn advance(&mut self) -> bool {
        self.base += 64;
        if self.base >= self.data.len() {
            (self.nl, self.stop) = (0, 0);
            return false;
        }
        self.load();
        true
    }

    /// The first set bit of `mask(self)` from here on (moving through blocks), or
    /// the end of the data.
    #[inline]
    fn next_bit(&mut self, mask: fn(&Self) -> u64) -> usize {
        loop {
            let m = mask(self);
            if m != 0 {
                return self.base + m.trailing_zeros() as usize;
            }
            if !self.advance() {
                return self.data.len();
            }
        }
    }
}

impl Iterator for Lines<'_> {
    type Item = Line;

    #[inline]
    fn next(&mut self) -> Option<Line> {
        let start = self.pos;
        if start >= self.data.len() {
            return None;
        }
        let word_end = self.next_bit(|l| l.stop);
        // The stop found is a tab unless it is a newline (or the end of the data).
        let first_stop = self.stop & self.stop.wrapping_neg();
        let end = if first_stop & !self.nl != 0 {
            self.next_bit(|l| l.nl)
        } else {
            word_end
        };
        self.pos = end + 1;
        if self.pos < self.data.len() {
            // `end` is a bit of this block: forget the bits up to it (the next line
            // starts in this block or the one after it).
            match self.pos - self.base {
                k @ 0..=63 => {
                    let keep = u64::MAX << k;
                    self.nl &= keep;
                    self.stop &= keep;
                }
                _ => {
                    self.advance();
                }
            }
        }
        Some(Line {
            text: start..end,
            word_end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The lines as the definition says (split at `\n`, the word up to the first tab).
    fn reference(data: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < data.len() {
            let end = data[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(data.len(), |i| start + i);
            let word_end = data[start..end]
                .iter()
                .position(|&b| b == b'\t')
                .map_or(end, |i| start + i);
            out.push(Line {
                text: start..end,
                word_end,
            });
            start = end + 1;
        }
        out
    }

    fn kernels() -> Vec<Kernel> {
        let mut k = vec![Kernel::Scalar];
        if Kernel::detect() != Kernel::Scalar {
            k.push(Kernel::detect());
        }
        k
    }

    fn check(data: &[u8]) {
        let want = reference(data);
        for k in kernels() {
            let got: Vec<Line> = Lines::new(data, k).collect();
            assert_eq!(got, want, "{k:?} on {:?}", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn edges_of_blocks_and_lines() {
        check(b"");
        check(b"\n");
        check(b"\n\n\n");
        check(b"a");
        check(b"a\tb\tc");
        check(b"\t\n\t");
        check("é\tx\r\n<p>\r\n\n".as_bytes());
        // Newlines and tabs at bytes 62-65 and 127-128, lines across two and three
        // blocks, a last line without its newline at every length around 64.
        for at in [62, 63, 64, 65, 127, 128] {
            for b in [b'\n', b'\t'] {
                let mut d = vec![b'x'; 200];
                d[at] = b;
                check(&d);
                d[at + 1] = b'\n';
                check(&d);
            }
        }
        for len in 0..200 {
            check(&vec![b'y'; len]);
            let mut d = vec![b'y'; len];
            d.push(b'\n');
            check(&d);
        }
        let mut d = "w\tx\n".repeat(40).into_bytes();
        d.extend(std::iter::repeat_n(b'z', 150));
        d.extend(b"\tq\n\n");
        check(&d);
    }

    proptest! {
        // Few cases: each is 400 generated bytes (slow to make in a debug build).
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn both_kernels_find_the_lines_of_the_definition(
            data in proptest::collection::vec(
                prop_oneof![
                    Just(b'\n'), Just(b'\t'), Just(b'\r'), Just(b'<'), Just(0u8),
                    Just(0xc3u8), Just(0xa9u8), Just(0xffu8), b'a'..=b'z',
                ],
                0..400,
            ),
        ) {
            check(&data);
        }
    }
}
