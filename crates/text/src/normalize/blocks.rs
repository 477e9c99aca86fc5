//! `loose` / `lower` of a whole paragraph 16 bytes at a time
//! ([`TextBuilder::push_cut_text`]): its body read in place, the glue lines cut
//! out by a mask. The byte-at-a-time loop ([`TextBuilder::push_ascii_run`])
//! carries its output position and its pending space from byte to byte, a few
//! cycles a byte; here a block's bytes are classified and mapped at once, the
//! dropped ones packed out with a shuffle, and the block written whole. A run of
//! whitespace (dropped bytes between them skipped) keeps its first byte; a block
//! that starts the text with whitespace takes the byte loop; a whitespace byte
//! that starts a block after a pending space stands for that space. So the
//! vector path writes exactly what the byte loop would, and the byte loop is its
//! scalar twin (the tests compare them). A character that is not ASCII ends a
//! block: it is normalized alone and the next block starts after it.
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

/// Bytes of a text left out of its normalization: `len` bytes from `start -
/// back` for each `start` of `starts` (ascending, the cuts apart, each made of
/// ASCII bytes). A vertical paragraph's glue lines with the newline before each:
/// the text is then its words, glued ones joined.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cuts<'a> {
    pub starts: &'a [usize],
    pub back: usize,
    pub len: usize,
}

impl<'a> Cuts<'a> {
    /// The pieces of `text` between the cuts, in order.
    pub fn pieces(self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut from = Some(0);
        let mut starts = self.starts.iter();
        std::iter::from_fn(move || {
            let start = from?;
            match starts.next() {
                Some(&s) => {
                    from = Some(s - self.back + self.len);
                    Some(&text[start..s - self.back])
                }
                None => {
                    from = None;
                    Some(&text[start..])
                }
            }
        })
    }

    /// Bit i set where byte `at + i` of the text is cut, for `i < BLOCK`; cuts
    /// before `*first` are passed (they end before `at`, which never goes back).
    #[inline]
    fn mask(&self, first: &mut usize, at: usize) -> u32 {
        while self
            .starts
            .get(*first)
            .is_some_and(|&s| s - self.back + self.len <= at)
        {
            *first += 1;
        }
        let mut mask = 0u32;
        for &s in &self.starts[*first..] {
            let from = s - self.back;
            if from >= at + BLOCK {
                break;
            }
            let (lo, hi) = (from.max(at) - at, (from + self.len).min(at + BLOCK) - at);
            mask |= (1u32 << hi) - (1u32 << lo);
        }
        mask
    }
}

impl TextBuilder {
    /// Writes `loose` (or `lower`) of `text` without its `cuts`, as the pieces
    /// between them pushed one after the other would write ([`push_loose_str`]),
    /// with the vector path where the CPU has it (`vector`: the tests force the
    /// piece by piece path, its scalar twin). The vector path reads the text 16
    /// bytes at a time, in place: a block of ASCII is written at once (its cut
    /// bytes dropped like punctuation, which a byte loop also passes without a
    /// trace); in a block with a non-ASCII byte, the bytes before it are, then
    /// its character goes alone, and the next block starts after it.
    ///
    /// [`push_loose_str`]: TextBuilder::push_loose_str
    pub(super) fn push_cut_blocks(&mut self, text: &str, cuts: Cuts<'_>, vector: bool) {
        #[cfg(target_arch = "x86_64")]
        if vector && has_avx2() {
            // SAFETY: the CPU has AVX2 and POPCNT (checked above).
            unsafe { self.push_cut_blocks_avx2(text, cuts) };
            return;
        }
        let _ = vector;
        for piece in cuts.pieces(text) {
            self.push_loose_str(piece);
        }
    }

