//! A vertical paragraph given whole instead of word by word: its body (the lines
//! between `<p>` and `</p>`) when every line is valid UTF-8 with one column, no
//! `\r` and no NUL, and every tag line in it is a glue `<g/>` between two word
//! lines. Its text is then the raw bytes with the glue lines taken out: `\n`
//! separates words as a space does and a glue joins its neighbours, so a
//! normalizer that collapses whitespace reads the words off the bytes in one
//! pass, with no call per line.
//! The vertical reader finds such bodies ([`crate::vertical`]); a [`DocSink`]
//! that does not take them whole gets the same words one by one
//! ([`WholePara::words`]).
//!
//! [`DocSink`]: crate::doc::DocSink

/// The glue line, with its newline.
pub(crate) const GLUE_LINE: &[u8] = b"<g/>\n";

/// A paragraph's body, given whole (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct WholePara<'a> {
    /// Whole lines, each ending in `\n`.
    pub(crate) body: &'a [u8],
    /// Where each glue line starts in `body`, in order.
    pub(crate) glues: &'a [usize],
    /// The line number of the body's first line.
    pub(crate) first_line: u64,
    pub(crate) words: usize,
    pub(crate) raw_chars: usize,
}

impl<'a> WholePara<'a> {
    /// The paragraph's words as a reader gives them one by one: every line that is
    /// not blank (ASCII whitespace alone) nor glue, with whether a glue line came
    /// just before it, and its line number.
    pub fn words(&self) -> impl Iterator<Item = (&'a [u8], bool, u64)> + 'a {
        let (body, glues) = (self.body, self.glues);
        let mut next_glue = glues.iter().copied().peekable();
        let mut glued = false;
        let mut line_no = self.first_line;
        let mut at = 0;
        std::iter::from_fn(move || {
            while at < body.len() {
                let start = at;
                let end = memchr::memchr(b'\n', &body[start..]).map_or(body.len(), |i| start + i);
                at = end + 1;
                let line = line_no;
                line_no += 1;
                if next_glue.peek() == Some(&start) {
                    next_glue.next();
                    glued = true;
                    continue;
                }
                let word = &body[start..end];
                if word.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some((word, std::mem::take(&mut glued), line));
            }
            None
        })
    }

    /// The body as text (it is valid UTF-8, else it is not given whole).
    pub fn text(&self) -> &'a str {
        debug_assert!(std::str::from_utf8(self.body).is_ok());
        // SAFETY: the reader gives a body whole only when it is valid UTF-8
        // (`vertical::whole`).
        unsafe { std::str::from_utf8_unchecked(self.body) }
    }

    /// The bytes to leave out of the body for the paragraph's text: each glue
    /// line with the newline before it, `len` bytes from `start - back` for each
    /// `start` in `starts` (the glue lines' offsets). What is left, joined with
    /// nothing between, is the words with whitespace between them, a glued word
    /// joined to the word before it; the cuts fall between ASCII bytes, never
    /// inside a character. (`(starts, back, len)`.)
    pub fn glue_cuts(&self) -> (&'a [usize], usize, usize) {
        (self.glues, 1, GLUE_LINE.len() + 1)
    }

    /// Its words (lines not blank nor glue).
    pub fn word_count(&self) -> usize {
        self.words
    }

    /// Characters (Unicode scalar values) of its raw text: the words joined by
    /// one space, glued ones by none.
    pub fn raw_chars(&self) -> usize {
        self.raw_chars
    }

    /// The body's bytes (whole lines, glue lines included).
    pub fn body(&self) -> &'a [u8] {
        self.body
    }
}
