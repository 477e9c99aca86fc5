//! End-to-end tests of `cdx dups|revisits|dates` through `run_cdx`, with temp files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use webdedup_archive::util::Report;
use webdedup_archive::{
    dates, run_cdx, CdxCommand, CdxDatesOptions, CdxDupsOptions, CdxRevisitsOptions,
};

const LEGEND: &str = " CDX N b a m s k r M S V g\n";

fn line(date: &str, digest: &str, url: &str) -> String {
    format!("{url} {date} http://{url} text/html 200 {digest} - - 100 0 a.warc.gz\n")
}

/// NutchWAX README-dedup's example: ten captures, five of them duplicates.
fn nutchwax_example() -> String {
    let rows = [
        ("20071001", "abc123"),
        ("20071002", "abc123"),
        ("20071003", "def456"),
        ("20071004", "def456"),
        ("20071005", "abc123"),
        ("20071006", "abc123"),
        ("20071007", "ghi789"),
        ("20071008", "jkl012"),
        ("20071009", "jkl012"),
        ("20071010", "mno345"),
    ];
    let mut s = String::from(LEGEND);
    for (d, k) in rows {
        s += &line(d, k, "org,example)/index.html");
    }
    s
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

/// `cdx dups FILES -o OUT` (with `lines`, the whole CDX lines): its exit status.
fn dups(files: Vec<PathBuf>, lines: bool, out: &Path) -> i32 {
    run_cdx(&CdxCommand::Dups(CdxDupsOptions {
        files,
        lines,
        output: Some(out.to_path_buf()),
    }))
    .unwrap()
}

#[test]
fn dups_prints_all_but_first_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "foo.cdx", &nutchwax_example());
    let out = dir.path().join("foo.dup");
    assert_eq!(dups(vec![input], false, &out), 0);
    assert_eq!(
        fs::read_to_string(&out).unwrap(),
        "org,example)/index.html sha1:ABC123 20071002\n\
         org,example)/index.html sha1:DEF456 20071004\n\
         org,example)/index.html sha1:ABC123 20071005\n\
         org,example)/index.html sha1:ABC123 20071006\n\
         org,example)/index.html sha1:JKL012 20071009\n"
    );
}

#[test]
fn dups_across_files_formats_and_digest_spellings() {
    let dir = tempfile::tempdir().unwrap();
    // File 1: 9-field CDX without legend; file 2: CDXJ with labelled lower-case digest.
    let a = write(
        dir.path(),
        "a.cdx",
        "com,x)/ 20200101000000 http://x.com/ text/html 200 AAAA - 0 a.warc\n\
         com,y)/ 20200101000000 http://y.com/ text/html 200 BBBB - 0 a.warc\n",
    );
    let b = write(
        dir.path(),
        "b.cdxj",
        "com,y)/ 20200202000000 {\"url\": \"http://y.com/\", \"digest\": \"sha1:bbbb\"}\n\
         com,z)/ 20200202000000 {\"url\": \"http://z.com/\", \"digest\": \"sha1:AAAA\"}\n\
         com,x)/ 20200303000000 {\"url\": \"http://x.com/\", \"digest\": \"AAAA\"}\n",
    );
    let out = dir.path().join("out.txt");
    assert_eq!(dups(vec![a, b.clone()], true, &out), 0);
    let text = fs::read_to_string(&out).unwrap();
    let b_lines: Vec<&str> = fs::read_to_string(&b).unwrap().leak().lines().collect();
    // Same URL + same digest (any spelling) is a dup; same digest on another URL is not.
    assert_eq!(text, format!("{}\n{}\n", b_lines[0], b_lines[2]));
}

#[test]
fn malformed_lines_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{LEGEND}{}this line has too few fields\n{}{}",
        line("20200101000000", "D1", "a)/"),
        line("2020010100000x", "D1", "a)/"),
        line("20200102000000", "D1", "a)/")
    );
    let input = write(dir.path(), "bad.cdx", &text);
    let missing = dir.path().join("missing.cdx");
    let out = dir.path().join("out");
    assert_eq!(dups(vec![missing, input], false, &out), 1);
    assert_eq!(
        fs::read_to_string(&out).unwrap(),
        "a)/ sha1:D1 20200102000000\n"
    );
}

