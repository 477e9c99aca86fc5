//! What `webdedup simhash` and `similar` read: documents through the project's one
//! document reader (`webdedup_formats::read`: verticals, JSON Lines, Parquet and
//! WET under the same rules and messages as `webdedup dedup`), and the inputs only
//! they take: plain lines (a document a line), whole files (a document a file) and
//! fingerprint files ([`crate::fingerprints`]). Bad input is reported as
//! `FILE:LINE: reason` and skipped.

use crate::fingerprints::{read_fingerprints, sniff_fingerprints, FpHeader};
use crate::item::lines_of;
/// What [`read_items`] hands on.
pub use crate::item::Item;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use webdedup_formats::chunk::{self, Boundary, ChunkReader};
use webdedup_formats::fields::JsonlOptions;
use webdedup_formats::problems::Problems;
use webdedup_formats::read::{sniff_known, FormatChoice, ReadSettings};
use webdedup_formats::texts::read_texts;
pub use webdedup_formats::Compression;

/// How input files are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Documents, in a format of the one reader. `Auto` sniffs each file: the
    /// document format its first bytes name (`PAR1` Parquet, `WARC/1.x` WET, `<`
    /// vertical, `{` JSON Lines), else fingerprints if it starts as a fingerprint
    /// file does, else lines.
    Documents(FormatChoice),
    /// One document per line, named `FILE:LINE`.
    Lines,
    /// One document per file, named by its path.
    File,
    /// What `webdedup simhash` writes in TSV (`ID TAB HEX ...`).
    Fingerprints,
}

impl Default for InputFormat {
    fn default() -> Self {
        InputFormat::Documents(FormatChoice::Auto)
    }
}

impl FromStr for InputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "lines" | "line" => InputFormat::Lines,
            "file" => InputFormat::File,
            "fingerprints" | "tsv" => InputFormat::Fingerprints,
            o => InputFormat::Documents(o.parse().map_err(|_| {
                format!("unknown input format '{o}' (auto, vertical, jsonl, parquet, wet, lines, file, fingerprints)")
            })?),
        })
    }
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputFormat::Documents(c) => c.name(),
            InputFormat::Lines => "lines",
            InputFormat::File => "file",
            InputFormat::Fingerprints => "fingerprints",
        })
    }
}

impl InputFormat {
    /// How a file whose decompressed content starts with `head` is read: this
    /// format, or for `auto` the one `head` suggests.
    pub fn resolve(self, head: &[u8]) -> InputFormat {
        match self {
            InputFormat::Documents(FormatChoice::Auto) => match sniff_known(head) {
                Some(c) => InputFormat::Documents(c),
                None if sniff_fingerprints(head) => InputFormat::Fingerprints,
                None => InputFormat::Lines,
            },
            f => f,
        }
    }
}

/// Options of the readers.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    pub format: InputFormat,
    /// The fields (JSON Lines) or columns (Parquet) holding the text and the id,
    /// as the one reader takes them (`ReadChoices::settings` checks a command
    /// line's). A document without an id is named `FILE:LINE` (`FILE:ROW`).
    pub fields: Arc<JsonlOptions>,
    /// Lines longer than this are dropped and reported (`--max-line-bytes`, as
    /// `webdedup dedup`'s); a WET record's block too.
    pub max_line_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: InputFormat::default(),
            fields: Arc::default(),
            max_line_bytes: chunk::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// What reading a file found out.
#[derive(Clone, Debug)]
pub struct FileInfo {
    /// How it was read (never `auto`).
    pub format: InputFormat,
    /// The `# webdedup-simhash` headers of a fingerprint file with their line
    /// numbers (usually one, on line 1; more when files were concatenated).
    pub headers: Vec<(u64, FpHeader)>,
    pub compression: Compression,
    /// Whether the file could be opened at all.
    pub opened: bool,
}

