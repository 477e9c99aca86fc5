//! What the readers of [`crate::input`] and [`crate::fingerprints`] hand on: one
//! item of an input file at a time, and the one way they cut a line's end off.

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

/// A line without its line end (`\n` or `\r\n`): what every reader here parses,
/// while the line with its end is an item's `raw`.
pub(crate) fn line_content(line: &[u8]) -> &[u8] {
    let content = line.strip_suffix(b"\n").unwrap_or(line);
    content.strip_suffix(b"\r").unwrap_or(content)
}
