//! Reading documents (verticals, JSON Lines, Parquet, WET, plain text) and
//! fingerprint files, with bad input reported as `FILE:LINE: reason` and skipped.
//! Verticals, Parquet and WET are read by the project's one reader of each format
//! (`webdedup_formats`), under the same rules as `webdedup dedup`.

use crate::core::parse_hex;
use crate::fingerprints::{read_fingerprints, FpHeader};
use crate::item::line_content;
/// What [`read_items`] hands on.
pub use crate::item::Item;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::str::FromStr;
use webdedup_formats::chunk;
use webdedup_formats::fields::{FieldPath, JsonlOptions};
use webdedup_formats::problems::Problems;
use webdedup_formats::read::{DocFormat, FormatChoice};
use webdedup_formats::texts::{read_texts, Text};
pub use webdedup_formats::Compression;

/// How input files are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Sniffed from the first bytes: `PAR1` Parquet, `WARC/1.x` WET, `<` vertical,
    /// `{` JSON Lines, a `# webdedup-simhash` header or `ID TAB 16-hex-digits`
    /// fingerprints, else lines.
    Auto,
    Vertical,
    Jsonl,
    /// Parquet (FineWeb layout): a row a document, the text column's lines.
    Parquet,
    /// Common Crawl WET: a `conversion` record a document.
    Wet,
    /// One document per line.
    Lines,
    /// One document per file.
    File,
    /// What `webdedup simhash` writes in TSV (`ID TAB HEX ...`).
    Fingerprints,
}

impl FromStr for InputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => InputFormat::Auto,
            "vertical" | "vert" => InputFormat::Vertical,
            "jsonl" | "json" => InputFormat::Jsonl,
            "parquet" => InputFormat::Parquet,
            "wet" | "warc" => InputFormat::Wet,
            "lines" | "line" => InputFormat::Lines,
            "file" => InputFormat::File,
            "fingerprints" | "tsv" => InputFormat::Fingerprints,
            o => {
                return Err(format!(
                    "unknown input format '{o}' (auto, vertical, jsonl, parquet, wet, lines, file, fingerprints)"
                ))
            }
        })
    }
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputFormat::Auto => "auto",
            InputFormat::Vertical => "vertical",
            InputFormat::Jsonl => "jsonl",
            InputFormat::Parquet => "parquet",
            InputFormat::Wet => "wet",
            InputFormat::Lines => "lines",
            InputFormat::File => "file",
            InputFormat::Fingerprints => "fingerprints",
        })
    }
}

/// Options of the document readers.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    pub format: InputFormat,
    /// JSON Lines: the field holding the text.
    pub text_field: String,
    /// JSON Lines and Parquet: the field holding the id (default: `id` where a
    /// record has one; else the id is `FILE:LINE`).
    pub id_field: Option<String>,
    /// Lines longer than this are dropped and reported (`--max-line-bytes`, as
    /// `webdedup dedup`'s); a WET record's block too.
    pub max_line_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: InputFormat::Auto,
            text_field: "text".into(),
            id_field: None,
            max_line_bytes: chunk::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// A line of [`Lines`].
enum Line<'a> {
    /// The line, with its `\n` (the last may lack it).
    Whole(&'a [u8]),
    /// A line longer than the limit, dropped without being held in memory.
    TooLong,
}

/// Lines (with their `\n`) from large reads: one memchr per line, no per-line read
/// call. The last line may lack its `\n`. A line longer than `max` bytes (without
/// its line end, as `webdedup dedup` counts) is skipped, never held whole.
struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    max: usize,
}

impl<R: io::Read> Lines<R> {
    fn new(r: R, max: usize) -> Self {
        Lines {
            r,
            buf: vec![0; (1 << 20).min(max.saturating_add(2)).max(2)],
            pos: 0,
            end: 0,
            eof: false,
            max: max.max(1),
        }
    }

