use super::*;
use crate::doc::{DocMeta, DocSink};
use crate::fields::FieldPath;
use proptest::prelude::*;

fn lines_of(raw: &str) -> Vec<(String, String)> {
    let mut text = String::new();
    let mut lines = Vec::new();
    split_text(raw, &mut text, &mut lines);
    lines
        .iter()
        .map(|l| {
            (
                raw[l.content.clone()].to_string(),
                l.text(raw, &text).to_string(),
            )
        })
        .collect()
}

#[test]
fn text_lines_and_their_escaped_spans() {
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(lines_of(r"a\nb"), [s("a", "a"), s("b", "b")]);
    // `\r\n` is a line break; a lone `\r` is text.
    assert_eq!(lines_of(r"a\r\nb\rc"), [s("a", "a"), s(r"b\rc", "b\rc")]);
    // `\u000a` is a newline too; `\\n` is a backslash and an n.
    assert_eq!(
        lines_of(r"x\u000Ay\\nz\u000d\u000a"),
        [s("x", "x"), s(r"y\\nz", "y\\nz"), s("", "")]
    );
    // Escapes, surrogate pairs, lone surrogates (U+FFFD).
    assert_eq!(
        lines_of(r#"\"q\" \/ \t \ud83d\ude00 \ud800 é"#),
        [s(
            r#"\"q\" \/ \t \ud83d\ude00 \ud800 é"#,
            "\"q\" / \t 😀 \u{fffd} é"
        )]
    );
    assert_eq!(lines_of(""), [s("", "")]);
}

/// Records the events as strings; checks that the ranges tile each document.
#[derive(Default)]
struct Log {
    events: Vec<String>,
    /// Bytes of the current document, concatenated from its ranges.
    tiled: Vec<u8>,
    docs: Vec<Vec<u8>>,
    data: Vec<u8>,
    para_from: usize,
}

impl DocSink for Log {
    fn doc_start(&mut self, header: Range<usize>, line: u64, meta: &DocMeta<'_>) {
        self.tiled = self.data[header].to_vec();
        self.events.push(format!(
            "doc@{line} id={:?} url={:?} title={:?}",
            meta.id(),
            meta.url().map(|u| u.into_owned()),
            meta.title().map(|u| u.into_owned())
        ));
    }
    fn structure(&mut self, range: Range<usize>) {
        self.tiled.extend_from_slice(&self.data[range]);
    }
    fn separator(&mut self, range: Range<usize>) {
        self.events.push(format!(
            "sep {:?}",
            String::from_utf8_lossy(&self.data[range.clone()])
        ));
        self.tiled.extend_from_slice(&self.data[range]);
    }
    fn para_start(&mut self, start: usize, _line: u64, _implicit: bool) {
        self.para_from = start;
    }
    fn word(&mut self, word: &[u8], glued: bool, _line: u64) {
        assert!(!glued);
        self.events
            .push(format!("text {:?}", String::from_utf8_lossy(word)));
    }
    fn para_end(&mut self, end: usize) {
        self.tiled
            .extend_from_slice(&self.data[self.para_from..end]);
    }
    fn doc_end(&mut self, close: Option<Range<usize>>) {
        if let Some(r) = close {
            self.tiled.extend_from_slice(&self.data[r]);
        }
        self.docs.push(std::mem::take(&mut self.tiled));
        self.events.push("/doc".into());
    }
    fn passthrough(&mut self, range: Range<usize>, line: u64, dropped: bool) {
        self.events.push(format!(
            "bad@{line} dropped={dropped} {:?}",
            String::from_utf8_lossy(&self.data[range])
        ));
    }
    fn issue(&mut self, issue: Issue) {
        self.events
            .push(format!("issue@{} {}", issue.line, issue.kind));
    }
}

fn parse(input: &[u8], opts: &JsonlOptions) -> Log {
    let chunk = Chunk {
        data: input.to_vec(),
        first_line: 1,
        last: true,
        ..Default::default()
    };
    let mut log = Log {
        data: input.to_vec(),
        ..Default::default()
    };
    parse_chunk(&chunk, opts, &mut log);
    log
}

#[test]
fn documents_paragraphs_and_separators() {
    let input = "{\"id\": 7, \"text\": \"one\\n\\ntwo\\r\\n  \\nthree\\n\", \"metadata\": {\"url\": \"https://a/\", \"title\": \"T\"}}\n\n{\"text\":\"\",\"url\":\"u\"}\r\n";
    let log = parse(input.as_bytes(), &JsonlOptions::default());
    assert_eq!(
        log.events,
        [
            "doc@1 id=Some(\"7\") url=Some(\"https://a/\") title=Some(\"T\")",
            "text \"one\"",
            "sep \"\\\\n\\\\n\"",
            "text \"two\"",
            "sep \"\\\\r\\\\n  \\\\n\"",
            "text \"three\"",
            "/doc",
            // Line 2 is blank: dropped. An empty text: a document without paragraphs.
            "doc@3 id=None url=Some(\"u\") title=None",
            "/doc",
        ]
    );
    // The ranges of each document tile its line, newline included.
    let lines: Vec<&str> = input
        .split_inclusive('\n')
        .filter(|l| l.trim() != "")
        .collect();
    assert_eq!(
        log.docs,
        lines
            .iter()
            .map(|l| l.as_bytes().to_vec())
            .collect::<Vec<_>>()
    );
}

#[test]
fn bad_records_are_reported_and_passed_through() {
    let input =
        b"[1]\n{\"id\":1}\n{\"text\":5}\n{\"text\":\"ok\"} x\n{\"text\":\"caf\xe9\\nfine\"}\n\"s\"";
    let log = parse(input, &JsonlOptions::default());
    let e = &log.events;
    assert_eq!(
        e[0],
        "issue@1 not a JSON object: record passed through unchanged"
    );
    assert_eq!(e[1], "bad@1 dropped=false \"[1]\\n\"");
    assert_eq!(
        e[2],
        "issue@2 no field 'text': record passed through unchanged"
    );
    assert_eq!(
        e[4],
        "issue@3 field 'text' is not a string: record passed through unchanged"
    );
    assert!(
        e[6].starts_with("issue@4 not JSON (trailing characters"),
        "{e:?}"
    );
    // Invalid UTF-8: reported, read as U+FFFD, the record kept.
    assert_eq!(e[8], "issue@5 invalid UTF-8: kept, read lossily for keys");
    assert_eq!(e[10], "text \"caf\u{fffd}\"");
    assert_eq!(e[11], "sep \"\\\\n\"");
    assert_eq!(log.docs[0], b"{\"text\":\"caf\xe9\\nfine\"}\n".to_vec());
    assert_eq!(
        e[14],
        "issue@6 not a JSON object: record passed through unchanged"
    );
    let dropping = JsonlOptions {
        drop_bad: true,
        ..Default::default()
    };
    let log = parse(b"nope\n", &dropping);
    assert_eq!(
        log.events,
        [
            "issue@1 not a JSON object: record dropped (--drop-bad-records)",
            "bad@1 dropped=true \"nope\\n\""
        ]
    );
}

#[test]
fn field_paths_and_their_order() {
    let opts = JsonlOptions {
        text: FieldPath::parse("doc.body"),
        id: vec![FieldPath::parse("meta.id")],
        url: vec![FieldPath::parse("u1"), FieldPath::parse("u2")],
        title: vec![],
        drop_bad: false,
    };
    // The first candidate present wins, whatever the key order; other types of
    // values where an object is expected mean "missing".
    let log = parse(
        br#"{"u2":"second","doc":{"x":[1,{"a":2}],"body":"b"},"meta":{"id":"m"},"u1":"first"}
{"doc":"flat","u1":null,"u2":3}
"#,
        &opts,
    );
    assert_eq!(
        log.events,
        [
            "doc@1 id=Some(\"m\") url=Some(\"first\") title=None",
            "text \"b\"",
            "/doc",
            "issue@2 no field 'doc.body': record passed through unchanged",
            "bad@2 dropped=false \"{\\\"doc\\\":\\\"flat\\\",\\\"u1\\\":null,\\\"u2\\\":3}\\n\"",
        ]
    );
}

/// A key given twice: the last value is read (as Python's `json` and serde_json's
/// `Value` read it), whether it is the text, a metadata field or an object on the
/// way to one; the rest of the line stays as read.
#[test]
fn a_repeated_key_is_read_with_its_last_value() {
    let input = br#"{"text":"first","id":1,"text":"last\nline","id":"two","url":"u1","url":null}
{"text":"first","text":5}
{"meta":{"body":"first"},"meta":{"other":1}}
{"meta":{"body":"first"},"meta":{"body":"second"}}
"#;
    let log = parse(input, &JsonlOptions::default());
    assert_eq!(
        log.events[..4],
        [
            "doc@1 id=Some(\"two\") url=None title=None",
            "text \"last\"",
            "sep \"\\\\n\"",
            "text \"line\"",
        ]
    );
    assert_eq!(
        log.events[5],
        "issue@2 field 'text' is not a string: record passed through unchanged"
    );
    // The document tiles its line: the first value is kept as read.
    assert_eq!(
        log.docs[0],
        input.split_inclusive(|&b| b == b'\n').next().unwrap()
    );
    let nested = JsonlOptions {
        text: FieldPath::parse("meta.body"),
        ..Default::default()
    };
    let log = parse(input, &nested);
    let docs: Vec<&String> = log
        .events
        .iter()
        .filter(|e| e.starts_with("text ") || e.starts_with("issue@"))
        .collect();
    assert_eq!(
        docs,
        [
            "issue@1 no field 'meta.body': record passed through unchanged",
            "issue@2 no field 'meta.body': record passed through unchanged",
            "issue@3 no field 'meta.body': record passed through unchanged",
            "text \"second\"",
        ]
    );
}

proptest! {
    /// Any text serialized by serde_json, with other fields around it: the ranges
    /// tile the line, and the paragraphs are exactly the text's non-blank lines.
    #[test]
    fn any_text_is_split_into_its_lines(
        parts in proptest::collection::vec("[a-z é😀\"\\\\/\t]{0,6}", 0..6),
        breaks in proptest::collection::vec(0u8..4, 6),
        extra in "[a-z\"\\\\]{0,5}",
    ) {
        let mut text = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                text.push_str(["\n", "\r\n", "\n\n", "\n \n"][breaks[i] as usize % 4]);
            }
            text.push_str(p);
        }
        let line = format!(
            "{{\"a\":{},\"text\":{},\"z\":[{}]}}\n",
            serde_json::to_string(&extra).unwrap(),
            serde_json::to_string(&text).unwrap(),
            serde_json::to_string(&extra).unwrap()
        );
        let log = parse(line.as_bytes(), &JsonlOptions::default());
        prop_assert_eq!(&log.docs, &vec![line.as_bytes().to_vec()]);
        let want: Vec<String> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("text {:?}", l))
            .collect();
        let got: Vec<String> = log.events.iter().filter(|e| e.starts_with("text ")).cloned().collect();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    /// Any bytes: no panic, every line is a document or a reported bad record,
    /// and a document's ranges tile its line.
    #[test]
    fn arbitrary_lines_never_panic(
        lines in proptest::collection::vec(
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..40),
                proptest::collection::vec(proptest::sample::select(b"{}[]\":,\\ntu0a\xff\xc3 ".to_vec()), 0..40),
                "\\{\"text\":\"[a\\\\nu\\\\\"\u{e9}]{0,12}\"\\}".prop_map(String::into_bytes),
            ],
            0..8,
        ),
    ) {
        let mut input = Vec::new();
        for l in &lines {
            input.extend(l.iter().copied().filter(|&b| b != b'\n'));
            input.push(b'\n');
        }
        let log = parse(&input, &JsonlOptions::default());
        let starts = log.events.iter().filter(|e| e.starts_with("doc@")).count();
        prop_assert_eq!(starts, log.docs.len());
        for d in &log.docs {
            prop_assert!(input.windows(d.len()).any(|w| w == &d[..]));
            prop_assert!(d.ends_with(b"\n"));
        }
    }
}

