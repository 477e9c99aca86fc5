//! Issue 27, inputs and outputs through the real binary: `-o` onto a device or a
//! FIFO is written in place (never replaced by a regular file); a damaged WET
//! record is written as read, once, and reading resumes at the next record.

mod common;

use common::corpus_formats::{jsonl_docs, wet_file};
use common::{attr, dd_lines, dedup, jsonl_sample_dir, ok, stderr, tree, warc_response, webdedup};
use std::ffi::CString;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// Every command that writes one `-o FILE`, with its inputs made in `d`, as
/// argument lists ending before `-o`.
fn single_output_commands(d: &Path) -> Vec<(&'static str, Vec<String>)> {
    let jsonl = d.join("docs.jsonl");
    std::fs::write(
        &jsonl,
        "{\"id\":\"a\",\"text\":\"the quick brown fox jumps over the lazy dog again\"}\n\
         {\"id\":\"b\",\"text\":\"the quick brown fox jumps over the lazy dog again\"}\n",
    )
    .unwrap();
    let cdx = d.join("a.cdx");
    std::fs::write(
        &cdx,
        "com,a)/ 20200101000000 http://a.com/ text/html 200 AAAA - - 1 0 x.warc.gz\n\
         com,a)/ 20200201000000 http://a.com/ text/html 200 AAAA - - 1 9 x.warc.gz\n",
    )
    .unwrap();
    let warc = d.join("a.warc");
    let body = "a page long enough that its revisit is smaller ".repeat(20);
    std::fs::write(
        &warc,
        [
            warc_response("http://a.org/", "2020-01-01T00:00:00Z", &body),
            warc_response("http://a.org/", "2020-02-01T00:00:00Z", &body),
        ]
        .concat(),
    )
    .unwrap();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("simhash", [v(&["simhash", "-q"]), vec![s(&jsonl)]].concat()),
        ("similar", [v(&["similar", "-q"]), vec![s(&jsonl)]].concat()),
        (
            "cdx dups",
            [v(&["cdx", "dups", "-q"]), vec![s(&cdx)]].concat(),
        ),
        (
            "cdx revisits",
            [v(&["cdx", "revisits", "-q"]), vec![s(&cdx)]].concat(),
        ),
        (
            "cdx dates",
            [v(&["cdx", "dates", "-q"]), vec![s(&cdx)]].concat(),
        ),
        (
            "warc index",
            [v(&["warc", "index", "-q"]), vec![s(&warc)]].concat(),
        ),
        (
            "warc dedup",
            [v(&["warc", "dedup", "-q"]), vec![s(&warc)]].concat(),
        ),
    ]
}

fn run_to(args: &[String], out: &Path) -> std::process::Output {
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend(["-o", out.to_str().unwrap()]);
    webdedup(&all)
}

/// N1: `-o` onto a character device (a `/dev/null` made in a temporary directory,
/// so the machine's own is never at risk) leaves it a device, in every command.
#[test]
fn output_onto_a_device_leaves_it_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let null = d.join("null");
    if unsafe {
        libc::mknod(
            c_path(&null).as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(1, 3),
        )
    } != 0
    {
        eprintln!("skipped: mknod needs root");
        return;
    }
    for (name, args) in single_output_commands(d) {
        let o = run_to(&args, &null);
        assert!(o.status.code().unwrap() <= 1, "{name}: {}", stderr(&o));
        let t = std::fs::metadata(&null).unwrap().file_type();
        assert!(t.is_char_device(), "{name}: -o DEVICE became {t:?}");
        assert!(!d.join("null.tmp").exists(), "{name}");
    }
}

