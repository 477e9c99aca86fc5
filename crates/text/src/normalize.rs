//! Normalization of paragraph text, fed one word at a time.
//!
//! `loose` (the default) is: Unicode lowercase, every decimal digit (category Nd) to
//! `0`, punctuation (P*), symbols (S*), controls (Cc) and format characters (Cf)
//! removed, whitespace runs collapsed to one space, no leading or trailing space.
//! Removing a character does not split a word: `e.g.` becomes `eg`, while a lone `,`
//! between two words vanishes with its spaces collapsing. `lower` is `loose` that
//! keeps digits as they are (MinHash's default: pages that differ only in their
//! numbers are not copies). `none` keeps the text as is: words joined by one space,
//! glued words by none.
//!
//! Invalid UTF-8 is replaced by U+FFFD (and flagged, so the reader can report the
//! line); U+FFFD is a symbol (So), so `loose` then drops it.

use unicode_general_category::{get_general_category, GeneralCategory as Gc};

mod blocks;
mod chars;

use chars::Loose;

pub use blocks::Cuts;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Normalization {
    #[default]
    Loose,
    /// `loose` without the digit folding.
    Lower,
    None,
}

crate::named_choices! {
    Normalization, "normalization", quote "'", {
        Loose => "loose",
        Lower => "lower",
        None => "none",
    }
}

/// What `loose` does with a byte: 0 = drop, 1 = whitespace, 2 = not ASCII (the
/// word takes the Unicode path), else the byte to emit.
const ASCII_DROP: u8 = 0;
const ASCII_SPACE: u8 = 1;
const NOT_ASCII: u8 = 2;
static ASCII_LOOSE: [u8; 256] = ascii_table(true);
/// The same for `lower`: digits are written as they are.
static ASCII_LOWER: [u8; 256] = ascii_table(false);

const fn ascii_table(fold_digits: bool) -> [u8; 256] {
    let mut t = [NOT_ASCII; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c.is_ascii_lowercase() {
            c
        } else if c.is_ascii_uppercase() {
            c + 32
        } else if c.is_ascii_digit() {
            if fold_digits {
                b'0'
            } else {
                c
            }
        } else if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' || c == 0x0b || c == 0x0c {
            ASCII_SPACE
        } else {
            ASCII_DROP
        };
        b += 1;
    }
    t
}

/// Builds the normalized text of one paragraph (or any run of words) in a reused
/// buffer, and counts the characters of the raw text (words joined by single spaces,
/// glued words by none), which decides whether a paragraph is long.
#[derive(Debug, Default)]
pub struct TextBuilder {
    mode: Normalization,
    out: Vec<u8>,
    raw_chars: usize,
    words: usize,
    pending_space: bool,
    invalid_utf8: bool,
}

impl TextBuilder {
    pub fn new(mode: Normalization) -> Self {
        TextBuilder {
            mode,
            out: Vec::with_capacity(4096),
            ..Default::default()
        }
    }

    pub fn mode(&self) -> Normalization {
        self.mode
    }

    /// Starts a new text, keeping the allocation.
    #[inline]
    pub fn clear(&mut self) {
        self.out.clear();
        self.raw_chars = 0;
        self.words = 0;
        self.pending_space = false;
        self.invalid_utf8 = false;
    }

    /// The normalized text so far.
    #[inline]
    pub fn text(&self) -> &[u8] {
        &self.out
    }

    /// Characters (Unicode scalar values) of the raw text so far. With `none` the
    /// text is the raw text (words joined by single spaces): counted here, when
    /// asked, not word by word.
    #[inline]
    pub fn raw_chars(&self) -> usize {
        match self.mode {
            Normalization::None => bytecount::num_chars(&self.out),
            Normalization::Loose | Normalization::Lower => self.raw_chars,
        }
    }

    /// Words pushed since the last [`clear`](Self::clear) (empty words do not count).
    #[inline]
    pub fn words(&self) -> usize {
        self.words
    }

    /// Whether any pushed word was not valid UTF-8 (since the last clear).
    #[inline]
    pub fn saw_invalid_utf8(&self) -> bool {
        self.invalid_utf8
    }

