//! What `warc dedup` remembers about captures, within a run and across runs
//! (`--locations FILE`):
//!
//! * the first capture of every key (payload, or URL and payload): where it is, so
//!   that a later duplicate's revisit can name it;
//! * the names of the records it replaced by revisits, so that a revisit of the
//!   inputs naming one of them can be retargeted to the first capture;
//! * the names that revisits of the inputs refer to, so that a record one of them
//!   names is never replaced.
//!
//! A record's *names* ([`capture_names`]) are the ways a revisit can refer to it:
//! its record ID (`WARC-Refers-To`), its URI and date (`WARC-Refers-To-Target-URI`
//! and `-Date`), and its URI and payload digest (how pywb finds the original of a
//! revisit: a response at that URI with that digest, the closest in time). They are
//! kept as 64-bit hashes.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use anyhow::Context;
use webdedup_formats::cdx::normalize_digest;
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_store::Store;
use webdedup_text::keys::{key, KeyKind};

use crate::surt::url_key;
use crate::util::Report;

/// Where the first capture of a payload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub record_id: String,
    pub target_uri: String,
    pub date: String,
    pub digest: String,
    pub file: String,
    pub offset: u64,
}

/// The names of a capture, or of the capture a revisit refers to (see the module
/// docs). Empty parts give no name: no record ID, no date, no usable digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    pub id: Option<u64>,
    pub uri_date: Option<u64>,
    pub uri_digest: Option<u64>,
}

impl Names {
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        [self.id, self.uri_date, self.uri_digest]
            .into_iter()
            .flatten()
    }
}

/// The [`Names`] of the capture `record_id` of `uri` at `date` (WARC-Date form)
/// with payload `digest` (`sha1:BASE32` or any label).
pub fn capture_names(record_id: &str, uri: &str, date: &str, digest: &str) -> Names {
    // A name space of its own inside the url+digest key kind: these hashes never
    // go to a store, and are saved in locations files.
    let hash = |parts: &[&[u8]]| {
        let mut b = Vec::with_capacity(128);
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                b.push(0);
            }
            b.extend_from_slice(p);
        }
        key(KeyKind::UrlDigest, &b)
    };
    let record_id = record_id.trim();
    let id = (!record_id.is_empty()).then(|| hash(&[b"ref-id", record_id.as_bytes()]));
    let (mut uri_date, mut uri_digest) = (None, None);
    if !uri.is_empty() {
        let surt = url_key(uri);
        let ts: String = date.chars().filter(char::is_ascii_digit).take(14).collect();
        if !ts.is_empty() {
            uri_date = Some(hash(&[b"ref-uri-date", surt.as_bytes(), ts.as_bytes()]));
        }
        let mut d = Vec::new();
        if normalize_digest(digest.trim().as_bytes(), &mut d) {
            uri_digest = Some(hash(&[b"ref-uri-digest", surt.as_bytes(), &d]));
        }
    }
    Names {
        id,
        uri_date,
        uri_digest,
    }
}

/// First captures by key, the names of replaced records, the names revisits refer
/// to. Saved as tab-separated lines: `KEY FILE OFFSET RECORD-ID URI DATE DIGEST`
/// for first captures (KEY in hex), `replaced NAME KEY` and `referenced NAME`.
#[derive(Default)]
pub struct Locations {
    map: HashMap<u64, Location>,
    /// Name of a record replaced by a revisit -> the key of its first capture.
    replaced: HashMap<u64, u64>,
    /// Names that revisit records of the inputs refer to, not yet found.
    referenced: HashSet<u64>,
}

impl Locations {
    pub fn get(&self, key: u64) -> Option<&Location> {
        self.map.get(&key)
    }

