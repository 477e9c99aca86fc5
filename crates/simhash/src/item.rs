//! What the readers of [`crate::input`] and [`crate::fingerprints`] hand on: one
//! item of an input file at a time.

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