    /// # Safety
    /// The CPU has AVX2 and POPCNT.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn push_cut_blocks_avx2(&mut self, text: &str, cuts: Cuts<'_>) {
        let bytes = text.as_bytes();
        let (mut at, mut first_cut) = (0, 0);
        while at < bytes.len() {
            // The last block padded with NUL bytes, which both paths drop.
            let block: [u8; BLOCK] = match bytes[at..].first_chunk::<BLOCK>() {
                Some(b) => *b,
                None => {
                    let mut b = [0u8; BLOCK];
                    b[..bytes.len() - at].copy_from_slice(&bytes[at..]);
                    b
                }
            };
            // SAFETY: AVX2 (the caller's); a 16-byte unaligned load of the block.
            let non_ascii = unsafe {
                use std::arch::x86_64::*;
                _mm_movemask_epi8(_mm_loadu_si128(block.as_ptr() as *const __m128i)) as u32
            };
            let cut = cuts.mask(&mut first_cut, at);
            // The bytes from the first non-ASCII one on are left to the next step.
            let ascii = (non_ascii.trailing_zeros() as usize).min(BLOCK);
            let rest = (!0u32 << ascii) & 0xffff;
            if ascii > 0 {
                self.out.reserve(2 * BLOCK);
                // SAFETY: AVX2 and POPCNT (the caller's); room reserved above.
                if !unsafe { self.push_block(&block, cut | rest) } {
                    self.push_block_bytes(&block, cut | rest);
                }
            }
            at += ascii;
            if ascii < BLOCK && at < bytes.len() {
                // `text` is a str and the bytes before `at` ASCII: a character starts here.
                let c = text[at..].chars().next().expect("at is inside text");
                self.push_char_loose(c);
                at += c.len_utf8();
            }
        }
    }

    /// The bytes of `block` that are not in `skip`, by the byte loop.
    fn push_block_bytes(&mut self, block: &[u8; BLOCK], skip: u32) {
        let mut keep = !skip & 0xffff;
        while keep != 0 {
            let from = keep.trailing_zeros() as usize;
            let to = (!(keep >> from)).trailing_zeros() as usize + from;
            self.push_ascii_run(&block[from..to]);
            keep &= !0u32 << to;
        }
    }

    /// One block of ASCII by the vector path, its bytes in `skip` left out;
    /// false, having written nothing, where the byte loop must take it (see the
    /// module docs).
    ///
    /// # Safety
    /// The CPU has AVX2 and POPCNT, and `out` has room for `2 * BLOCK` more bytes.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn push_block(&mut self, block: &[u8; BLOCK], skip: u32) -> bool {
        use std::arch::x86_64::*;
        // SAFETY: a 16-byte unaligned load of the block.
        let v = unsafe { _mm_loadu_si128(block.as_ptr() as *const __m128i) };
        // Signed compares: a byte that is not ASCII (negative) falls in no
        // class (and is skipped).
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
        let kept_bits = _mm_movemask_epi8(kept) as u32 & !skip;
        let space_bits = _mm_movemask_epi8(space) as u32 & !skip;
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
        // A run of whitespace collapses to its first byte: the others are
        // dropped (the byte loop writes one space for the run too).
        let repeated = after_space & space_bits;
        let (kept_bits, space_bits) = (kept_bits & !repeated, space_bits & !repeated);
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

    /// What each path writes for `text` less its `cuts` after `before` (a text
    /// already built, its last word maybe followed by a pending space), and the
    /// state it leaves.
    fn both_cut(mode: Normalization, before: &str, text: &str, cuts: Cuts) -> [(Vec<u8>, bool); 2] {
        [true, false].map(|vector| {
            let mut b = TextBuilder::new(mode);
            b.push_ascii_run(before.as_bytes());
            b.push_cut_blocks(text, cuts, vector);
            (b.out, b.pending_space)
        })
    }

    fn both(mode: Normalization, before: &[u8], text: &[u8]) -> [(Vec<u8>, bool); 2] {
        let (before, text) = (
            std::str::from_utf8(before).unwrap(),
            std::str::from_utf8(text).unwrap(),
        );
        both_cut(mode, before, text, Cuts::default())
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// With cuts (glue lines and the newline before each) and characters
        /// that are not ASCII, the vector path writes what the pieces between
        /// the cuts write pushed one after the other.
        #[test]
        fn cut_text_with_characters_equals_the_pieces(
            before in "[a-z ,]{0,3}",
            words in proptest::collection::vec((
                "[a-zA-Z0-9,.']{1,9}|\\PC{1,4}|[a-z]{0,5}[\u{e9}\u{2019}\u{3000}\u{130}\u{a0}\u{663}][a-z]{0,5}",
                any::<bool>(),
            ), 0..30),
            lower in any::<bool>(),
        ) {
            // A vertical body: a word a line, glued words after a glue line.
            let (mut text, mut starts) = (String::new(), Vec::new());
            for (i, (word, glued)) in words.iter().enumerate() {
                if *glued && i > 0 {
                    starts.push(text.len());
                    text.push_str("<g/>\n");
                }
                text.push_str(word);
                text.push('\n');
            }
            let cuts = Cuts { starts: &starts, back: 1, len: 6 };
            let mode = if lower { Normalization::Lower } else { Normalization::Loose };
            let [vector, scalar] = both_cut(mode, &before, &text, cuts);
            prop_assert_eq!(vector, scalar);
        }
    }
}
