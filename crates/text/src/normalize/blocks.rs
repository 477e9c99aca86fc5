//! `loose` / `lower` of a whole paragraph of ASCII text 16 bytes at a time
//! ([`TextBuilder::push_ascii_pieces`]). The byte-at-a-time loop
//! ([`TextBuilder::push_ascii_run`]) carries its output position and its pending
//! space from byte to byte, a few cycles a byte; here a block's bytes are
//! classified and mapped at once, the dropped ones packed out with a shuffle, and
//! the block written whole. A block whose whitespace would collapse (two
//! whitespace bytes meeting once the dropped ones are gone) or that starts the
//! text with whitespace takes the byte loop; a whitespace byte that starts a
//! block after a pending space stands for that space. So the vector path writes
//! exactly what the byte loop would, and the byte loop is its scalar twin (the
//! tests compare them).
//!
//! AVX2 (with POPCNT) is chosen at run time; other CPUs take the byte loop.

use super::{Normalization, TextBuilder};

/// For each 8-bit mask, the positions of its set bits in order (the rest 0): the
/// shuffle that packs the kept bytes of 8 to the front.
static PACK: [[u8; 8]; 256] = pack_table(0);
/// The same for the upper 8 bytes of a block.
static PACK_HIGH: [[u8; 8]; 256] = pack_table(8);

const fn pack_table(offset: u8) -> [[u8; 8]; 256] {
    let mut t = [[0u8; 8]; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut bit, mut n) = (0, 0);
        while bit < 8 {
            if mask & (1 << bit) != 0 {
                t[mask][n] = bit as u8 + offset;
                n += 1;
            }
            bit += 1;
        }
        mask += 1;
    }
    t
}

/// Block size of the vector path.
const BLOCK: usize = 16;

