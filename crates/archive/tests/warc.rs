//! End-to-end tests of `warc index` and `warc dedup` through `run_warc`, on WARC
//! files written by the tests themselves.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use webdedup_archive::{
    run_warc, DedupBy, IndexFormat, WarcCommand, WarcDedupOptions, WarcIndexOptions,
};
use webdedup_formats::cdx::{CdxItem, CdxReader};
use webdedup_formats::warc::{ArchiveReader, DigestMode, Item, ReadOptions, Record};
use webdedup_formats::warc_out::{sha1_base32, write_record};

struct Rec {
    kind: &'static str,
    uri: String,
    id: String,
    date: String,
    payload: String,
    /// Write a WARC-Payload-Digest header (else readers compute it).
    digest_header: bool,
}

fn resp(n: u32, uri: &str, payload: &str) -> Rec {
    Rec {
        kind: "response",
        uri: uri.into(),
        id: format!("<urn:uuid:00000000-0000-0000-0000-{n:012}>"),
        date: format!("2024-01-01T00:00:{:02}Z", n % 60),
        payload: payload.into(),
        digest_header: n & 1 == 0,
    }
}

fn record_bytes(r: &Rec) -> Vec<u8> {
    let mut out = Vec::new();
    let mut fields: Vec<(&str, String)> = vec![
        ("WARC-Type", r.kind.into()),
        ("WARC-Record-ID", r.id.clone()),
        ("WARC-Date", r.date.clone()),
        ("WARC-Target-URI", r.uri.clone()),
    ];
    let block = if r.kind == "response" {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-N: {}\r\n\r\n{}",
            r.id, r.payload
        )
    } else {
        r.payload.clone()
    };
    if r.kind == "response" {
        fields.push(("Content-Type", "application/http; msgtype=response".into()));
        if r.digest_header {
            fields.push(("WARC-Payload-Digest", sha1_base32(r.payload.as_bytes())));
        }
    } else {
        fields.push(("Content-Type", "application/http; msgtype=request".into()));
    }
    write_record(&mut out, "WARC/1.0", &fields, block.as_bytes());
    out
}

fn write_warc(path: &Path, recs: &[Rec], gzip: bool) {
    let mut out = Vec::new();
    for r in recs {
        let b = record_bytes(r);
        if gzip {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&b).unwrap();
            out.extend(e.finish().unwrap());
        } else {
            out.extend(b);
        }
    }
    fs::write(path, out).unwrap();
}

fn read_records(path: &Path) -> (Vec<Record>, usize) {
    let mut r = ArchiveReader::open(
        path,
        ReadOptions {
            digest: DigestMode::Always,
        },
    )
    .unwrap();
    let mut recs = Vec::new();
    let mut problems = 0;
    while let Some(it) = r.next_item() {
        match it {
            Item::Record(rec) => recs.push(*rec),
            Item::Problem { .. } => problems += 1,
        }
    }
    (recs, problems)
}

fn crawls(dir: &Path, gzip: bool) -> (PathBuf, PathBuf) {
    let ext = if gzip { "warc.gz" } else { "warc" };
    let c1 = dir.join(format!("crawl1.{ext}"));
    let c2 = dir.join(format!("crawl2.{ext}"));
    // Incompressible payloads, so that revisits save bytes in gzip files too (a
    // revisit is only written when it is smaller than the record).
    let payload_b = big_payload(98);
    let mut x: u64 = 99;
    let big: String = (0..5000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (b'a' + (x >> 59) as u8 % 26) as char
        })
        .collect();
    write_warc(
        &c1,
        &[
            resp(1, "http://a.org/", &big),
            Rec {
                kind: "request",
                payload: "GET / HTTP/1.1\r\n\r\n".into(),
                ..resp(2, "http://a.org/", "")
            },
            resp(3, "http://b.org/", &payload_b),
            resp(4, "http://a.org/copy", &big), // same payload, other URL, same file
        ],
        gzip,
    );
    write_warc(
        &c2,
        &[
            resp(11, "http://a.org/", &big),        // same URL + payload as 1
            resp(12, "http://c.org/", &payload_b),  // payload of 3, other URL
            resp(13, "http://d.org/", "brand new"), // new
        ],
        gzip,
    );
    (c1, c2)
}

