//! `webdedup dedup` end to end: a hand-made fixture with its exact expected output,
//! every malformed-input rule, compression, and the run report.

mod common;
use common::*;
use std::fs;

/// The document both files start with (ids 1 and 3, one URL and title): kept
/// whole in a.vert, a duplicate in b.vert.
macro_rules! gallery_doc {
    ($id:literal) => {
        concat!(
            "<doc id=\"",
            $id,
            r#"" url="http://example.org/a" title="A &amp; B">
<p>
Gallery
</p>
<p>
The
quick
brown
fox
jumps
over
the
lazy
dog
near
the
river
bank
<g/>
.
</p>
<p>
Short one
</p>
</doc>
"#
        )
    };
}

/// The end of a.vert's second document: a long paragraph b.vert repeats, and a
/// short block.
macro_rules! doc2_tail {
    () => {
        r#"<p>
A completely different paragraph, long enough to be counted as long.
</p>
<s>
Trailing short
</s>
</doc>
"#
    };
}

/// b.vert's last document, of one short paragraph: the only one it keeps.
macro_rules! only_short_doc {
    () => {
        r#"<doc id="5" url="http://example.org/d" title="D">
<p>
Only short
</p>
</doc>
"#
    };
}

const A_VERT: &str = concat!(
    gallery_doc!("1"),
    r#"<doc id="2" url="http://example.org/b" title='B'>
<p>
Header
</p>
<p>
THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG NEAR THE RIVER BANK !
</p>
"#,
    doc2_tail!()
);

const B_VERT: &str = concat!(
    gallery_doc!("3"),
    r#"<doc id="4" url="http://example.org/c" title="C">
<p>
A completely different paragraph, long enough to be counted as long.
</p>
</doc>
"#,
    only_short_doc!()
);

const A_EXPECTED: &str = concat!(
    gallery_doc!("1"),
    r#"<doc id="2" url="http://example.org/b" title='B'>
"#,
    doc2_tail!()
);

/// b.vert keeps only its last document.
const B_EXPECTED: &str = only_short_doc!();

#[test]
fn fixture_gives_exactly_the_expected_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    write_file(&input.join("a.vert"), A_VERT);
    // Compressed input, found by its magic bytes; the suffix is dropped from the output name.
    write_file(&input.join("sub/b.vert.gz"), gzip(B_VERT.as_bytes()));
    let json = dir.path().join("stats.json");
    ok(&dedup(&input, &out, &["--dd", "--json", s(&json)]));
    assert_eq!(read(out.join("a.vert.dedup")), A_EXPECTED);
    assert_eq!(read(out.join("sub/b.vert.dedup")), B_EXPECTED);
    assert_eq!(
        read(out.join("a.vert.dedup.dd")),
        "<dd url=\"http://example.org/a\" title=\"A &amp; B\" status=\"K\"/>\n<dd url=\"http://example.org/b\" title=\"B\" status=\"2/4\"/>\n"
    );
    assert_eq!(
        read(out.join("sub/b.vert.dedup.dd")),
        "<dd url=\"http://example.org/a\" title=\"A &amp; B\" status=\"D\"/>\n\
         <dd url=\"http://example.org/c\" title=\"C\" status=\"E\"/>\n\
         <dd url=\"http://example.org/d\" title=\"D\" status=\"K\"/>\n"
    );
    let stats: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    assert_eq!(stats["files"], 2);
    assert_eq!(stats["documents_read"], 5);
    assert_eq!(stats["documents_kept"], 3);
    assert_eq!(stats["documents_dropped_duplicate"], 1);
    assert_eq!(stats["documents_dropped_all_paragraphs"], 1);
    assert_eq!(stats["paragraphs_read"], 3 + 4 + 3 + 1 + 1);
    assert_eq!(stats["paragraphs_retained"], 3 + 2 + 1);
    assert_eq!(stats["url_title_repeats"], 1);
    assert_eq!(stats["bytes_in"], (A_VERT.len() + B_VERT.len()) as u64);
    assert_eq!(
        stats["bytes_out"],
        (A_EXPECTED.len() + B_EXPECTED.len()) as u64
    );
    // Distinct keys: 4 URL+title, 4 documents (3 repeats 1), 2 long paragraphs.
    assert_eq!(stats["keys_stored"], 4 + 4 + 2);
}

#[test]
fn summary_table_is_printed_unless_quiet() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.vert"), A_VERT).unwrap();
    let (input, out) = (dir.path().join("a.vert"), dir.path().join("out"));
    let o = webdedup(&["dedup", s(&input), "-o", s(&out)]);
    assert!(o.status.success());
    assert_says(&o, "webdedup dedup: 1 file, 2 documents read,");
    assert_says(&o, " 5 of ");
    assert_says(&o, "bytes per key");
    let q = dedup(&dir.path().join("a.vert"), &dir.path().join("out2"), &[]);
    assert!(q.stderr.is_empty());
}

