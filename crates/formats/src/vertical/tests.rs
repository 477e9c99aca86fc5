use super::*;
use crate::attrs::escape_attr;
use crate::chunk::{Boundary, BufferPool, ChunkReader};
use std::io::{self, Read};

/// Records what the parser says, as readable strings.
#[derive(Default)]
struct Log<'a> {
    data: &'a [u8],
    events: Vec<String>,
}

impl<'a> Log<'a> {
    fn text(&self, r: Range<usize>) -> String {
        String::from_utf8_lossy(&self.data[r]).replace('\n', "|")
    }
}

impl Sink for Log<'_> {
    fn doc_start(&mut self, header: Range<usize>, line: u64, attrs: &[u8]) {
        let url = attr(attrs, b"url").unwrap_or_default().into_owned();
        let e = format!("doc@{line} url={url} [{}]", self.text(header));
        self.events.push(e);
    }
    fn structure(&mut self, range: Range<usize>) {
        let e = format!("struct [{}]", self.text(range));
        self.events.push(e);
    }
    fn para_start(&mut self, start: usize, line: u64, implicit: bool) {
        self.events.push(format!(
            "p{}@{line} from {start}",
            if implicit { "(implicit)" } else { "" }
        ));
    }
    fn word(&mut self, word: &[u8], glued: bool, _line: u64) {
        self.events.push(format!(
            "w {}{}",
            if glued { "+" } else { "" },
            String::from_utf8_lossy(word)
        ));
    }
    fn para_end(&mut self, end: usize) {
        self.events.push(format!("/p to {end}"));
    }
    fn doc_end(&mut self, close: Option<Range<usize>>) {
        let e = match close {
            Some(r) => format!("/doc [{}]", self.text(r)),
            None => "/doc (unclosed)".to_string(),
        };
        self.events.push(e);
    }
    fn issue(&mut self, issue: Issue) {
        self.events
            .push(format!("! {}: {}", issue.line, issue.kind.name()));
    }
}

fn parse(input: &str) -> Vec<String> {
    let chunk = Chunk {
        data: input.as_bytes().to_vec(),
        first_line: 1,
        last: true,
        ..Default::default()
    };
    let mut log = Log {
        data: &chunk.data,
        events: Vec::new(),
    };
    parse_chunk(&chunk, &mut log);
    log.events
}

#[test]
fn well_formed_document() {
    let ev =
        parse("<doc url=\"u&amp;1\" title='T'>\n<p>\nHello\tNN\n<g/>\n,\nworld\n</p>\n</doc>\n");
    assert_eq!(
        ev,
        vec![
            "doc@1 url=u&1 [<doc url=\"u&amp;1\" title='T'>|]",
            "p@2 from 30",
            "w Hello",
            "w +,",
            "w world",
            "/p to 61",
            "/doc [</doc>|]",
        ]
    );
}

#[test]
fn implicit_paragraphs_and_document_level_structures() {
    let ev = parse("<doc>\n<head>\nTitle\n</head>\n<p>\nx\n</p>\n<s>\n</s>\nTail\n</doc>\n");
    assert_eq!(
        ev,
        vec![
            "doc@1 url= [<doc>|]",
            "p(implicit)@3 from 6",
            "w Title",
            "/p to 27",
            "p@5 from 27",
            "w x",
            "/p to 38",
            "p(implicit)@10 from 38",
            "w Tail",
            "/p to 52",
            "/doc [</doc>|]",
        ]
    );
    // Structures without tokens belong to the document.
    let ev = parse("<doc>\n<s>\n<p>\nx\n</p>\n</s>\n</doc>\n");
    assert_eq!(ev[1], "struct [<s>|]");
    assert_eq!(ev[5], "struct [</s>|]");
}