fn dedup(inputs: Vec<PathBuf>, out: &Path, by: DedupBy, locations: Option<PathBuf>) -> i32 {
    run_warc(&WarcCommand::Dedup(WarcDedupOptions {
        inputs,
        output: out.to_owned(),
        by,
        locations,
    }))
    .unwrap()
}

/// Every input record is in the output, as itself (same bytes) or as a revisit whose
/// WARC-Refers-To names a response present in the outputs.
fn check_nothing_lost(inputs: &[PathBuf], outputs: &[PathBuf]) -> Vec<(String, String)> {
    let mut ids = std::collections::HashMap::new();
    let mut revisits = Vec::new();
    for (i, o) in inputs.iter().zip(outputs) {
        let (ins, p1) = read_records(i);
        let (outs, p2) = read_records(o);
        assert_eq!((p1, p2), (0, 0));
        assert_eq!(ins.len(), outs.len(), "record count of {}", o.display());
        for (a, b) in ins.iter().zip(&outs) {
            assert_eq!(a.header("WARC-Record-ID"), b.header("WARC-Record-ID"));
            assert_eq!(a.target_uri(), b.target_uri());
            assert_eq!(a.header("WARC-Date"), b.header("WARC-Date"));
            if b.rec_type() == "revisit" {
                assert_eq!(
                    b.header("WARC-Payload-Digest").map(str::to_string),
                    a.payload_digest()
                );
                assert_eq!(
                    b.http_header_bytes(),
                    a.http_header_bytes(),
                    "HTTP headers kept"
                );
                assert_eq!(
                    b.header("WARC-Profile"),
                    Some("http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
                );
                revisits.push((
                    b.target_uri().to_string(),
                    b.header("WARC-Refers-To").unwrap().to_string(),
                ));
            } else {
                assert_eq!(a.header, b.header);
                assert_eq!(a.block_prefix, b.block_prefix);
                ids.insert(b.header("WARC-Record-ID").unwrap().to_string(), b.clone());
            }
        }
    }
    for (uri, target) in &revisits {
        let t = ids
            .get(target)
            .unwrap_or_else(|| panic!("revisit of {uri} refers to missing {target}"));
        assert_eq!(t.rec_type(), "response");
    }
    revisits
}

#[test]
fn dedup_by_digest_across_files_gzip_and_plain() {
    for gzip in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (c1, c2) = crawls(dir.path(), gzip);
        let out = dir.path().join("out");
        assert_eq!(
            dedup(vec![c1.clone(), c2.clone()], &out, DedupBy::Digest, None),
            0
        );
        let outs = [
            out.join(c1.file_name().unwrap()),
            out.join(c2.file_name().unwrap()),
        ];
        let revisits = check_nothing_lost(&[c1.clone(), c2.clone()], &outs);
        let id = |n: u32| resp(n, "", "").id;
        assert_eq!(
            revisits,
            [
                ("http://a.org/copy".to_string(), id(1)),
                ("http://a.org/".to_string(), id(1)),
                ("http://c.org/".to_string(), id(3)),
            ]
        );
        assert!(fs::metadata(&outs[1]).unwrap().len() < fs::metadata(&c2).unwrap().len());
        // Untouched bytes are copied byte for byte: crawl 1 up to record 4 is identical.
        let (a, b) = (fs::read(&c1).unwrap(), fs::read(&outs[0]).unwrap());
        let (recs, _) = read_records(&c1);
        let cut = recs[3].offset as usize;
        assert_eq!(a[..cut], b[..cut]);
    }
}

#[test]
fn dedup_by_url_and_digest() {
    let dir = tempfile::tempdir().unwrap();
    let (c1, c2) = crawls(dir.path(), true);
    let out = dir.path().join("out");
    assert_eq!(
        dedup(vec![c1.clone(), c2.clone()], &out, DedupBy::UrlDigest, None),
        0
    );
    let outs = [out.join("crawl1.warc.gz"), out.join("crawl2.warc.gz")];
    let revisits = check_nothing_lost(&[c1, c2], &outs);
    assert_eq!(
        revisits,
        [("http://a.org/".to_string(), resp(1, "", "").id)]
    );
}

