//! What `loose` does with a character that is not ASCII. The Unicode tables
//! (whitespace, general category, lowercase) are searched a character at a time,
//! tens of cycles each; the characters of most text that is not ASCII (Latin
//! letters with marks, Greek, Cyrillic, Hebrew, Arabic: two UTF-8 bytes) and the
//! general punctuation of Latin text (dashes, curly quotes) are read off a table
//! made once from those same searches, so the answers are theirs.

use super::{loose_class, LooseClass};
use std::sync::OnceLock;

/// What `loose` does with a character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loose {
    /// Whitespace: a word boundary.
    Space,
    /// Punctuation, a symbol, a control or a format character: dropped.
    Dropped,
    /// A decimal digit (Nd).
    Digit,
    /// Kept as its lowercase, one character.
    Lower(char),
    /// Kept as its lowercase, several characters (`char::to_lowercase`).
    LowerMany,
}

/// The characters of two UTF-8 bytes, then the General Punctuation block.
const TWO_BYTES: u32 = 0x800;
const PUNCTUATION: std::ops::Range<u32> = 0x2000..0x2070;

/// What `loose` does with `c` (not ASCII).
#[inline]
pub(super) fn loose_of(c: char) -> Loose {
    let at = c as u32;
    let index = if at < TWO_BYTES {
        at
    } else if PUNCTUATION.contains(&at) {
        TWO_BYTES + at - PUNCTUATION.start
    } else {
        return searched(c);
    };
    let table = TABLE.get_or_init(|| {
        (0..TWO_BYTES)
            .chain(PUNCTUATION)
            .map(|at| char::from_u32(at).map_or(Loose::Dropped, searched))
            .collect()
    });
    table[index as usize]
}

static TABLE: OnceLock<Box<[Loose]>> = OnceLock::new();

/// [`loose_of`] by the Unicode tables.
fn searched(c: char) -> Loose {
    if c.is_whitespace() {
        return Loose::Space;
    }
    match loose_class(c) {
        LooseClass::Digit => Loose::Digit,
        LooseClass::Dropped => Loose::Dropped,
        LooseClass::Kept => {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => Loose::Lower(l),
                _ => Loose::LowerMany,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_answers_as_the_unicode_tables_do() {
        let (mut lower, mut many) = (0, 0);
        for at in (0x80..TWO_BYTES).chain(PUNCTUATION).chain(0x3000..0x3010) {
            let Some(c) = char::from_u32(at) else {
                continue;
            };
            let answer = loose_of(c);
            assert_eq!(answer, searched(c), "{c:?}");
            match answer {
                Loose::Lower(l) => {
                    lower += 1;
                    assert_eq!(c.to_lowercase().collect::<String>(), l.to_string());
                }
                Loose::LowerMany => many += 1,
                _ => {}
            }
        }
        // (U+0130, capital I with a dot, lowercases to two characters.)
        assert!(lower > 1000 && many >= 1, "{lower} {many}");
        assert_eq!(loose_of('\u{a0}'), Loose::Space);
        assert_eq!(loose_of('\u{2019}'), Loose::Dropped);
        assert_eq!(loose_of('\u{663}'), Loose::Digit);
        assert_eq!(loose_of('\u{130}'), Loose::LowerMany);
    }
}