#[test]
fn missing_closing_tags_are_closed_and_reported() {
    let ev = parse("<doc a=1>\n<p>\none\n<p>\ntwo\n<doc b=2>\nthree\n");
    assert_eq!(
        ev,
        vec![
            "doc@1 url= [<doc a=1>|]",
            "p@2 from 10",
            "w one",
            "! 4: missing-p-close",
            "/p to 18",
            "p@4 from 18",
            "w two",
            "! 6: missing-p-close",
            "/p to 26",
            "! 6: missing-doc-close",
            "/doc (unclosed)",
            "doc@6 url= [<doc b=2>|]",
            "p(implicit)@7 from 36",
            "w three",
            "/p to 42",
            "! 8: missing-doc-close",
            "/doc (unclosed)",
        ]
    );
}

#[test]
fn stray_closing_tags_and_lines_outside_documents_are_dropped() {
    let ev = parse("junk before\n\n</p>\n<doc>\nx\n</p>\ny\n</doc>\n</doc>\nafter\n");
    assert_eq!(
        ev,
        vec![
            "! 1: outside-document",
            "! 3: stray-closing-tag",
            "doc@4 url= [<doc>|]",
            "p(implicit)@5 from 24",
            "w x",
            "/p to 26",
            "! 6: stray-closing-tag",
            "p(implicit)@7 from 31",
            "w y",
            "/p to 33",
            "/doc [</doc>|]",
            "! 9: stray-closing-tag",
            "! 10: outside-document",
        ]
    );
}

#[test]
fn tag_recognition() {
    assert_eq!(
        parse_tag(b"<p>"),
        Some(Tag::Open {
            name: b"p",
            attrs: b""
        })
    );
    assert_eq!(
        parse_tag(b"<g/>"),
        Some(Tag::Empty {
            name: b"g",
            attrs: b""
        })
    );
    assert_eq!(parse_tag(b"</doc>  "), Some(Tag::Close { name: b"doc" }));
    assert_eq!(
        parse_tag(b"<doc id=\"1\">\r"),
        Some(Tag::Open {
            name: b"doc",
            attrs: b" id=\"1\""
        })
    );
    assert_eq!(
        parse_tag(b"<x.y:z-1 a='b'/>"),
        Some(Tag::Empty {
            name: b"x.y:z-1",
            attrs: b" a='b'"
        })
    );
    for token in [
        &b"<"[..],
        b"<<",
        b"<=",
        b"<>",
        b"</>",
        b"<1a>",
        b"<a",
        b"a>",
        b"<p>x",
        b"</p x>",
        b"<pa=1>",
    ] {
        assert_eq!(
            parse_tag(token),
            None,
            "{:?}",
            String::from_utf8_lossy(token)
        );
    }
}

#[test]
fn attribute_values() {
    let a = b" id=\"1\" url='http://x/?a=1&amp;b=2' title=bare lang = \"en\" flag q=\"&lt;&#65;&#x42;&bogus;&\"";
    assert_eq!(attr(a, b"id").unwrap(), "1");
    assert_eq!(attr(a, b"url").unwrap(), "http://x/?a=1&b=2");
    assert_eq!(attr(a, b"title").unwrap(), "bare");
    assert_eq!(attr(a, b"lang").unwrap(), "en");
    assert_eq!(attr(a, b"flag").unwrap(), "");
    assert_eq!(attr(a, b"q").unwrap(), "<AB&bogus;&");
    assert_eq!(attr(a, b"missing"), None);
    // An unterminated quote runs to the end, no panic.
    assert_eq!(attr(b" url=\"abc", b"url").unwrap(), "abc");
    let mut out = Vec::new();
    escape_attr("a&b\"<>", &mut out);
    assert_eq!(out, b"a&amp;b&quot;&lt;&gt;");
}

#[test]
fn nul_bytes_are_reported_and_kept() {
    let ev = parse("<doc>\na\0b\n</doc>\n");
    assert!(ev.contains(&"! 2: nul-byte".to_string()));
    assert!(ev.contains(&"w a\0b".to_string()));
}

