//! CDX and CDXJ index lines: reading (legend or field count) and writing.
//!
//! A CDX file is one line per archived record, fields separated by single spaces.
//! Its optional first line is a legend such as ` CDX N b a m s k r M S V g` naming
//! each column by a letter (N urlkey, b timestamp, a original URL, m mime, s status,
//! k digest, r redirect, M meta, S length, V offset, g file name). Without a legend
//! the columns are guessed from the field count, as pywb does:
//!
//! | fields | columns |
//! |---|---|
//! | 7  | `N b a m s k S` (public CDX) |
//! | 9  | `N b a m s k r V g` |
//! | 10 | `N b a m s k r M V g` |
//! | 11 | `N b a m s k r M S V g` |
//! | 12, 13, 14 | 9, 10, 11 + original record's length, offset, file name |
//!
//! A CDXJ line is `urlkey timestamp {json}` (keys `url`, `mime`, `status`, `digest`,
//! `length`, `offset`, `filename`).
//!
//! Digests are compared by [`normalize_digest`]: without a `sha1:` style label, upper
//! case (base32 is case-insensitive).

use std::borrow::Cow;
use std::io;

/// Column indices of the fields webdedup uses, for one CDX layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    pub urlkey: Option<usize>,
    pub timestamp: Option<usize>,
    pub original: Option<usize>,
    pub mime: Option<usize>,
    pub status: Option<usize>,
    pub digest: Option<usize>,
    pub length: Option<usize>,
    pub offset: Option<usize>,
    pub filename: Option<usize>,
    /// Number of fields a line must have.
    pub count: usize,
}

impl Columns {
    /// Columns from legend letters (`N b a m s k r M S V g`).
    pub fn from_legend(letters: &[&[u8]]) -> Columns {
        let mut c = Columns {
            count: letters.len(),
            ..Default::default()
        };
        for (i, l) in letters.iter().enumerate() {
            let slot = match *l {
                b"N" | b"A" => &mut c.urlkey,
                b"b" => &mut c.timestamp,
                b"a" => &mut c.original,
                b"m" => &mut c.mime,
                b"s" => &mut c.status,
                b"k" | b"c" => &mut c.digest,
                b"S" => &mut c.length,
                b"V" | b"v" => &mut c.offset,
                b"g" => &mut c.filename,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(i);
            }
        }
        c
    }

    /// The layout guessed from a line's field count (pywb's rule), if known.
    pub fn from_count(n: usize) -> Option<Columns> {
        static BY_COUNT: std::sync::OnceLock<Vec<Option<Columns>>> = std::sync::OnceLock::new();
        BY_COUNT
            .get_or_init(|| (0..16).map(Columns::compute_from_count).collect())
            .get(n)
            .copied()
            .flatten()
    }

    fn compute_from_count(n: usize) -> Option<Columns> {
        let legend: &[&[u8]] = match n {
            7 => &[b"N", b"b", b"a", b"m", b"s", b"k", b"S"],
            9 | 12 => &[b"N", b"b", b"a", b"m", b"s", b"k", b"r", b"V", b"g"],
            10 | 13 => &[b"N", b"b", b"a", b"m", b"s", b"k", b"r", b"M", b"V", b"g"],
            11 | 14 => &[
                b"N", b"b", b"a", b"m", b"s", b"k", b"r", b"M", b"S", b"V", b"g",
            ],
            _ => return None,
        };
        let mut c = Columns::from_legend(legend);
        c.count = n;
        Some(c)
    }
}

/// One parsed CDX or CDXJ line. Fields absent from the layout are empty.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CdxRecord<'a> {
    /// The whole line, without its line end.
    pub line: &'a [u8],
    pub urlkey: &'a [u8],
    pub timestamp: &'a [u8],
    pub original: Cow<'a, [u8]>,
    pub mime: Cow<'a, [u8]>,
    pub status: Cow<'a, [u8]>,
    pub digest: Cow<'a, [u8]>,
    pub length: Cow<'a, [u8]>,
    pub offset: Cow<'a, [u8]>,
    pub filename: Cow<'a, [u8]>,
}

impl CdxRecord<'_> {
    /// Whether the line stands for a WARC revisit record (mime `warc/revisit`; with
    /// `filename_dash`, also pywb's rule that file name `-` marks a revisit).
    pub fn is_revisit(&self, filename_dash: bool) -> bool {
        self.mime.eq_ignore_ascii_case(b"warc/revisit")
            || (filename_dash && &*self.filename == b"-")
    }
}

