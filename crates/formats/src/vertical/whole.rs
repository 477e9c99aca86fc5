//! Finding a paragraph body the reader can give whole ([`WholePara`]): after a
//! `<p>` line, the lines up to its `</p>`, when they have one column (no tab),
//! no `\r`, no NUL, are valid UTF-8, and their only tag lines are glues `<g/>`
//! each between two word lines. Most paragraphs of web text are; the others (and
//! anything unusual: a glue next to a blank line, two glues in a row, another
//! tag, no `</p>` in the chunk) are read line by line as before.
//!
//! One pass over the body, 64 bytes at a time, classifies its bytes into bit
//! masks (newlines, `<`, the excluded bytes, spaces and form feeds, non-ASCII,
//! UTF-8 continuation bytes): the tag lines are the `<` at line starts, the
//! empty lines the newlines at line starts, the characters the bytes that do not
//! continue one. Blank lines are looked for line by line only where the body has
//! a space, a form feed or an empty line. The same two kernels as the line walk
//! ([`Kernel`]): AVX2 and its scalar twin.
//!
//! [`WholePara`]: crate::whole_para::WholePara

use super::lines::Kernel;
use super::{parse_tag, Tag};
use crate::whole_para::GLUE_LINE;
use memchr::memchr;
use std::ops::Range;

/// A body found: where it is and what reading it word by word would count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Whole {
    pub body: Range<usize>,
    /// The end of the `</p>` line (after its newline, where it has one).
    pub close_end: usize,
    /// Lines from the body's first to the `</p>` line, both counted.
    pub lines: u64,
    pub words: usize,
    pub raw_chars: usize,
    pub ascii: bool,
}

/// Bit i of each mask describes byte i of a 64-byte block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Masks {
    newline: u64,
    open: u64,
    /// Tab, `\r`, NUL: never in a body given whole.
    excluded: u64,
    /// Space or form feed: a blank line may be there.
    space: u64,
    non_ascii: u64,
    /// UTF-8 continuation bytes (`10xxxxxx`): not a character's start.
    continuation: u64,
}

impl Kernel {
    #[inline]
    fn body_masks(self, block: &[u8; 64]) -> Masks {
        match self {
            Kernel::Scalar => body_masks_scalar(block),
            // SAFETY: `Avx2` is only made where the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { body_masks_avx2(block) },
        }
    }
}

fn body_masks_scalar(block: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (i, &b) in block.iter().enumerate() {
        let bit = |on: bool| (on as u64) << i;
        m.newline |= bit(b == b'\n');
        m.open |= bit(b == b'<');
        m.excluded |= bit(matches!(b, b'\t' | b'\r' | 0));
        m.space |= bit(matches!(b, b' ' | 0x0c));
        m.non_ascii |= bit(b >= 0x80);
        m.continuation |= bit(b & 0xc0 == 0x80);
    }
    m
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn body_masks_avx2(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    // SAFETY: two unaligned 32-byte loads inside the 64-byte block.
    let halves = unsafe {
        [
            _mm256_loadu_si256(block.as_ptr() as *const __m256i),
            _mm256_loadu_si256(block.as_ptr().add(32) as *const __m256i),
        ]
    };
    let both = |f: &dyn Fn(__m256i) -> __m256i| {
        let [lo, hi] = halves.map(|v| _mm256_movemask_epi8(f(v)) as u32 as u64);
        lo | hi << 32
    };
    let is = |v: __m256i, b: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8));
    Masks {
        newline: both(&|v| is(v, b'\n')),
        open: both(&|v| is(v, b'<')),
        excluded: both(&|v| _mm256_or_si256(_mm256_or_si256(is(v, b'\t'), is(v, b'\r')), is(v, 0))),
        space: both(&|v| _mm256_or_si256(is(v, b' '), is(v, 0x0c))),
        non_ascii: both(&|v| v),
        continuation: both(&|v| {
            let top = _mm256_and_si256(v, _mm256_set1_epi8(0xc0u8 as i8));
            is(top, 0x80)
        }),
    }
}