/// Length of the first line of `rest` and of its word, by both kernels (which agree).
fn line_and_word_len(rest: &[u8]) -> (usize, usize) {
    let first = |k| {
        lines::Lines::new(rest, k)
            .next()
            .map_or((0, 0), |l| (l.text.len(), l.word_end - l.text.start))
    };
    let scalar = first(lines::Kernel::Scalar);
    assert_eq!(first(lines::Kernel::detect()), scalar);
    scalar
}

#[test]
fn line_and_word_lengths() {
    for (line, word) in [
        ("", ""),
        ("a", "a"),
        ("abcdefg", "abcdefg"),
        ("abcdefgh", "abcdefgh"),
        ("a\tb", "a"),
        ("abcdefghijk\tx\ty", "abcdefghijk"),
    ] {
        for suffix in ["\n<p>\n", "", "\n"] {
            let text = format!("{line}{suffix}");
            assert_eq!(
                line_and_word_len(text.as_bytes()),
                (line.len(), word.len()),
                "{text:?}"
            );
        }
    }
    let long = format!("{}\t{}\nnext", "w".repeat(100), "x".repeat(10));
    assert_eq!(line_and_word_len(long.as_bytes()), (111, 100));
    let long_tab_early = format!("ab\t{}\n", "x".repeat(200));
    assert_eq!(line_and_word_len(long_tab_early.as_bytes()), (203, 2));
    let tab_after_64 = format!("{}\tz\n", "y".repeat(70));
    assert_eq!(line_and_word_len(tab_after_64.as_bytes()), (72, 70));
}

#[test]
fn glue_and_blank_lines() {
    let ev = parse("<doc>\n<p>\na\n\n<g/>\nb\n</p>\n</doc>");
    assert_eq!(ev[2..5], ["w a", "w +b", "/p to 25"]);
    // A file without a final newline ends cleanly.
    assert_eq!(ev.last().unwrap(), "/doc [</doc>]");
}

fn chunks_of(input: &[u8], target: usize, max_line: usize) -> Vec<Chunk> {
    let mut r = ChunkReader::with_sizes(input, target, max_line);
    let mut out = Vec::new();
    while let Some(c) = r.next_chunk() {
        out.push(c);
    }
    out
}

fn sample(docs: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..docs {
        s.push_str(&format!(
            "<doc id=\"{i}\">\n<p>\nword{i}\nmore\n</p>\n</doc>\n"
        ));
    }
    s.into_bytes()
}

#[test]
fn chunks_split_only_before_documents() {
    let input = sample(100);
    for target in [1, 7, 50, 333, 1 << 20] {
        let chunks = chunks_of(&input, target, 1 << 20);
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone()).collect();
        assert_eq!(joined, input);
        assert!(chunks.last().unwrap().last);
        let mut line = 1;
        for c in &chunks {
            assert!(
                c.data.is_empty() || c.data.starts_with(b"<doc "),
                "target {target}"
            );
            assert_eq!(c.first_line, line);
            line += c.data.iter().filter(|&&b| b == b'\n').count() as u64;
        }
    }
    // `<docs>` is not a document start.
    let odd = b"<doc>\n<docs>\nx\n</doc>\n<doc>\n</doc>\n";
    let chunks = chunks_of(odd, 1, 1 << 20);
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[1].data, b"<doc>\n</doc>\n");
}

#[test]
fn empty_input_gives_one_empty_last_chunk() {
    let chunks = chunks_of(b"", 10, 10);
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0].last && chunks[0].data.is_empty());
}