/// Appends the comparable form of a digest to `out`: the part after the last `:`
/// (`sha1:ABC` -> `ABC`), upper-cased. Returns false (and appends nothing) when there
/// is no digest (empty or `-`).
pub fn normalize_digest(digest: &[u8], out: &mut Vec<u8>) -> bool {
    let d = match memchr::memrchr(b':', digest) {
        Some(i) => &digest[i + 1..],
        None => digest,
    };
    if d.is_empty() || d == b"-" {
        return false;
    }
    out.extend(d.iter().map(|b| b.to_ascii_uppercase()));
    true
}

/// What [`CdxReader::next_line`] found.
#[derive(Debug)]
pub enum CdxItem<'a> {
    Record(CdxRecord<'a>),
    /// A malformed line (`line` is its 1-based number), to be reported and skipped.
    Bad {
        line: u64,
        reason: String,
    },
}

/// Longest line accepted; longer ones are reported and skipped.
pub const MAX_LINE: usize = 16 << 20;

/// Reads CDX / CDXJ lines from a stream, following legend lines when present.
/// Lines are parsed in place in a large buffer (no copy per line).
pub struct CdxReader<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    line_no: u64,
    legend: Option<Columns>,
    fields: Vec<(usize, usize)>,
}

impl<R: io::Read> CdxReader<R> {
    pub fn new(reader: R) -> Self {
        CdxReader {
            reader,
            buf: vec![0; 1 << 20],
            start: 0,
            end: 0,
            eof: false,
            line_no: 0,
            legend: None,
            fields: Vec::with_capacity(16),
        }
    }

    /// 1-based number of the last line read.
    pub fn line_number(&self) -> u64 {
        self.line_no
    }

    /// The next line as a range of `buf` (without `\n`), or `Err(len)` for a line
    /// longer than [`MAX_LINE`] (skipped).
    fn raw_line(&mut self) -> io::Result<Option<Result<(usize, usize), usize>>> {
        let mut skipped = 0usize;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let s = self.start;
                self.start += i + 1;
                if skipped > 0 {
                    return Ok(Some(Err(skipped + i)));
                }
                return Ok(Some(Ok((s, s + i))));
            }
            if self.eof {
                if self.start < self.end {
                    let s = self.start;
                    self.start = self.end;
                    if skipped > 0 {
                        return Ok(Some(Err(skipped + self.end - s)));
                    }
                    return Ok(Some(Ok((s, self.end))));
                }
                return Ok(None);
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                if self.buf.len() >= MAX_LINE {
                    skipped += self.end;
                    self.end = 0;
                } else {
                    self.buf.resize(self.buf.len() * 2, 0);
                }
            }
            let n = loop {
                match self.reader.read(&mut self.buf[self.end..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            if n == 0 {
                self.eof = true;
            }
            self.end += n;
        }
    }

    /// The next record or malformed line; `None` at the end. Blank lines and legend
    /// lines are consumed silently.
    pub fn next_line(&mut self) -> io::Result<Option<CdxItem<'_>>> {
        loop {
            let (start, mut end) = match self.raw_line()? {
                None => return Ok(None),
                Some(Ok(r)) => r,
                Some(Err(len)) => {
                    self.line_no += 1;
                    return Ok(Some(CdxItem::Bad {
                        line: self.line_no,
                        reason: format!("line of {len} bytes is too long"),
                    }));
                }
            };
            self.line_no += 1;
            while end > start && (self.buf[end - 1] == b'\n' || self.buf[end - 1] == b'\r') {
                end -= 1;
            }
            if end == start {
                continue;
            }
            let line = &self.buf[start..end];
            let trimmed = trim_start(line);
            if trimmed.starts_with(b"CDX ") || trimmed == b"CDX" {
                let letters: Vec<&[u8]> = trimmed[3..]
                    .split(|&b| b == b' ')
                    .filter(|s| !s.is_empty())
                    .collect();
                let cols = Columns::from_legend(&letters);
                if cols.urlkey.is_none() || cols.timestamp.is_none() {
                    let line_no = self.line_no;
                    return Ok(Some(CdxItem::Bad {
                        line: line_no,
                        reason: "CDX legend without N (urlkey) or b (timestamp)".into(),
                    }));
                }
                self.legend = Some(cols);
                continue;
            }
            let line_no = self.line_no;
            let buf = &self.buf[start..end];
            return Ok(Some(
                match parse_line(buf, self.legend.as_ref(), &mut self.fields) {
                    Ok(r) => CdxItem::Record(r),
                    Err(reason) => CdxItem::Bad {
                        line: line_no,
                        reason,
                    },
                },
            ));
        }
    }
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
    &s[n..]
}