/// The body that starts at `from` (the line after a `<p>` line), if it can be
/// given whole; `glues` gets its glue lines' offsets in the body.
pub(crate) fn scan(
    data: &[u8],
    from: usize,
    glues: &mut Vec<usize>,
    kernel: Kernel,
) -> Option<Whole> {
    glues.clear();
    let mut acc = Masks::default();
    let (mut newlines, mut continuations, mut empty_lines) = (0, 0, 0u64);
    // The byte before the body ends the `<p>` line.
    let mut newline_before = 1u64;
    let mut base = from;
    loop {
        let rest = data.get(base..).filter(|r| !r.is_empty())?;
        let (m, valid) = match rest.first_chunk::<64>() {
            Some(block) => (kernel.body_masks(block), u64::MAX),
            None => {
                // Padded with bytes of no class.
                let mut block = [b'a'; 64];
                block[..rest.len()].copy_from_slice(rest);
                (kernel.body_masks(&block), (1u64 << rest.len()) - 1)
            }
        };
        let starts = m.newline << 1 | newline_before;
        let mut tags = m.open & starts & valid;
        let mut inside = valid;
        let mut close = None;
        while tags != 0 {
            let at = base + tags.trailing_zeros() as usize;
            tags &= tags - 1;
            let line = &data[at..];
            if line.starts_with(GLUE_LINE) {
                if !glue_between_words(data, from, at, glues) {
                    return None;
                }
                glues.push(at - from);
                continue;
            }
            let nl = memchr(b'\n', line).map_or(data.len(), |i| at + i);
            if parse_tag(&data[at..nl]) != Some(Tag::Close { name: b"p" }) {
                return None;
            }
            inside = (1u64 << (at - base)) - 1;
            close = Some((at, nl));
            break;
        }
        acc.excluded |= m.excluded & inside;
        acc.space |= m.space & inside;
        acc.non_ascii |= m.non_ascii & inside;
        empty_lines |= m.newline & starts & inside;
        newlines += (m.newline & inside).count_ones() as usize;
        continuations += (m.continuation & inside).count_ones() as usize;
        if acc.excluded != 0 {
            return None;
        }
        if let Some((close, nl)) = close {
            return finish(
                data,
                from,
                close,
                nl,
                glues,
                acc,
                newlines,
                continuations,
                empty_lines,
            );
        }
        newline_before = m.newline >> 63;
        base += 64;
    }
}

/// A glue line at `at` stands between two word lines of the body: the line before
/// it is in the body and ends in neither whitespace nor a glue, the line after it
/// starts with neither whitespace nor `<`.
fn glue_between_words(data: &[u8], from: usize, at: usize, glues: &[usize]) -> bool {
    let after_word = at >= from + 2
        && !matches!(data[at - 2], b'\n' | b' ' | 0x0c)
        && glues
            .last()
            .is_none_or(|&g| from + g + GLUE_LINE.len() != at);
    let before_word = data
        .get(at + GLUE_LINE.len())
        .is_some_and(|b| !matches!(b, b'\n' | b' ' | 0x0c | b'<'));
    after_word && before_word
}

/// The body `from..close` whose bytes were classified: its counts, or None where
/// it is not valid UTF-8.
#[allow(clippy::too_many_arguments)]
fn finish(
    data: &[u8],
    from: usize,
    close: usize,
    close_nl: usize,
    glues: &[usize],
    acc: Masks,
    newlines: usize,
    continuations: usize,
    empty_lines: u64,
) -> Option<Whole> {
    let body = &data[from..close];
    let ascii = acc.non_ascii == 0;
    if !ascii && simdutf8::basic::from_utf8(body).is_err() {
        return None;
    }
    let (words, blank_bytes) = if acc.space != 0 || empty_lines != 0 {
        count_blank_lines(body, glues)
    } else {
        (newlines - glues.len(), 0)
    };
    // The words' characters and one separator a word after the first, but none
    // before a glued word: the body's characters less its newlines, glue lines
    // and blank lines.
    let raw_chars = match words {
        0 => 0,
        _ => body.len() - continuations - 1 - (GLUE_LINE.len() + 1) * glues.len() - blank_bytes,
    };
    Some(Whole {
        body: from..close,
        close_end: (close_nl + 1).min(data.len()),
        lines: newlines as u64 + 1,
        words,
        raw_chars,
        ascii,
    })
}

/// Words (lines neither blank nor glue) of a body, and the bytes of its blank
/// lines (ASCII whitespace alone: here spaces and form feeds), newlines counted.
fn count_blank_lines(body: &[u8], glues: &[usize]) -> (usize, usize) {
    let (mut words, mut blank_bytes) = (0, 0);
    let mut next_glue = glues.iter().peekable();
    let mut at = 0;
    while at < body.len() {
        let end = memchr(b'\n', &body[at..]).map_or(body.len(), |i| at + i);
        if next_glue.peek() == Some(&&at) {
            next_glue.next();
        } else if body[at..end].iter().all(|&b| b == b' ' || b == 0x0c) {
            blank_bytes += end + 1 - at;
        } else {
            words += 1;
        }
        at = end + 1;
    }
    (words, blank_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Both kernels classify a block alike.
        #[test]
        fn both_kernels_give_the_same_masks(block in proptest::collection::vec(
            prop_oneof![
                Just(b'\n'), Just(b'<'), Just(b'\t'), Just(b'\r'), Just(0u8), Just(b' '),
                Just(0x0cu8), Just(0xc3u8), Just(0xa9u8), Just(0xffu8), Just(0x80u8), b'a'..=b'z',
            ],
            64,
        )) {
            let block: [u8; 64] = block.try_into().unwrap();
            prop_assert_eq!(Kernel::Scalar.body_masks(&block), Kernel::detect().body_masks(&block));
        }
    }
}
