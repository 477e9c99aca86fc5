//! Fingerprint files (what `webdedup simhash` writes in TSV): their
//! `# webdedup-simhash` headers and their `ID TAB HEX` lines, parsed in parallel
//! blocks and handed on in order as [`Item`]s.

use crate::core::parse_hex;
use crate::item::{line_content, lines_of, Item};
use crate::tokenize::Settings;
use std::io::{self, BufRead};
use std::path::Path;
use webdedup_formats::problems::Problems;

/// The first line of a TSV fingerprint file: `# webdedup-simhash v1 ` + settings.
pub const FP_HEADER_PREFIX: &str = "# webdedup-simhash v1 ";

/// What every fingerprint header starts with, whatever its version: a file that starts
/// so is a fingerprint file even when this version cannot read its header (it is then
/// refused, never read as text lines).
pub const FP_HEADER_MAGIC: &str = "# webdedup-simhash";

/// A `# webdedup-simhash` header line of a fingerprint file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FpHeader {
    /// A v1 header naming settings this version computes.
    Known(Settings),
    /// A header this version cannot vouch for: another format version, an unknown
    /// tokenizer or feature hash, missing settings. Its fingerprints cannot be
    /// compared with any this version makes.
    Unknown {
        /// The header without the `# webdedup-simhash` magic (e.g. `v2 tokenizer=...`).
        text: String,
        /// Why it is not readable.
        reason: String,
    },
}

impl FpHeader {
    /// Reads a header line (without its line end); `None` if it is no header.
    pub fn parse(line: &[u8]) -> Option<FpHeader> {
        let rest = line.strip_prefix(FP_HEADER_MAGIC.as_bytes())?;
        if !(rest.is_empty() || rest[0] == b' ' || rest[0] == b'\t') {
            return None; // `# webdedup-simhashes ...`: a comment
        }
        let text = String::from_utf8_lossy(rest).trim().to_string();
        let unknown = |reason: String| FpHeader::Unknown {
            text: text.clone(),
            reason,
        };
        let mut words = text.splitn(2, char::is_whitespace);
        Some(match (words.next(), words.next()) {
            (Some("v1"), Some(settings)) => match Settings::parse(settings) {
                Ok(s) => FpHeader::Known(s),
                Err(e) => unknown(e),
            },
            (Some("v1"), None) => unknown("no settings".into()),
            (Some(v), _) if !v.is_empty() => {
                unknown(format!("format version '{v}', this version reads v1"))
            }
            _ => unknown("no format version".into()),
        })
    }
}

/// Whether a file whose decompressed content starts with `head` is a fingerprint
/// file: its first line (after blank space) a `# webdedup-simhash` header of any
/// version, or `ID TAB 16-hex-digits`.
pub fn sniff_fingerprints(head: &[u8]) -> bool {
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    let head = &head[start.unwrap_or(head.len())..];
    let first = head.split(|&b| b == b'\n').next().unwrap_or(b"");
    matches!(
        FpLine::parse(line_content(first)),
        FpLine::Header(_) | FpLine::Fingerprint { .. }
    )
}

/// One line of a fingerprint file, parsed.
enum FpLine {
    /// Empty, or a `#` comment that is no header.
    Other,
    Header(FpHeader),
    Fingerprint {
        id: String,
        fp: u64,
    },
    BadId,
    BadFingerprint,
}

impl FpLine {
    /// Parses one line (without its line end).
    fn parse(content: &[u8]) -> FpLine {
        if content.is_empty() {
            return FpLine::Other;
        }
        if content.starts_with(b"#") {
            // Headers are judged by the caller (`similar` refuses unknown or
            // mismatched ones as fatal), so they are collected, not reported.
            return FpHeader::parse(content).map_or(FpLine::Other, FpLine::Header);
        }
        let mut cols = content.split(|&b| b == b'\t');
        let id = cols.next().unwrap_or(b"");
        let hex = cols
            .next()
            .and_then(|c| std::str::from_utf8(c).ok())
            .and_then(parse_hex);
        match (std::str::from_utf8(id), hex) {
            (Ok(id), Some(fp)) => FpLine::Fingerprint {
                id: id.to_string(),
                fp,
            },
            (Err(_), _) => FpLine::BadId,
            (_, None) => FpLine::BadFingerprint,
        }
    }
}

/// Bytes of whole lines read per block of a fingerprint file.
pub(crate) const FP_BLOCK: usize = 1 << 20;

/// Reads a fingerprint file: blocks of whole lines, a window of them parsed in
/// parallel on the current rayon pool (a large `similar` run is mostly this parse),
/// then handed on line by line in order, so that items, problems and line numbers
/// are the same as a sequential read gives.
pub(crate) fn read_fingerprints(
    path: &Path,
    r: &mut impl BufRead,
    problems: &Problems,
    headers: &mut Vec<(u64, FpHeader)>,
    f: &mut impl FnMut(Item<'_>),
) -> io::Result<()> {
    use rayon::prelude::*;
    let window = 4 * rayon::current_num_threads().max(1);
    let mut lineno = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    let mut eof = false;
    let mut error = None;
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    // Emptied blocks, reused (fresh megabyte buffers cost a page fault per page).
    let mut spare: Vec<Vec<u8>> = Vec::new();
    while !eof {
        spare.append(&mut blocks);
        while blocks.len() < window && !eof {
            let mut b = spare.pop().unwrap_or_default();
            b.clear();
            b.append(&mut carry);
            // Fill to at least a block, then cut after the last line end (a line
            // longer than a block makes the block longer).
            loop {
                let want = b.len().max(FP_BLOCK) + FP_BLOCK / 4;
                let filled = b.len();
                b.resize(want, 0);
                let n = loop {
                    match r.read(&mut b[filled..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            // The whole lines before the error are still handed on
                            // (the unfinished one is not), as a sequential read does.
                            b.truncate(filled);
                            b.truncate(memchr::memrchr(b'\n', &b).map_or(0, |i| i + 1));
                            error = Some(e);
                            break 0;
                        }
                    }
                };
                b.truncate(filled + n);
                if n == 0 {
                    eof = true;
                    break;
                }
                if b.len() >= FP_BLOCK {
                    if let Some(i) = memchr::memrchr(b'\n', &b) {
                        carry.extend_from_slice(&b[i + 1..]);
                        b.truncate(i + 1);
                        break;
                    }
                }
            }
            if !b.is_empty() {
                blocks.push(b);
            }
        }
        let parsed: Vec<Vec<FpLine>> = blocks
            .par_iter()
            .map(|b| {
                lines_of(b)
                    .map(|(_, content)| FpLine::parse(content))
                    .collect()
            })
            .collect();
        for (b, parsed) in blocks.iter().zip(parsed) {
            for ((line, _), p) in lines_of(b).zip(parsed) {
                lineno += 1;
                match p {
                    FpLine::Other => f(Item::Other { raw: line }),
                    FpLine::Header(h) => {
                        headers.push((lineno, h));
                        f(Item::Other { raw: line });
                    }
                    FpLine::Fingerprint { id, fp } => f(Item::Fingerprint {
                        id,
                        fp,
                        line: lineno,
                        raw: line,
                    }),
                    FpLine::BadId => {
                        problems.report(path, Some(lineno), "invalid UTF-8 in id (skipped)");
                        f(Item::Other { raw: line });
                    }
                    FpLine::BadFingerprint => {
                        problems.report(
                            path,
                            Some(lineno),
                            "expected ID TAB 16-hex-digit fingerprint (skipped)",
                        );
                        f(Item::Other { raw: line });
                    }
                }
            }
        }
    }
    error.map_or(Ok(()), Err)
}