    /// Appends a word. `glued` means no space between it and the previous word.
    /// Returns false when the word was not valid UTF-8 (it was then read lossily).
    ///
    /// Inlined into the readers' word loops for the common case (`loose` or
    /// `lower`, a word of ASCII letters and digits); the rest is out of line.
    #[inline(always)]
    pub fn push_word(&mut self, word: &[u8], glued: bool) -> bool {
        if self.mode == Normalization::None || word.is_empty() {
            return self.push_word_other(word, glued);
        }
        let separated = self.words > 0 && !glued;
        if !self.push_ascii_emitting(word, self.pending_space | separated) {
            return self.push_word_other(word, glued);
        }
        self.words += 1;
        self.raw_chars += separated as usize + word.len();
        true
    }

    /// [`push_word`](Self::push_word) beyond its fast path.
    #[inline(never)]
    fn push_word_other(&mut self, word: &[u8], glued: bool) -> bool {
        if word.is_empty() {
            return true;
        }
        let separated = self.words > 0 && !glued;
        self.words += 1;
        self.raw_chars += separated as usize;
        let pending_before = self.pending_space;
        if self.mode != Normalization::None {
            self.pending_space |= separated;
            // (Words of letters and digits alone took the fast path.)
            if word.is_ascii() {
                self.push_ascii_run(word);
                self.raw_chars += word.len();
                return true;
            }
            // Not ASCII: nothing was written; take the Unicode path.
            self.pending_space = pending_before;
        } else if word.is_ascii() {
            self.raw_chars += word.len();
            if separated {
                self.out.push(b' ');
            }
            self.out.extend_from_slice(word);
            return true;
        }
        // A JSON text line comes here whole (tens of bytes and more): the SIMD
        // check pays off, and for short words it falls back to the standard one.
        match simdutf8::basic::from_utf8(word) {
            Ok(s) => {
                self.push_str(s, separated);
                true
            }
            Err(_) => {
                self.invalid_utf8 = true;
                let s = String::from_utf8_lossy(word);
                self.push_str(&s, separated);
                false
            }
        }
    }

    /// [`push_word`](Self::push_word) for a word known to be UTF-8: the same text
    /// and counts, without checking it again (`none` copies it as it is).
    #[inline]
    pub fn push_str_word(&mut self, word: &str, glued: bool) {
        if self.mode != Normalization::None {
            self.push_word(word.as_bytes(), glued);
            return;
        }
        if word.is_empty() {
            return;
        }
        let separated = self.words > 0 && !glued;
        self.words += 1;
        self.push_str(word, separated);
        self.raw_chars += separated as usize;
    }

