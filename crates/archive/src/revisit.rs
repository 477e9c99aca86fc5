//! The revisit records `warc dedup` writes: a response replaced by a revisit of its
//! first capture ([`revisit_record`]), and a revisit of the inputs pointed at
//! another original ([`retargeted_revisit`]).

use std::io::{self, Write};

use webdedup_formats::warc::Record;
use webdedup_formats::warc_out::{sha1_base32, write_record};

use crate::locations::Location;

/// The WARC fields that name a revisit's original.
const REFERS_TO: [&str; 3] = [
    "WARC-Refers-To",
    "WARC-Refers-To-Target-URI",
    "WARC-Refers-To-Date",
];

/// The WARC/1.1 revisit record that replaces `rec`, pointing at `first`.
pub fn revisit_record(rec: &Record, first: &Location) -> Vec<u8> {
    let http = rec.http_header_bytes().unwrap_or(b"");
    let mut fields: Vec<(&str, String)> = vec![("WARC-Type", "revisit".into())];
    for name in [
        "WARC-Record-ID",
        "WARC-Date",
        "WARC-Target-URI",
        "WARC-IP-Address",
        "WARC-Warcinfo-ID",
        "WARC-Concurrent-To",
    ] {
        for (k, v) in &rec.fields {
            if k.eq_ignore_ascii_case(name) {
                fields.push((name, v.clone()));
            }
        }
    }
    fields.push((
        "WARC-Profile",
        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest".into(),
    ));
    for f in refers_to(first) {
        fields.push(f);
    }
    fields.push((
        "WARC-Payload-Digest",
        rec.payload_digest().unwrap_or_default(),
    ));
    fields.push(("WARC-Block-Digest", sha1_base32(http)));
    fields.push(("WARC-Truncated", "length".into()));
    fields.push((
        "Content-Type",
        rec.header("Content-Type")
            .unwrap_or("application/http; msgtype=response")
            .to_string(),
    ));
    let mut out = Vec::with_capacity(http.len() + 1024);
    write_record(&mut out, "WARC/1.1", &fields, http);
    out
}

/// The revisit `rec` (of the inputs, its whole block in `block_prefix`) naming
/// `first` as its original instead: its `WARC-Refers-To*` fields replaced (or
/// added), everything else as it was (version, fields in order, block).
pub fn retargeted_revisit(rec: &Record, first: &Location) -> Vec<u8> {
    let version = rec
        .header
        .split(|&b| b == b'\n')
        .next()
        .map(|l| String::from_utf8_lossy(l).trim().to_string())
        .unwrap_or_else(|| "WARC/1.0".into());
    let mut fields: Vec<(&str, String)> = Vec::with_capacity(rec.fields.len() + 3);
    let mut placed = false;
    for (k, v) in &rec.fields {
        if REFERS_TO.iter().any(|n| k.eq_ignore_ascii_case(n)) {
            // The new fields go where the old ones were.
            if !placed {
                for f in refers_to(first) {
                    fields.push(f);
                }
                placed = true;
            }
            continue;
        }
        fields.push((k.as_str(), v.clone()));
    }
    if !placed {
        let at = fields
            .iter()
            .position(|(k, _)| k.eq_ignore_ascii_case("Content-Type"))
            .unwrap_or(fields.len());
        for (i, f) in refers_to(first).into_iter().enumerate() {
            fields.insert(at + i, f);
        }
    }
    let mut out = Vec::with_capacity(rec.block_prefix.len() + rec.header.len() + 256);
    write_record(&mut out, &version, &fields, &rec.block_prefix);
    out
}

/// The fields naming `first` as a revisit's original.
fn refers_to(first: &Location) -> Vec<(&'static str, String)> {
    let mut f = vec![
        (REFERS_TO[1], first.target_uri.clone()),
        (REFERS_TO[2], first.date.clone()),
    ];
    if !first.record_id.is_empty() {
        f.push((REFERS_TO[0], first.record_id.clone()));
    }
    f
}

/// `record`, which replaces `rec`, as it is written in `rec`'s place: one gzip
/// member when `rec` was one (a record of a `.warc.gz`).
pub fn as_stored(rec: &Record, record: Vec<u8>) -> io::Result<Vec<u8>> {
    if rec.gzip {
        gzip_member(&record)
    } else {
        Ok(record)
    }
}

/// `bytes` as one gzip member (a record of a `.warc.gz`).
fn gzip_member(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 2),
        flate2::Compression::default(),
    );
    e.write_all(bytes)?;
    e.finish()
}