/// Parses one line (without line end) as CDXJ if its third field starts with `{`,
/// else as CDX with `legend` or, without legend, by field count. `fields` is scratch.
pub fn parse_line<'a>(
    line: &'a [u8],
    legend: Option<&Columns>,
    fields: &mut Vec<(usize, usize)>,
) -> Result<CdxRecord<'a>, String> {
    fields.clear();
    let mut start = 0;
    // A plain loop: fields are short, one memchr call per field costs more.
    for (i, _) in line.iter().enumerate().filter(|(_, &b)| b == b' ') {
        fields.push((start, i));
        start = i + 1;
        if fields.len() == 2 && line.get(start) == Some(&b'{') {
            return parse_cdxj(
                line,
                &line[..fields[0].1],
                &line[fields[1].0..fields[1].1],
                &line[start..],
            );
        }
    }
    fields.push((start, line.len()));
    let cols = match legend {
        Some(c) => *c,
        None => match Columns::from_count(fields.len()) {
            Some(c) => c,
            None => {
                return Err(format!(
                    "{} fields: not a known CDX layout (7, 9, 10, 11, 12, 13 or 14 fields)",
                    fields.len()
                ))
            }
        },
    };
    if fields.len() != cols.count {
        return Err(format!(
            "{} fields where the legend names {}",
            fields.len(),
            cols.count
        ));
    }
    if fields.iter().any(|(s, e)| s == e) {
        return Err("empty field (two spaces in a row)".into());
    }
    let get = |c: Option<usize>| -> &'a [u8] {
        match c {
            Some(i) => &line[fields[i].0..fields[i].1],
            None => b"",
        }
    };
    let rec = CdxRecord {
        line,
        urlkey: get(cols.urlkey),
        timestamp: get(cols.timestamp),
        original: Cow::Borrowed(get(cols.original)),
        mime: Cow::Borrowed(get(cols.mime)),
        status: Cow::Borrowed(get(cols.status)),
        digest: Cow::Borrowed(get(cols.digest)),
        length: Cow::Borrowed(get(cols.length)),
        offset: Cow::Borrowed(get(cols.offset)),
        filename: Cow::Borrowed(get(cols.filename)),
    };
    check_timestamp(rec.timestamp)?;
    Ok(rec)
}

fn check_timestamp(ts: &[u8]) -> Result<(), String> {
    if ts.is_empty() || ts.len() > 17 || !ts.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "bad timestamp '{}' (expected up to 14 digits)",
            webdedup_text::shown::quote_bytes(ts, 40)
        ));
    }
    Ok(())
}

fn parse_cdxj<'a>(
    line: &'a [u8],
    urlkey: &'a [u8],
    timestamp: &'a [u8],
    json: &'a [u8],
) -> Result<CdxRecord<'a>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("CDXJ: bad JSON: {e}"))?;
    let obj = v.as_object().ok_or("CDXJ: JSON is not an object")?;
    let field = |k: &str| -> Cow<'a, [u8]> {
        match obj.get(k) {
            Some(serde_json::Value::String(s)) => Cow::Owned(s.as_bytes().to_vec()),
            Some(serde_json::Value::Number(n)) => Cow::Owned(n.to_string().into_bytes()),
            _ => Cow::Borrowed(b""),
        }
    };
    if urlkey.is_empty() {
        return Err("CDXJ: empty urlkey".into());
    }
    let rec = CdxRecord {
        line,
        urlkey,
        timestamp,
        original: field("url"),
        mime: field("mime"),
        status: field("status"),
        digest: field("digest"),
        length: field("length"),
        offset: field("offset"),
        filename: field("filename"),
    };
    check_timestamp(rec.timestamp)?;
    Ok(rec)
}

/// The legend line of the 11-field CDX that [`write_cdx11`] writes.
pub const CDX11_LEGEND: &str = " CDX N b a m s k r M S V g";

