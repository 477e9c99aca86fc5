//! From text to shingle hashes: the normalization, the shingles and their hash.
//!
//! The text is normalized (`webdedup-text`) with `lower` (the default: lowercase,
//! punctuation and symbols removed, words separated by one space) or `loose` (the
//! same with every digit written `0`, the normalization `dedup` applies to
//! paragraphs). Then:
//!
//! * `auto:N` (the default, `N` = 5): decided per document ([`written_without_spaces`]):
//!   `chars:N` when its words are not separated, that is when at least a third of
//!   its letters are in a script written without spaces (Han, Hiragana, Katakana,
//!   Thai, Lao, Khmer, Myanmar, Tibetan) or when its "words" average 16 letters or
//!   more (text whose spaces were lost); `words:N` otherwise. Such a document has
//!   few "words" (whole sentences or lines), so its word shingles say little, while
//!   character shingles of a spaced script match too easily.
//! * `words:N`: every run of `N` consecutive normalized words, written with one
//!   space between them; a text of fewer than `N` words gives one shingle, all its
//!   words.
//! * `chars:N`: the normalized text with its spaces removed, then every run of `N`
//!   consecutive characters (Unicode scalar values); a text of fewer than `N`
//!   characters gives one shingle, the whole text. These are exactly the tokens of
//!   SimHash's `chars:N` tokenizer (`webdedup-simhash`, tested), for scripts written
//!   without spaces (Chinese, Japanese, Thai).
//!
//! A shingle's hash is xxh3-64 with seed [`SHINGLE_SEED`] of its UTF-8 bytes. A text
//! with no word after normalization has no shingle. Repeated shingles are passed on
//! as they come (MinHash takes minima, so repeats change nothing).

use std::fmt;
use std::str::FromStr;
use webdedup_text::{Normalization, TextBuilder};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The xxh3 seed of shingle hashes: `"minhash1"`. Part of the pinned signature:
/// never change it.
pub const SHINGLE_SEED: u64 = 0x6d69_6e68_6173_6831;

/// The largest `N` of `words:N` and `chars:N`.
pub const MAX_SHINGLE: usize = 64;

/// What a shingle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shingling {
    /// `N` consecutive normalized words.
    Words(usize),
    /// `N` consecutive characters of the normalized text without its spaces.
    Chars(usize),
    /// `Chars(N)` for a document written without spaces, else `Words(N)`
    /// ([`Shingling::resolve`]).
    Auto(usize),
}

impl Default for Shingling {
    fn default() -> Self {
        Shingling::Auto(5)
    }
}

impl Shingling {
    /// The `N` of `words:N`, `chars:N` or `auto:N`.
    pub fn size(self) -> usize {
        let (Shingling::Words(n) | Shingling::Chars(n) | Shingling::Auto(n)) = self;
        n
    }

    /// What this shingling is for one document, given its `loose`-normalized text:
    /// `auto:N` becomes `chars:N` or `words:N` ([`written_without_spaces`]); the
    /// others stay as they are.
    pub fn resolve(self, normalized: &[u8]) -> Shingling {
        match self {
            Shingling::Auto(n) if written_without_spaces(normalized) => Shingling::Chars(n),
            Shingling::Auto(n) => Shingling::Words(n),
            fixed => fixed,
        }
    }
}

/// `auto:N` takes character shingles when at least `AUTO_SHARE_NUM / AUTO_SHARE_DEN`
/// of a document's letters are in scripts written without spaces. A third, not a
/// half: Chinese and Japanese documentation quotes Latin names, commands and
/// untranslated sentences, each of whose letters counts one, while one Han
/// character carries about a word; spaced-script documents quote such scripts far
/// less (the script study, docs/minhash.md).
const AUTO_SHARE_NUM: usize = 1;
const AUTO_SHARE_DEN: usize = 3;

/// ... or when its words average at least this many letters: text whose words are
/// not separated whatever its script (Latin quoted in Chinese text that lost its
/// spaces, as in the script study's Debian Handbook pages). Documents of spaced
/// scripts average 4 to 7 letters a word, 14 at most in the study; Chinese and
/// Japanese ones 19 and more: 16 is between.
const AUTO_WORD_LETTERS: usize = 16;