#[test]
fn overlong_lines_are_dropped_and_numbered() {
    let long = "x".repeat(5000);
    let input = format!("<doc>\n<p>\na\n{long}\nb\n</p>\n</doc>\n<doc>\n{long}");
    let chunks = chunks_of(input.as_bytes(), 1 << 20, 100);
    assert_eq!(chunks.len(), 1);
    let c = &chunks[0];
    assert_eq!(c.skipped_lines, vec![4, 9]);
    assert_eq!(
        c.issues.iter().map(|i| i.line).collect::<Vec<_>>(),
        vec![4, 9]
    );
    assert!(c
        .issues
        .iter()
        .all(|i| matches!(i.kind, IssueKind::LineTooLong { limit: 100 })));
    let mut log = Log {
        data: &c.data,
        events: Vec::new(),
    };
    parse_chunk(c, &mut log);
    assert!(log.events.contains(&"w b".to_string()));
    // Line numbers after the dropped line stay true: </doc> of doc 2 is missing at line 10.
    assert_eq!(log.events.last().unwrap(), "/doc (unclosed)");
    assert!(
        log.events.contains(&"! 10: missing-doc-close".to_string()),
        "{:?}",
        log.events
    );
}

#[test]
fn read_errors_end_the_input_with_what_was_read() {
    struct Failing(Vec<u8>, bool);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.1 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stream truncated",
                ));
            }
            self.1 = true;
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            Ok(n)
        }
    }
    let chunks = chunks_of_reader(Failing(b"<doc>\nabc\n</doc>\n<doc>\npart".to_vec(), false));
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].data, b"<doc>\nabc\n</doc>\n<doc>\npart");
    assert!(
        matches!(&chunks[0].issues[0].kind, IssueKind::ReadError(e) if e.contains("truncated"))
    );
    assert_eq!(chunks[0].issues[0].line, 5);
}

/// A reader that hands out its bytes a few at a time (sizes taken in turn from
/// `sizes`), as a decompressor or a pipe does, and then, optionally, fails.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    reads: usize,
    fail_at_end: bool,
}

impl Trickle {
    fn new(data: &[u8], sizes: &[usize]) -> Self {
        Trickle {
            data: data.to_vec(),
            at: 0,
            sizes: sizes.to_vec(),
            reads: 0,
            fail_at_end: false,
        }
    }
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.data.len() && self.fail_at_end {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "stream truncated",
            ));
        }
        let size = self.sizes[self.reads % self.sizes.len()].max(1);
        self.reads += 1;
        let n = size.min(buf.len()).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// What a chunk holds, comparable.
type ChunkView = (Vec<u8>, u64, u64, Vec<u64>, Vec<Issue>, bool);

fn views(r: impl Read, target: usize, max_line: usize, boundary: Boundary) -> Vec<ChunkView> {
    let mut r = ChunkReader::with_sizes(r, target, max_line).with_boundary(boundary);
    let mut out = Vec::new();
    while let Some(c) = r.next_chunk() {
        out.push((
            c.data,
            c.first_line,
            c.offset,
            c.skipped_lines,
            c.issues,
            c.last,
        ));
    }
    out
}

#[test]
fn short_reads_give_the_chunks_of_whole_reads() {
    // Long lines (over the limit) among short ones, both boundaries: a reader
    // returning one byte a read, or a few, cuts the same chunks as one that fills
    // every read.
    let mut input = sample(40);
    input.extend_from_slice(&[b'x'; 300]);
    input.extend_from_slice(b"\n<doc>\n<p>\nafter\n</p>\n</doc>\n");
    input.extend_from_slice(&[b'y'; 250]);
    for boundary in [Boundary::DocLine, Boundary::Line] {
        for (target, max_line) in [(64, 100), (1000, 200), (1 << 20, 1 << 20)] {
            let whole = views(&input[..], target, max_line, boundary);
            assert!(whole.len() > 1 || target == 1 << 20);
            let dropped = whole.iter().any(|c| !c.3.is_empty());
            assert_eq!(dropped, max_line < 300, "long lines dropped");
            for sizes in [&[1][..], &[3, 1, 7], &[64, 5]] {
                let short = views(Trickle::new(&input, sizes), target, max_line, boundary);
                assert_eq!(short, whole, "reads of {sizes:?}, target {target}");
            }
        }
    }
}