proptest! {
    /// Chunks of JSON Lines end at line ends (a line is never cut), whatever the
    /// target size, and together they are the input.
    #[test]
    fn line_chunks_never_cut_a_line(
        lines in proptest::collection::vec("[a-z{}\"]{0,30}", 0..30),
        target in 1usize..64,
    ) {
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut r = crate::chunk::ChunkReader::with_sizes(input.as_bytes(), target, 1 << 20)
            .with_boundary(crate::chunk::Boundary::Line);
        let mut all = Vec::new();
        let mut next_line = 1;
        while let Some(c) = r.next_chunk() {
            prop_assert!(c.data.is_empty() || c.data.ends_with(b"\n"));
            prop_assert_eq!(c.first_line, next_line);
            next_line += c.data.iter().filter(|&&b| b == b'\n').count() as u64;
            all.extend_from_slice(&c.data);
        }
        prop_assert_eq!(all, input.into_bytes());
    }
}

/// What `--mark` is told: the character spans of the paragraphs and the text's
/// length.
#[derive(Default)]
struct Chars {
    paras: Vec<Range<u64>>,
    len: Option<u64>,
}

impl DocSink for Chars {
    fn doc_start(&mut self, _: Range<usize>, _: u64, _: &DocMeta<'_>) {}
    fn structure(&mut self, _: Range<usize>) {}
    fn para_start(&mut self, _: usize, _: u64, _: bool) {}
    fn word(&mut self, _: &[u8], _: bool, _: u64) {}
    fn para_end(&mut self, _: usize) {}
    fn doc_end(&mut self, _: Option<Range<usize>>) {}
    fn issue(&mut self, _: Issue) {}
    fn wants_chars(&self) -> bool {
        true
    }
    fn para_chars(&mut self, chars: Range<u64>) {
        self.paras.push(chars);
    }
    fn text_chars(&mut self, len: u64) {
        self.len = Some(len);
    }
}

#[test]
fn lines_without_escapes_are_not_copied() {
    let raw = r#"plain line\nwith \"quote\"\r\n\u00e9t\u00e9\nlast\r"#;
    let mut text = String::new();
    let mut lines = Vec::new();
    split_text(raw, &mut text, &mut lines);
    let owned: Vec<bool> = lines.iter().map(|l| l.owned).collect();
    assert_eq!(owned, [false, true, true, true]);
    let cr: Vec<bool> = lines.iter().map(|l| l.cr).collect();
    assert_eq!(cr, [false, true, false, false]);
    let texts: Vec<&str> = lines.iter().map(|l| l.text(raw, &text)).collect();
    assert_eq!(texts, ["plain line", "with \"quote\"", "été", "last\r"]);
    // Only the lines with escapes were written out.
    assert_eq!(text, "with \"quote\"\rétélast\r");
}

proptest! {
    /// The character spans `--mark` writes are those of the text's non-blank
    /// lines in the unescaped text (a `\r` before `\n` belongs to the break),
    /// whatever the escapes and line breaks.
    #[test]
    fn paragraph_character_spans_are_those_of_the_text(
        parts in proptest::collection::vec("[a-z é😀\"\\\\/\t\r\u{1}]{0,6}", 0..6),
        breaks in proptest::collection::vec(0u8..4, 6),
    ) {
        let mut text = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                text.push_str(["\n", "\r\n", "\n\n", "\n \n"][breaks[i] as usize % 4]);
            }
            text.push_str(p);
        }
        let line = format!("{{\"text\":{}}}\n", serde_json::to_string(&text).unwrap());
        let chunk = Chunk {
            data: line.into_bytes(),
            first_line: 1,
            ..Default::default()
        };
        let mut got = Chars::default();
        parse_chunk(&chunk, &JsonlOptions::default(), &mut got);
        let mut want = Vec::new();
        let mut start = 0u64;
        let lines: Vec<&str> = text.split('\n').collect();
        for (i, &l) in lines.iter().enumerate() {
            // A `\r` ends a line only before a `\n` (the last line keeps its own).
            let last = i + 1 == lines.len();
            let content = if last { l } else { l.strip_suffix('\r').unwrap_or(l) };
            if !content.trim().is_empty() {
                want.push(start..start + content.chars().count() as u64);
            }
            start += l.chars().count() as u64 + 1;
        }
        prop_assert_eq!(got.paras, want);
        prop_assert_eq!(got.len, Some(text.chars().count() as u64));
    }
}
