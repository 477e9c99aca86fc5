//! ARC (Internet Archive's format before WARC) record header lines.
//!
//! An ARC file is a sequence of records, each a header line followed by `length`
//! bytes and a newline. Version 1 header lines have five fields,
//! `URL IP-address Archive-date Content-type Archive-length`; version 2 lines have
//! ten (`URL IP date mime status checksum location offset filename length`). The
//! first record is the `filedesc://` version block. Records are read by
//! [`crate::warc::ArchiveReader`], which presents them as WARC `response` records
//! (`warcinfo` for the version block), as warcio's `arc2warc` does.

use webdedup_text::shown::escape_controls;

/// A parsed ARC header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArcHeader {
    pub url: String,
    pub ip: String,
    /// The archive date, at most 14 digits (longer dates are cut, as warcio does).
    pub date: String,
    pub mime: String,
    pub length: u64,
    /// Something wrong but recoverable in the line (a bad length read as 0).
    pub warning: Option<String>,
}

/// Parses an ARC header line (without its newline).
pub fn parse_header(line: &[u8]) -> Result<ArcHeader, String> {
    let text = std::str::from_utf8(line).map_err(|_| "ARC header line is not UTF-8".to_string())?;
    let text = text.trim_end_matches(['\r', '\n']);
    let fields: Vec<&str> = text.split(' ').filter(|f| !f.is_empty()).collect();
    if fields.len() != 5 && fields.len() != 10 {
        return Err(format!(
            "ARC header line has {} fields (expected 5 or 10)",
            fields.len()
        ));
    }
    let date = fields[2];
    if date.len() < 12 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "ARC header: bad archive date '{}'",
            escape_controls(date)
        ));
    }
    let len_field = fields[fields.len() - 1];
    // warcio reads a length that is not a number (`-1`, `abc`) as 0: so do we, with a
    // warning.
    let (length, warning) = match len_field.parse::<u64>() {
        Ok(n) => (n, None),
        Err(_) => (
            0,
            Some(format!(
                "ARC header: bad archive length '{}', read as 0",
                escape_controls(len_field)
            )),
        ),
    };
    Ok(ArcHeader {
        warning,
        url: fields[0].to_string(),
        ip: fields[1].to_string(),
        date: date[..date.len().min(14)].to_string(),
        mime: fields[3].to_string(),
        length,
    })
}

/// Whether a line could be an ARC header line (used to find the next record after
/// garbage).
pub fn looks_like_header(line: &[u8]) -> bool {
    parse_header(line).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_lines() {
        let h = parse_header(b"http://example.com/ 93.184.216.119 20140216050221 text/html 1591\n")
            .unwrap();
        assert_eq!(h.url, "http://example.com/");
        assert_eq!(h.date, "20140216050221");
        assert_eq!(h.length, 1591);
        let h = parse_header(b"http://a/ 1.2.3.4 201404010000000000 text/html 200 - - 0 f.arc 7")
            .unwrap();
        assert_eq!(h.date, "20140401000000");
        assert_eq!(h.length, 7);
    }

    #[test]
    fn bad_lines() {
        let h = parse_header(b"http://example.com/ 1.2.3.4 20140401000000 text/html -1").unwrap();
        assert_eq!((h.length, h.warning.is_some()), (0, true));
        let h = parse_header(b"http://example.com/ 1.2.3.4 20140401000000 text/html abc").unwrap();
        assert_eq!((h.length, h.warning.is_some()), (0, true));
        assert!(parse_header(b"1 0 Bad Capture").is_err());
        assert!(parse_header(b"http://a/ 1.2.3.4 2014xx text/html 5").is_err());
    }
}
