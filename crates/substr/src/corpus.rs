//! The texts of a corpus as one byte string for the suffix array: each text
//! followed by a separator byte, `0xFF`, which no UTF-8 text holds.
//!
//! ExactSubstr's tool writes a unique separator before each text
//! (`\xff\xff` and the document's number) so that no repeat runs from one text
//! into the next. Here one byte does: a repeat is only ever counted inside one
//! text ([`Corpus::text_end`] cuts it at the separator), which is what the
//! unique separators are for, without their edge effect (a repeated text end
//! of L-2 bytes matching on through `\xff\xff`; see docs/substr.md).

use std::ops::Range;

/// The byte between texts.
pub const SEPARATOR: u8 = 0xFF;

/// Texts concatenated, each followed by [`SEPARATOR`].
#[derive(Default, Debug, Clone)]
pub struct Corpus {
    pub bytes: Vec<u8>,
    /// Where each text starts in `bytes`, in order.
    starts: Vec<usize>,
}

impl Corpus {
    pub fn new() -> Corpus {
        Corpus::default()
    }

    /// Appends a text (its bytes must not hold [`SEPARATOR`]: UTF-8 never does).
    pub fn push(&mut self, text: &str) {
        self.starts.push(self.bytes.len());
        self.bytes.extend_from_slice(text.as_bytes());
        self.bytes.push(SEPARATOR);
    }

    /// Appends the texts of `other`, in order.
    pub fn append(&mut self, other: Corpus) {
        let base = self.bytes.len();
        self.starts.extend(other.starts.iter().map(|s| s + base));
        self.bytes.extend_from_slice(&other.bytes);
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The span of text `i` in [`Corpus::bytes`] (without its separator).
    pub fn text_range(&self, i: usize) -> Range<usize> {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes.len());
        self.starts[i]..end - 1
    }

    /// The text holding byte `pos` (a separator belongs to the text before it).
    pub fn text_of(&self, pos: usize) -> usize {
        self.starts.partition_point(|&s| s <= pos) - 1
    }

    /// Where the text holding byte `pos` ends (its separator's position).
    pub fn text_end(&self, pos: usize) -> usize {
        self.text_range(self.text_of(pos)).end
    }
}