/// One index entry, as written by `warc index`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexEntry {
    pub urlkey: String,
    pub timestamp: String,
    pub url: String,
    /// Empty when unknown (written `-` in CDX, left out of CDXJ).
    pub mime: String,
    pub status: String,
    pub digest: String,
    pub length: u64,
    pub offset: u64,
    pub filename: String,
}

fn dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

/// Writes `e` as an 11-field CDX line (`N b a m s k r M S V g`), with the digest
/// without its label, as cdxj-indexer's `--cdx11` output.
pub fn write_cdx11(out: &mut impl io::Write, e: &IndexEntry) -> io::Result<()> {
    let digest = e.digest.rsplit(':').next().unwrap_or("");
    writeln!(
        out,
        "{} {} {} {} {} {} - - {} {} {}",
        e.urlkey,
        e.timestamp,
        no_space(&e.url),
        no_space(dash(&e.mime)),
        dash(&e.status),
        dash(digest),
        e.length,
        e.offset,
        no_space(&e.filename)
    )
}

fn no_space(s: &str) -> Cow<'_, str> {
    if s.contains([' ', '\n', '\r']) {
        Cow::Owned(
            s.replace(' ', "%20")
                .replace('\n', "%0A")
                .replace('\r', "%0D"),
        )
    } else {
        Cow::Borrowed(s)
    }
}

/// Writes `e` as a CDXJ line exactly as cdxj-indexer (Python `json.dumps`) does:
/// keys `url mime status digest length offset filename` in that order, absent values
/// left out, `", "` and `": "` separators, non-ASCII escaped as `\uXXXX`.
pub fn write_cdxj(out: &mut impl io::Write, e: &IndexEntry) -> io::Result<()> {
    let mut s = String::with_capacity(256);
    s.push_str(&e.urlkey);
    s.push(' ');
    s.push_str(&e.timestamp);
    s.push_str(" {");
    let length = e.length.to_string();
    let offset = e.offset.to_string();
    let pairs = [
        ("url", e.url.as_str()),
        ("mime", e.mime.as_str()),
        ("status", e.status.as_str()),
        ("digest", e.digest.as_str()),
        ("length", length.as_str()),
        ("offset", offset.as_str()),
        ("filename", e.filename.as_str()),
    ];
    let mut first = true;
    for (k, v) in pairs {
        if v.is_empty() && k != "url" && k != "filename" {
            continue;
        }
        if !first {
            s.push_str(", ");
        }
        first = false;
        json_string(&mut s, k);
        s.push_str(": ");
        json_string(&mut s, v);
    }
    s.push_str("}\n");
    out.write_all(s.as_bytes())
}

