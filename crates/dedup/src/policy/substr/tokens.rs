//! The units of substring mode: the text's words as written, with their byte
//! ranges in a document's text.
//!
//! ExactSubstr's rule compares bytes, so a unit is a run of characters between
//! whitespace *as written* (case, digits and punctuation kept: `Cookies,` and
//! `cookies` are two units, and so are `3.11` and `3.13`), and a unit knows
//! whether a line (a paragraph) or a space comes before it: two windows of equal
//! units are equal bytes but for the amount of whitespace between words. Words glued to each other (a vertical's `<g/>`) make one unit, as the
//! same text does in any other format. Scripts written without spaces between
//! words (Han, kana, Thai, Lao, Khmer, Myanmar, Tibetan) would make a whole
//! sentence one unit; there every character is a unit of its own, so a window of
//! K units is K characters there and K words elsewhere.

use std::ops::Range;

/// The hash of one normalized token: near mode's n-gram keys are computed from
/// these.
#[inline]
pub fn token_hash(token: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(token)
}

/// The bit of a unit's hash that says it starts a line (a line break before it,
/// not a space: ExactSubstr's bytes differ).
pub const LINE_START: u64 = 1;

/// The hash of one unit of substring mode, as written, its lowest bit
/// [`LINE_START`]. A window's key leaves that bit out of its first unit (what is
/// before a window is no part of it): see `window_keys`.
#[inline]
pub fn unit_hash(unit: &[u8], line_start: bool) -> u64 {
    xxhash_rust::xxh3::xxh3_64(unit) & !LINE_START | line_start as u64
}

/// One unit of a document's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The hash of its text ([`unit_hash`]).
    pub hash: u64,
    /// Its bytes in the text.
    pub bytes: Range<usize>,
}

/// Whether `c` belongs to a script written without spaces between words: each such
/// character is a unit by itself (their punctuation too, so that it is no part of
/// a neighbouring word).
pub fn unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF // Thai, Lao
        | 0x0F00..=0x0FFF // Tibetan
        | 0x1000..=0x109F // Myanmar
        | 0x1780..=0x17FF // Khmer
        | 0x3000..=0x303F // CJK symbols and punctuation
        | 0x3040..=0x30FF // Hiragana, Katakana
        | 0x31F0..=0x31FF // Katakana phonetic extensions
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0xFF00..=0xFFEF // fullwidth and halfwidth forms
        | 0x20000..=0x3FFFF // CJK extensions B and later
    )
}

/// Cuts texts into [`Token`]s, a paragraph's words one after the other (so a
/// glued word can continue the unit before it); reusable.
#[derive(Default)]
pub struct Tokenizer {
    /// The bytes of the last unit while a glued word may still continue it.
    open: Vec<u8>,
    /// Whether the last unit may be continued (it ended its word, not at
    /// whitespace or at a character that is a unit alone).
    can_continue: bool,
    /// Whether the open unit started a line.
    open_line_start: bool,
    /// Whether the next unit starts a line.
    line_start: bool,
}

