//! The one document reader: every format, chosen or sniffed, read in chunks.
//!
//! Every command that reads documents reads them here: a [`ReadSettings`] (the
//! format the user named, or `auto`, and the fields) resolves to a [`DocFormat`]
//! per file ([`sniff`] looks at its first bytes), which cuts the file into chunks
//! ([`DocReader`]) and walks each chunk for a [`DocSink`] with that format's
//! reader:
//!
//! | format | chunk boundary | document | paragraph | written back |
//! |---|---|---|---|---|
//! | [`vertical`](crate::vertical) | before a `<doc` line | `<doc>`..`</doc>` | `<p>`..`</p>` (or an implicit one) | kept lines byte for byte |
//! | [`jsonl`](crate::jsonl) | any line start | one JSON line | a non-blank line of the text field | the line with its text value's kept lines, every other byte as read |
//! | [`parquet`](crate::parquet) | a row group (or an equal slice of a large one) | a row | a non-blank line of the text column | the row group's kept rows, the text column rebuilt |
//! | [`wet`](crate::wet) | after about `--chunk-bytes` of records | a `conversion` record | a non-blank line of its body | the record with its kept lines and a corrected `Content-Length` |
//!
//! A new format is one reader (a module with a `parse_chunk` driving a
//! [`DocSink`], a variant of [`DocFormat`] and, if it can be recognised, a rule in
//! [`sniff`]) and, when its bytes are not a concatenation of kept ranges, one
//! writer; every command that reads documents gains it. Parquet and WET are read
//! from files (by offset), not streams: [`DocFormat::reader`] opens them again by
//! path.

use crate::chunk::{Boundary, BufferPool, Chunk, ChunkReader};
use crate::doc::DocSink;
use crate::fields::{FieldPath, JsonlOptions};
use crate::input::{Compression, InputFile};
use crate::vertical::FromVertical;
use crate::{jsonl, parquet, vertical, wet};
use std::io::{self, Read};
use std::sync::Arc;

/// Cuts an input into chunks of whole documents, whatever its format.
pub enum DocReader<R> {
    /// Line formats (verticals, JSON Lines), from the decompressed stream.
    Stream(ChunkReader<R>),
    Parquet(Box<parquet::RowGroups>),
    Wet(Box<wet::Records>),
}

impl<R: Read> DocReader<R> {
    /// The next chunk, or None after the last one (there is always at least one,
    /// with `last` set, even for an empty input).
    pub fn next_chunk(&mut self) -> Option<Chunk> {
        match self {
            DocReader::Stream(r) => r.next_chunk(),
            DocReader::Parquet(r) => r.next_chunk(),
            DocReader::Wet(r) => r.next_chunk(),
        }
    }

    /// Takes buffers for new chunks from `pool` (line formats, Parquet).
    pub fn with_pool(self, pool: Arc<BufferPool>) -> Self {
        match self {
            DocReader::Stream(r) => DocReader::Stream(r.with_pool(pool)),
            DocReader::Parquet(r) => DocReader::Parquet(Box::new(r.with_pool(pool))),
            other => other,
        }
    }
}

/// A document format with its reading options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocFormat {
    Vertical,
    Jsonl(Arc<JsonlOptions>),
    /// The JSON Lines options name the columns.
    Parquet(Arc<JsonlOptions>),
    Wet {
        drop_bad: bool,
    },
}