impl TextBuilder {
    /// Writes `loose` (or `lower`) of the ASCII `pieces` joined, as
    /// [`push_ascii_run`] does piece by piece, with the vector path where the
    /// CPU has it (`vector`: the tests force the byte loop). Whole blocks only:
    /// the pieces are copied and padded with NUL bytes, which both paths drop.
    ///
    /// [`push_ascii_run`]: TextBuilder::push_ascii_run
    pub(super) fn push_ascii_blocks<'p>(
        &mut self,
        pieces: impl IntoIterator<Item = &'p [u8]>,
        vector: bool,
    ) {
        #[cfg(target_arch = "x86_64")]
        if vector && has_avx2() {
            let mut padded = std::mem::take(&mut self.padded);
            padded.clear();
            for piece in pieces {
                padded.extend_from_slice(piece);
            }
            debug_assert!(padded.is_ascii());
            padded.resize(padded.len().next_multiple_of(BLOCK), 0);
            // At most one byte more than the text (a space written late), and
            // room for the last block's wide stores.
            self.out.reserve(padded.len() + 2 * BLOCK);
            for block in padded.chunks_exact(BLOCK) {
                let block = block.try_into().expect("chunks of BLOCK bytes");
                // SAFETY: the CPU has AVX2 and POPCNT (checked above); the
                // reservation above leaves room for the block's stores.
                if !unsafe { self.push_block(block) } {
                    self.push_ascii_run(block);
                }
            }
            self.padded = padded;
            return;
        }
        let _ = vector;
        for piece in pieces {
            self.push_ascii_run(piece);
        }
    }

    /// One block by the vector path; false, having written nothing, where the
    /// byte loop must take it (see the module docs).
    ///
    /// # Safety
    /// The CPU has AVX2 and POPCNT, and `out` has room for `2 * BLOCK` more bytes.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn push_block(&mut self, block: &[u8; BLOCK]) -> bool {
        use std::arch::x86_64::*;
        // SAFETY: a 16-byte unaligned load of the block.
        let v = unsafe { _mm_loadu_si128(block.as_ptr() as *const __m128i) };
        // Signed compares: every byte is ASCII (< 0x80).
        let within = |lo: u8, hi: u8| {
            _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(lo as i8 - 1)),
                _mm_cmpgt_epi8(_mm_set1_epi8(hi as i8 + 1), v),
            )
        };
        let upper = within(b'A', b'Z');
        let digit = within(b'0', b'9');
        let space = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8)), within(9, 13));
        let kept = _mm_or_si128(
            _mm_or_si128(upper, within(b'a', b'z')),
            _mm_or_si128(digit, space),
        );
        let kept_bits = _mm_movemask_epi8(kept) as u32;
        let space_bits = _mm_movemask_epi8(space) as u32;
        if kept_bits == 0 {
            return true;
        }
        // Whitespace right after whitespace, dropped bytes between them skipped:
        // the mark after each whitespace byte is carried across the run of
        // dropped bytes it starts (a mark can only start a run), by the carry of
        // an addition: adding the mark to the run clears it up to its end and
        // sets the bit after it, so the bits that change are the run from the
        // mark and the byte after it.
        let dropped = !kept_bits & 0xffff;
        let marks = space_bits << 1;
        let after_space = marks | ((dropped + (marks & dropped)) ^ dropped);
        if after_space & space_bits != 0 {
            return false;
        }
        let first = kept_bits.trailing_zeros();
        let last = 31 - kept_bits.leading_zeros();
        let first_space = space_bits >> first & 1 != 0;
        let last_space = space_bits >> last & 1 != 0;
        let len = self.out.len();
        if first_space && len == 0 {
            return false;
        }
        let lead = (!first_space && self.pending_space && len > 0) as usize;
        let mut mapped = _mm_add_epi8(v, _mm_and_si128(upper, _mm_set1_epi8(0x20)));
        if self.mode == Normalization::Loose {
            mapped = _mm_or_si128(
                _mm_andnot_si128(digit, mapped),
                _mm_and_si128(digit, _mm_set1_epi8(b'0' as i8)),
            );
        }
        mapped = _mm_or_si128(
            _mm_andnot_si128(space, mapped),
            _mm_and_si128(space, _mm_set1_epi8(b' ' as i8)),
        );
        let (low, high) = ((kept_bits & 0xff) as usize, (kept_bits >> 8) as usize);
        let shuffle = _mm_set_epi64x(
            i64::from_le_bytes(PACK_HIGH[high]),
            i64::from_le_bytes(PACK[low]),
        );
        let packed = _mm_shuffle_epi8(mapped, shuffle);
        let n_low = low.count_ones() as usize;
        let n = n_low + high.count_ones() as usize;
        debug_assert!(self.out.capacity() - len >= 2 * BLOCK);
        // SAFETY: the caller reserved 2 * BLOCK bytes past `len`; the stores end
        // at most 1 + 8 + 8 bytes past it. The length set covers only bytes
        // written: the lead space and the packed kept bytes (the last one left
        // out when it is whitespace: it stays pending).
        unsafe {
            let dst = self.out.as_mut_ptr().add(len);
            dst.write(b' ');
            _mm_storel_epi64(dst.add(lead) as *mut __m128i, packed);
            _mm_storel_epi64(
                dst.add(lead + n_low) as *mut __m128i,
                _mm_unpackhi_epi64(packed, packed),
            );
            self.out.set_len(len + lead + n - last_space as usize);
        }
        self.pending_space = last_space;
        true
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2() -> bool {
    // (std caches the answer: a load and a test.)
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What each path writes for `text` after `before` (a text already built, its
    /// last word maybe followed by a pending space), and the state it leaves.
    fn both(mode: Normalization, before: &[u8], text: &[u8]) -> [(Vec<u8>, bool); 2] {
        [true, false].map(|vector| {
            let mut b = TextBuilder::new(mode);
            b.push_ascii_run(before);
            b.push_ascii_blocks([text], vector);
            (b.out, b.pending_space)
        })
    }

    #[test]
    fn blocks_that_collapse_or_lead_with_whitespace() {
        for text in [
            "",
            "a",
            "Hello\nWorld\n",
            "\nleading\nspace",
            "one ,\ntwo",
            "x\n\ny",
            "a\n-\nb\n-\nc\n(d)\ne\n1984\nf",
            ",,,,,,,,,,,,,,,,end",
            "sixteen_bytes_ab\ncd",
            "abcdefghijklmno\n\npq",
            "abcdefghijklmnop\nq",
        ] {
            for before in ["", "x", "x ", " "] {
                for mode in [Normalization::Loose, Normalization::Lower] {
                    let [vector, scalar] = both(mode, before.as_bytes(), text.as_bytes());
                    assert_eq!(vector, scalar, "{before:?} then {text:?} ({mode:?})");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The vector path writes what the byte loop writes, from any state, on
        /// ASCII of every class: letters of both cases, digits, whitespace of
        /// each kind, punctuation, controls.
        #[test]
        fn the_vector_path_equals_the_byte_loop(
            before in "[a-z ,]{0,3}",
            text in proptest::collection::vec(prop_oneof![
                8 => proptest::char::range('a', 'z'),
                2 => proptest::char::range('A', 'Z'),
                2 => proptest::char::range('0', '9'),
                3 => Just('\n'),
                1 => proptest::sample::select(vec![' ', '\t', '\r', '\x0b', '\x0c']),
                2 => proptest::sample::select(vec![',', '.', '-', '\'', '(', '<', '~', '\0', '\x7f', '\x01']),
            ], 0..80),
            lower in any::<bool>(),
        ) {
            let text: String = text.into_iter().collect();
            let mode = if lower { Normalization::Lower } else { Normalization::Loose };
            let [vector, scalar] = both(mode, before.as_bytes(), text.as_bytes());
            prop_assert_eq!(vector, scalar);
        }
    }
}