/// Whether a `lower`- or `loose`-normalized text is written without spaces between
/// its words: at least a third of its letters (characters other than spaces and
/// ASCII digits, all of which `loose` writes `0`) are Han, Hiragana, Katakana, Thai, Lao,
/// Khmer, Myanmar or Tibetan, or its space-separated words average at least 16
/// letters. Invalid UTF-8 is of no such script.
pub fn written_without_spaces(normalized: &[u8]) -> bool {
    let t = normalized;
    let counts = ByteCounts::of(t);
    let letters = counts.chars - counts.spaces - counts.digits;
    // `loose` text has one space between words and none at its ends.
    let words = counts.spaces + 1;
    if letters == 0 {
        return false;
    }
    if letters >= AUTO_WORD_LETTERS * words {
        return true;
    }
    // Every script without spaces is at U+0E00 or above, in characters of 3 or 4
    // bytes: too few of those and no character needs decoding (Latin, Cyrillic).
    if counts.long_chars * AUTO_SHARE_DEN < letters * AUTO_SHARE_NUM {
        return false;
    }
    let unspaced = t
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b >= 0xe0)
        .filter(|&(i, _)| is_unspaced_script(decode_utf8(&t[i..])))
        .count();
    unspaced * AUTO_SHARE_DEN >= letters * AUTO_SHARE_NUM
}

/// What [`written_without_spaces`] counts in one pass over the bytes.
struct ByteCounts {
    /// Characters: bytes that are not UTF-8 continuation bytes.
    chars: usize,
    /// Characters of 3 or 4 bytes (their lead bytes).
    long_chars: usize,
    spaces: usize,
    /// ASCII digits.
    digits: usize,
}

impl ByteCounts {
    fn of(t: &[u8]) -> ByteCounts {
        let mut c = ByteCounts {
            chars: 0,
            long_chars: 0,
            spaces: 0,
            digits: 0,
        };
        // Branch-free sums in blocks small enough for 16-bit counters, which the
        // compiler turns into vector instructions: 3-4 ms of CPU for 13 MB of
        // normalized web3 text, against 40-50 ms for the signatures of its word
        // shingles, and a quarter of the time of separate passes.
        for block in t.chunks(1 << 15) {
            let (mut chars, mut long, mut spaces, mut digits) = (0u16, 0u16, 0u16, 0u16);
            for &b in block {
                chars += (b & 0xc0 != 0x80) as u16;
                long += (b >= 0xe0) as u16;
                spaces += (b == b' ') as u16;
                digits += (b.wrapping_sub(b'0') < 10) as u16;
            }
            c.chars += chars as usize;
            c.long_chars += long as usize;
            c.spaces += spaces as usize;
            c.digits += digits as usize;
        }
        c
    }
}

/// The code point starting `s` (at a lead byte of 3 or 4 bytes); U+FFFD for a
/// malformed sequence.
#[inline]
fn decode_utf8(s: &[u8]) -> u32 {
    let len = match s[0] {
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return 0xfffd,
    };
    if s.len() < len || s[1..len].iter().any(|&b| b & 0xc0 != 0x80) {
        return 0xfffd;
    }
    let lead = (s[0] as u32) & (0x7f >> len);
    s[1..len]
        .iter()
        .fold(lead, |c, &b| (c << 6) | (b as u32 & 0x3f))
}

/// Blocks of the scripts written without spaces between words.
const UNSPACED_SCRIPTS: &[(u32, u32)] = &[
    (0x0e00, 0x0eff),   // Thai, Lao
    (0x0f00, 0x0fff),   // Tibetan
    (0x1000, 0x109f),   // Myanmar
    (0x1780, 0x17ff),   // Khmer
    (0x19e0, 0x19ff),   // Khmer symbols
    (0x2e80, 0x2fdf),   // CJK radicals, Kangxi radicals
    (0x3005, 0x3007),   // iteration marks, ideographic zero
    (0x3021, 0x3029),   // Hangzhou numerals
    (0x3031, 0x303b),   // kana repeat marks, more iteration marks
    (0x3040, 0x30ff),   // Hiragana, Katakana
    (0x3100, 0x312f),   // Bopomofo
    (0x31a0, 0x31bf),   // Bopomofo extended
    (0x31f0, 0x31ff),   // Katakana phonetic extensions
    (0x3400, 0x4dbf),   // CJK extension A
    (0x4e00, 0x9fff),   // CJK unified ideographs
    (0xa9e0, 0xa9ff),   // Myanmar extended B
    (0xaa60, 0xaa7f),   // Myanmar extended A
    (0xf900, 0xfaff),   // CJK compatibility ideographs
    (0xff66, 0xff9f),   // halfwidth Katakana
    (0x1b000, 0x1b16f), // Kana supplement and extensions
    (0x20000, 0x323af), // CJK extensions B to H, compatibility supplement
];

