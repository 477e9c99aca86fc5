//! Substring mode's part of planning: the units of every word a reader hands
//! over, each with the input bytes that removing it removes (in the chunk's data).
//!
//! A word the reader hands over as a slice of the chunk's data (verticals, plain
//! text, JSON text lines without escapes) gives its units' bytes directly; a
//! vertical's unit stands for its whole token line. A JSON text line with escapes
//! comes unescaped: its units' positions are mapped back through the escapes at the
//! end of the paragraph, so a cut never splits an escape.

use super::tokens::{Token, Tokenizer};
use std::ops::Range;

/// Where units go: the plan's parallel lists (`ChunkPlan::tokens`, `token_len`,
/// `token_bytes`, `token_chars`).
pub struct UnitsOut<'a> {
    pub tokens: &'a mut Vec<u64>,
    pub token_len: &'a mut Vec<u32>,
    pub token_bytes: &'a mut Vec<Range<usize>>,
    pub token_chars: &'a mut Vec<Range<u32>>,
}

/// What the planner is doing besides reading units.
#[derive(Clone, Copy)]
pub struct Planning {
    /// The chunk is a vertical (a unit stands for its token line).
    pub vertical: bool,
    /// `--mark`: units' characters are recorded too.
    pub marks: bool,
}

/// The planner's substring-mode state (one a planner).
#[derive(Default)]
pub struct SubstrUnits {
    tokenizer: Tokenizer,
    word_tokens: Vec<Token>,
    /// The first unit of this paragraph whose bytes are still positions in the
    /// paragraph's unescaped text.
    pending: Option<usize>,
    /// Bytes of unescaped text of this paragraph met so far.
    unescaped: usize,
    offsets: Vec<usize>,
    /// `--mark`: characters of this paragraph's text met so far (words joined by a
    /// space, glued ones by none, as the readers count them for `--mark`), and
    /// whether a word was met.
    chars: u32,
    has_word: bool,
}

/// Adds `r` to `list`, or, when `continued`, extends the last range to its end
/// (a glued word continuing the unit before it).
fn push_or_extend<T: Copy>(list: &mut Vec<Range<T>>, r: Range<T>, continued: bool) {
    match list.last_mut() {
        Some(last) if continued => last.end = r.end,
        _ => list.push(r),
    }
}

impl SubstrUnits {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn para_start(&mut self) {
        self.tokenizer.para_start();
        self.pending = None;
        self.unescaped = 0;
        self.chars = 0;
        self.has_word = false;
    }

    /// `--mark`: the characters of `word`'s units in its paragraph's text into
    /// `plan.token_chars` (made absolute by [`Self::para_chars`]).
    fn unit_chars(&mut self, text: &str, glued: bool, continues: bool, plan: &mut UnitsOut) {
        if self.has_word && !glued {
            self.chars += 1;
        }
        self.has_word = true;
        let base = self.chars;
        let mut counted = (0usize, 0u32);
        let mut chars_to = |to: usize| {
            counted.1 += text[counted.0..to].chars().count() as u32;
            counted.0 = to;
            base + counted.1
        };
        for (i, t) in self.word_tokens.iter().enumerate() {
            let start = chars_to(t.bytes.start);
            let end = chars_to(t.bytes.end);
            push_or_extend(plan.token_chars, start..end, continues && i == 0);
        }
        self.chars = chars_to(text.len());
    }

    /// `--mark`: the paragraph just ended, whose units' characters are
    /// `token_chars`, starts at character `start` of its document's text: they
    /// become the document's.
    pub fn para_chars(token_chars: &mut [Range<u32>], start: u32) {
        for c in token_chars {
            *c = c.start + start..c.end + start;
        }
    }