#[test]
fn locations_file_lets_a_later_crawl_dedup_against_an_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let (c1, c2) = crawls(dir.path(), true);
    let loc = dir.path().join("locations.tsv");
    let (o1, o2) = (dir.path().join("o1.warc.gz"), dir.path().join("o2.warc.gz"));
    assert_eq!(
        dedup(vec![c1.clone()], &o1, DedupBy::Digest, Some(loc.clone())),
        0
    );
    assert_eq!(
        dedup(vec![c2.clone()], &o2, DedupBy::Digest, Some(loc.clone())),
        0
    );
    let revisits = check_nothing_lost(&[c1, c2], &[o1, o2]);
    assert_eq!(revisits.len(), 3);
    // The locations name the output file and the offset of the first capture there,
    // and the names (ID, URI and date, URI and digest) of the 3 replaced records.
    let text = fs::read_to_string(&loc).unwrap();
    let firsts = text.lines().filter(|l| l.split('\t').count() == 7).count();
    let replaced = text.lines().filter(|l| l.starts_with("replaced\t")).count();
    assert_eq!(
        (firsts, replaced, text.lines().count()),
        (3, 9, 12),
        "{text}"
    );
    assert!(text.contains("\to1.warc.gz\t"), "{text}");
}

#[test]
fn bad_input_is_reported_and_copied_through() {
    let dir = tempfile::tempdir().unwrap();
    let (c1, _) = crawls(dir.path(), false);
    // Garbage between records 3 and 4, and a truncated copy of record 1 at the end.
    let (recs, _) = read_records(&c1);
    let bytes = fs::read(&c1).unwrap();
    let cut = recs[3].offset as usize;
    let mut bad = bytes[..cut].to_vec();
    bad.extend_from_slice(b"GARBAGE LINE\r\n\r\n");
    bad.extend_from_slice(&bytes[cut..]);
    bad.extend_from_slice(&bytes[..200]);
    let input = dir.path().join("bad.warc");
    fs::write(&input, &bad).unwrap();
    let out = dir.path().join("bad.out.warc");
    assert_eq!(dedup(vec![input.clone()], &out, DedupBy::Digest, None), 1);
    // Record 4 duplicates record 1 but follows garbage: it is still found and replaced,
    // and every other byte (garbage, truncated tail) is still there.
    let (outs, problems) = read_records(&out);
    assert!(problems >= 2);
    assert_eq!(outs.iter().filter(|r| r.rec_type() == "revisit").count(), 1);
    let text = fs::read(&out).unwrap();
    assert!(text.windows(12).any(|w| w == b"GARBAGE LINE"));
    assert!(text.ends_with(&bytes[..200]));
}

#[test]
fn index_offsets_point_at_records() {
    let dir = tempfile::tempdir().unwrap();
    let (c1, c2) = crawls(dir.path(), true);
    let idx = dir.path().join("index.cdx");
    let code = run_warc(&WarcCommand::Index(WarcIndexOptions {
        files: vec![c1.clone(), c2],
        format: IndexFormat::Cdx11,
        records: "response,revisit,resource,metadata".into(),
        threads: Some(2),
        output: Some(idx.clone()),
    }))
    .unwrap();
    assert_eq!(code, 0);
    let mut r = CdxReader::new(std::io::BufReader::new(fs::File::open(&idx).unwrap()));
    let mut n = 0;
    let bytes = fs::read(&c1).unwrap();
    while let Some(item) = r.next_line().unwrap() {
        let CdxItem::Record(rec) = item else {
            panic!("bad line in our own index")
        };
        n += 1;
        if &*rec.filename == b"crawl1.warc.gz" {
            let off: usize = std::str::from_utf8(&rec.offset).unwrap().parse().unwrap();
            let len: usize = std::str::from_utf8(&rec.length).unwrap().parse().unwrap();
            // The member at (offset, length) decompresses to a WARC record.
            let mut d = flate2::read::GzDecoder::new(&bytes[off..off + len]);
            let mut s = String::new();
            std::io::Read::read_to_string(&mut d, &mut s).unwrap();
            assert!(s.starts_with("WARC/1.0\r\nWARC-Type: response"));
        }
        assert_eq!(rec.digest.len(), 32, "sha1 base32 without label in CDX");
    }
    assert_eq!(n, 6, "responses only: the request record is not indexed");
    let first = fs::read_to_string(&idx)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(
        first.starts_with("org,a)/ 20240101000001 http://a.org/ text/html 200 "),
        "{first}"
    );
}