impl DocFormat {
    pub fn name(&self) -> &'static str {
        match self {
            DocFormat::Vertical => "vertical",
            DocFormat::Jsonl(_) => "jsonl",
            DocFormat::Parquet(_) => "parquet",
            DocFormat::Wet { .. } => "wet",
        }
    }

    /// How a position is named in messages (`FILE:{at}{n}`): a line, a row (from
    /// 1), a record's byte offset in the file.
    pub fn at(&self) -> &'static str {
        match self {
            DocFormat::Vertical | DocFormat::Jsonl(_) => "",
            DocFormat::Parquet(_) => "row ",
            DocFormat::Wet { .. } => "offset ",
        }
    }

    /// `Some(name)` for the formats read from a file by offset (Parquet, WET),
    /// which no in-memory reader takes.
    pub fn file_only(&self) -> Option<&'static str> {
        match self {
            DocFormat::Parquet(_) => Some("Parquet"),
            DocFormat::Wet { .. } => Some("WET"),
            _ => None,
        }
    }

    /// Where chunks may end: documents never straddle two chunks (line formats;
    /// the others cut their own chunks).
    pub fn boundary(&self) -> Boundary {
        match self {
            DocFormat::Vertical => Boundary::DocLine,
            _ => Boundary::Line,
        }
    }

    /// Reads `file` in chunks of whole documents. `stream` is its decompressed
    /// content as the input layer opened it (`compression`: what it found); line
    /// formats read from it, Parquet and WET open the file again by path (they
    /// need to seek: neither standard input nor a pipe will do).
    pub fn reader<R: Read>(
        &self,
        file: &InputFile,
        stream: R,
        compression: Compression,
        chunk_bytes: usize,
        max_line: usize,
    ) -> io::Result<DocReader<R>> {
        let seekable = |what: &str| -> io::Result<()> {
            let regular =
                !file.is_stdin() && std::fs::metadata(&file.path).is_ok_and(|m| m.is_file());
            if !regular {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "{what} is read from a file (by offset), not from standard input or a pipe"
                    ),
                ));
            }
            Ok(())
        };
        match self {
            DocFormat::Vertical | DocFormat::Jsonl(_) => Ok(DocReader::Stream(self.chunk_reader(
                stream,
                chunk_bytes,
                max_line,
            ))),
            DocFormat::Parquet(o) => {
                seekable("Parquet")?;
                if compression != Compression::None {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        format!("a {compression:?}-compressed Parquet file: decompress it first (Parquet compresses its pages itself)"),
                    ));
                }
                Ok(DocReader::Parquet(Box::new(parquet::RowGroups::open(
                    &file.path,
                    o,
                    chunk_bytes,
                )?)))
            }
            DocFormat::Wet { drop_bad } => {
                seekable("WET")?;
                if compression == Compression::Zstd {
                    // One zstd frame: no gzip members to seek between.
                    return Ok(DocReader::Wet(Box::new(wet::Records::open_decompressed(
                        stream,
                        &file.path,
                        chunk_bytes,
                        max_line,
                    )?)));
                }
                Ok(DocReader::Wet(Box::new(wet::Records::open(
                    &file.path,
                    *drop_bad,
                    chunk_bytes,
                    max_line,
                )?)))
            }
        }
    }

    /// Cuts a decompressed stream of this format into chunks of whole documents.
    pub fn chunk_reader<R: Read>(
        &self,
        r: R,
        chunk_bytes: usize,
        max_line: usize,
    ) -> ChunkReader<R> {
        ChunkReader::with_sizes(r, chunk_bytes, max_line).with_boundary(self.boundary())
    }

    /// Walks `chunk`, telling `sink` about its documents.
    #[inline]
    pub fn parse<S: DocSink>(&self, chunk: &Chunk, sink: &mut S) {
        match self {
            DocFormat::Vertical => vertical::parse_chunk(chunk, &mut FromVertical::new(sink)),
            DocFormat::Jsonl(o) => jsonl::parse_chunk(chunk, o, sink),
            DocFormat::Parquet(_) => parquet::parse_chunk(chunk, sink),
            DocFormat::Wet { drop_bad } => wet::parse_chunk(chunk, *drop_bad, sink),
        }
    }

    /// A paragraph as feedback mode writes it to `.dropped` (its bytes as read,
    /// ending with a newline), made into a document of this format again, so
    /// `webdedup check` reads it with the run's reader.
    pub fn dropped_as_document(&self, body: &[u8]) -> (Vec<u8>, DocFormat) {
        match self {
            DocFormat::Vertical => {
                let mut doc = b"<doc>\n".to_vec();
                doc.extend_from_slice(body);
                doc.extend_from_slice(b"</doc>\n");
                (doc, DocFormat::Vertical)
            }
            DocFormat::Jsonl(_) | DocFormat::Parquet(_) | DocFormat::Wet { .. } => {
                // One text line a line (the dropped paragraph, then the short ones
                // that rode along with the next dropped one): joined into one text
                // again, as JSON Lines (escaped already for JSON Lines; the plain
                // lines of Parquet and WET escaped here, read lossily, as their
                // readers read them for keys).
                let escaped = matches!(self, DocFormat::Jsonl(_));
                let body = body.strip_suffix(b"\n").unwrap_or(body);
                let mut doc = b"{\"text\":\"".to_vec();
                for (i, line) in body.split(|&b| b == b'\n').enumerate() {
                    if i > 0 {
                        doc.extend_from_slice(b"\\n");
                    }
                    if escaped {
                        doc.extend_from_slice(line);
                    } else {
                        let s = serde_json::to_string(&String::from_utf8_lossy(line))
                            .unwrap_or_default();
                        doc.extend_from_slice(&s.as_bytes()[1..s.len().saturating_sub(1)]);
                    }
                }
                doc.extend_from_slice(b"\"}\n");
                (doc, DocFormat::Jsonl(Arc::new(JsonlOptions::default())))
            }
        }
    }
}

