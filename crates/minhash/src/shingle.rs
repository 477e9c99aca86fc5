//! From text to shingle hashes: the normalization, the shingles and their hash.
//!
//! The text is normalized with webdedup's `loose` normalization (`webdedup-text`, the
//! one `dedup` applies to paragraphs: lowercase, digits to `0`, punctuation and
//! symbols removed, words separated by one space). Then:
//!
//! * `words:N` (the default, `N` = 5): every run of `N` consecutive normalized words,
//!   written with one space between them; a text of fewer than `N` words gives one
//!   shingle, all its words.
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
}

impl Default for Shingling {
    fn default() -> Self {
        Shingling::Words(5)
    }
}

impl fmt::Display for Shingling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shingling::Words(n) => write!(f, "words:{n}"),
            Shingling::Chars(n) => write!(f, "chars:{n}"),
        }
    }
}

impl FromStr for Shingling {
    type Err = String;
    /// `5`, `words:5` or `chars:3`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, n) = match s.split_once(':') {
            Some((k, n)) => (k, n),
            None => ("words", s),
        };
        let n: usize = match n.parse() {
            Ok(n) if (1..=MAX_SHINGLE).contains(&n) => n,
            _ => {
                return Err(format!(
                    "bad shingle size in '{s}' (expected N, words:N or chars:N with 1 <= N <= {MAX_SHINGLE})"
                ))
            }
        };
        match kind {
            "words" => Ok(Shingling::Words(n)),
            "chars" => Ok(Shingling::Chars(n)),
            _ => Err(format!(
                "unknown shingling '{s}' (expected N, words:N or chars:N)"
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
    /// # Panics
    /// If the shingle size is not in `1..=MAX_SHINGLE` (parsing never gives one).
    pub fn new(shingling: Shingling) -> Self {
        let (Shingling::Words(n) | Shingling::Chars(n)) = shingling;
        assert!(
            (1..=MAX_SHINGLE).contains(&n),
            "shingle size {n} out of 1..={MAX_SHINGLE}"
        );
        Shingler {
            shingling,
            norm: TextBuilder::new(Normalization::Loose),
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

    /// As [`for_each`](Self::for_each), for a text already normalized `loose` (for
    /// callers that normalize while parsing, e.g. vertical tokens with their glue).
    #[inline]
    pub fn for_each_normalized(&mut self, normalized: &[u8], mut f: impl FnMut(u64)) -> usize {
        let mut norm = std::mem::take(&mut self.norm);
        norm.clear();
        // Re-normalizing loose text is the identity (a property test in
        // webdedup-text); going through the builder keeps one code path.
        norm.push_text(normalized);
        let n = self.shingles_of(norm.text(), &mut |s| f(xxh3_64_with_seed(s, SHINGLE_SEED)));
        self.norm = norm;
        n
    }

    /// As [`for_each_normalized`](Self::for_each_normalized) without normalizing
    /// again: `loose` must be exactly what the `loose` normalization writes (words
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
        match self.shingling {
            Shingling::Words(n) => word_shingles(normalized, n, f),
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