    /// Whether `line` (with its `\n`, if any) is longer than the limit.
    fn too_long(&self, line: &[u8]) -> bool {
        line_content(line).len() > self.max
    }

    fn read_more(&mut self) -> io::Result<usize> {
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    if n == 0 {
                        self.eof = true;
                    }
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let mut scan_from = self.pos;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[scan_from..self.end]) {
                let a = self.pos;
                self.pos = scan_from + i + 1;
                if self.too_long(&self.buf[a..self.pos]) {
                    return Ok(Some(Line::TooLong));
                }
                return Ok(Some(Line::Whole(&self.buf[a..self.pos])));
            }
            if self.eof {
                if self.pos < self.end {
                    let a = self.pos;
                    self.pos = self.end;
                    if self.too_long(&self.buf[a..self.end]) {
                        return Ok(Some(Line::TooLong));
                    }
                    return Ok(Some(Line::Whole(&self.buf[a..self.end])));
                }
                return Ok(None);
            }
            // Move the partial line to the front, grow if it fills the buffer, read more.
            let partial = self.end - self.pos;
            self.buf.copy_within(self.pos..self.end, 0);
            self.pos = 0;
            self.end = partial;
            scan_from = partial;
            // Past the limit even without its line end (`\r\n` is two bytes):
            // the rest of the line is read and forgotten.
            if partial > self.max.saturating_add(1) {
                return self.skip_line().map(|()| Some(Line::TooLong));
            }
            if self.end == self.buf.len() {
                let len = self.buf.len();
                self.buf.resize(len.saturating_mul(2), 0);
            }
            self.read_more()?;
        }
    }

    /// Drops the bytes up to and including the next `\n` (or to the end).
    fn skip_line(&mut self) -> io::Result<()> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos..self.end]) {
                self.pos += i + 1;
                return Ok(());
            }
            self.pos = 0;
            self.end = 0;
            if self.eof || self.read_more()? == 0 {
                return Ok(());
            }
        }
    }
}

/// Decides the format from the first bytes of the decompressed stream.
pub fn sniff(head: &[u8]) -> InputFormat {
    // The binary and record formats first, by the rule `webdedup dedup` uses.
    match webdedup_formats::read::sniff(head) {
        FormatChoice::Parquet => return InputFormat::Parquet,
        FormatChoice::Wet => return InputFormat::Wet,
        _ => {}
    }
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let h = &head[start..];
    if h.starts_with(b"<") {
        return InputFormat::Vertical;
    }
    if h.starts_with(b"{") {
        return InputFormat::Jsonl;
    }
    let line = line_content(h.split(|&b| b == b'\n').next().unwrap_or(b""));
    if FpHeader::parse(line).is_some() {
        return InputFormat::Fingerprints;
    }
    let mut cols = line.split(|&b| b == b'\t');
    cols.next();
    if let Some(c) = cols.next() {
        if std::str::from_utf8(c).ok().and_then(parse_hex).is_some() {
            return InputFormat::Fingerprints;
        }
    }
    InputFormat::Lines
}

