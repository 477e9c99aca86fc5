//! Documents whose text is plain lines: a Parquet text value, a WET record's body.
//!
//! The paragraph rules are JSON Lines' (see [`jsonl`](crate::jsonl)), applied to
//! the text's own bytes instead of its escaped form: a paragraph is a line of the
//! text (split at `\n`); a `\r` just before the `\n` belongs to the line break; a
//! line that is empty or only whitespace is not a paragraph but part of the break
//! between its neighbours. So one text gives the same paragraphs, keys and
//! decisions whichever of the three formats holds it.
//!
//! The pieces a document is cut into tile its record: the record's bytes up to the
//! first paragraph (a WARC header, leading blank lines) are its header, the bytes
//! between two paragraphs a separator, and the rest of the record after the last
//! paragraph (trailing blank lines, a WARC record's closing `\r\n\r\n`) its close.

use crate::doc::{CharCounter, DocMeta, DocSink};
use std::ops::Range;

/// Whether `line` holds nothing but whitespace: ASCII whitespace
/// (`u8::is_ascii_whitespace`) in an ASCII line, Unicode's (as `str::trim`) in
/// any other.
///
/// Called on every line of every text, most of which start with a letter: the
/// answer comes at the first byte that is not ASCII whitespace, instead of after
/// reading the whole line (once to see it is not ASCII, once more to decode it).
pub fn is_blank(line: &[u8]) -> bool {
    match line.iter().position(|b| !b.is_ascii_whitespace()) {
        None => true,
        // An ASCII character that is whitespace by neither rule (U+000B, the
        // vertical tab, is Unicode whitespace only) ends it in either case.
        Some(i) if line[i].is_ascii() && line[i] != 0x0B => false,
        Some(_) => !line.is_ascii() && String::from_utf8_lossy(line).trim().is_empty(),
    }
}