/// Reads `path` item by item. Problems (bad records, read errors) are reported and
/// skipped.
pub fn read_items(
    path: &Path,
    opts: &ReadOptions,
    problems: &Problems,
    mut f: impl FnMut(Item<'_>),
) -> FileInfo {
    let mut info = FileInfo {
        format: opts.format,
        headers: Vec::new(),
        compression: Compression::None,
        opened: false,
    };
    let (reader, compression) = match webdedup_formats::open_input(path) {
        Ok(r) => r,
        Err(e) => {
            problems.report(path, None, format_args!("cannot open: {e}"));
            return info;
        }
    };
    info.opened = true;
    info.compression = compression;
    let mut r = BufReader::with_capacity(1 << 18, reader);
    info.format = match r.fill_buf() {
        Ok(head) => opts.format.resolve(head),
        Err(e) => {
            problems.report(path, None, format_args!("read error: {e}"));
            return info;
        }
    };
    let res = match info.format {
        InputFormat::Documents(choice) => {
            let read = ReadSettings {
                choice,
                jsonl: opts.fields.clone(),
            };
            let format = read.resolve(b""); // named: no bytes to look at
            let max = opts.max_line_bytes;
            read_texts(path, &format, r, compression, max, problems, &mut |t| {
                f(t.into())
            })
        }
        InputFormat::Lines => read_lines(path, opts.max_line_bytes, r, problems, &mut f),
        InputFormat::File => read_whole(path, &mut r, problems, &mut f),
        InputFormat::Fingerprints => {
            read_fingerprints(path, &mut r, problems, &mut info.headers, &mut f)
        }
    };
    if let Err(e) = res {
        problems.report(
            path,
            None,
            format_args!("read error (rest of file skipped): {e}"),
        );
    }
    info
}

fn read_whole(
    path: &Path,
    r: &mut impl BufRead,
    problems: &Problems,
    f: &mut impl FnMut(Item<'_>),
) -> io::Result<()> {
    let mut buf = Vec::new();
    r.read_to_end(&mut buf)?;
    let text = utf8_or_replaced(&buf, path, |valid| line_of(&buf, valid), problems);
    f(Item::Doc {
        id: path.display().to_string(),
        text: &text,
        line: 1,
        raw: &buf,
    });
    Ok(())
}

/// `bytes` as text; invalid UTF-8 is replaced by U+FFFD and reported at the line
/// `line_at` gives for the offset of the first bad byte (computed only then).
fn utf8_or_replaced<'a>(
    bytes: &'a [u8],
    path: &Path,
    line_at: impl FnOnce(usize) -> u64,
    problems: &Problems,
) -> Cow<'a, str> {
    match std::str::from_utf8(bytes) {
        Ok(t) => Cow::Borrowed(t),
        Err(e) => {
            let line = line_at(e.valid_up_to());
            problems.report(path, Some(line), "invalid UTF-8 (replaced by U+FFFD)");
            String::from_utf8_lossy(bytes)
        }
    }
}

fn line_of(buf: &[u8], offset: usize) -> u64 {
    1 + memchr::memchr_iter(b'\n', &buf[..offset]).count() as u64
}