#[test]
fn revisits_by_mime_or_filename_dash() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{LEGEND}{}a)/ 20200102000000 http://a/ warc/revisit - sha1:D1 - - 10 5 a.warc.gz\n\
         a)/ 20200103000000 http://a/ text/html 200 D1 - - 10 5 -\n",
        line("20200101000000", "D1", "a)/")
    );
    let input = write(dir.path(), "r.cdx", &text);
    for (dash, want) in [
        (false, "a)/ sha1:D1 20200102000000\n"),
        (
            true,
            "a)/ sha1:D1 20200102000000\na)/ sha1:D1 20200103000000\n",
        ),
    ] {
        let out = dir.path().join("out");
        let code = run_cdx(&CdxCommand::Revisits(CdxRevisitsOptions {
            files: vec![input.clone()],
            filename_dash: dash,
            lines: false,
            output: Some(out.clone()),
        }))
        .unwrap();
        assert_eq!(code, 0);
        assert_eq!(fs::read_to_string(&out).unwrap(), want);
    }
}

#[test]
fn dates_gathers_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "foo.cdx", &nutchwax_example());
    let old = write(
        dir.path(),
        "old.dates",
        "org,example)/index.html sha1:abc123 20060101 20071001\norg,a)/ sha1:ZZ 1999\n",
    );
    let out = dir.path().join("dates");
    let code = run_cdx(&CdxCommand::Dates(CdxDatesOptions {
        files: vec![input],
        merge: vec![old],
        memory: 1 << 20,
        tmp_dir: Some(dir.path().to_owned()),
        output: Some(out.clone()),
    }))
    .unwrap();
    assert_eq!(code, 0);
    assert_eq!(
        fs::read_to_string(&out).unwrap(),
        "org,a)/ sha1:ZZ 1999\n\
         org,example)/index.html sha1:ABC123 20060101 20071001 20071002 20071005 20071006\n\
         org,example)/index.html sha1:DEF456 20071003 20071004\n\
         org,example)/index.html sha1:GHI789 20071007\n\
         org,example)/index.html sha1:JKL012 20071008 20071009\n\
         org,example)/index.html sha1:MNO345 20071010\n"
    );
}

/// A tiny memory budget forces many runs and (fan-in 3) several merge passes; the
/// result must equal an in-memory computation.
#[test]
fn dates_external_sort_with_tiny_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(LEGEND);
    let mut want: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut x: u64 = 12345;
    for _ in 0..6000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let url = format!("com,site{})/page{}", (x >> 20) % 37, (x >> 30) % 11);
        let digest = format!("D{}", (x >> 40) % 5);
        let date = format!(
            "2020{:02}{:02}000000",
            (x >> 50) % 12 + 1,
            (x >> 55) % 28 + 1
        );
        text += &line(&date, &digest, &url);
        want.entry((url, digest)).or_default().insert(date);
    }
    let input = write(dir.path(), "big.cdx", &text);
    let opts = dates::DatesOptions {
        memory: 64 << 10,
        tmp_dir: Some(dir.path().to_owned()),
        fan_in: 3,
    };
    let mut out = Vec::new();
    let mut report = Report::default();
    let stats = dates::dates(&[input], &[], &opts, &mut out, &mut report).unwrap();
    assert!(stats.runs >= 4, "expected several runs, got {stats:?}");
    assert!(
        stats.merge_passes >= 2,
        "expected several merge passes, got {stats:?}"
    );
    assert_eq!(report.problems(), 0);
    let mut expected = String::new();
    for ((u, d), dates) in &want {
        expected += &format!("{u} sha1:{d}");
        for t in dates {
            expected += &format!(" {t}");
        }
        expected += "\n";
    }
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    assert_eq!(stats.versions as usize, want.len());
}

/// With a store that outlives one run (as a persisted store or the server would),
/// a later run finds the duplicates of an earlier one.
#[test]
fn dups_with_a_shared_store_spans_runs() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.cdx",
        &format!("{LEGEND}{}", line("20200101000000", "D1", "a)/")),
    );
    let b = write(
        dir.path(),
        "b.cdx",
        &format!(
            "{LEGEND}{}{}",
            line("20200202000000", "D1", "a)/"),
            line("20200202000000", "D2", "a)/")
        ),
    );
    let store = webdedup_store::MemStore::default();
    let out = dir.path().join("out");
    for (file, want) in [(a, ""), (b, "a)/ sha1:D1 20200202000000\n")] {
        let cmd = CdxCommand::Dups(CdxDupsOptions {
            files: vec![file],
            lines: false,
            output: Some(out.clone()),
        });
        assert_eq!(
            webdedup_archive::cdx_outcome(&cmd, Some(&store))
                .unwrap()
                .status,
            0
        );
        assert_eq!(fs::read_to_string(&out).unwrap(), want);
    }
}