/// A response whose WARC-Payload-Digest claims an earlier payload but whose payload
/// differs must be kept (and reported), never replaced by a revisit.
#[test]
fn a_lying_payload_digest_never_makes_a_revisit() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("lie.warc.gz");
    let honest = resp(2, "http://a.org/", "the real payload");
    let mut lie = resp(4, "http://b.org/", "another payload");
    lie.digest_header = false;
    let mut bytes = record_bytes(&honest);
    // Record 4 claims record 2's digest.
    let claimed = sha1_base32(b"the real payload");
    let text = String::from_utf8(record_bytes(&lie)).unwrap();
    let text = text.replacen(
        "Content-Type: application/http",
        &format!("WARC-Payload-Digest: {claimed}\r\nContent-Type: application/http"),
        1,
    );
    bytes.extend_from_slice(text.as_bytes());
    fs::write(&input, &bytes).unwrap();
    let out = dir.path().join("out.warc.gz");
    assert_eq!(dedup(vec![input.clone()], &out, DedupBy::Digest, None), 1);
    assert_eq!(fs::read(&out).unwrap(), bytes, "nothing replaced");
}

#[test]
fn refuses_to_overwrite_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let (c1, _) = crawls(dir.path(), true);
    let before = fs::read(&c1).unwrap();
    // `-o DIR/.` names the input's own directory in another spelling.
    let r = run_warc(&WarcCommand::Dedup(WarcDedupOptions {
        inputs: vec![c1.clone()],
        output: dir.path().join("."),
        by: DedupBy::Digest,
        locations: None,
    }));
    assert!(r.is_err());
    assert_eq!(fs::read(&c1).unwrap(), before);
}

/// `warc index` of every record of `files` into `output`: its exit status.
fn index_all(files: Vec<PathBuf>, format: IndexFormat, threads: usize, output: &Path) -> i32 {
    run_warc(&WarcCommand::Index(WarcIndexOptions {
        files,
        format,
        records: "all".into(),
        threads: Some(threads),
        output: Some(output.to_path_buf()),
    }))
    .unwrap()
}

#[test]
fn index_output_is_the_same_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for f in 0..6u32 {
        let p = dir.path().join(format!("f{f}.warc.gz"));
        let recs: Vec<Rec> = (0..(3 + f * 7))
            .map(|i| {
                resp(
                    f * 100 + i,
                    &format!("http://s{f}.org/{i}"),
                    &format!("p{i}"),
                )
            })
            .collect();
        write_warc(&p, &recs, f % 2 == 0);
        files.push(p);
    }
    files.push(dir.path().join("missing.warc.gz"));
    let mut outputs = Vec::new();
    for threads in [1, 3, 8] {
        let idx = dir.path().join(format!("index-{threads}.cdxj"));
        let code = index_all(files.clone(), IndexFormat::Cdxj, threads, &idx);
        assert_eq!(code, 1, "the missing file is reported");
        outputs.push(fs::read_to_string(&idx).unwrap());
    }
    assert_eq!(
        outputs[0].lines().count(),
        (0..6).map(|f| 3 + f * 7).sum::<usize>()
    );
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
    assert!(outputs[0].starts_with("org,s0)/0 "));
}

/// `dir/whole.warc.gz`: responses for a.org and b.org with these payloads, the
/// whole file one gzip member (written from `dir/p.warc`).
fn whole_file_gzip(dir: &Path, payloads: [&str; 2]) -> PathBuf {
    let plain = dir.join("p.warc");
    let recs = [
        resp(1, "http://a.org/", payloads[0]),
        resp(3, "http://b.org/", payloads[1]),
    ];
    write_warc(&plain, &recs, false);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&fs::read(&plain).unwrap()).unwrap();
    let whole = dir.join("whole.warc.gz");
    fs::write(&whole, e.finish().unwrap()).unwrap();
    whole
}

/// Records sharing one gzip member cannot be replaced: the file is copied unchanged,
/// the layout reported, and the duplicates counted as kept.
#[test]
fn whole_file_gzip_is_copied_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_file_gzip(dir.path(), ["same", "same"]);
    let out = dir.path().join("out.warc.gz");
    assert_eq!(dedup(vec![whole.clone()], &out, DedupBy::Digest, None), 1);
    assert_eq!(fs::read(&out).unwrap(), fs::read(&whole).unwrap());
}