/// The format a user names (`--input-format`), or `Auto`: sniffed per file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FormatChoice {
    #[default]
    Auto,
    Vertical,
    Jsonl,
    Parquet,
    Wet,
}

webdedup_text::named_choices! {
    FormatChoice, "input format", quote "", {
        Auto => "auto",
        Vertical => "vertical" | "vert",
        Jsonl => "jsonl" | "json",
        Parquet => "parquet",
        Wet => "wet" | "warc",
    }
}

/// How documents are read: the format (or `Auto`) and the options of each format.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReadSettings {
    pub choice: FormatChoice,
    /// The fields of JSON Lines, and the columns of Parquet.
    pub jsonl: Arc<JsonlOptions>,
}

/// How documents are read, as a front door names it: the command line's
/// `--input-format` and field flags and the Python module's keyword arguments both
/// become one of these, and [`ReadChoices::settings`] checks them and fills the
/// defaults (a `None` takes the JSON Lines reader's default fields), so every
/// front door refuses the same values with the same message.
///
/// ```
/// use webdedup_formats::read::{FormatChoice, ReadChoices};
/// let s = ReadChoices { input_format: Some("jsonl".into()), ..Default::default() }
///     .settings()
///     .unwrap();
/// assert_eq!(s.choice, FormatChoice::Jsonl);
/// let bad = ReadChoices { text_field: Some("meta..text".into()), ..Default::default() };
/// assert!(bad.settings().unwrap_err().starts_with("--text-field"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ReadChoices {
    /// `auto` (the default), `vertical`, `jsonl`, `parquet` or `wet`.
    pub input_format: Option<String>,
    /// The field holding the text (a dotted path reaches nested fields).
    pub text_field: Option<String>,
    pub id_field: Option<String>,
    pub url_field: Option<String>,
    pub title_field: Option<String>,
    /// Leave bad records out of the outputs instead of passing them through.
    pub drop_bad_records: bool,
}

impl ReadChoices {
    /// The settings, checked: a known format, field names without empty parts.
    pub fn settings(&self) -> Result<ReadSettings, String> {
        let choice: FormatChoice = match &self.input_format {
            Some(f) => f.parse()?,
            None => FormatChoice::default(),
        };
        for (flag, f) in [
            ("--text-field", &self.text_field),
            ("--id-field", &self.id_field),
            ("--url-field", &self.url_field),
            ("--title-field", &self.title_field),
        ] {
            if let Some(f) = f.as_deref().filter(|f| f.split('.').any(str::is_empty)) {
                return Err(format!(
                    "{flag} {f:?}: a field name or a dotted path (metadata.url)"
                ));
            }
        }
        let d = JsonlOptions::default();
        let paths = |given: &Option<String>, default: Vec<FieldPath>| match given {
            Some(f) => vec![FieldPath::parse(f)],
            None => default,
        };
        Ok(ReadSettings {
            choice,
            jsonl: Arc::new(JsonlOptions {
                text: self
                    .text_field
                    .as_deref()
                    .map_or(d.text.clone(), FieldPath::parse),
                id: paths(&self.id_field, d.id),
                url: paths(&self.url_field, d.url),
                title: paths(&self.title_field, d.title),
                drop_bad: self.drop_bad_records,
            }),
        })
    }
}

