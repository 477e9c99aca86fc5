//! What the readers of [`crate::input`] and [`crate::fingerprints`] hand on: one
//! item of an input file at a time, and the one way they cut lines.

use webdedup_formats::texts::Text;

/// One item of an input file, in order. The `raw` bytes of all items of a file,
/// concatenated, are the file's (decompressed) bytes: dedup writes them back as read.
pub enum Item<'a> {
    /// A document to fingerprint.
    Doc {
        id: String,
        text: &'a str,
        line: u64,
        raw: &'a [u8],
    },
    /// A fingerprint read from a fingerprint file.
    Fingerprint {
        id: String,
        fp: u64,
        line: u64,
        raw: &'a [u8],
    },
    /// Anything else (structure between documents, skipped bad records, headers).
    Other { raw: &'a [u8] },
}

/// A document of the one reader, or what lies between documents.
impl<'a> From<Text<'a>> for Item<'a> {
    fn from(t: Text<'a>) -> Self {
        match t {
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
        }
    }
}

/// A line without its line end (`\n` or `\r\n`): what every reader here parses,
/// while the line with its end is an item's `raw`.
pub(crate) fn line_content(line: &[u8]) -> &[u8] {
    let content = line.strip_suffix(b"\n").unwrap_or(line);
    content.strip_suffix(b"\r").unwrap_or(content)
}

/// The lines of `b` (each with its `\n`, the last maybe without) and their
/// contents (without `\n` or `\r\n`).
pub(crate) fn lines_of(b: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at == b.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i + 1);
        let line = &b[at..end];
        at = end;
        Some((line, line_content(line)))
    })
}