/// N1: `-o` onto a FIFO writes into the pipe (a reader gets the output) and leaves
/// the FIFO in place; `-o` onto a directory is refused, naming it.
#[test]
fn output_onto_a_fifo_goes_through_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("pipe");
    assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o600) }, 0);
    let outdir = d.join("outdir");
    std::fs::create_dir(&outdir).unwrap();
    for (name, args) in single_output_commands(d) {
        // The read end is open before the command starts (non-blocking: the
        // command's open for writing then returns at once); every output here is
        // far smaller than a pipe's buffer.
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let o = run_to(&args, &fifo);
        assert!(o.status.code().unwrap() <= 1, "{name}: {}", stderr(&o));
        let t = std::fs::metadata(&fifo).unwrap().file_type();
        assert!(t.is_fifo(), "{name}: -o FIFO became {t:?}");
        let mut got = Vec::new();
        let _ = reader.read_to_end(&mut got);
        // The bytes a regular file gets came through the pipe.
        let file = d.join("regular");
        let o = run_to(&args, &file);
        assert!(o.status.code().unwrap() <= 1, "{name}: {}", stderr(&o));
        assert_eq!(got, std::fs::read(&file).unwrap(), "{name}");
        std::fs::remove_file(&file).unwrap();
        if name == "warc dedup" {
            continue; // an existing directory is its directory output
        }
        let o = run_to(&args, &outdir);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(outdir.to_str().unwrap()) && e.contains("it is a directory"),
            "{name}: {e}"
        );
        assert_eq!(std::fs::read_dir(&outdir).unwrap().count(), 0, "{name}");
    }
}

/// The statuses of the `.dd` lines under `out`, in order.
fn dd_statuses(out: &Path) -> Vec<String> {
    dd_lines(out)
        .iter()
        .map(|l| attr(l, "status").unwrap())
        .collect()
}

/// D3, D5: a WET file (plain, and gzip a record) whose third document has a
/// broken `Content-Length` (past the end of the file, negative, not a number,
/// missing, too large for 64 bits). The record is reported at its offset, written
/// as read once (status `B` in `.dd`), and reading resumes at the next record:
/// every input record is in the output and in `.dd` exactly once, nothing is
/// read twice.
#[test]
fn a_wet_record_with_a_broken_content_length_is_written_as_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let docs = jsonl_docs(&jsonl_sample_dir().join("cc-2023-14/part-00000.jsonl.gz"));
    let docs = &docs[..8];
    // The records as written, to damage the fourth (the third document).
    let records: Vec<Vec<u8>> = std::iter::once(wet_file(&[], false))
        .chain(docs.iter().map(|d| {
            wet_file(std::slice::from_ref(d), false)[wet_file(&[], false).len()..].to_vec()
        }))
        .collect();
    assert_eq!(records.concat(), wet_file(docs, false));
    let run = |name: &str, data: &[u8], gz: bool| {
        let dir = t.join(format!("in-{name}-{gz}"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = if gz { "a.warc.wet.gz" } else { "a.warc.wet" };
        std::fs::write(dir.join(file), data).unwrap();
        let out = t.join(format!("out-{name}-{gz}"));
        let json = t.join(format!("{name}-{gz}.json"));
        let o = dedup(&dir, &out, &["--dd", "--json", json.to_str().unwrap()]);
        let (_, written) = tree(&out)
            .into_iter()
            .find(|(name, _)| !name.ends_with(".dd"))
            .unwrap_or_else(|| panic!("{name}: no output; {}", stderr(&o)));
        let stats: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        (o, common::decompress(&written), dd_statuses(&out), stats)
    };
    let count = |data: &[u8]| data.windows(10).filter(|w| w == b"WARC/1.0\r\n").count();
    let damaged_record = &records[3];
    let cl = String::from_utf8_lossy(damaged_record)
        .lines()
        .find(|l| l.starts_with("Content-Length: "))
        .unwrap()
        .to_string();
    for gz in [false, true] {
        let encode = |r: &[u8]| if gz { common::gzip(r) } else { r.to_vec() };
        let clean: Vec<u8> = records.iter().flat_map(|r| encode(r)).collect();
        let (o, clean_out, clean_dd, _) = run("clean", &clean, gz);
        ok(&o);
        assert_eq!(clean_dd.len(), 8);
        let offset: usize = records[..3].iter().map(|r| encode(r).len()).sum();
        for (name, replacement) in [
            ("past-the-end", "Content-Length: 100000000".to_string()),
            ("negative", "Content-Length: -5".to_string()),
            ("not-a-number", "Content-Length: twelve".to_string()),
            ("missing", "X-No-Length: 1".to_string()),
            (
                "overflowing",
                "Content-Length: 99999999999999999999999".to_string(),
            ),
        ] {
            let bad = String::from_utf8_lossy(damaged_record).replacen(&cl, &replacement, 1);
            let mut data: Vec<u8> = records[..3].iter().flat_map(|r| encode(r)).collect();
            data.extend_from_slice(&encode(bad.as_bytes()));
            data.extend(records[4..].iter().flat_map(|r| encode(r)));
            let (o, written, dd, stats) = run(name, &data, gz);
            let name = format!("{name}, gzip {gz}");
            assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.contains(&format!(":offset {offset}: ")),
                "{name}: {err}"
            );
            // Every record once: the damaged one as read (status B), the others
            // as from the clean file.
            assert_eq!(dd.len(), 8, "{name}: {dd:?}");
            assert_eq!(dd[2], "B", "{name}: {dd:?}");
            assert_eq!(
                [&dd[..2], &dd[3..]].concat(),
                [&clean_dd[..2], &clean_dd[3..]].concat(),
                "{name}"
            );
            assert_eq!(stats["documents_read"], 7, "{name}: {stats}");
            assert_eq!(stats["bad_records"], 1, "{name}: {stats}");
            assert_eq!(count(&written), count(&clean_out), "{name}");
            let at = written
                .windows(bad.len())
                .position(|w| w == bad.as_bytes())
                .unwrap_or_else(|| {
                    panic!("{name}: the damaged record is not in the output as read")
                });
            assert!(
                !written[at + 1..]
                    .windows(bad.len())
                    .any(|w| w == bad.as_bytes()),
                "{name}: written twice"
            );
        }
    }
}