/// Issue 16 W5: records that share a gzip member (whole-file gzip) have no offset and
/// length a replay tool could use: `warc index` writes no line for them (cdxj-indexer
/// writes nothing for such a file either), reports it (exit 1) and still indexes the
/// other files.
#[test]
fn index_writes_no_line_for_records_sharing_a_gzip_member() {
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_file_gzip(dir.path(), ["one", "two"]);
    let good = dir.path().join("good.warc.gz");
    write_warc(&good, &[resp(5, "http://c.org/", "three")], true);
    for format in [IndexFormat::Cdxj, IndexFormat::Cdx11] {
        let idx = dir.path().join("index");
        let code = index_all(vec![whole.clone(), good.clone()], format, 1, &idx);
        assert_eq!(code, 1, "reported");
        let text = fs::read_to_string(&idx).unwrap();
        assert!(!text.contains("whole.warc.gz"), "{text}");
        assert_eq!(text.matches("good.warc.gz").count(), 1, "{text}");
    }
}

/// An incompressible payload (so that revisits save bytes in gzip files too).
fn big_payload(seed: u64) -> String {
    let mut x = seed;
    (0..4000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (b'a' + (x >> 59) as u8 % 26) as char
        })
        .collect()
}

/// A revisit record as crawlers write them: HTTP headers, the payload digest, and
/// (when `target` is given) WARC-Refers-To, -Target-URI and -Date naming the
/// original record.
fn crawler_revisit(n: u32, uri: &str, payload: &str, target: Option<&Rec>) -> Vec<u8> {
    let r = resp(n, uri, payload);
    let mut fields: Vec<(&str, String)> = vec![
        ("WARC-Type", "revisit".into()),
        ("WARC-Record-ID", r.id.clone()),
        ("WARC-Date", r.date.clone()),
        ("WARC-Target-URI", r.uri.clone()),
        (
            "WARC-Profile",
            "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest".into(),
        ),
        ("WARC-Payload-Digest", sha1_base32(payload.as_bytes())),
    ];
    if let Some(t) = target {
        fields.push(("WARC-Refers-To", t.id.clone()));
        fields.push(("WARC-Refers-To-Target-URI", t.uri.clone()));
        fields.push(("WARC-Refers-To-Date", t.date.clone()));
    }
    fields.push(("Content-Type", "application/http; msgtype=response".into()));
    let mut out = Vec::new();
    write_record(
        &mut out,
        "WARC/1.0",
        &fields,
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
    );
    out
}

/// Writes raw records, each its own gzip member when `gzip`.
fn write_raw(path: &Path, records: &[Vec<u8>], gzip: bool) {
    let mut out = Vec::new();
    for b in records {
        if gzip {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(b).unwrap();
            out.extend(e.finish().unwrap());
        } else {
            out.extend_from_slice(b);
        }
    }
    fs::write(path, out).unwrap();
}