#[test]
fn pooled_buffers_holding_old_bytes_give_the_same_chunks() {
    // Buffers handed back full of other bytes, longer than a fill (64 KiB: filled
    // without zeroing) and shorter: none of their old bytes may show in the chunks
    // read into them.
    let input = sample(30);
    let whole = views(&input[..], 100, 1 << 20, Boundary::DocLine);
    let pool = BufferPool::new(8);
    for len in [200_000, 10, 70_000] {
        pool.give(vec![b'#'; len]);
    }
    for _ in 0..3 {
        let mut r = ChunkReader::with_sizes(Trickle::new(&input, &[3, 50]), 100, 1 << 20)
            .with_pool(pool.clone());
        let mut got = Vec::new();
        while let Some(c) = r.next_chunk() {
            got.push((
                c.data.clone(),
                c.first_line,
                c.offset,
                c.skipped_lines,
                c.issues,
                c.last,
            ));
            pool.give(c.data);
        }
        assert_eq!(got, whole);
    }
}

#[test]
fn a_finished_reader_hands_its_buffer_back_to_the_pool() {
    // One chunk in hand at a time: the reader's buffer and the chunk's are all
    // a file needs, and both are in the pool for the next file once it is read.
    let input = sample(30);
    let pool = BufferPool::new(8);
    for _ in 0..2 {
        let mut r = ChunkReader::with_sizes(&input[..], 100, 1 << 20).with_pool(pool.clone());
        let mut chunks = 0;
        while let Some(c) = r.next_chunk() {
            pool.give(c.data);
            chunks += 1;
        }
        assert!(chunks > 2);
        let mut kept = Vec::new();
        while let Some(b) = Some(pool.take()).filter(|(b, _)| b.capacity() > 0) {
            kept.push(b);
        }
        assert_eq!(kept.len(), 2);
        for (b, initialized) in kept {
            pool.give(b);
            assert!(initialized > 0);
        }
    }
}

#[test]
fn a_read_error_after_short_reads_comes_after_their_bytes() {
    let input = b"<doc>\nabc\n</doc>\n<doc>\npart";
    let mut r = Trickle::new(input, &[2]);
    r.fail_at_end = true;
    let chunks = views(r, 1 << 20, 1 << 20, Boundary::DocLine);
    assert_eq!(chunks.len(), 1);
    let (data, _, _, _, issues, last) = &chunks[0];
    assert_eq!(data, input);
    assert!(last);
    assert_eq!(issues.len(), 1);
    assert!(matches!(&issues[0].kind, IssueKind::ReadError(e) if e.contains("truncated")));
    assert_eq!(issues[0].line, 5);
}

fn chunks_of_reader<R: Read>(r: R) -> Vec<Chunk> {
    let mut r = ChunkReader::with_sizes(r, 1 << 20, 1 << 20);
    let mut out = Vec::new();
    while let Some(c) = r.next_chunk() {
        out.push(c);
    }
    out
}