/// `--progress always` with stderr in a log (not a terminal): `dedup` and
/// `minhash` draw the bar every command draws (bytes, rate, ETA), a line at a
/// time (with the run's files and documents once a second); without it,
/// nothing is drawn.
#[test]
fn progress_always_writes_the_bar_into_a_log() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.vert"), A_VERT).unwrap();
    let input = dir.path().join("a.vert");
    for (i, command) in ["dedup", "minhash"].into_iter().enumerate() {
        let out = dir.path().join(format!("out{i}"));
        let args = [command, s(&input), "-o", s(&out)];
        let o = webdedup(&[&args[..], &["--progress", "always"]].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(
            err.lines()
                .any(|l| l.contains("ETA") && l.contains('[') && l.contains(command)),
            "{command} --progress always drew no bar: {err}"
        );
        let o = webdedup(&[&args[..], &["--progress", "auto"]].concat());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(!stderr(&o).contains("ETA"), "{}", stderr(&o));
    }
}

#[test]
fn malformed_inputs_are_reported_and_the_rest_is_processed() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    fs::create_dir_all(&input).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "01-missing-doc-close.vert",
            b"<doc url=\"x\">\n<p>\nhello\n</p>\n<doc url=\"y\">\n<p>\nworld\n</p>\n</doc>\n"
                .to_vec(),
        ),
        (
            "02-missing-p-close.vert",
            b"<doc url=\"x\">\n<p>\nbonjour\n</doc>\n".to_vec(),
        ),
        (
            "03-stray-close.vert",
            b"<doc url=\"x\">\n<p>\na\n</p>\n</p>\n</doc>\n</doc>\n".to_vec(),
        ),
        (
            "04-before-first-doc.vert",
            b"junk line\n<doc url=\"x\">\n<p>\nb\n</p>\n</doc>\n".to_vec(),
        ),
        (
            "05-invalid-utf8.vert",
            b"<doc url=\"x\">\n<p>\nab\xff\xfe\n</p>\n</doc>\n".to_vec(),
        ),
        (
            "06-nul.vert",
            b"<doc url=\"x\">\n<p>\nn\0ul\n</p>\n</doc>\n".to_vec(),
        ),
        (
            "07-long-line.vert",
            [
                &b"<doc url=\"x\">\n<p>\nok\n"[..],
                &vec![b'z'; 5000],
                b"\nafter\n</p>\n</doc>\n",
            ]
            .concat(),
        ),
        (
            "08-doc-in-doc.vert",
            b"<doc url=\"outer\">\n<doc url=\"inner\">\n<p>\nc\n</p>\n</doc>\n".to_vec(),
        ),
        (
            "10-clean.vert",
            b"<doc url=\"clean\">\n<p>\nfine\n</p>\n</doc>\n".to_vec(),
        ),
    ];
    for (name, data) in &cases {
        fs::write(input.join(name), data).unwrap();
    }
    // A zstd stream cut in half: what decodes is kept, the rest reported.
    // Letters, not digits: `loose` maps every digit to 0, which would make the documents equal.
    let letters = |mut i: usize| -> String {
        let mut s = String::new();
        loop {
            s.push((b'a' + (i % 26) as u8) as char);
            i /= 26;
            if i == 0 {
                return s;
            }
        }
    };
    // Larger than one zstd block (128 KiB), so the first half still decodes.
    let long_doc: String = (0..20000)
        .map(|i| {
            format!(
                "<doc url=\"t{i}\">\n<p>\nword {}\n</p>\n</doc>\n",
                letters(i)
            )
        })
        .collect();
    let zst = zstd::encode_all(long_doc.as_bytes(), 1).unwrap();
    fs::write(input.join("09-truncated.vert.zst"), &zst[..zst.len() / 2]).unwrap();
    // A file that cannot be opened (a dangling symlink).
    std::os::unix::fs::symlink(dir.path().join("nowhere"), input.join("11-unreadable.vert"))
        .unwrap();

    let o = dedup(
        &input,
        &out,
        &["--max-line-bytes", "1000", "--threads", "2"],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "input problems give exit status 1"
    );
    let err = stderr(&o);
    let p = |name: &str| input.join(name).display().to_string();
    for expected in [
        format!(
            "{}:5: <doc> opened at line 1 is not closed: closed here",
            p("01-missing-doc-close.vert")
        ),
        format!(
            "{}:4: <p> opened at line 2 is not closed: closed here",
            p("02-missing-p-close.vert")
        ),
        format!(
            "{}:5: </p> without its opening tag: dropped",
            p("03-stray-close.vert")
        ),
        format!(
            "{}:7: </doc> without its opening tag: dropped",
            p("03-stray-close.vert")
        ),
        format!(
            "{}:1: line outside any <doc>: dropped",
            p("04-before-first-doc.vert")
        ),
        format!(
            "{}:3: invalid UTF-8: kept, read lossily for keys",
            p("05-invalid-utf8.vert")
        ),
        format!(
            "{}:3: NUL byte in line: kept, ignored in keys",
            p("06-nul.vert")
        ),
        format!(
            "{}:4: line longer than 1000 bytes: dropped",
            p("07-long-line.vert")
        ),
        format!(
            "{}:2: <doc> opened at line 1 is not closed: closed here",
            p("08-doc-in-doc.vert")
        ),
        format!("{}: cannot read:", p("11-unreadable.vert")),
    ] {
        assert!(err.contains(&expected), "missing {expected:?} in:\n{err}");
    }
    assert!(
        err.contains(&format!("{}:", p("09-truncated.vert.zst")))
            && err.contains("read error, rest of the file lost"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    // The well-formed parts are all there, byte for byte.
    assert_eq!(
        read(out.join("01-missing-doc-close.vert.dedup")),
        read(input.join("01-missing-doc-close.vert"))
    );
    assert_eq!(
        read(out.join("02-missing-p-close.vert.dedup")),
        "<doc url=\"x\">\n<p>\nbonjour\n</doc>\n"
    );
    assert_eq!(
        read(out.join("03-stray-close.vert.dedup")),
        "<doc url=\"x\">\n<p>\na\n</p>\n</doc>\n"
    );
    assert_eq!(
        read(out.join("04-before-first-doc.vert.dedup")),
        "<doc url=\"x\">\n<p>\nb\n</p>\n</doc>\n"
    );
    assert_eq!(
        fs::read(out.join("05-invalid-utf8.vert.dedup")).unwrap(),
        cases[4].1
    );
    assert_eq!(fs::read(out.join("06-nul.vert.dedup")).unwrap(), cases[5].1);
    assert_eq!(
        read(out.join("07-long-line.vert.dedup")),
        "<doc url=\"x\">\n<p>\nok\nafter\n</p>\n</doc>\n"
    );
    assert_eq!(
        read(out.join("08-doc-in-doc.vert.dedup")),
        read(input.join("08-doc-in-doc.vert"))
    );
    assert_eq!(
        read(out.join("10-clean.vert.dedup")),
        read(input.join("10-clean.vert"))
    );
    let truncated = read(out.join("09-truncated.vert.dedup"));
    assert!(
        truncated.len() > 1000
            && long_doc.starts_with(&truncated[..truncated.rfind("</doc>\n").unwrap()])
    );
    assert!(!out.join("11-unreadable.vert.dedup").exists());
}

#[test]
fn report_limit_caps_the_lines_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let junk: String = (0..50).map(|i| format!("junk {i}\n")).collect();
    fs::write(dir.path().join("j.vert"), junk).unwrap();
    let o = dedup(
        &dir.path().join("j.vert"),
        &dir.path().join("out"),
        &["--report-limit", "3"],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.matches("line outside any <doc>").count(), 3, "{err}");
    assert!(err.contains("47 more input problems not shown"), "{err}");
}