/// D14 and a small one: a fingerprint header with a value the flags refuse
/// (`shingle=0`) or an unknown key is refused by `similar` as the flag would be,
/// and the message quotes it plainly (no `\'`).
#[test]
fn a_fingerprint_header_is_held_to_the_flags_checks() {
    let dir = tempfile::tempdir().unwrap();
    for (settings, reason) in [
        ("shingle=0", "'0' is not a shingle size between 1 and 64"),
        (
            "shingle=1000",
            "'1000' is not a shingle size between 1 and 64",
        ),
        ("shingle=5 colour=red", "unknown setting 'colour'"),
    ] {
        let f = dir.path().join("fp.tsv");
        std::fs::write(
            &f,
            format!(
                "# webdedup-simhash v1 tokenizer=unicode weights=distinct hash=xxh3-64 {settings}\n\
                 a\t00000000000000ff\t255\t0\t0\t0\t255\n"
            ),
        )
        .unwrap();
        let o = webdedup(&["similar", f.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{settings}: {e}");
        assert!(e.contains(reason), "{settings}: {e}");
        assert!(!e.contains("\\'"), "{settings}: {e}");
    }
}

/// A small one: a line dropped as too long was read all the same, so "MB in"
/// (and `bytes_in`) counts it; it said 0.0 for a file of one huge line.
#[test]
fn dropped_long_lines_count_in_the_bytes_read() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let data = format!(
        "{{\"id\":\"a\",\"text\":\"short\"}}\n{{\"id\":\"b\",\"text\":\"{}\"}}\n{{\"id\":\"c\",\"text\":\"end\"}}",
        "x".repeat(50_000)
    );
    std::fs::write(input.join("a.jsonl"), &data).unwrap();
    let stats = dir.path().join("s.json");
    let o = dedup(
        &input,
        &dir.path().join("out"),
        &[
            "--max-line-bytes",
            "1000",
            "--json",
            stats.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(s["documents_read"], 2, "{s}");
    assert_eq!(s["bytes_in"], data.len(), "{s}");
}