    /// The units of `word` into `plan` (invalid UTF-8 makes none: the planner
    /// reports the line). A glued word may continue the paragraph's last unit.
    pub fn word(
        &mut self,
        word: &[u8],
        glued: bool,
        data: &[u8],
        how: Planning,
        plan: &mut UnitsOut,
    ) {
        let Ok(text) = std::str::from_utf8(word) else {
            return;
        };
        let continues = self.tokenizer.word(text, glued, &mut self.word_tokens);
        for (i, t) in self.word_tokens.iter().enumerate() {
            let len = t.bytes.len() as u32;
            match (plan.tokens.last_mut(), plan.token_len.last_mut()) {
                (Some(h), Some(l)) if continues && i == 0 => (*h, *l) = (t.hash, *l + len),
                _ => {
                    plan.tokens.push(t.hash);
                    plan.token_len.push(len);
                }
            }
        }
        if how.marks {
            self.unit_chars(text, glued, continues, plan);
        }
        let at = offset_in(data, word);
        let line = at.filter(|_| how.vertical).map(|at| line_around(data, at));
        if at.is_none() {
            self.pending.get_or_insert(plan.token_bytes.len());
        }
        let base = at.unwrap_or(self.unescaped);
        for (i, t) in self.word_tokens.iter().enumerate() {
            let r = match &line {
                Some(line) => line.clone(),
                None => base + t.bytes.start..base + t.bytes.end,
            };
            push_or_extend(plan.token_bytes, r, continues && i == 0);
        }
        if at.is_none() {
            self.unescaped += word.len();
        }
    }

    /// The paragraph whose input bytes are `raw` (from `raw_start` in the chunk)
    /// ends: units given unescaped get their input bytes.
    pub fn para_end(&mut self, raw: &[u8], raw_start: usize, plan: &mut UnitsOut) {
        let Some(from) = self.pending.take() else {
            return;
        };
        json_offsets(raw, &mut self.offsets);
        let offsets = &self.offsets;
        let at = |i: usize| raw_start + offsets.get(i).copied().unwrap_or(raw.len());
        for r in &mut plan.token_bytes[from..] {
            *r = at(r.start)..at(r.end);
        }
    }
}

/// Where `word` starts in `data`, if it is a slice of it.
fn offset_in(data: &[u8], word: &[u8]) -> Option<usize> {
    let (base, at) = (data.as_ptr() as usize, word.as_ptr() as usize);
    (at >= base && at + word.len() <= base + data.len()).then(|| at - base)
}

/// The line of `data` holding byte `at`, with its line break.
fn line_around(data: &[u8], at: usize) -> Range<usize> {
    let start = memchr::memrchr(b'\n', &data[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i + 1);
    start..end
}

/// For each byte of the unescaped text of the JSON string bytes `raw` (without
/// quotes), where its escape or character starts in `raw`, then `raw.len()`, into
/// `out` (cleared first). A `\u` escape stands for the UTF-8 bytes of its character
/// (a surrogate pair for one character; a lone surrogate for U+FFFD).
pub fn json_offsets(raw: &[u8], out: &mut Vec<usize>) {
    out.clear();
    let hex = |j: usize| {
        raw.get(j..j + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let mut i = 0;
    while i < raw.len() {
        let (bytes, len) = match (raw[i], raw.get(i + 1)) {
            (b'\\', Some(b'u')) => match hex(i + 2) {
                Some(0xD800..=0xDBFF) => match (raw.get(i + 6..i + 8), hex(i + 8)) {
                    (Some(b"\\u"), Some(0xDC00..=0xDFFF)) => (4, 12),
                    _ => (3, 6),
                },
                Some(c) => (char::from_u32(c).map_or(3, char::len_utf8), 6),
                None => (1, 1),
            },
            (b'\\', Some(_)) => (1, 2),
            _ => (1, 1),
        };
        out.extend(std::iter::repeat_n(i, bytes));
        i += len;
    }
    out.push(raw.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_map_to_where_they_start() {
        let raw = br#"a\"\u00e9\ud83d\ude00b"#;
        let text = "a\"\u{e9}\u{1F600}b";
        let mut out = Vec::new();
        json_offsets(raw, &mut out);
        assert_eq!(out.len(), text.len() + 1);
        assert_eq!(out[0], 0); // a
        assert_eq!(out[1], 1); // \"
        assert_eq!(&out[2..4], [3, 3]); // \u00e9
        assert_eq!(&out[4..8], [9, 9, 9, 9]); // the surrogate pair
        assert_eq!(out[8], 21); // b
        assert_eq!(out[9], raw.len());
    }

    #[test]
    fn vertical_units_stand_for_their_lines() {
        let data = b"<p>\nword\tx\n</p>\n";
        assert_eq!(line_around(data, 4), 4..11);
        assert_eq!(line_around(data, 0), 0..4);
    }
}