/// What replay tools need of every revisit in `outputs`: its WARC-Refers-To names
/// a response of the outputs with the same payload digest, and a response exists
/// at its WARC-Refers-To-Target-URI (or its own URI) with that digest (pywb's
/// lookup). Returns (revisit URI, WARC-Refers-To) of every revisit.
fn every_revisit_resolves(outputs: &[PathBuf]) -> Vec<(String, String)> {
    let mut by_id = std::collections::HashMap::new();
    let mut by_uri_digest = std::collections::HashSet::new();
    let mut revisits = Vec::new();
    for o in outputs {
        let (recs, problems) = read_records(o);
        assert_eq!(problems, 0, "{}", o.display());
        for r in recs {
            let digest = r.payload_digest().unwrap_or_default();
            match r.rec_type() {
                "response" => {
                    by_uri_digest.insert((r.target_uri().to_string(), digest.clone()));
                    by_id.insert(r.header("WARC-Record-ID").unwrap().to_string(), digest);
                }
                "revisit" => revisits.push(r),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for r in revisits {
        let digest = r.header("WARC-Payload-Digest").unwrap().to_string();
        let target = r.header("WARC-Refers-To").unwrap_or("").to_string();
        let own = r.header("WARC-Record-ID").unwrap();
        assert_ne!(target, own, "a revisit refers to itself");
        if !target.is_empty() {
            assert_eq!(
                by_id.get(&target),
                Some(&digest),
                "revisit of {} refers to {target}, not a response with its payload",
                r.target_uri()
            );
        }
        let uri = r
            .header("WARC-Refers-To-Target-URI")
            .unwrap_or(r.target_uri());
        assert!(
            by_uri_digest.contains(&(uri.to_string(), digest.clone())),
            "revisit of {}: no response at {uri} with {digest}",
            r.target_uri()
        );
        out.push((r.target_uri().to_string(), target));
    }
    out
}

fn dedup_all(inputs: &[PathBuf], out: &Path, locations: Option<PathBuf>) -> (i32, Vec<PathBuf>) {
    let code = dedup(inputs.to_vec(), out, DedupBy::Digest, locations);
    let outs = if inputs.len() == 1 {
        vec![out.to_owned()]
    } else {
        inputs
            .iter()
            .map(|i| out.join(i.file_name().unwrap()))
            .collect()
    };
    (code, outs)
}

/// Issue 16 W1 (revisit after the record it names): F, then X with F's payload at
/// another URL (replaced by a revisit of F), then a crawler's revisit of X. The
/// crawler's revisit is rewritten to name F, so that it still resolves.
#[test]
fn an_input_revisit_of_a_replaced_record_is_retargeted() {
    for gzip in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let ext = if gzip { "warc.gz" } else { "warc" };
        let big = big_payload(1);
        let f = resp(1, "http://first.org/", &big);
        let x = resp(3, "http://x.org/", &big);
        let inputs: Vec<PathBuf> = (1..=3)
            .map(|i| dir.path().join(format!("c{i}.{ext}")))
            .collect();
        write_warc(&inputs[0], &[resp(1, "http://first.org/", &big)], gzip);
        write_warc(&inputs[1], &[resp(3, "http://x.org/", &big)], gzip);
        write_raw(
            &inputs[2],
            &[crawler_revisit(5, "http://x.org/", &big, Some(&x))],
            gzip,
        );
        let (code, outs) = dedup_all(&inputs, &dir.path().join("out"), None);
        assert_eq!(code, 0);
        let revisits = every_revisit_resolves(&outs);
        assert_eq!(
            revisits,
            [
                ("http://x.org/".to_string(), f.id.clone()),
                ("http://x.org/".to_string(), f.id.clone())
            ]
        );
        let (recs, _) = read_records(&outs[2]);
        assert_eq!(
            recs[0].header("WARC-Refers-To-Target-URI"),
            Some("http://first.org/")
        );
        assert_eq!(recs[0].header("WARC-Refers-To-Date"), Some(f.date.as_str()));
        assert_eq!(
            recs[0].header("WARC-Date"),
            Some(resp(5, "", "").date.as_str())
        );
        assert_eq!(
            recs[0].header("WARC-Record-ID"),
            Some(resp(5, "", "").id.as_str())
        );
    }
}

/// Issue 16 W1 (revisit before the record it names): a record that an earlier
/// revisit of the inputs refers to is never replaced.
#[test]
fn a_record_an_earlier_revisit_refers_to_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let big = big_payload(2);
    let x = resp(3, "http://x.org/", &big);
    let inputs: Vec<PathBuf> = (1..=3)
        .map(|i| dir.path().join(format!("c{i}.warc.gz")))
        .collect();
    write_warc(&inputs[0], &[resp(1, "http://first.org/", &big)], true);
    write_raw(
        &inputs[1],
        &[crawler_revisit(5, "http://x.org/", &big, Some(&x))],
        true,
    );
    write_warc(&inputs[2], &[resp(3, "http://x.org/", &big)], true);
    let (code, outs) = dedup_all(&inputs, &dir.path().join("out"), None);
    assert_eq!(code, 0);
    assert_eq!(
        fs::read(&outs[2]).unwrap(),
        fs::read(&inputs[2]).unwrap(),
        "kept"
    );
    assert_eq!(
        every_revisit_resolves(&outs),
        [("http://x.org/".to_string(), x.id)]
    );
}

/// Issue 16 W1 across runs (`--locations`): a crawl deduplicated in an earlier run,
/// then a later crawl whose revisits name records of the first one that the first
/// run replaced.
#[test]
fn retargeting_works_across_runs_with_locations() {
    let dir = tempfile::tempdir().unwrap();
    let big = big_payload(3);
    let f = resp(1, "http://first.org/", &big);
    let x = resp(3, "http://x.org/", &big);
    let c1 = dir.path().join("c1.warc.gz");
    let c2 = dir.path().join("c2.warc.gz");
    write_warc(
        &c1,
        &[
            resp(1, "http://first.org/", &big),
            resp(3, "http://x.org/", &big),
        ],
        true,
    );
    write_raw(
        &c2,
        &[crawler_revisit(5, "http://x.org/", &big, Some(&x))],
        true,
    );
    let loc = dir.path().join("firsts.tsv");
    let (o1, o2) = (dir.path().join("o1.warc.gz"), dir.path().join("o2.warc.gz"));
    assert_eq!(dedup_all(&[c1], &o1, Some(loc.clone())).0, 0);
    assert_eq!(dedup_all(&[c2], &o2, Some(loc.clone())).0, 0);
    let revisits = every_revisit_resolves(&[o1, o2]);
    assert_eq!(revisits.len(), 2);
    assert!(revisits.iter().all(|(_, t)| *t == f.id), "{revisits:?}");
}

/// Issue 16 W2: two copies of the same records (`.warc` and `.warc.gz` share record
/// IDs). A revisit would refer to its own record ID: the copy is kept as it is and
/// reported.
#[test]
fn records_sharing_the_id_of_their_first_capture_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let big = big_payload(4);
    let recs = [
        resp(1, "http://a.org/", &big),
        resp(3, "http://b.org/", &big_payload(5)),
    ];
    let plain = dir.path().join("hello.warc");
    let gz = dir.path().join("hello.warc.gz");
    write_warc(&plain, &recs, false);
    write_warc(&gz, &recs, true);
    let (code, outs) = dedup_all(&[plain.clone(), gz.clone()], &dir.path().join("out"), None);
    assert_eq!(code, 1, "reported");
    assert_eq!(fs::read(&outs[0]).unwrap(), fs::read(&plain).unwrap());
    assert_eq!(fs::read(&outs[1]).unwrap(), fs::read(&gz).unwrap());
    assert!(every_revisit_resolves(&outs).is_empty());
}

