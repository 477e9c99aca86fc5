//! Opening input files whatever their compression.
//!
//! The compression is detected from the first bytes, not the file name: gzip
//! (`1f 8b`, multi-member streams read to the end) and zstd (`28 b5 2f fd`, multi-frame
//! streams too). Anything else is read as is.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// Detects the compression of a stream from its first bytes.
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// The usual file-name suffix of this compression (with its dot), if any.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Zstd => ".zst",
        }
    }
}

/// File-name suffixes that name a compression; they are removed from output names.
pub const COMPRESSION_SUFFIXES: &[&str] = &[".gz", ".zst", ".zstd"];

/// Opens `path` for reading, decompressing on the fly. Returns the reader and the
/// detected compression.
pub fn open_input(path: &Path) -> io::Result<(Box<dyn Read + Send>, Compression)> {
    let file = File::open(path)?;
    decode(BufReader::with_capacity(1 << 16, file))
}

/// Wraps an already open stream in the decoder its first bytes call for.
pub fn decode<R: BufRead + Send + 'static>(mut r: R) -> io::Result<(Box<dyn Read + Send>, Compression)> {
    let head = r.fill_buf()?;
    let c = Compression::sniff(head);
    let reader: Box<dyn Read + Send> = match c {
        Compression::None => Box::new(r),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(r)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(r)?),
    };
    Ok((reader, c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(bytes: Vec<u8>) -> (Vec<u8>, Compression) {
        let (mut r, c) = decode(io::Cursor::new(bytes)).unwrap();
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        (out, c)
    }

    #[test]
    fn detects_by_magic_not_name() {
        let text = b"<doc>\nhello\n</doc>\n".to_vec();
        assert_eq!(read_all(text.clone()), (text.clone(), Compression::None));

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let mut two_members = gz.finish().unwrap();
        two_members.extend(two_members.clone());
        let (out, c) = read_all(two_members);
        assert_eq!(c, Compression::Gzip);
        assert_eq!(out, [text.clone(), text.clone()].concat());

        let zst = zstd::encode_all(&text[..], 1).unwrap();
        assert_eq!(read_all(zst), (text, Compression::Zstd));
    }

    #[test]
    fn truncated_zstd_is_an_error_not_a_panic() {
        let text = vec![b'x'; 100_000];
        let zst = zstd::encode_all(&text[..], 1).unwrap();
        let (mut r, _) = decode(io::Cursor::new(zst[..zst.len() / 2].to_vec())).unwrap();
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err());
    }
}
