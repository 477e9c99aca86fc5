//! The units of substring mode: tokens with their byte ranges in a document's text.
//!
//! A token is a run of characters between whitespace, normalized as paragraph keys
//! are (`--normalize`): so `Cookies,` and `cookies` are one token, and a run that
//! normalizes to nothing (punctuation alone) is no token at all (it is removed when
//! it lies inside a removed span). Scripts written without spaces between words
//! (Han, kana, Thai, Lao, Khmer, Myanmar, Tibetan) would make a whole sentence one
//! token; there every character is a token of its own, so a window of K tokens is
//! K characters there and K words elsewhere.

use std::ops::Range;
use webdedup_text::{Normalization, TextBuilder};

/// The hash of one normalized token: near mode's n-gram keys and substring mode's
/// window keys are computed from these.
#[inline]
pub fn token_hash(token: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(token)
}

/// One unit of a document's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The hash of its normalized text.
    pub hash: u64,
    /// Its bytes in the text, as written.
    pub bytes: Range<usize>,
}

/// Whether `c` belongs to a script written without spaces between words: each such
/// character is a token by itself (their punctuation too, so that it is no part of
/// a neighbouring word: being punctuation, it then makes no token).
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

/// Cuts texts into [`Token`]s; reusable, to keep its normalization buffer.
pub struct Tokenizer {
    text: TextBuilder,
}

impl Tokenizer {
    pub fn new(normalization: Normalization) -> Self {
        Tokenizer {
            text: TextBuilder::new(normalization),
        }
    }

    /// The tokens of `text`, in order, into `out` (cleared first).
    pub fn tokens(&mut self, text: &str, out: &mut Vec<Token>) {
        out.clear();
        let mut word: Option<usize> = None;
        for (i, c) in text.char_indices() {
            let alone = unspaced(c);
            if c.is_whitespace() || alone {
                if let Some(start) = word.take() {
                    self.push(text, start..i, out);
                }
                if alone {
                    self.push(text, i..i + c.len_utf8(), out);
                }
            } else if word.is_none() {
                word = Some(i);
            }
        }
        if let Some(start) = word {
            self.push(text, start..text.len(), out);
        }
    }

    fn push(&mut self, text: &str, bytes: Range<usize>, out: &mut Vec<Token>) {
        self.text.clear();
        self.text.push_str_word(&text[bytes.clone()], false);
        let normalized = self.text.text();
        if !normalized.is_empty() {
            out.push(Token {
                hash: token_hash(normalized),
                bytes,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<&str> {
        let mut t = Tokenizer::new(Normalization::Loose);
        let mut out = Vec::new();
        t.tokens(text, &mut out);
        out.iter().map(|t| &text[t.bytes.clone()]).collect()
    }

    #[test]
    fn words_between_spaces_punctuation_alone_is_no_token() {
        assert_eq!(
            words("  Cookies, help us -- deliver\tservices. "),
            ["Cookies,", "help", "us", "deliver", "services."]
        );
    }

    #[test]
    fn same_token_after_normalization() {
        let mut t = Tokenizer::new(Normalization::Loose);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        t.tokens("Cookies, HELP", &mut a);
        t.tokens("cookies help!", &mut b);
        let hashes = |v: &[Token]| v.iter().map(|t| t.hash).collect::<Vec<_>>();
        assert_eq!(hashes(&a), hashes(&b));
        t.tokens("cookie help", &mut b);
        assert_ne!(hashes(&a), hashes(&b));
    }

    #[test]
    fn scripts_without_spaces_are_cut_into_characters() {
        assert_eq!(
            words("東京都の天気。iPhone用 ภาษาไทย"),
            [
                "東", "京", "都", "の", "天", "気", "iPhone", "用", "ภ", "า", "ษ", "า", "ไ", "ท",
                "ย"
            ]
        );
    }
}