#[test]
fn compressed_outputs_hold_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    assert!(dedup(&sample_dir(), &plain, &[]).status.success());
    for kind in ["zst", "gz"] {
        let out = dir.path().join(kind);
        assert!(dedup(&sample_dir(), &out, &["--compress", kind])
            .status
            .success());
        for (rel, bytes) in tree(&plain) {
            let (mut r, _) =
                webdedup_formats::open_input(&out.join(format!("{rel}.{kind}"))).unwrap();
            let mut got = Vec::new();
            std::io::Read::read_to_end(&mut r, &mut got).unwrap();
            assert_eq!(got, bytes, "{rel} ({kind})");
        }
    }
}

#[test]
fn usage_errors_exit_with_status_2() {
    let o = webdedup(&["dedup", "-i", "/nonexistent/input", "-o", "/tmp/x"]);
    assert_fails_saying(&o, 2, "cannot read input /nonexistent/input");
    let o = webdedup(&["dedup", "--normalize", "fancy", "-i", "a", "-o", "b"]);
    assert_fails_saying(&o, 2, "unknown normalization 'fancy'");
}

#[test]
fn dd_list_is_never_compressed_and_named_after_the_output() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.vert"), A_VERT).unwrap();
    let out = dir.path().join("out");
    assert!(dedup(
        &dir.path().join("a.vert"),
        &out,
        &["--dd", "--compress", "zst"]
    )
    .status
    .success());
    assert!(out.join("a.vert.dedup.zst").exists());
    assert!(read(out.join("a.vert.dedup.dd")).starts_with("<dd url=\"http://example.org/a\""));
}

#[test]
fn inputs_that_would_share_an_output_name_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    write_file(&input.join("a.vert"), A_VERT);
    write_file(&input.join("a.vert.gz"), gzip(B_VERT.as_bytes()));
    let o = dedup(&input, &dir.path().join("out"), &[]);
    assert_fails_saying(&o, 2, "would both be written to");
}

#[test]
fn symlink_cycles_and_the_output_directory_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    write_file(&input.join("sub/a.vert"), A_VERT);
    std::os::unix::fs::symlink(&input, input.join("sub/loop")).unwrap();
    // The output directory inside the input directory is left out on a second run.
    let out = input.join("out");
    let json = dir.path().join("s.json");
    for _ in 0..2 {
        ok(&dedup(&input, &out, &["--json", s(&json)]));
        let stats: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
        assert_eq!(stats["files"], 1, "only sub/a.vert is an input");
    }
    assert_eq!(read(out.join("sub/a.vert.dedup")), A_EXPECTED);
}