/// Issue 16 W3: a revisit is written only when it is smaller than the record it
/// replaces (a small payload under large HTTP headers is kept as it is).
#[test]
fn a_revisit_never_makes_a_record_larger() {
    for gzip in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let ext = if gzip { "warc.gz" } else { "warc" };
        let input = dir.path().join(format!("in.{ext}"));
        let big = big_payload(6);
        write_warc(
            &input,
            &[
                resp(1, "http://a.org/", "tiny"),
                resp(3, "http://b.org/", "tiny"),
                resp(5, "http://c.org/", &big),
                resp(7, "http://d.org/", &big),
            ],
            gzip,
        );
        let out = dir.path().join(format!("out.{ext}"));
        let (code, outs) = dedup_all(std::slice::from_ref(&input), &out, None);
        assert_eq!(code, 0);
        let revisits = every_revisit_resolves(&outs);
        assert_eq!(
            revisits,
            [("http://d.org/".to_string(), resp(5, "", "").id)]
        );
        let (ins, _) = read_records(&input);
        let (got, _) = read_records(&out);
        for (a, b) in ins.iter().zip(&got) {
            assert!(b.end - b.offset <= a.end - a.offset, "{}", b.target_uri());
        }
        assert!(fs::metadata(&out).unwrap().len() < fs::metadata(&input).unwrap().len());
    }
}

/// A revisit that names its original by URI and date only is never pointed at a
/// capture of another payload (two records can share a URI and a second).
#[test]
fn a_revisit_is_never_retargeted_to_another_payload() {
    let dir = tempfile::tempdir().unwrap();
    let (p, q) = (big_payload(7), big_payload(8));
    let x = resp(3, "http://x.org/", &p);
    let mut z = resp(3, "http://x.org/", &q);
    z.id = "<urn:uuid:z>".into();
    let c1 = dir.path().join("c1.warc.gz");
    let c2 = dir.path().join("c2.warc.gz");
    write_warc(
        &c1,
        &[
            resp(1, "http://first.org/", &p),
            resp(3, "http://x.org/", &p),
            z,
        ],
        true,
    );
    // Names (x.org, x's date) without an ID, with payload q: it means z.
    let by_uri_date = Rec {
        id: String::new(),
        ..x
    };
    write_raw(
        &c2,
        &[crawler_revisit(5, "http://x.org/", &q, Some(&by_uri_date))],
        true,
    );
    let (code, outs) = dedup_all(&[c1, c2.clone()], &dir.path().join("out"), None);
    assert_eq!(code, 0);
    assert_eq!(
        fs::read(&outs[1]).unwrap(),
        fs::read(&c2).unwrap(),
        "untouched"
    );
}