    pub(crate) fn insert(&mut self, key: u64, loc: Location) {
        self.map.insert(key, loc);
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Notes that the record with `names` was replaced by a revisit of the first
    /// capture of `key`.
    pub(crate) fn note_replaced(&mut self, names: &Names, key: u64) {
        for n in names.iter() {
            self.replaced.insert(n, key);
        }
    }

    /// The key of the first capture that replaced the record `name` names.
    pub(crate) fn replaced_by(&self, name: Option<u64>) -> Option<u64> {
        self.replaced.get(&name?).copied()
    }

    /// Notes names a revisit of the inputs refers to.
    pub(crate) fn note_referenced(&mut self, names: impl Iterator<Item = u64>) {
        self.referenced.extend(names);
    }

    /// Whether a revisit of the inputs refers to the capture with `names`; the
    /// names found are done with (the capture stays in the outputs as it is).
    pub(crate) fn take_referenced(&mut self, names: &Names) -> bool {
        let mut found = false;
        for n in names.iter() {
            found |= self.referenced.remove(&n);
        }
        found
    }

    /// Loads a locations file, inserting its keys into `store` too. Bad lines are
    /// reported.
    pub fn load(path: &Path, store: &dyn Store, report: &mut Report) -> anyhow::Result<Locations> {
        let mut loc = Locations::default();
        let f = File::open(path)
            .with_context(|| format!("cannot open locations file {}", path.display()))?;
        let mut keys = Vec::new();
        let hex = |s: &str| u64::from_str_radix(s, 16).ok();
        for (i, line) in BufReader::new(f).lines().enumerate() {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            let f: Vec<&str> = line.split('\t').collect();
            let ok = match f[..] {
                ["replaced", name, key] => match (hex(name), hex(key)) {
                    (Some(n), Some(k)) => {
                        loc.replaced.insert(n, k);
                        true
                    }
                    _ => false,
                },
                ["referenced", name] => hex(name).map(|n| loc.referenced.insert(n)).is_some(),
                [key, file, offset, record_id, target_uri, date, digest] => {
                    match (hex(key), offset.parse::<u64>()) {
                        (Some(key), Ok(offset)) => {
                            keys.push(key);
                            loc.map.insert(
                                key,
                                Location {
                                    file: file.into(),
                                    offset,
                                    record_id: record_id.into(),
                                    target_uri: target_uri.into(),
                                    date: date.into(),
                                    digest: digest.into(),
                                },
                            );
                            true
                        }
                        _ => false,
                    }
                }
                _ => false,
            };
            if !ok {
                report.bad(
                    format_args!("{}:{}", path.display(), i + 1),
                    "bad locations line; skipped",
                );
            }
        }
        let mut seen = Vec::new();
        for chunk in keys.chunks(8192) {
            store.test_and_insert(chunk, &mut seen)?;
        }
        Ok(loc)
    }

    /// Writes everything to `path` (atomically), sorted, so the same state gives the
    /// same file.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let mut out = AtomicOutput::create(path, OutputCompression::None)?;
        let mut buf = Vec::with_capacity(1 << 16);
        let mut keys: Vec<&u64> = self.map.keys().collect();
        keys.sort();
        for k in keys {
            let l = &self.map[k];
            writeln!(
                buf,
                "{k:016x}\t{}\t{}\t{}\t{}\t{}\t{}",
                l.file, l.offset, l.record_id, l.target_uri, l.date, l.digest
            )?;
            flush_full(&mut buf, &mut out)?;
        }
        let mut replaced: Vec<(&u64, &u64)> = self.replaced.iter().collect();
        replaced.sort();
        for (name, key) in replaced {
            writeln!(buf, "replaced\t{name:016x}\t{key:016x}")?;
            flush_full(&mut buf, &mut out)?;
        }
        let mut referenced: Vec<&u64> = self.referenced.iter().collect();
        referenced.sort();
        for name in referenced {
            writeln!(buf, "referenced\t{name:016x}")?;
            flush_full(&mut buf, &mut out)?;
        }
        out.write_all(&buf)?;
        out.finish(true)?;
        Ok(())
    }
}

fn flush_full(buf: &mut Vec<u8>, out: &mut AtomicOutput) -> std::io::Result<()> {
    if buf.len() > 1 << 16 {
        out.write_all(buf)?;
        buf.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ignore_missing_parts_and_normalize_the_rest() {
        let a = capture_names(
            "<urn:uuid:1>",
            "http://www.Example.com/a",
            "2020-01-02T03:04:05Z",
            "sha1:abcd",
        );
        assert!(a.id.is_some() && a.uri_date.is_some() && a.uri_digest.is_some());
        // SURT-equal URIs, a digest without label in another case, a 14-digit date.
        let b = capture_names("", "http://example.com/a", "20200102030405", "ABCD");
        assert_eq!(
            (b.id, b.uri_date, b.uri_digest),
            (None, a.uri_date, a.uri_digest)
        );
        let c = capture_names("<urn:uuid:1>", "", "", "-");
        assert_eq!((c.id, c.uri_date, c.uri_digest), (a.id, None, None));
    }

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("loc.tsv");
        let mut l = Locations::default();
        l.insert(
            7,
            Location {
                record_id: "<urn:uuid:1>".into(),
                target_uri: "http://a/".into(),
                date: "2020-01-01T00:00:00Z".into(),
                digest: "sha1:AAAA".into(),
                file: "a.warc.gz".into(),
                offset: 12,
            },
        );
        let names = capture_names("<urn:uuid:2>", "http://b/", "2020", "sha1:AAAA");
        l.note_replaced(&names, 7);
        l.note_referenced([1u64, 2].into_iter());
        l.save(&p).unwrap();
        let store = webdedup_store::MemStore::default();
        let mut report = Report::collecting();
        let m = Locations::load(&p, &store, &mut report).unwrap();
        assert_eq!(report.problems(), 0, "{:?}", report.kept());
        assert_eq!(m.get(7), l.get(7));
        assert_eq!(m.replaced, l.replaced);
        assert_eq!(m.referenced, l.referenced);
        m.save(&dir.path().join("again.tsv")).unwrap();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            std::fs::read(dir.path().join("again.tsv")).unwrap()
        );
    }
}