impl ReadSettings {
    /// The format of a file whose decompressed content starts with `head`.
    pub fn resolve(&self, head: &[u8]) -> DocFormat {
        let choice = match self.choice {
            FormatChoice::Auto => sniff(head),
            c => c,
        };
        match choice {
            FormatChoice::Jsonl => DocFormat::Jsonl(self.jsonl.clone()),
            FormatChoice::Parquet => DocFormat::Parquet(self.jsonl.clone()),
            FormatChoice::Wet => DocFormat::Wet {
                drop_bad: self.jsonl.drop_bad,
            },
            _ => DocFormat::Vertical,
        }
    }

    /// Settings that change keys or outputs, one `name=value` a line, empty for
    /// the defaults (so records of runs made before formats existed still match).
    pub fn describe(&self) -> String {
        if *self == ReadSettings::default() {
            return String::new();
        }
        format!("input-format={}\n{}", self.choice, self.jsonl.describe())
    }
}

/// The format a decompressed stream's first bytes suggest: [`sniff_known`]'s,
/// else vertical, the historical default.
pub fn sniff(head: &[u8]) -> FormatChoice {
    sniff_known(head).unwrap_or(FormatChoice::Vertical)
}

/// The format a decompressed stream's first bytes name: `PAR1` Parquet, `WARC/`
/// followed by a digit WET, `{` JSON Lines, `<` vertical; `None` for anything else
/// (`simhash` then looks for its fingerprint files and plain lines). Leading
/// whitespace and a UTF-8 byte order mark are skipped (not before the binary
/// magics).
pub fn sniff_known(head: &[u8]) -> Option<FormatChoice> {
    if head.starts_with(parquet::MAGIC) {
        return Some(FormatChoice::Parquet);
    }
    if head.starts_with(b"WARC/") && head.get(5).is_some_and(u8::is_ascii_digit) {
        return Some(FormatChoice::Wet);
    }
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Some(FormatChoice::Jsonl),
        Some(b'<') => Some(FormatChoice::Vertical),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing() {
        assert_eq!(sniff(b"\n  {\"text\":1}"), FormatChoice::Jsonl);
        assert_eq!(sniff(b"\xef\xbb\xbf{}"), FormatChoice::Jsonl);
        assert_eq!(sniff(b"<doc id=\"1\">"), FormatChoice::Vertical);
        assert_eq!(sniff(b""), FormatChoice::Vertical);
        assert_eq!(sniff(b"word\n"), FormatChoice::Vertical);
        assert_eq!(sniff(b"PAR1\x15\x04"), FormatChoice::Parquet);
        assert_eq!(sniff(b"WARC/1.0\r\n"), FormatChoice::Wet);
        assert_eq!(sniff(b"WARC/x"), FormatChoice::Vertical);
        assert_eq!(
            sniff_known(b"\xef\xbb\xbf <doc>"),
            Some(FormatChoice::Vertical)
        );
        assert_eq!(sniff_known(b"word\n"), None);
        assert_eq!(sniff_known(b""), None);
        let s = ReadSettings::default();
        assert_eq!(s.resolve(b"{"), DocFormat::Jsonl(s.jsonl.clone()));
        let v = ReadSettings {
            choice: FormatChoice::Vertical,
            ..Default::default()
        };
        assert_eq!(v.resolve(b"{"), DocFormat::Vertical);
        assert_eq!(s.describe(), "");
        assert!(v.describe().starts_with("input-format=vertical\n"));
    }
}