proptest::proptest! {
    /// Whatever the bytes, parsing never panics and the ranges a sink gets lie inside
    /// the chunk, in order, without overlap.
    #[test]
    fn arbitrary_input_is_parsed_without_panic(lines in proptest::collection::vec(
        proptest::prop_oneof![
            proptest::strategy::Just("<doc url=\"a\">".to_string()),
            proptest::strategy::Just("</doc>".to_string()),
            proptest::strategy::Just("<p>".to_string()),
            proptest::strategy::Just("</p>".to_string()),
            proptest::strategy::Just("<g/>".to_string()),
            proptest::strategy::Just("<s>".to_string()),
            proptest::strategy::Just("".to_string()),
            "\\PC{0,6}",
        ], 0..60), target in 1usize..200) {
        let input = lines.join("\n");
        for c in chunks_of(input.as_bytes(), target, 1 << 20) {
            struct Ranges { last: usize, len: usize }
            impl Sink for Ranges {
                fn doc_start(&mut self, r: Range<usize>, _: u64, _: &[u8]) { assert!(r.start >= self.last && r.end <= self.len); self.last = r.end; }
                fn structure(&mut self, r: Range<usize>) { assert!(r.start >= self.last && r.end <= self.len); self.last = r.end; }
                fn para_start(&mut self, s: usize, _: u64, _: bool) { assert!(s >= self.last); self.last = s; }
                fn word(&mut self, _: &[u8], _: bool, _: u64) {}
                fn para_end(&mut self, e: usize) { assert!(e >= self.last && e <= self.len); self.last = e; }
                fn doc_end(&mut self, r: Option<Range<usize>>) { if let Some(r) = r { assert!(r.start >= self.last); self.last = r.end; } }
                fn issue(&mut self, _: Issue) {}
            }
            parse_chunk(&c, &mut Ranges { last: 0, len: c.data.len() });
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// The scalar line walk and the vector one (where the CPU has it) tell a sink
    /// the same events, on lines with tabs, CRLF, non-ASCII and NUL bytes, blank
    /// lines and tags, cut into chunks anywhere a document may start.
    #[test]
    fn both_line_walks_give_the_same_events(lines in proptest::collection::vec(
        proptest::prop_oneof![
            proptest::strategy::Just("<doc url=\"a\">".to_string()),
            proptest::strategy::Just("</doc>".to_string()),
            proptest::strategy::Just("<p>\r".to_string()),
            proptest::strategy::Just("</p>".to_string()),
            proptest::strategy::Just("<g/>".to_string()),
            proptest::strategy::Just("".to_string()),
            proptest::strategy::Just(" \t".to_string()),
            "[a-zé\\.\t\r\u{0}<]{0,9}",
            "[a-z]{60,70}(\t[a-z]{0,3})?",
        ], 0..80), target in 1usize..300) {
        let input = lines.join("\n");
        for c in chunks_of(input.as_bytes(), target, 1 << 20) {
            let events = |kernel| {
                let mut log = Log { data: &c.data, events: Vec::new() };
                parse_chunk_with(&c, &mut log, kernel);
                log.events
            };
            proptest::prop_assert_eq!(events(lines::Kernel::Scalar), events(lines::Kernel::detect()));
        }
    }
}

/// Found by the `vertical` fuzz target: a read that completed an overlong line dropped
/// it from the buffer, and the search for a document start then resumed past the
/// buffer's new end (a slice index panic) or past the bytes that replaced the line
/// (a document start missed). Every chunk must still end at the first document start
/// at or after the target size, and the chunks must tile the input minus the
/// dropped lines.
#[test]
fn dropping_an_overlong_line_mid_search_keeps_document_starts() {
    let long = "y".repeat(45);
    let minimal = format!("<g/>\n.The\nrwill\nbe\nlargrging\nceleere\nthe\n{long}\nlain\ncee");
    let chunks = chunks_of(minimal.as_bytes(), 49, 41);
    let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone()).collect();
    assert_eq!(joined, minimal.replace(&format!("{long}\n"), "").as_bytes());

    let mut input = String::new();
    for i in 0..30 {
        input.push_str(&format!("<doc id=\"{i}\">\nw{i}\n"));
        if i % 3 == 0 {
            input.push_str(&"z".repeat(20 + i * 3));
            input.push('\n');
        }
        input.push_str("</doc>\n");
    }
    for target in 1..80 {
        for max_line in [8, 20, 33, 41, 60] {
            let chunks = chunks_of(input.as_bytes(), target, max_line);
            let kept: String = input
                .split_inclusive('\n')
                .filter(|l| l.len() - 1 <= max_line)
                .collect();
            let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone()).collect();
            assert_eq!(
                joined,
                kept.as_bytes(),
                "target {target} max_line {max_line}"
            );
            for c in &chunks[..chunks.len() - 1] {
                let late_start = (target.max(1)..c.data.len())
                    .find(|&p| c.data[p - 1] == b'\n' && c.data[p..].starts_with(b"<doc "));
                assert_eq!(late_start, None, "target {target} max_line {max_line}");
            }
        }
    }
}

