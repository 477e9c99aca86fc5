//! WARC records written (revisit records, WET records written back), and the
//! SHA-1 payload digests they and CDX indexes carry (`sha1:BASE32`).

use sha1::{Digest, Sha1};

/// RFC 4648 base32 (upper case, no padding needed for 20-byte SHA-1 digests).
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut buffer: u64 = 0;
    let mut bits = 0;
    for &b in bytes {
        buffer = (buffer << 8) | b as u64;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    while out.len() & 7 != 0 {
        out.push('=');
    }
    out
}

/// Writes a WARC record: `version` line, `fields`, computed Content-Length, blank
/// line, `block`, two CRLFs.
pub fn write_record(out: &mut Vec<u8>, version: &str, fields: &[(&str, String)], block: &[u8]) {
    out.extend_from_slice(version.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (k, v) in fields {
        if k.eq_ignore_ascii_case("Content-Length") {
            continue;
        }
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", block.len()).as_bytes());
    out.extend_from_slice(block);
    out.extend_from_slice(b"\r\n\r\n");
}

/// The SHA-1 of `bytes` as `sha1:BASE32`.
pub fn sha1_base32(bytes: &[u8]) -> String {
    format!("sha1:{}", base32(&Sha1::digest(bytes)))
}