/// What reading a file found out.
#[derive(Clone, Debug)]
pub struct FileInfo {
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
    let mut format = opts.format;
    if format == InputFormat::Auto {
        format = match r.fill_buf() {
            Ok(head) => sniff(head),
            Err(e) => {
                problems.report(path, None, format_args!("read error: {e}"));
                return info;
            }
        };
    }
    info.format = format;
    let mut headers = Vec::new();
    let res = match format {
        InputFormat::File => read_whole(path, &mut r, problems, &mut f),
        InputFormat::Vertical | InputFormat::Parquet | InputFormat::Wet => {
            read_documents(path, format, opts, r, compression, problems, &mut f)
        }
        InputFormat::Fingerprints => {
            read_fingerprints(path, &mut r, problems, &mut headers, &mut f)
        }
        _ => read_lines(path, format, opts, &mut r, problems, &mut f),
    };
    if let Err(e) = res {
        problems.report(
            path,
            None,
            format_args!("read error (rest of file skipped): {e}"),
        );
    }
    info.headers = headers;
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

/// Verticals, Parquet and WET documents as the formats crate reads whole texts
/// ([`read_texts`]). JSON Lines are read by [`read_lines`]: a document's text is
/// its whole text value, as fingerprints have always been made.
fn read_documents(
    path: &Path,
    format: InputFormat,
    opts: &ReadOptions,
    stream: impl io::Read,
    compression: Compression,
    problems: &Problems,
    f: &mut impl FnMut(Item<'_>),
) -> io::Result<()> {
    let doc_format = match format {
        InputFormat::Vertical => DocFormat::Vertical,
        InputFormat::Parquet => DocFormat::Parquet(std::sync::Arc::new(JsonlOptions {
            text: FieldPath::parse(&opts.text_field),
            id: opts
                .id_field
                .as_deref()
                .map_or_else(|| JsonlOptions::default().id, |f| vec![FieldPath::parse(f)]),
            ..JsonlOptions::default()
        })),
        _ => DocFormat::Wet { drop_bad: false },
    };
    read_texts(
        path,
        &doc_format,
        stream,
        compression,
        opts.max_line_bytes,
        problems,
        &mut |t| {
            f(match t {
                Text::Doc {
                    id,
                    text,
                    line,
                    raw,
                } => Item::Doc {
                    id,
                    text,
                    line,
                    raw,
                },
                Text::Other { raw } => Item::Other { raw },
            })
        },
    )
}

fn read_lines(
    path: &Path,
    format: InputFormat,
    opts: &ReadOptions,
    r: &mut impl BufRead,
    problems: &Problems,
    f: &mut impl FnMut(Item<'_>),
) -> io::Result<()> {
    let mut lineno = 0u64;
    let file = path.display().to_string();
    let mut lines = Lines::new(r, opts.max_line_bytes);
    while let Some(line) = lines.next_line()? {
        lineno += 1;
        let line = match line {
            Line::Whole(line) => line,
            Line::TooLong => {
                let limit = opts.max_line_bytes;
                problems.report(path, Some(lineno), chunk::IssueKind::LineTooLong { limit });
                continue;
            }
        };
        let content = line_content(line);
        match format {
            InputFormat::Jsonl => {
                if content.iter().all(|b| b.is_ascii_whitespace()) {
                    f(Item::Other { raw: line });
                    continue;
                }
                // Invalid UTF-8 is replaced by U+FFFD (reported) and the record
                // kept; serde_json would refuse the whole line.
                let content = utf8_or_replaced(content, path, |_| lineno, problems);
                match json_doc(content.as_bytes(), opts) {
                    Ok((id, text)) => {
                        let id = id.unwrap_or_else(|| format!("{file}:{lineno}"));
                        f(Item::Doc {
                            id,
                            text: &text,
                            line: lineno,
                            raw: line,
                        });
                    }
                    Err(reason) => {
                        problems.report(path, Some(lineno), format_args!("{reason} (skipped)"));
                        f(Item::Other { raw: line });
                    }
                }
            }
            _ => {
                let text = utf8_or_replaced(content, path, |_| lineno, problems);
                f(Item::Doc {
                    id: format!("{file}:{lineno}"),
                    text: &text,
                    line: lineno,
                    raw: line,
                });
            }
        }
    }
    Ok(())
}

/// (id, text) of one JSON line, or why not.
fn json_doc(line: &[u8], opts: &ReadOptions) -> Result<(Option<String>, String), String> {
    let v: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| format!("bad JSON: {e}"))?;
    if !v.is_object() {
        return Err("JSON line is not an object".into());
    }
    // Dotted paths reach into nested objects, as every reader of the project
    // reads fields.
    let field = |name: &str| FieldPath::parse(name).find(&v);
    let text = match field(&opts.text_field) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(_) => return Err(format!("field '{}' is not a string", opts.text_field)),
        None => return Err(format!("missing field '{}'", opts.text_field)),
    };
    let id = match &opts.id_field {
        // As every reader of the project: the `id` field when there is one.
        None => match v.get("id") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        },
        Some(name) => Some(match field(name) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(_) => return Err(format!("field '{name}' is not a string or number")),
            None => return Err(format!("missing field '{name}'")),
        }),
    };
    Ok((id, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprints::FP_BLOCK;

    #[test]
    fn lines_reader_handles_long_lines_and_missing_final_newline() {
        // Reads in odd-sized pieces to exercise the refill path.
        struct Trickle<'a>(&'a [u8]);
        impl io::Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.0.len()).min(777_777);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let long = vec![b'x'; 3 << 20];
        let mut input = b"a\n\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\nlast");
        let mut l = Lines::new(Trickle(&input), 8 << 20);
        let mut got = Vec::new();
        while let Some(x) = l.next_line().unwrap() {
            let Line::Whole(x) = x else {
                panic!("too long")
            };
            got.push(x.to_vec());
        }
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], b"a\n");
        assert_eq!(got[1], b"\n");
        assert_eq!(got[2].len(), (3 << 20) + 1);
        assert_eq!(got[3], b"last");
        assert_eq!(got.concat(), input);
    }

    /// D8: a line longer than `--max-line-bytes` is reported and skipped, never
    /// held whole (one 200 MB JSON line took 2.77 GB); a line at the limit is read.
    #[test]
    fn over_long_lines_are_reported_and_skipped() {
        let at_limit = format!("{{\"id\":\"c\",\"text\":\"{}\"}}", "w ".repeat(40));
        let max = at_limit.len();
        let long = format!("{{\"id\":\"b\",\"text\":\"{}\"}}", "x".repeat(3 << 20));
        let input = format!("{{\"id\":\"a\",\"text\":\"one\"}}\n{long}\r\n{at_limit}\r\n{{\"id\":\"d\",\"text\":\"four\"}}\n{long}");
        let opts = ReadOptions {
            max_line_bytes: max,
            ..Default::default()
        };
        let (docs, _, msgs) = read_all(input.as_bytes(), &opts);
        let ids: Vec<(&str, u64)> = docs.iter().map(|d| (d.0.as_str(), d.2)).collect();
        assert_eq!(ids, [("a", 1), ("c", 3), ("d", 4)]);
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        for (m, line) in msgs.iter().zip([2, 5]) {
            assert!(
                m.ends_with(&format!("in:{line}: line longer than {max} bytes: dropped")),
                "{m}"
            );
        }
        // The reader never holds the long line.
        let mut l = Lines::new(input.as_bytes(), max);
        let mut kinds = Vec::new();
        while let Some(x) = l.next_line().unwrap() {
            kinds.push(matches!(x, Line::Whole(_)));
        }
        assert_eq!(kinds, [true, false, true, true, false]);
        assert!(l.buf.len() <= 4 * max, "{} bytes of buffer", l.buf.len());
    }

    #[test]
    fn sniffing() {
        assert_eq!(sniff(b"\n<doc id=\"1\">"), InputFormat::Vertical);
        assert_eq!(sniff(b"{\"text\":1}"), InputFormat::Jsonl);
        assert_eq!(sniff(b"PAR1\x15\x04"), InputFormat::Parquet);
        assert_eq!(sniff(b"WARC/1.0\r\nWARC-Type: warcinfo"), InputFormat::Wet);
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
        assert_eq!(sniff(b"just text"), InputFormat::Lines);
    }

    type Read = (Vec<(String, String, u64)>, Vec<u8>, Vec<String>);

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

    #[test]
    fn bad_json_lines_are_reported_with_line_numbers_and_skipped() {
        let input = b"{\"id\":\"a\",\"text\":\"one\"}\n{bad json\n{\"id\":\"c\"}\n\n{\"text\":\"no id\"}\n[1,2]\n{\"id\":\"f\",\"text\":\"caf\xff\"}\n{\"id\":\"g\",\"text\":\"two\"}";
        let opts = ReadOptions {
            id_field: Some("id".into()),
            ..Default::default()
        };
        let (docs, raw, msgs) = read_all(input, &opts);
        // Invalid UTF-8 is replaced and the record kept, as the README says.
        assert_eq!(
            docs,
            vec![
                ("a".into(), "one".into(), 1),
                ("f".into(), "caf\u{fffd}".into(), 7),
                ("g".into(), "two".into(), 8)
            ]
        );
        assert_eq!(raw, input.to_vec(), "items cover the input byte for byte");
        assert_eq!(msgs.len(), 5, "{msgs:?}");
        assert!(msgs[0].starts_with("in:2: bad JSON"), "{msgs:?}");
        assert_eq!(msgs[1], "in:3: missing field 'text' (skipped)");
        assert_eq!(msgs[2], "in:5: missing field 'id' (skipped)");
        assert_eq!(msgs[3], "in:6: JSON line is not an object (skipped)");
        assert_eq!(msgs[4], "in:7: invalid UTF-8 (replaced by U+FFFD)");
    }

    #[test]
    fn vertical_problems_and_byte_faithful_items() {
        let input = "<doc id=\"1\">\na\n</doc>\n<doc id=\"2\">\nb\n<doc id=\"3\">\nc\n</doc>\n<doc title=\"x\">\nd\n</doc>\n</doc>\n<doc id=\"5\">\ne\n";
        let (docs, raw, msgs) = read_all(input.as_bytes(), &ReadOptions::default());
        // Unclosed documents are closed at the next <doc> or the end and kept, as
        // `webdedup dedup` does (the one vertical reader of the project).
        assert_eq!(
            docs,
            vec![
                ("1".into(), "a".into(), 1),
                ("2".into(), "b".into(), 4),
                ("3".into(), "c".into(), 6),
                ("5".into(), "e".into(), 13)
            ]
        );
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
        assert_eq!(docs, vec![("1".into(), "w\u{fffd}".into(), 1)]);
        assert_eq!(
            msgs,
            vec!["in:1: invalid UTF-8 in document (replaced by U+FFFD)"]
        );
    }

    #[test]
    fn fingerprint_files_and_lines() {
        let input = b"# webdedup-simhash v1 tokenizer=chars:3 shingle=2 weights=count hash=xxh3-64\na\t00000000000000ff\t255\nb\tzz\nc\t0000000000000001\n";
        let (docs, raw, msgs) = read_all(input, &ReadOptions::default());
        assert_eq!(
            docs,
            vec![("a".into(), "ff".into(), 2), ("c".into(), "1".into(), 4)]
        );
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

    #[test]
    fn json_fields() {
        let o = ReadOptions {
            id_field: Some("url".into()),
            ..Default::default()
        };
        assert_eq!(
            json_doc(br#"{"url":"u","text":"t"}"#, &o).unwrap(),
            (Some("u".into()), "t".into())
        );
        assert_eq!(
            json_doc(br#"{"url":7,"text":"t"}"#, &o).unwrap().0,
            Some("7".into())
        );
        assert_eq!(
            json_doc(br#"{"text":"t"}"#, &o).unwrap_err(),
            "missing field 'url'"
        );
        assert_eq!(
            json_doc(br#"{"url":"u"}"#, &o).unwrap_err(),
            "missing field 'text'"
        );
        assert_eq!(
            json_doc(br#"{"url":"u","text":[1]}"#, &o).unwrap_err(),
            "field 'text' is not a string"
        );
        assert!(json_doc(br#"{"url":"u","#, &o)
            .unwrap_err()
            .starts_with("bad JSON"));
        assert_eq!(
            json_doc(b"[1]", &o).unwrap_err(),
            "JSON line is not an object"
        );
    }
}