/// A JSON string as Python's `json.dumps` writes it (ASCII only).
fn json_string(out: &mut String, v: &str) {
    use std::fmt::Write;
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{:04x}", u);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fields = (String, String, String, String);

    fn read_all(text: &str) -> Vec<Result<Fields, (u64, String)>> {
        let mut r = CdxReader::new(text.as_bytes());
        let mut out = Vec::new();
        while let Some(item) = r.next_line().unwrap() {
            out.push(match item {
                CdxItem::Record(rec) => Ok((
                    String::from_utf8_lossy(rec.urlkey).into(),
                    String::from_utf8_lossy(rec.timestamp).into(),
                    String::from_utf8_lossy(&rec.digest).into(),
                    String::from_utf8_lossy(&rec.mime).into(),
                )),
                CdxItem::Bad { line, reason } => Err((line, reason)),
            });
        }
        out
    }

    #[test]
    fn legend_and_field_counts() {
        let text = " CDX N b a m s k r M S V g\n\
            com,example)/ 20140127171200 http://example.com text/html 200 AAAA - - 1046 334 a.warc.gz\n\
            \n\
            com,example)/ 20140127171251 http://example.com warc/revisit - sha1:aaaa - - 553 11875 a.warc.gz\r\n\
            too few fields\n\
            CDX a b N\n\
            http://x.org/ 20200101000000 org,x)/\n";
        let got = read_all(text);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0].as_ref().unwrap().0, "com,example)/");
        assert_eq!(got[1].as_ref().unwrap().2, "sha1:aaaa");
        assert_eq!(got[1].as_ref().unwrap().3, "warc/revisit");
        assert_eq!(got[2].as_ref().unwrap_err().0, 5);
        assert_eq!(got[3].as_ref().unwrap().0, "org,x)/");
    }

    #[test]
    fn no_legend_by_count() {
        let nine = "a)/ 20200101000000 http://a/ text/html 200 D1 - 10 f.warc\n";
        let ten = "a)/ 20200101000000 http://a/ text/html 200 D2 - - 10 f.warc\n";
        let seven = "a)/ 20200101000000 http://a/ text/html 200 D3 77\n";
        let fourteen =
            "a)/ 20200101000000 http://a/ warc/revisit - D4 - - 5 10 f.warc 9 8 g.warc\n";
        let eight = "a)/ 20200101000000 http://a/ text/html 200 D5 - x\n";
        let got = read_all(&format!("{nine}{ten}{seven}{fourteen}{eight}"));
        let digests: Vec<_> = got
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|r| r.2.clone())
            .collect();
        assert_eq!(digests, ["D1", "D2", "D3", "D4"]);
        assert!(got[4].as_ref().unwrap_err().1.contains("8 fields"));
    }

    #[test]
    fn lines_across_buffer_refills_and_too_long_lines() {
        let mut text = String::new();
        for i in 0..40_000 {
            text += &format!("a)/{i} 20200101000000 http://a/{i} text/html 200 D{i} - 10 f.warc\n");
        }
        text += &"x".repeat(MAX_LINE + 10);
        text += "\n";
        text += "b)/ 20200101000000 http://b/ text/html 200 LAST - 10 f.warc";
        let got = read_all(&text);
        assert_eq!(got.len(), 40_002);
        assert!(got[..40_000]
            .iter()
            .enumerate()
            .all(|(i, r)| r.as_ref().unwrap().2 == format!("D{i}")));
        assert_eq!(got[40_000].as_ref().unwrap_err().0, 40_001);
        assert!(got[40_000].as_ref().unwrap_err().1.contains("too long"));
        assert_eq!(got[40_001].as_ref().unwrap().2, "LAST");
    }

    #[test]
    fn cdxj_lines() {
        let text = "org,httpbin)/anything 20171130220904 {\"filename\":\"h.warc.gz\",\"digest\":\"sha1:UQ3W\",\"mime\":\"warc/revisit\",\"url\":\"http://httpbin.org/anything\"}\n\
            org,x)/ 20171130220904 {not json}\n";
        let got = read_all(text);
        assert_eq!(got[0].as_ref().unwrap().2, "sha1:UQ3W");
        assert_eq!(got[0].as_ref().unwrap().3, "warc/revisit");
        assert!(got[1].as_ref().unwrap_err().1.contains("JSON"));
    }

    #[test]
    fn bad_timestamp_and_empty_field() {
        let got = read_all("a)/ 2020x http://a/ text/html 200 D1 - 10 f.warc\na)/  http://a/ text/html 200 D1 - 10 f.warc\n");
        assert!(got[0].as_ref().unwrap_err().1.contains("timestamp"));
        assert!(got[1].is_err());
    }

    #[test]
    fn digest_normalization() {
        let mut a = Vec::new();
        assert!(normalize_digest(b"sha1:abcd", &mut a));
        let mut b = Vec::new();
        assert!(normalize_digest(b"ABCD", &mut b));
        assert_eq!(a, b);
        assert!(!normalize_digest(b"-", &mut a));
        assert!(!normalize_digest(b"sha1:", &mut a));
    }

    #[test]
    fn writers() {
        let e = IndexEntry {
            urlkey: "com,example)/".into(),
            timestamp: "20140127171200".into(),
            url: "http://example.com/".into(),
            mime: "text/html".into(),
            status: "200".into(),
            digest: "sha1:B2LT".into(),
            length: 1046,
            offset: 334,
            filename: "a.warc.gz".into(),
        };
        let mut out = Vec::new();
        write_cdx11(&mut out, &e).unwrap();
        write_cdxj(&mut out, &e).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "com,example)/ 20140127171200 http://example.com/ text/html 200 B2LT - - 1046 334 a.warc.gz\n\
             com,example)/ 20140127171200 {\"url\": \"http://example.com/\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"sha1:B2LT\", \"length\": \"1046\", \"offset\": \"334\", \"filename\": \"a.warc.gz\"}\n"
        );
        // Both read back.
        let got = read_all(&text);
        assert!(got.iter().all(|r| r.is_ok()), "{got:?}");
    }
}