#[inline]
fn is_unspaced_script(c: u32) -> bool {
    // Latin, Greek, Cyrillic, Arabic, Hebrew and the Indic scripts all come before
    // Thai: one comparison for most text.
    c >= 0x0e00 && UNSPACED_SCRIPTS.iter().any(|&(a, b)| (a..=b).contains(&c))
}

impl fmt::Display for Shingling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shingling::Words(n) => write!(f, "words:{n}"),
            Shingling::Chars(n) => write!(f, "chars:{n}"),
            Shingling::Auto(n) => write!(f, "auto:{n}"),
        }
    }
}

impl FromStr for Shingling {
    type Err = String;
    /// `5`, `words:5` or `chars:3`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, n) = match s.split_once(':') {
            Some((k, n)) => (k, n),
            // A bare `N` has always meant word shingles (stores record it so).
            None => ("words", s),
        };
        let n: usize = match n.parse() {
            Ok(n) if (1..=MAX_SHINGLE).contains(&n) => n,
            _ => {
                return Err(format!(
                    "bad shingle size in '{s}' (expected N, words:N, chars:N or auto:N with 1 <= N <= {MAX_SHINGLE})"
                ))
            }
        };
        match kind {
            "words" => Ok(Shingling::Words(n)),
            "chars" => Ok(Shingling::Chars(n)),
            "auto" => Ok(Shingling::Auto(n)),
            _ => Err(format!(
                "unknown shingling '{s}' (expected N, words:N, chars:N or auto:N)"
            )),
        }
    }
}

/// Turns texts into shingle hashes, reusing its buffers. One per thread.
#[derive(Debug)]
pub struct Shingler {
    shingling: Shingling,
    norm: TextBuilder,
    /// `chars:N`: the normalized text without spaces.
    squeezed: Vec<u8>,
}

impl Shingler {
    /// Shingles of text normalized with `norm` (`lower` or `loose`).
    ///
    /// # Panics
    /// If the shingle size is not in `1..=MAX_SHINGLE` (parsing never gives one).
    pub fn new(shingling: Shingling, norm: Normalization) -> Self {
        let n = shingling.size();
        assert!(
            (1..=MAX_SHINGLE).contains(&n),
            "shingle size {n} out of 1..={MAX_SHINGLE}"
        );
        Shingler {
            shingling,
            norm: TextBuilder::new(norm),
            squeezed: Vec::new(),
        }
    }

    pub fn shingling(&self) -> Shingling {
        self.shingling
    }

    /// Calls `f` with the hash of every shingle of `text` (words separated by any
    /// whitespace; invalid UTF-8 is read lossily), in order. Returns how many.
    #[inline]
    pub fn for_each(&mut self, text: &[u8], mut f: impl FnMut(u64)) -> usize {
        self.for_each_shingle(text, |s| f(xxh3_64_with_seed(s, SHINGLE_SEED)))
    }

    /// As [`for_each`](Self::for_each), for a text already normalized (for
    /// callers that normalize while parsing, e.g. vertical tokens with their glue).
    #[inline]
    pub fn for_each_normalized(&mut self, normalized: &[u8], mut f: impl FnMut(u64)) -> usize {
        let mut norm = std::mem::take(&mut self.norm);
        norm.clear();
        // Re-normalizing normalized text is the identity (a property test in
        // webdedup-text for `loose`); going through the builder keeps one code path.
        norm.push_text(normalized);
        let n = self.shingles_of(norm.text(), &mut |s| f(xxh3_64_with_seed(s, SHINGLE_SEED)));
        self.norm = norm;
        n
    }