    /// Appends a whole text whose words are separated by whitespace. With `loose`
    /// this equals pushing each of its whitespace-separated words with `glued =
    /// false` (so [`normalize`] of the text), faster for long texts: runs of ASCII
    /// words go through the ASCII path in one call (whitespace inside them is the
    /// separator); only words with a non-ASCII byte go one by one. With `none`, the
    /// words separated by ASCII whitespace are pushed one by one. [`words`](Self::words)
    /// and [`raw_chars`](Self::raw_chars) are not meaningful after this call. Returns
    /// false when some word was not valid UTF-8 (read lossily).
    pub fn push_text(&mut self, text: &[u8]) -> bool {
        let mut ok = true;
        if self.mode == Normalization::None {
            for w in text.split(|b| b.is_ascii_whitespace()) {
                ok &= self.push_word(w, false);
            }
            return ok;
        }
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            let Some(na) = rest.iter().position(|&b| b >= 0x80) else {
                ok &= self.push_word(rest, false);
                break;
            };
            // The word holding the non-ASCII byte starts after the last ASCII
            // whitespace before it; everything before that is ASCII words.
            let start = match rest[..na].iter().rposition(|b| b.is_ascii_whitespace()) {
                Some(ws) => {
                    ok &= self.push_word(&rest[..ws], false);
                    ws + 1
                }
                None => 0,
            };
            let end = rest[na..]
                .iter()
                .position(|b| b.is_ascii_whitespace())
                .map_or(rest.len(), |e| na + e);
            ok &= self.push_word(&rest[start..end], false);
            i += end + 1;
        }
        ok
    }

    /// Appends a paragraph's words given whole, on a builder just cleared: `text`
    /// with the bytes of `cuts` left out (a glued word's cut joins it to the word
    /// before), whitespace separating words, so `loose` of what is left is the text
    /// pushing the words one by one would build. `words` and `raw_chars` are what
    /// those pushes would count (the caller reads them off the raw text). Not for
    /// `none` (it joins words by exactly one space, which a run of whitespace would
    /// not give).
    pub fn push_cut_text(&mut self, text: &str, cuts: Cuts<'_>, words: usize, raw_chars: usize) {
        debug_assert!(self.mode != Normalization::None && self.out.is_empty() && self.words == 0);
        self.push_cut_blocks(text, cuts, true);
        self.words = words;
        self.raw_chars = raw_chars;
    }

    /// `loose` (or `lower`) of a str, carrying the pending space and the output
    /// as they are: runs of ASCII take the byte loop, other characters one by one.
    fn push_loose_str(&mut self, s: &str) {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let run = bytes[i..]
                .iter()
                .position(|&b| b >= 0x80)
                .unwrap_or(bytes.len() - i);
            if run > 0 {
                self.push_ascii_run(&bytes[i..i + run]);
                i += run;
                continue;
            }
            // A non-ASCII character: `s` is a str, so `i` is at its start.
            let c = s[i..].chars().next().expect("i is inside s");
            self.push_char_loose(c);
            i += c.len_utf8();
        }
    }

    /// Writes a non-empty word whose every byte emits itself mapped (ASCII letters
    /// and digits: most words of a vertical's token lines), after a space if
    /// `pending` and the text is not empty; returns false, having written nothing,
    /// for any other word. One pass with no dependency between bytes writes the
    /// mapped bytes and checks them.
    #[inline(always)]
    fn push_ascii_emitting(&mut self, word: &[u8], pending: bool) -> bool {
        // Each byte emits at most itself, after one space.
        self.out.reserve(word.len() + 1);
        let table = self.ascii_table();
        let len = self.out.len();
        let lead = (pending && len > 0) as usize;
        let spare = &mut self.out.spare_capacity_mut()[..word.len() + 1];
        spare[0].write(b' ');
        let mut all_emit = !word.is_empty();
        for (dst, &b) in spare[lead..].iter_mut().zip(word) {
            let c = table[b as usize];
            all_emit &= c > NOT_ASCII;
            dst.write(c);
        }
        if all_emit {
            self.pending_space = false;
            // SAFETY: spare[..lead + word.len()] was written above.
            unsafe { self.out.set_len(len + lead + word.len()) };
        }
        all_emit
    }

    /// What `loose` or `lower` does with each ASCII byte.
    #[inline]
    fn ascii_table(&self) -> &'static [u8; 256] {
        match self.mode {
            Normalization::Lower => &ASCII_LOWER,
            _ => &ASCII_LOOSE,
        }
    }

    /// `loose` (or `lower`) of ASCII bytes (any mix of classes), in the buffer's spare capacity.
    #[inline]
    fn push_ascii_run(&mut self, word: &[u8]) {
        self.out.reserve(word.len() + 1);
        let len = self.out.len();
        let mut pending = self.pending_space;
        let table = self.ascii_table();
        let spare = &mut self.out.spare_capacity_mut()[..word.len() + 1];
        let mut j = 0;
        // Branch-free: every byte writes a space and its mapped value; the cursor only
        // moves past what is really emitted.
        for &b in word {
            let c = table[b as usize];
            let emit = c > NOT_ASCII;
            let space = pending & emit & (len + j > 0);
            spare[j].write(b' ');
            j += space as usize;
            spare[j].write(c);
            j += emit as usize;
            pending = (pending | (c == ASCII_SPACE)) & !emit;
        }
        self.pending_space = pending;
        // SAFETY: the loop initialized spare[..j] (each index it moved past was written).
        unsafe { self.out.set_len(len + j) };
    }

    fn push_str(&mut self, s: &str, separated: bool) {
        if self.mode != Normalization::None {
            // SIMD count: the same as `chars().count()` (see `raw_chars` for `none`).
            self.raw_chars += bytecount::num_chars(s.as_bytes());
        }
        match self.mode {
            Normalization::None => {
                if separated {
                    self.out.push(b' ');
                }
                self.out.extend_from_slice(s.as_bytes());
            }
            Normalization::Loose | Normalization::Lower => {
                if separated {
                    self.pending_space = true;
                }
                // Runs of ASCII (the spaces, digits and punctuation of most
                // non-Latin text too) take the table path in one call; the same
                // state (pending space, output length) carries over, so this equals
                // feeding the characters one by one.
                self.push_loose_str(s);
            }
        }
    }

    fn push_char_loose(&mut self, c: char) {
        if c.is_ascii() {
            self.push_ascii_run(&[c as u8]);
            return;
        }
        let kept = chars::loose_of(c);
        match kept {
            Loose::Space => {
                self.pending_space = true;
                return;
            }
            Loose::Dropped => return,
            Loose::Digit | Loose::Lower(_) | Loose::LowerMany => {}
        }
        if self.pending_space {
            if !self.out.is_empty() {
                self.out.push(b' ');
            }
            self.pending_space = false;
        }
        let mut buf = [0u8; 4];
        match kept {
            Loose::Digit if self.mode == Normalization::Loose => self.out.push(b'0'),
            Loose::Lower(l) => self
                .out
                .extend_from_slice(l.encode_utf8(&mut buf).as_bytes()),
            _ => {
                for l in c.to_lowercase() {
                    self.out
                        .extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
    }
}

/// What `loose` does with a character that is not whitespace, by its Unicode
/// category.
enum LooseClass {
    /// A decimal digit (Nd): written `0`.
    Digit,
    /// Punctuation (P*), a symbol (S*), a control (Cc) or a format character (Cf).
    Dropped,
    /// Anything else: lowercased.
    Kept,
}

fn loose_class(c: char) -> LooseClass {
    match get_general_category(c) {
        Gc::DecimalNumber => LooseClass::Digit,
        Gc::ConnectorPunctuation
        | Gc::DashPunctuation
        | Gc::OpenPunctuation
        | Gc::ClosePunctuation
        | Gc::InitialPunctuation
        | Gc::FinalPunctuation
        | Gc::OtherPunctuation
        | Gc::MathSymbol
        | Gc::CurrencySymbol
        | Gc::ModifierSymbol
        | Gc::OtherSymbol
        | Gc::Control
        | Gc::Format => LooseClass::Dropped,
        _ => LooseClass::Kept,
    }
}

/// Normalizes a whole string (words split on whitespace). Convenience for tests,
/// tools and other front doors; the hot path feeds [`TextBuilder`] word by word.
pub fn normalize(text: &str, mode: Normalization) -> String {
    let mut b = TextBuilder::new(mode);
    for w in text.split_whitespace() {
        b.push_word(w.as_bytes(), false);
    }
    String::from_utf8(b.out).expect("normalized text is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `words` (each with whether it is glued to the one before) normalized `loose`.
    fn loose_glued(words: &[(String, bool)]) -> String {
        let mut b = TextBuilder::new(Normalization::Loose);
        for (w, glued) in words {
            b.push_word(w.as_bytes(), *glued);
        }
        String::from_utf8(b.text().to_vec()).unwrap()
    }

    fn loose(words: &[&str]) -> String {
        let mut b = TextBuilder::new(Normalization::Loose);
        for w in words {
            if let Some(rest) = w.strip_prefix('+') {
                b.push_word(rest.as_bytes(), true);
            } else {
                b.push_word(w.as_bytes(), false);
            }
        }
        String::from_utf8(b.text().to_vec()).unwrap()
    }

    #[test]
    fn loose_lowercases_zeroes_digits_and_drops_punctuation() {
        assert_eq!(
            loose(&["Python", "3.11", "is", "GREAT", "!"]),
            "python 000 is great"
        );
        assert_eq!(loose(&["e.g.", ",", "x"]), "eg x");
        assert_eq!(
            loose(&["(", "email", "+)", "servers", "+."]),
            "email servers"
        );
    }

    #[test]
    fn lower_is_loose_keeping_digits() {
        let lower = |t: &str| normalize(t, Normalization::Lower);
        assert_eq!(lower("Python 3.11 is GREAT !"), "python 311 is great");
        assert_eq!(lower("٣٤ 中文。 x9"), "٣٤ 中文 x9");
        let mut b = TextBuilder::new(Normalization::Lower);
        b.push_text("Version 2.4, Größe 10".as_bytes());
        assert_eq!(b.text(), "version 24 größe 10".as_bytes());
    }

    #[test]
    fn loose_handles_unicode() {
        assert_eq!(
            loose(&["Příliš", "ŽLUŤOUČKÝ", "kůň"]),
            "příliš žluťoučký kůň"
        );
        assert_eq!(loose(&["Größe", "—", "ΑΒΓ"]), "größe αβγ");
        // Arabic-Indic digits are decimal digits; CJK punctuation goes.
        assert_eq!(loose(&["٣٤", "中文", "。"]), "00 中文");
        // Combining marks stay (they are letters' parts, not symbols).
        assert_eq!(loose(&["cafe\u{301}"]), "cafe\u{301}");
        // Zero-width and control characters vanish without splitting the word.
        assert_eq!(loose(&["ab\u{200b}cd", "x\u{0}y"]), "abcd xy");
    }

    #[test]
    fn loose_collapses_whitespace_and_trims() {
        assert_eq!(
            loose(&["--", "a", "  ", "b", "\u{3000}", "c", "!!"]),
            "a b c"
        );
        assert_eq!(loose(&["!", "?"]), "");
    }

    #[test]
    fn none_keeps_text_and_glue() {
        let mut b = TextBuilder::new(Normalization::None);
        b.push_word(b"Hello", false);
        b.push_word(b",", true);
        b.push_word(b"World", false);
        assert_eq!(b.text(), b"Hello, World");
        assert_eq!(b.raw_chars(), 12);
    }

    #[test]
    fn raw_chars_counts_scalar_values_with_spaces() {
        let mut b = TextBuilder::new(Normalization::Loose);
        b.push_word("žluť".as_bytes(), false);
        b.push_word("kůň".as_bytes(), false);
        b.push_word(b".", true);
        assert_eq!(b.raw_chars(), 4 + 1 + 3 + 1);
        assert_eq!(b.words(), 3);
    }

    #[test]
    fn invalid_utf8_is_flagged_and_replaced() {
        let mut b = TextBuilder::new(Normalization::None);
        assert!(!b.push_word(b"ab\xffcd", false));
        assert!(b.saw_invalid_utf8());
        assert_eq!(b.text(), "ab\u{fffd}cd".as_bytes());
        let mut l = TextBuilder::new(Normalization::Loose);
        l.push_word(b"AB\xffcd", false);
        assert_eq!(l.text(), b"abcd");
    }

    #[test]
    fn normalize_helper_splits_on_whitespace() {
        assert_eq!(
            normalize("  The  Quick, brown\tFOX 42 ", Normalization::Loose),
            "the quick brown fox 00"
        );
        assert_eq!(normalize("a  b", Normalization::None), "a b");
    }

    /// The loose rules written the obvious way, one char at a time, for ASCII text.
    fn reference_loose_ascii(words: &[(String, bool)]) -> String {
        let mut text = String::new();
        for (i, (w, glued)) in words.iter().enumerate() {
            if i > 0 && !glued && !w.is_empty() && !text.is_empty() {
                text.push(' ');
            }
            text.push_str(w);
        }
        let mapped: String = text
            .chars()
            .filter_map(|c| match c {
                'A'..='Z' => Some(c.to_ascii_lowercase()),
                'a'..='z' => Some(c),
                '0'..='9' => Some('0'),
                ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' => Some(' '),
                _ => None,
            })
            .collect();
        mapped
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The loose rules for any text, one char at a time (words joined by a space
    /// unless glued), written independently of the fast paths.
    fn reference_loose(words: &[(String, bool)]) -> String {
        let mut text = String::new();
        for (w, glued) in words {
            if !glued && !w.is_empty() {
                text.push(' ');
            }
            text.push_str(w);
        }
        let mut mapped = String::new();
        for c in text.chars() {
            if c.is_whitespace() {
                mapped.push(' ');
                continue;
            }
            match loose_class(c) {
                LooseClass::Digit => mapped.push('0'),
                LooseClass::Dropped => {}
                LooseClass::Kept => mapped.extend(c.to_lowercase()),
            }
        }
        mapped
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    proptest::proptest! {
        #[test]
        fn ascii_fast_path_equals_the_rules(words in proptest::collection::vec(("[ -~\t]{0,12}", proptest::bool::ANY), 0..20)) {
            proptest::prop_assert_eq!(loose_glued(&words), reference_loose_ascii(&words));
        }

        #[test]
        fn push_text_equals_word_by_word(text in "([ -~\t\n\x0b]|\\PC|[\u{a0}\u{3000}\u{2028}]){0,40}") {
            let mut whole = TextBuilder::new(Normalization::Loose);
            whole.push_text(text.as_bytes());
            proptest::prop_assert_eq!(std::str::from_utf8(whole.text()).unwrap(), normalize(&text, Normalization::Loose));
            let mut none = TextBuilder::new(Normalization::None);
            none.push_text(text.as_bytes());
            let words: Vec<&str> = text.split(|c: char| c.is_ascii_whitespace()).filter(|w| !w.is_empty()).collect();
            proptest::prop_assert_eq!(std::str::from_utf8(none.text()).unwrap(), words.join(" "));
        }

        #[test]
        fn mixed_scripts_equal_the_rules(words in proptest::collection::vec(("([a-zA-Z0-9 .,;!\t-]|\\PC|[\u{a0}\u{3000}]){0,12}", proptest::bool::ANY), 0..16)) {
            proptest::prop_assert_eq!(loose_glued(&words), reference_loose(&words));
        }

        #[test]
        fn a_checked_word_counts_and_reads_as_any_word(words in proptest::collection::vec(("([a-zA-Z0-9 .,;!\t-]|\\PC|[\u{a0}\u{3000}]){0,12}", proptest::bool::ANY), 0..16)) {
            for mode in [Normalization::None, Normalization::Loose] {
                let (mut bytes, mut checked) = (TextBuilder::new(mode), TextBuilder::new(mode));
                for (w, glued) in &words {
                    bytes.push_word(w.as_bytes(), *glued);
                    checked.push_str_word(w, *glued);
                }
                proptest::prop_assert_eq!(bytes.text(), checked.text());
                proptest::prop_assert_eq!(bytes.raw_chars(), checked.raw_chars());
                proptest::prop_assert_eq!(bytes.words(), checked.words());
            }
        }

        #[test]
        fn lower_differs_from_loose_only_in_digits(text in "([a-zA-Z0-9 .,;!\t-]|\\PC|[\u{a0}\u{3000}]){0,40}") {
            let (loose, lower) = (normalize(&text, Normalization::Loose), normalize(&text, Normalization::Lower));
            let folded: String = lower.chars().map(|c| if matches!(loose_class(c), LooseClass::Digit) { '0' } else { c }).collect();
            proptest::prop_assert_eq!(folded, loose);
        }

        #[test]
        fn loose_output_is_canonical(words in proptest::collection::vec("\\PC{0,8}", 0..12)) {
            let mut b = TextBuilder::new(Normalization::Loose);
            for w in &words { b.push_word(w.as_bytes(), false); }
            let s = std::str::from_utf8(b.text()).unwrap();
            proptest::prop_assert!(!s.starts_with(' ') && !s.ends_with(' ') && !s.contains("  "));
            // Normalizing twice changes nothing.
            proptest::prop_assert_eq!(normalize(s, Normalization::Loose), s);
        }
    }
}