/// A line of many megabytes (a JSON Lines record under a raised --max-line-bytes)
/// is searched for a chunk end once, not again on every read: the search looked at
/// the whole open line after each 64 KiB read, a time growing with the square of
/// the line's length (50 MB: 2.9 s, 200 MB: 48 s).
#[test]
fn a_long_line_is_searched_once() {
    let line_len = 8 << 20;
    let mut input = b"{\"text\":\"".to_vec();
    input.resize(line_len, b'a');
    input.extend_from_slice(b"\"}\n{\"text\":\"b\"}\n");
    for boundary in [Boundary::Line, Boundary::DocLine] {
        let mut r = ChunkReader::with_sizes(&input[..], 1 << 16, 64 << 20).with_boundary(boundary);
        let mut joined = Vec::new();
        while let Some(c) = r.next_chunk() {
            joined.extend_from_slice(&c.data);
        }
        assert_eq!(joined, input);
        assert!(
            r.searched < 2 * input.len() as u64,
            "{boundary:?}: {} bytes searched for {} bytes of input",
            r.searched,
            input.len()
        );
    }
}

/// Records every event with its line numbers, and takes paragraphs whole or not:
/// a whole paragraph is replayed word by word ([`WholePara::words`]), so both
/// ways must give the same log.
struct Numbered {
    whole: bool,
    events: Vec<String>,
}

impl Sink for Numbered {
    fn doc_start(&mut self, header: Range<usize>, line: u64, _: &[u8]) {
        self.events.push(format!("doc {header:?} @{line}"));
    }
    fn structure(&mut self, range: Range<usize>) {
        self.events.push(format!("struct {range:?}"));
    }
    fn para_start(&mut self, start: usize, line: u64, implicit: bool) {
        self.events.push(format!("p {start} @{line} {implicit}"));
    }
    fn word(&mut self, word: &[u8], glued: bool, line: u64) {
        let word = String::from_utf8_lossy(word);
        self.events.push(format!("w {word:?} {glued} @{line}"));
    }
    fn para_end(&mut self, end: usize) {
        self.events.push(format!("/p {end}"));
    }
    fn doc_end(&mut self, close: Option<Range<usize>>) {
        self.events.push(format!("/doc {close:?}"));
    }
    fn issue(&mut self, issue: Issue) {
        self.events
            .push(format!("! {} {}", issue.line, issue.kind.name()));
    }
    fn takes_whole_paras(&self) -> bool {
        self.whole
    }
}

fn numbered(c: &Chunk, whole: bool, kernel: lines::Kernel) -> Vec<String> {
    let mut log = Numbered {
        whole,
        events: Vec::new(),
    };
    parse_chunk_with(c, &mut log, kernel);
    log.events
}