/// One document a line, named `FILE:LINE`. The lines are cut by the one reader of
/// lines (`webdedup_formats::chunk`): a line longer than `max_line_bytes` is
/// reported and dropped without being held whole, as in every format.
fn read_lines(
    path: &Path,
    max_line_bytes: usize,
    stream: impl Read,
    problems: &Problems,
    f: &mut impl FnMut(Item<'_>),
) -> io::Result<()> {
    let file = path.display().to_string();
    let mut chunks = ChunkReader::with_sizes(stream, chunk::DEFAULT_CHUNK_BYTES, max_line_bytes)
        .with_boundary(Boundary::Line);
    while let Some(chunk) = chunks.next_chunk() {
        for issue in &chunk.issues {
            problems.report(path, Some(issue.line), &issue.kind);
        }
        // Lines dropped as too long keep their numbers.
        let mut skipped = chunk.skipped_lines.iter().peekable();
        let mut line = chunk.first_line;
        for (raw, content) in lines_of(&chunk.data) {
            while skipped.next_if(|&&s| s == line).is_some() {
                line += 1;
            }
            let text = utf8_or_replaced(content, path, |_| line, problems);
            f(Item::Doc {
                id: format!("{file}:{line}"),
                text: &text,
                line,
                raw,
            });
            line += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprints::FP_BLOCK;
    use webdedup_formats::fields::FieldPath;

    #[test]
    fn lines_mode_reads_long_lines_and_a_missing_final_newline() {
        let long = "x".repeat(3 << 20);
        let input = format!("a\n\n{long}\nlast");
        let opts = ReadOptions {
            format: InputFormat::Lines,
            ..Default::default()
        };
        let (docs, raw, msgs) = read_all(input.as_bytes(), &opts);
        let got: Vec<(&str, usize, u64)> = docs
            .iter()
            .map(|d| (d.0.as_str(), d.1.len(), d.2))
            .collect();
        assert_eq!(
            got,
            [
                ("in:1", 1, 1),
                ("in:2", 0, 2),
                ("in:3", 3 << 20, 3),
                ("in:4", 4, 4)
            ]
        );
        assert_eq!(raw, input.as_bytes(), "items cover the input byte for byte");
        assert!(msgs.is_empty(), "{msgs:?}");
    }

    /// D8: a line longer than `--max-line-bytes` is reported and skipped, never
    /// held whole (one 200 MB JSON line took 2.77 GB), and the lines after it keep
    /// their numbers; a line at the limit is read. JSON Lines and plain lines alike:
    /// one reader of lines.
    #[test]
    fn over_long_lines_are_reported_and_skipped() {
        let at_limit = format!("{{\"id\":\"c\",\"text\":\"{}\"}}", "w ".repeat(40));
        let max = at_limit.len();
        let long = format!("{{\"id\":\"b\",\"text\":\"{}\"}}", "x".repeat(3 << 20));
        let input = format!("{{\"id\":\"a\",\"text\":\"one\"}}\n{long}\r\n{at_limit}\n{{\"id\":\"d\",\"text\":\"four\"}}\n{long}");
        for (format, ids) in [
            (InputFormat::default(), ["a", "c", "d"]),
            (InputFormat::Lines, ["in:1", "in:3", "in:4"]),
        ] {
            let opts = ReadOptions {
                format,
                max_line_bytes: max,
                ..Default::default()
            };
            let (docs, _, msgs) = read_all(input.as_bytes(), &opts);
            let got: Vec<(&str, u64)> = docs.iter().map(|d| (d.0.as_str(), d.2)).collect();
            assert_eq!(got, ids.into_iter().zip([1, 3, 4]).collect::<Vec<_>>());
            let want: Vec<String> = [2, 5]
                .iter()
                .map(|l| format!("in:{l}: line longer than {max} bytes: dropped"))
                .collect();
            assert_eq!(msgs, want, "{format}");
        }
    }

    #[test]
    fn sniffing() {
        let sniff = |head: &[u8]| InputFormat::default().resolve(head);
        let docs = InputFormat::Documents;
        assert_eq!(sniff(b"\n<doc id=\"1\">"), docs(FormatChoice::Vertical));
        assert_eq!(sniff(b"{\"text\":1}"), docs(FormatChoice::Jsonl));
        assert_eq!(sniff(b"PAR1\x15\x04"), docs(FormatChoice::Parquet));
        assert_eq!(
            sniff(b"WARC/1.0\r\nWARC-Type: warcinfo"),
            docs(FormatChoice::Wet)
        );
        assert_eq!(sniff(b"WARC/x"), InputFormat::Lines);
        assert_eq!(
            sniff(b"# webdedup-simhash v1 tokenizer=unicode"),
            InputFormat::Fingerprints
        );
        assert_eq!(
            sniff(b"doc1\t0123456789abcdef\t1\n"),
            InputFormat::Fingerprints
        );
        assert_eq!(
            sniff(b"# webdedup-simhash v2 tokenizer=unicode"),
            InputFormat::Fingerprints,
            "a header of another version is no text line"
        );
        assert_eq!(sniff(b"# webdedup-simhashes\n"), InputFormat::Lines);
        assert_eq!(sniff(b"doc1\t0123456789abcdeg\n"), InputFormat::Lines);
        assert_eq!(sniff(b"caf\xe9\tword\n"), InputFormat::Lines);
        assert_eq!(sniff(b"just text"), InputFormat::Lines);
        assert_eq!(InputFormat::Lines.resolve(b"{}"), InputFormat::Lines);
        for (name, format) in [
            ("auto", InputFormat::default()),
            ("json", docs(FormatChoice::Jsonl)),
            ("warc", docs(FormatChoice::Wet)),
            ("line", InputFormat::Lines),
            ("tsv", InputFormat::Fingerprints),
            ("file", InputFormat::File),
        ] {
            assert_eq!(name.parse::<InputFormat>(), Ok(format));
            assert_eq!(format.to_string().parse::<InputFormat>(), Ok(format));
        }
        assert!("csv"
            .parse::<InputFormat>()
            .unwrap_err()
            .contains("lines, file"));
    }

    /// Documents (or fingerprints) read: id, text (or hex), line; the bytes of all
    /// items; the problems reported.
    type Read = (Vec<(String, String, u64)>, Vec<u8>, Vec<String>);

    fn owned(docs: &[(&str, &str, u64)]) -> Vec<(String, String, u64)> {
        docs.iter()
            .map(|&(id, text, line)| (id.into(), text.into(), line))
            .collect()
    }

    fn read_all(content: &[u8], opts: &ReadOptions) -> Read {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, content).unwrap();
        let problems = Problems::quiet();
        let mut docs = Vec::new();
        let mut raw_all = Vec::new();
        read_items(&path, opts, &problems, |it| match it {
            Item::Doc {
                id,
                text,
                line,
                raw,
            } => {
                docs.push((
                    id.rsplit('/').next().unwrap().to_string(),
                    text.to_string(),
                    line,
                ));
                raw_all.extend_from_slice(raw);
            }
            Item::Fingerprint { id, fp, line, raw } => {
                docs.push((id, format!("{fp:x}"), line));
                raw_all.extend_from_slice(raw);
            }
            Item::Other { raw } => raw_all.extend_from_slice(raw),
        });
        let prefix = format!("{}/", dir.path().display());
        let msgs = problems
            .messages()
            .iter()
            .map(|m| m.replace(&prefix, ""))
            .collect();
        (docs, raw_all, msgs)
    }

    /// Reading with these text and id fields (JSON Lines, Parquet).
    fn with_fields(text: &str, id: &str) -> ReadOptions {
        let fields = JsonlOptions {
            text: FieldPath::parse(text),
            id: vec![FieldPath::parse(id)],
            ..Default::default()
        };
        ReadOptions {
            fields: Arc::new(fields),
            ..Default::default()
        }
    }

    /// Bad records are reported as `webdedup dedup` reports them (one reader) and
    /// passed through; a record without its id is named `FILE:LINE`.
    #[test]
    fn bad_json_lines_are_reported_with_line_numbers_and_skipped() {
        let input = b"{\"id\":\"a\",\"text\":\"one\"}\n{bad json\n{\"id\":\"c\"}\n\n{\"text\":\"no id\"}\n[1,2]\n{\"id\":\"f\",\"text\":\"caf\xff\"}\n{\"id\":\"g\",\"text\":\"two\"}";
        let (docs, raw, msgs) = read_all(input, &with_fields("text", "id"));
        // Invalid UTF-8 is replaced and the record kept, as the README says.
        let want = [
            ("a", "one", 1),
            ("in:5", "no id", 5),
            ("f", "caf\u{fffd}", 7),
            ("g", "two", 8),
        ];
        assert_eq!(docs, owned(&want));
        assert_eq!(raw, input.to_vec(), "items cover the input byte for byte");
        assert_eq!(msgs.len(), 4, "{msgs:?}");
        assert!(msgs[0].starts_with("in:2: not JSON ("), "{msgs:?}");
        assert!(msgs[0].ends_with("): record passed through unchanged"));
        assert_eq!(
            msgs[1],
            "in:3: no field 'text': record passed through unchanged"
        );
        assert_eq!(
            msgs[2],
            "in:6: not a JSON object: record passed through unchanged"
        );
        assert_eq!(msgs[3], "in:7: invalid UTF-8: kept, read lossily for keys");
    }

    /// A JSON Lines text is its non-blank lines joined by `\n` (as the one reader
    /// reads its paragraphs), dotted paths reach nested fields.
    #[test]
    fn json_lines_texts_and_nested_fields() {
        let input = br#"{"m":{"k":7},"d":{"b":"\n one\r\n\n \t\ntwo \u00e9\n"}}"#;
        let (docs, _, msgs) = read_all(input, &with_fields("d.b", "m.k"));
        assert_eq!(docs, owned(&[("7", " one\ntwo \u{e9}", 1)]));
        assert!(msgs.is_empty(), "{msgs:?}");
    }

    #[test]
    fn vertical_problems_and_byte_faithful_items() {
        let input = "<doc id=\"1\">\na\n</doc>\n<doc id=\"2\">\nb\n<doc id=\"3\">\nc\n</doc>\n<doc title=\"x\">\nd\n</doc>\n</doc>\n<doc id=\"5\">\ne\n";
        let (docs, raw, msgs) = read_all(input.as_bytes(), &ReadOptions::default());
        // Unclosed documents are closed at the next <doc> or the end and kept, as
        // `webdedup dedup` does (the one vertical reader of the project).
        let want = [("1", "a", 1), ("2", "b", 4), ("3", "c", 6), ("5", "e", 13)];
        assert_eq!(docs, owned(&want));
        assert_eq!(raw, input.as_bytes(), "items cover the input byte for byte");
        assert_eq!(
            msgs,
            vec![
                "in:6: <doc> opened at line 4 is not closed: closed here",
                "in:9: document has neither id nor url attribute (skipped)",
                "in:12: </doc> without its opening tag: dropped",
                "in:15: <doc> opened at line 13 is not closed: closed here",
            ]
        );
        let (docs, _, msgs) = read_all(b"<doc id=\"1\">\nw\xff\n</doc>\n", &ReadOptions::default());
        assert_eq!(docs, owned(&[("1", "w\u{fffd}", 1)]));
        assert_eq!(
            msgs,
            vec!["in:1: invalid UTF-8 in document (replaced by U+FFFD)"]
        );
    }

    #[test]
    fn fingerprint_files_and_lines() {
        let input = b"# webdedup-simhash v1 tokenizer=chars:3 shingle=2 weights=count hash=xxh3-64\na\t00000000000000ff\t255\nb\tzz\nc\t0000000000000001\n";
        let (docs, raw, msgs) = read_all(input, &ReadOptions::default());
        assert_eq!(docs, owned(&[("a", "ff", 2), ("c", "1", 4)]));
        assert_eq!(raw, input.to_vec());
        assert_eq!(
            msgs,
            vec!["in:3: expected ID TAB 16-hex-digit fingerprint (skipped)"]
        );
        let (docs, _, msgs) = read_all(b"first line\nsecond \xff\n", &ReadOptions::default());
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].0, "in:2");
        assert_eq!(msgs, vec!["in:2: invalid UTF-8 (replaced by U+FFFD)"]);
    }

    #[test]
    fn fingerprint_files_over_many_blocks_read_as_line_by_line() {
        // Several blocks of lines with a bad line every so often, CRLF lines, a header
        // in the middle, a line longer than a block, no final line end: the parallel
        // block reader gives the items, bytes, line numbers and problems that the
        // rules applied line by line give, with one thread or two.
        let mut input = Vec::new();
        let mut expect_docs = Vec::new();
        let mut expect_msgs = Vec::new();
        let mut line = 0u64;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        while input.len() < 5 * FP_BLOCK {
            line += 1;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match line % 1000 {
                7 => {
                    input.extend_from_slice(b"bad\tnot-hex\n");
                    expect_msgs.push(format!(
                        "in:{line}: expected ID TAB 16-hex-digit fingerprint (skipped)"
                    ));
                }
                8 => input.extend_from_slice(b"\n"),
                9 if line == 2009 => input.extend_from_slice(
                    b"# webdedup-simhash v1 tokenizer=unicode shingle=5 weights=count hash=xxh3-64\n",
                ),
                10 if line == 3010 => {
                    input.extend_from_slice(&vec![b'y'; FP_BLOCK + 10]);
                    input.push(b'\n');
                    expect_msgs.push(format!(
                        "in:{line}: expected ID TAB 16-hex-digit fingerprint (skipped)"
                    ));
                }
                _ => {
                    let end = if line.is_multiple_of(3) { "\r\n" } else { "\n" };
                    input.extend_from_slice(format!("d{line}\t{x:016x}\t0{end}").as_bytes());
                    expect_docs.push((format!("d{line}"), format!("{x:x}"), line));
                }
            }
        }
        input.extend_from_slice(b"last\t00000000000000ab");
        expect_docs.push(("last".into(), "ab".into(), line + 1));
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (docs, raw, msgs) = pool.install(|| read_all(&input, &ReadOptions::default()));
            assert!(raw == input, "threads={threads}: bytes differ");
            assert_eq!(docs, expect_docs, "threads={threads}");
            assert_eq!(msgs, expect_msgs, "threads={threads}");
        }
    }

    #[test]
    fn fingerprint_headers() {
        let known = FpHeader::parse(
            b"# webdedup-simhash v1 tokenizer=chars:3 shingle=2 weights=count hash=xxh3-64",
        );
        assert!(matches!(known, Some(FpHeader::Known(_))), "{known:?}");
        assert_eq!(FpHeader::parse(b"# a comment"), None);
        for (line, reason) in [
            (
                &b"# webdedup-simhash v1 tokenizer=unicode shingle=5 weights=distinct hash=md5"[..],
                "unknown feature hash 'md5'",
            ),
            (
                b"# webdedup-simhash v2 tokenizer=unicode shingle=5",
                "format version 'v2', this version reads v1",
            ),
            (b"# webdedup-simhash v1", "no settings"),
            (b"# webdedup-simhash", "no format version"),
        ] {
            match FpHeader::parse(line) {
                Some(FpHeader::Unknown { reason: r, .. }) => assert_eq!(r, reason),
                other => panic!("{other:?}"),
            }
        }
    }

    /// A header is held to the command line's checks (`--shingle 0` is refused, so
    /// is `shingle=0`), and an unknown key is no silent extra.
    #[test]
    fn fingerprint_header_values_are_checked_as_flags_are() {
        for (settings, reason) in [
            ("shingle=0", "'0' is not a shingle size between 1 and 64"),
            ("shingle=65", "'65' is not a shingle size between 1 and 64"),
            (
                "shingle=1000",
                "'1000' is not a shingle size between 1 and 64",
            ),
            ("shingle=-1", "'-1' is not a shingle size between 1 and 64"),
            ("shingle=5 colour=red", "unknown setting 'colour'"),
            ("shingle=5 extra", "'extra' in settings"),
        ] {
            let line = format!(
                "# webdedup-simhash v1 tokenizer=unicode weights=count hash=xxh3-64 {settings}"
            );
            match FpHeader::parse(line.as_bytes()) {
                Some(FpHeader::Unknown { reason: r, .. }) => {
                    assert!(r.contains(reason), "{settings}: {r}")
                }
                other => panic!("{settings}: {other:?}"),
            }
            // The command line says the same about the shingle size.
            if let Some(v) = settings
                .strip_prefix("shingle=")
                .filter(|v| !v.contains(' '))
            {
                assert_eq!(crate::run::parse_shingle(v).unwrap_err(), reason);
            }
        }
        let line = b"# webdedup-simhash v1 tokenizer=unicode shingle=64 weights=count hash=xxh3-64";
        assert!(matches!(FpHeader::parse(line), Some(FpHeader::Known(_))));
    }
}