/// Tells `sink` about one document: `record` is all its bytes in `data`, `text`
/// (inside `record`) its text. `line` numbers it in messages (a row, an offset).
pub fn document<S: DocSink>(
    data: &[u8],
    record: Range<usize>,
    text: Range<usize>,
    line: u64,
    meta: &DocMeta<'_>,
    sink: &mut S,
) {
    let chars = sink.wants_chars();
    let mut counter = CharCounter::new(text.start);
    let mut first = true;
    let mut prev_end = 0;
    let mut start = text.start;
    while start <= text.end {
        let nl = memchr::memchr(b'\n', &data[start..text.end]).map(|i| start + i);
        let (content_end, next) = match nl {
            Some(nl) if nl > start && data[nl - 1] == b'\r' => (nl - 1, nl + 1),
            Some(nl) => (nl, nl + 1),
            None => (text.end, text.end + 1),
        };
        let content = start..content_end;
        if !is_blank(&data[content.clone()]) {
            if first {
                sink.doc_start(record.start..content.start, line, meta);
                first = false;
            } else {
                sink.separator(prev_end..content.start);
            }
            sink.para_start(content.start, line, true);
            sink.word(&data[content.clone()], false, line);
            sink.para_end(content.end);
            if chars {
                let a = counter.at(data, content.start);
                let b = counter.at(data, content.end);
                sink.para_chars(a..b);
            }
            prev_end = content.end;
        }
        start = next;
    }
    if first {
        sink.doc_start(record.clone(), line, meta);
        if chars {
            sink.text_chars(counter.at(data, text.end));
        }
        sink.doc_end(None);
        return;
    }
    if chars {
        sink.text_chars(counter.at(data, text.end));
    }
    sink.doc_end(Some(prev_end..record.end));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::Issue;

    #[derive(Default)]
    struct Events {
        out: Vec<String>,
        chars: Vec<Range<u64>>,
        len: u64,
    }

    impl DocSink for Events {
        fn doc_start(&mut self, header: Range<usize>, _line: u64, _meta: &DocMeta<'_>) {
            self.out.push(format!("H{header:?}"));
        }
        fn structure(&mut self, range: Range<usize>) {
            self.out.push(format!("S{range:?}"));
        }
        fn separator(&mut self, range: Range<usize>) {
            self.out.push(format!("-{range:?}"));
        }
        fn para_start(&mut self, start: usize, _line: u64, _implicit: bool) {
            self.out.push(format!("P{start}"));
        }
        fn word(&mut self, word: &[u8], _glued: bool, _line: u64) {
            self.out.push(String::from_utf8_lossy(word).into_owned());
        }
        fn para_end(&mut self, end: usize) {
            self.out.push(format!("/P{end}"));
        }
        fn doc_end(&mut self, close: Option<Range<usize>>) {
            self.out.push(format!("C{close:?}"));
        }
        fn issue(&mut self, _issue: Issue) {}
        fn wants_chars(&self) -> bool {
            true
        }
        fn para_chars(&mut self, chars: Range<u64>) {
            self.chars.push(chars);
        }
        fn text_chars(&mut self, len: u64) {
            self.len = len;
        }
    }

    fn run(text: &str, head: usize, tail: usize) -> Events {
        let mut e = Events::default();
        let meta = DocMeta::Fields {
            id: None,
            url: None,
            title: None,
        };
        let n = text.len();
        document(text.as_bytes(), 0..n, head..n - tail, 1, &meta, &mut e);
        e
    }

    #[test]
    fn lines_are_paragraphs_blank_lines_and_cr_belong_to_breaks() {
        let e = run("\nab\r\n \n\u{e9}t\u{e9}\n", 0, 0);
        assert_eq!(
            e.out,
            [
                "H0..1",
                "P1",
                "ab",
                "/P3",
                "-3..7",
                "P7",
                "\u{e9}t\u{e9}",
                "/P12",
                "CSome(12..13)"
            ]
        );
        assert_eq!(e.chars, [1..3, 7..10]);
        assert_eq!(e.len, 11);
    }

    #[test]
    fn a_header_and_a_trailer_travel_with_the_document() {
        let e = run("HEAD\nx\r\n\r\n", 5, 4);
        assert_eq!(e.out, ["H0..5", "P5", "x", "/P6", "CSome(6..10)"]);
        assert_eq!(e.chars, vec![0..1]);
        let e = run("HEAD\n \r\n\r\n", 5, 4);
        assert_eq!(e.out, ["H0..10", "CNone"]);
        assert_eq!(e.len, 1);
        let e = run("", 0, 0);
        assert_eq!(e.out, ["H0..0", "CNone"]);
    }

    #[test]
    fn a_last_line_without_a_break_keeps_its_cr() {
        let e = run("a\nb\r", 0, 0);
        assert_eq!(
            e.out,
            [
                "H0..0",
                "P0",
                "a",
                "/P1",
                "-1..2",
                "P2",
                "b\r",
                "/P4",
                "CSome(4..4)"
            ]
        );
        assert!(is_blank("\u{a0} \t".as_bytes()));
        assert!(!is_blank(b" x"));
    }

    /// The early answer agrees with the rule read whole: every line of up to four
    /// pieces among ASCII and Unicode whitespace, the vertical tab, letters and
    /// invalid bytes.
    #[test]
    fn is_blank_agrees_with_the_whole_line_rule() {
        fn whole(line: &[u8]) -> bool {
            if line.is_ascii() {
                line.iter().all(u8::is_ascii_whitespace)
            } else {
                String::from_utf8_lossy(line).trim().is_empty()
            }
        }
        let pieces: [&[u8]; 9] = [
            b" ",
            b"\t",
            b"\x0b",
            b"\x0c",
            b"x",
            "\u{a0}".as_bytes(),
            "\u{3000}".as_bytes(),
            "\u{e9}".as_bytes(),
            b"\xff",
        ];
        let mut lines: Vec<Vec<u8>> = vec![Vec::new()];
        let mut checked = 0;
        for _ in 0..4 {
            let mut longer = Vec::new();
            for l in &lines {
                assert_eq!(is_blank(l), whole(l), "{l:?}");
                checked += 1;
                for p in pieces {
                    longer.push([l.as_slice(), p].concat());
                }
            }
            lines = longer;
        }
        for l in &lines {
            assert_eq!(is_blank(l), whole(l), "{l:?}");
        }
        assert!(checked > 800);
        assert!(is_blank("\u{3000}\x0b".as_bytes()));
        assert!(!is_blank(b"\x0b"));
    }
}