#[test]
fn paragraphs_given_whole_are_the_ones_that_can_be() {
    let scan = |body: &[u8]| {
        let data = [b"<p>\n", body].concat();
        let mut glues = Vec::new();
        let scans = [lines::Kernel::Scalar, lines::Kernel::detect()].map(|k| {
            whole::scan(&data, 4, &mut glues, k).map(|w| (w.words, w.raw_chars, glues.clone()))
        });
        assert_eq!(scans[0], scans[1], "{:?}", String::from_utf8_lossy(body));
        scans[0].clone()
    };
    // Words joined by one space, glued ones by none: "a b,c" is 5 characters.
    assert_eq!(scan(b"a\nb\n<g/>\n,c\n</p>\n"), Some((3, 5, vec![4])));
    assert_eq!(scan(b"</p>"), Some((0, 0, vec![])));
    assert_eq!(scan(b"\n \n\x0c\n</p>\n"), Some((0, 0, vec![])));
    assert_eq!(scan(b"\nab\n \ncd\n</p >\r\n"), Some((2, 5, vec![])));
    assert_eq!(scan(b"x y\n\x0b\n</p>"), Some((2, 5, vec![])));
    // Characters, not bytes ("caf\u{e9}!\u{4e2d}" is 7); bodies across blocks.
    let utf8 = "caf\u{e9}\n<g/>\n!\n\u{4e2d}\n</p>\n";
    assert_eq!(scan(utf8.as_bytes()), Some((3, 7, vec![6])));
    let long = "word\n".repeat(30);
    assert_eq!(
        scan(format!("{long}</p>\n").as_bytes()),
        Some((30, 149, vec![]))
    );
    let glued = "ab\n<g/>\n".repeat(20);
    assert_eq!(
        scan(format!("{glued}c\n</p>\n").as_bytes()).map(|(w, r, g)| (w, r, g.len())),
        Some((21, 41, 20))
    );
    // Not whole: no `</p>` in the chunk, another tag, glue first, after a blank
    // line, before a blank line or a tag, twice; tabs, CR, NUL, invalid UTF-8.
    for body in [
        &b"a\nb\n"[..],
        b"a\n<x/>\n</p>\n",
        b"<g/>\na\n</p>\n",
        b"a\n\n<g/>\nb\n</p>\n",
        b"a\n<g/>\n\nb\n</p>\n",
        b"a\n<g/>\n</p>\n",
        b"a\n<g/>\n<g/>\nb\n</p>\n",
        b"a\n<g/>\n b\n</p>\n",
        b"a\tNN\n</p>\n",
        b"a\r\n</p>\n",
        b"a\0\n</p>\n",
        b"caf\xe9\n</p>\n",
        b"a\n<p>\n</p>\n",
        b"a\n</doc>\n",
    ] {
        assert_eq!(scan(body), None, "{:?}", String::from_utf8_lossy(body));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]
    /// A sink that takes paragraphs whole gets the events, words and line numbers
    /// of one that takes them word by word, on paragraphs that can be given whole
    /// and ones that cannot (glue in odd places, tags, tabs, CR, NUL, non-ASCII,
    /// blank lines, lines dropped as too long, chunk ends without a newline).
    #[test]
    fn whole_paragraphs_give_the_events_of_their_words(lines in proptest::collection::vec(
        proptest::prop_oneof![
            4 => proptest::strategy::Just("<p>".to_string()),
            4 => proptest::strategy::Just("</p>".to_string()),
            4 => proptest::strategy::Just("<g/>".to_string()),
            20 => "[a-zA-Z0-9.,;!?<>-]{1,6}",
            1 => proptest::strategy::Just("<doc url=\"a\">".to_string()),
            1 => proptest::strategy::Just("</doc>".to_string()),
            1 => proptest::strategy::Just("<p id=\"1\">".to_string()),
            1 => proptest::strategy::Just("</p >".to_string()),
            1 => proptest::strategy::Just("<x/>".to_string()),
            1 => proptest::strategy::Just("".to_string()),
            1 => "[ \x0b\x0c]{1,2}",
            1 => "[a-z]{0,2}[\t\r\u{0}\u{e9}][a-z]{0,2}",
            1 => "[a-z]{13,16}",
        ], 0..80), target in 1usize..400, max_line in 10usize..40, newline in proptest::bool::ANY) {
        let mut input = format!("<doc url=\"a\">\n{}", lines.join("\n"));
        if newline {
            input.push('\n');
        }
        for c in chunks_of(input.as_bytes(), target, max_line) {
            let by_word = numbered(&c, false, lines::Kernel::detect());
            for kernel in [lines::Kernel::Scalar, lines::Kernel::detect()] {
                proptest::prop_assert_eq!(&numbered(&c, true, kernel), &by_word);
            }
        }
    }
}
