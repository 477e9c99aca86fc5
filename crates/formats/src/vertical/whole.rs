//! Finding a paragraph body the reader can give whole ([`AsciiPara`]): after a
//! `<p>` line, the lines up to its `</p>`, when they are ASCII with one column
//! (no tab), no `\r`, no NUL, and their only tag lines are glues `<g/>` each
//! between two word lines. Most paragraphs of web text are; the others (and
//! anything unusual: a glue next to a blank line, two glues in a row, another
//! tag, no `</p>` in the chunk) are read line by line as before.
//!
//! Finding one costs a search for the next line that starts with `<` (glues
//! and the `</p>`) and a few vector passes over the body (ASCII, the excluded
//! bytes, the newlines); blank lines are looked for only where the body has a
//! space, a form feed or an empty line.
//!
//! [`AsciiPara`]: crate::ascii_para::AsciiPara

use super::{parse_tag, Tag};
use crate::ascii_para::GLUE_LINE;
use memchr::{memchr, memchr2, memchr3, memmem};
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
}

/// The body that starts at `from` (the line after a `<p>` line), if it can be
/// given whole; `glues` gets its glue lines' offsets in the body.
pub(crate) fn scan(data: &[u8], from: usize, glues: &mut Vec<usize>) -> Option<Whole> {
    glues.clear();
    // Always a line start.
    let mut at = from;
    let (close, close_nl) = loop {
        let lt = next_tag_line(data, at)?;
        let rest = &data[lt..];
        if rest.starts_with(GLUE_LINE) {
            let after_word = lt >= from + 2
                && !matches!(data[lt - 2], b'\n' | b' ' | 0x0c)
                && glues
                    .last()
                    .is_none_or(|&g| from + g + GLUE_LINE.len() != lt);
            let before_word = rest
                .get(GLUE_LINE.len())
                .is_some_and(|b| !matches!(b, b'\n' | b' ' | 0x0c | b'<'));
            if !(after_word && before_word) {
                return None;
            }
            glues.push(lt - from);
            at = lt + GLUE_LINE.len();
            continue;
        }
        let nl = memchr(b'\n', rest).map_or(data.len(), |i| lt + i);
        if parse_tag(&data[lt..nl]) != Some(Tag::Close { name: b"p" }) {
            return None;
        }
        break (lt, nl);
    };
    let body = &data[from..close];
    if !body.is_ascii() || memchr3(b'\t', b'\r', 0, body).is_some() {
        return None;
    }
    let newlines = bytecount::count(body, b'\n');
    let maybe_blank = body.first() == Some(&b'\n')
        || memchr2(b' ', 0x0c, body).is_some()
        || memmem::find(body, b"\n\n").is_some();
    let (words, blank_bytes) = if maybe_blank {
        count_blank_lines(body, glues)
    } else {
        (newlines - glues.len(), 0)
    };
    // The words' bytes and one separator a word after the first, but none before
    // a glued word: the body less its newlines, glue lines and blank lines.
    let raw_chars = match words {
        0 => 0,
        _ => body.len() - 1 - (GLUE_LINE.len() + 1) * glues.len() - blank_bytes,
    };
    Some(Whole {
        body: from..close,
        close_end: (close_nl + 1).min(data.len()),
        lines: newlines as u64 + 1,
        words,
        raw_chars,
    })
}

/// The first line start at or after `at` (a line start) whose line begins with `<`.
#[inline]
fn next_tag_line(data: &[u8], at: usize) -> Option<usize> {
    let mut p = at;
    loop {
        let i = p + memchr(b'<', data.get(p..)?)?;
        if i == at || data[i - 1] == b'\n' {
            return Some(i);
        }
        p = i + 1;
    }
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