impl Tokenizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// A paragraph (a line of the text) starts: its first unit starts a line.
    pub fn para_start(&mut self) {
        self.can_continue = false;
        self.line_start = true;
    }

    /// The units of a whole `text` (a line break starts a line), in order, into
    /// `out` (cleared first).
    pub fn tokens(&mut self, text: &str, out: &mut Vec<Token>) {
        self.para_start();
        self.word(text, false, out);
    }

    /// The units of `word`, the next word of the paragraph, into `out` (cleared
    /// first), its bytes relative to `word`. Returns whether the first of them
    /// continues the paragraph's last unit (`glued` to it): then its hash is the
    /// whole unit's, and its bytes start at 0.
    pub fn word(&mut self, word: &str, glued: bool, out: &mut Vec<Token>) -> bool {
        out.clear();
        let continues = glued
            && self.can_continue
            && word
                .chars()
                .next()
                .is_some_and(|c| !c.is_whitespace() && !unspaced(c));
        if !continues {
            self.can_continue = false;
        }
        let mut run: Option<usize> = continues.then_some(0);
        for (i, c) in word.char_indices() {
            let alone = unspaced(c);
            if c.is_whitespace() || alone {
                if let Some(start) = run.take() {
                    self.push(
                        word,
                        start..i,
                        continues && start == 0 && out.is_empty(),
                        out,
                    );
                }
                if alone {
                    self.push(word, i..i + c.len_utf8(), false, out);
                }
                if c == '\n' {
                    self.line_start = true;
                }
            } else if run.is_none() {
                run = Some(i);
            }
        }
        self.can_continue = false;
        if let Some(start) = run {
            self.push(
                word,
                start..word.len(),
                continues && start == 0 && out.is_empty(),
                out,
            );
            self.can_continue = true;
        }
        continues
    }

    fn push(&mut self, text: &str, bytes: Range<usize>, continued: bool, out: &mut Vec<Token>) {
        if !continued {
            self.open.clear();
            self.open_line_start = std::mem::take(&mut self.line_start);
        }
        self.open.extend_from_slice(&text.as_bytes()[bytes.clone()]);
        out.push(Token {
            hash: unit_hash(&self.open, self.open_line_start),
            bytes,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        Tokenizer::new().tokens(text, &mut out);
        out.iter().map(|t| &text[t.bytes.clone()]).collect()
    }

    fn hashes(words: &[(&str, bool)], para_at: &[usize]) -> Vec<u64> {
        let mut t = Tokenizer::new();
        let (mut all, mut out) = (Vec::new(), Vec::new());
        for (i, &(w, glued)) in words.iter().enumerate() {
            if para_at.contains(&i) {
                t.para_start();
            }
            if t.word(w, glued, &mut out) {
                all.pop();
            }
            all.extend(out.iter().map(|t| t.hash));
        }
        all
    }

    #[test]
    fn words_as_written_between_whitespace() {
        assert_eq!(
            units("  Cookies, help us -- deliver\tservices. "),
            ["Cookies,", "help", "us", "--", "deliver", "services."]
        );
    }

    #[test]
    fn case_digits_punctuation_and_line_breaks_make_other_units() {
        let one = |text: &str| {
            let mut out = Vec::new();
            Tokenizer::new().tokens(text, &mut out);
            out.iter().map(|t| t.hash).collect::<Vec<_>>()
        };
        let a = one("Python 3.11 docs");
        assert_eq!(a, one("Python  3.11\tdocs"));
        assert_ne!(a, one("python 3.11 docs"));
        assert_ne!(a, one("Python 3.13 docs"));
        assert_ne!(a, one("Python 3.11 docs."));
        assert_ne!(a, one("Python 3.11\ndocs"));
        assert_eq!(one("x\nPython")[1], one("Python")[0]);
    }

    #[test]
    fn glued_words_make_one_unit_as_the_same_text_does() {
        // A vertical's `module <g/> .` is the text `module.`.
        let glued = hashes(
            &[("See", false), ("module", false), (".", true), ("x", false)],
            &[0],
        );
        let one = hashes(&[("See module. x", false)], &[0]);
        assert_eq!(glued, one);
        // Not across paragraphs, nor onto a character that is a unit alone.
        let split = hashes(&[("module", false), (".", true)], &[0, 1]);
        assert_eq!(split.len(), 2);
        assert_eq!(hashes(&[("東京", false), ("都", true)], &[0]).len(), 3);
    }

    #[test]
    fn scripts_without_spaces_are_cut_into_characters() {
        assert_eq!(
            units("東京都の天気。iPhone用 ภาษาไทย"),
            [
                "東", "京", "都", "の", "天", "気", "。", "iPhone", "用", "ภ", "า", "ษ", "า", "ไ",
                "ท", "ย"
            ]
        );
    }
}