    /// As [`for_each_normalized`](Self::for_each_normalized) without normalizing
    /// again: `loose` must be exactly what the normalization writes (words
    /// separated by single spaces, none leading or trailing), e.g. `TextBuilder`
    /// outputs joined by one space. Saves a pass over the text for callers that
    /// normalized while parsing (`webdedup minhash`).
    #[inline]
    pub fn for_each_loose(&mut self, loose: &[u8], mut f: impl FnMut(u64)) -> usize {
        debug_assert!(
            !loose.starts_with(b" ")
                && !loose.ends_with(b" ")
                && memchr::memmem::find(loose, b"  ").is_none(),
            "not loose-normalized text"
        );
        self.shingles_of(loose, &mut |s| f(xxh3_64_with_seed(s, SHINGLE_SEED)))
    }

    /// The shingles of `text` as strings (documentation, tests, studies).
    pub fn shingles(&mut self, text: &[u8]) -> Vec<String> {
        let mut v = Vec::new();
        self.for_each_shingle(text, |s| v.push(String::from_utf8_lossy(s).into_owned()));
        v
    }

    fn for_each_shingle(&mut self, text: &[u8], mut f: impl FnMut(&[u8])) -> usize {
        let mut norm = std::mem::take(&mut self.norm);
        norm.clear();
        norm.push_text(text);
        let n = self.shingles_of(norm.text(), &mut f);
        self.norm = norm;
        n
    }

    fn shingles_of(&mut self, normalized: &[u8], f: &mut dyn FnMut(&[u8])) -> usize {
        match self.shingling.resolve(normalized) {
            Shingling::Words(n) | Shingling::Auto(n) => word_shingles(normalized, n, f),
            Shingling::Chars(n) => {
                self.squeezed.clear();
                self.squeezed
                    .extend(normalized.iter().copied().filter(|&b| b != b' '));
                char_shingles(&self.squeezed, n, f)
            }
        }
    }
}

/// The `n`-word shingles of loose-normalized text (words separated by one space, no
/// space at either end).
#[inline]
fn word_shingles(t: &[u8], n: usize, f: &mut dyn FnMut(&[u8])) -> usize {
    let mut start = 0;
    let words = memchr::memchr_iter(b' ', t).chain([t.len()]).map(|end| {
        let word = (start, end);
        start = end + 1;
        word
    });
    window_shingles(t, n, words, f)
}

/// The `n`-character shingles of `s` (UTF-8).
#[inline]
fn char_shingles(s: &[u8], n: usize, f: &mut dyn FnMut(&[u8])) -> usize {
    // A character starts at each byte that is not a UTF-8 continuation byte and
    // ends where the next one starts.
    let mut starts = s
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b & 0xc0 != 0x80)
        .map(|(i, _)| i)
        .peekable();
    let chars = std::iter::from_fn(move || {
        let start = starts.next()?;
        Some((start, starts.peek().copied().unwrap_or(s.len())))
    });
    window_shingles(s, n, chars, f)
}

/// The shingles of `n` consecutive units (words or characters: their start and
/// end offsets in `t`, in order), each from its first unit's start to its last
/// unit's end; all of `t` as one shingle if it has fewer than `n` units.
#[inline]
fn window_shingles(
    t: &[u8],
    n: usize,
    units: impl Iterator<Item = (usize, usize)>,
    f: &mut dyn FnMut(&[u8]),
) -> usize {
    if t.is_empty() {
        return 0;
    }
    // Start offsets of the last n units, in a ring.
    let mut starts = [0usize; MAX_SHINGLE];
    let mut slot = 0;
    let mut emitted = 0;
    for (i, (start, end)) in units.enumerate() {
        starts[slot] = start;
        slot = if slot + 1 == n { 0 } else { slot + 1 };
        if i + 1 >= n {
            // The ring's next slot holds the start of the unit n - 1 back.
            f(&t[starts[slot]..end]);
            emitted += 1;
        }
    }
    if emitted == 0 {
        f(t);
        emitted = 1;
    }
    emitted
}
