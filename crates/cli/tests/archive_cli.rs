//! The web-archive commands and the messages of every command, through the real
//! binary: what reaches the terminal (control bytes of the input escaped), error
//! messages that name their file, no debris (empty directories, temporary files)
//! after a failed run, exit statuses.

mod common;

use common::stderr;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(args)
        .output()
        .expect("run webdedup")
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// Bytes a terminal would act on: ESC, BEL, CR, C1 CSI (raw or UTF-8 encoded).
fn has_control_bytes(stderr: &[u8]) -> bool {
    stderr
        .iter()
        .any(|&b| b == 0x1b || b == 0x07 || b == b'\r' || b == 0x9b)
        || stderr.windows(2).any(|w| w == [0xc2, 0x9b])
}

/// Issue 16 F4: input bytes quoted in messages (garbage in a WARC, a CDX line, a file
/// name) are escaped, so an OSC or CSI sequence in an input file never reaches the
/// terminal.
#[test]
fn control_bytes_of_the_input_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let evil = b"\x1b]0;owned\x07\x1b[2J\xc2\x9b31m\r\n";
    let mut warc = evil.to_vec();
    warc.extend(common::warc_response(
        "http://a.org/",
        "2020-01-01T00:00:00Z",
        "hello",
    ));
    let warc_path = d.join("evil.warc");
    std::fs::write(&warc_path, &warc).unwrap();
    // An 11-field CDX line whose timestamp holds the sequences.
    let mut cdx = b"com,a)/ 2020".to_vec();
    cdx.extend_from_slice(&evil[..evil.len() - 2]);
    cdx.extend_from_slice(b" http://a.com/ text/html 200 AAAA - - 1 0 x.warc.gz\n");
    let cdx_path = d.join("evil.cdx");
    std::fs::write(&cdx_path, &cdx).unwrap();
    // A file whose name holds an escape sequence, with a line outside any <doc>.
    let verticals = d.join("verticals");
    std::fs::create_dir(&verticals).unwrap();
    let evil_name = verticals.join(OsStr::from_bytes(b"x\x1b[31m.vert"));
    std::fs::write(
        &evil_name,
        "stray\n<doc id=\"1\">\n<p>\nword\n</p>\n</doc>\n",
    )
    .unwrap();
    let missing = d.join(OsStr::from_bytes(b"missing\x1b]0;t\x07.warc"));

    let cases: Vec<(&str, Vec<&OsStr>, i32)> = vec![
        (
            "warc index",
            vec![os("warc"), os("index"), warc_path.as_os_str()],
            1,
        ),
        (
            "warc index, file name",
            vec![os("warc"), os("index"), missing.as_os_str()],
            // A missing input is a usage error (issue 19), still escaped.
            2,
        ),
        (
            "warc dedup",
            vec![
                os("warc"),
                os("dedup"),
                os("-i"),
                warc_path.as_os_str(),
                os("-o"),
                d.join("out.warc").into_os_string().leak(),
            ],
            1,
        ),
        (
            "cdx dups",
            vec![os("cdx"), os("dups"), cdx_path.as_os_str()],
            1,
        ),
        (
            "dedup",
            vec![
                os("dedup"),
                os("-q"),
                os("-i"),
                verticals.as_os_str(),
                os("-o"),
                d.join("vout").into_os_string().leak(),
            ],
            1,
        ),
    ];
    for (what, args, code) in cases {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(code), "{what}: {}", stderr(&o));
        assert!(
            !has_control_bytes(&o.stderr),
            "{what}: raw control bytes on stderr: {:?}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("\\x1b"),
            "{what}: the escaped sequence is shown: {}",
            stderr(&o)
        );
    }
}

/// Whether `dir` exists (a failed run must not leave one it created).
fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// A fatal error (exit 2) for a full disk while writing `what`, with the OS error
/// said once.
fn assert_disk_full_once(p: &Output, what: &str) {
    let full = format!("{what}: No space left on device (os error 28)");
    common::assert_fails_saying(p, 2, &full);
    assert_eq!(count(&stderr(p), "(os error"), 1, "{}", stderr(p));
}

/// Issue 16 F5: an output that cannot be created or written names its file (or
/// stdout), with the OS error once, and leaves no temporary file or directory.
#[test]
fn io_errors_name_their_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cdx = d.join("a.cdx");
    std::fs::write(
        &cdx,
        "com,a)/ 20200101000000 http://a.com/ text/html 200 AAAA - - 1 0 x.warc.gz\n",
    )
    .unwrap();
    let warc = d.join("a.warc");
    std::fs::write(
        &warc,
        common::warc_response("http://a.org/", "2020-01-01T00:00:00Z", "x"),
    )
    .unwrap();
    let afile = d.join("afile");
    std::fs::write(&afile, "a file, not a directory").unwrap();
    for out in [afile.join("out.txt"), afile.join("sub/out.txt")] {
        let o = out.as_os_str();
        let runs: Vec<Vec<&OsStr>> = vec![
            vec![os("cdx"), os("dups"), cdx.as_os_str(), os("-o"), o],
            vec![os("cdx"), os("dates"), cdx.as_os_str(), os("-o"), o],
            vec![os("warc"), os("index"), warc.as_os_str(), os("-o"), o],
            vec![
                os("warc"),
                os("dedup"),
                os("-i"),
                warc.as_os_str(),
                os("-o"),
                o,
            ],
        ];
        for args in runs {
            let p = run(&args);
            let err = stderr(&p);
            assert_eq!(p.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(&*afile.to_string_lossy()), "{args:?}: {err}");
            assert_eq!(count(&err, "(os error"), 1, "{args:?}: {err}");
        }
    }
    assert_eq!(
        std::fs::read_dir(d).unwrap().count(),
        3,
        "nothing left behind"
    );

    // A full disk on stdout.
    let p = Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args([
            os("cdx"),
            os("dups"),
            os("--lines"),
            cdx.as_os_str(),
            cdx.as_os_str(),
        ])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_disk_full_once(&p, "stdout");
}

/// Issue 16 F5: a run that fails removes the output directories it created when they
/// are still empty (and only those).
#[test]
fn a_failed_run_leaves_no_empty_output_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = common::one_doc_input(d, "in");
    let missing_map = d.join("no-such.map");
    let without_servers = |out: &Path| common::dedup(&input, out, &["-s", common::s(&missing_map)]);
    let p = without_servers(&d.join("new/out"));
    assert_eq!(p.status.code(), Some(2), "{}", stderr(&p));
    assert!(
        !exists(&d.join("new")),
        "the run created new/out and left it"
    );
    // An output directory that existed before the run stays, empty or not.
    std::fs::create_dir(d.join("kept")).unwrap();
    let p = without_servers(&d.join("kept"));
    assert_eq!(p.status.code(), Some(2));
    assert!(exists(&d.join("kept")));
}

/// Issue 16 F5: a disk that fills up while the store's snapshot is written (injected
/// through `store::fault`: `snapshot-mid:1:enospc`) gives one message naming the
/// file, with the OS error once; no `store.snap.tmp` stays; the journal is kept, so
/// `--restore` then saves every key.
#[test]
fn disk_full_while_saving_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in");
    std::fs::create_dir(&input).unwrap();
    let doc = "<doc id=\"1\">\n<p>\nthis paragraph is long enough to be looked up in the store, surely\n</p>\n</doc>\n";
    std::fs::write(input.join("a.vert"), doc).unwrap();
    let store = d.join("store");
    let dedup = |out: &str, extra: &[&str], fault: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_webdedup"));
        c.args([os("dedup"), os("-q"), os("-i"), input.as_os_str(), os("-o")])
            .arg(d.join(out))
            .arg("--store")
            .arg(&store)
            .args(extra);
        if let Some(f) = fault {
            c.env("WEBDEDUP_FAULT", f);
        }
        c.output().unwrap()
    };
    let p = dedup("out1", &[], Some("snapshot-mid:1:enospc"));
    assert_disk_full_once(&p, "store.snap.tmp");
    assert!(!exists(&store.join("store.snap.tmp")));
    assert!(!exists(&store.join("store.snap")));
    assert!(exists(&store.join("journal")));
    // Once there is room again, --restore saves the run's keys: in a later run the
    // document is a duplicate.
    let p = dedup("out1", &["--restore"], None);
    assert!(p.status.success(), "{}", stderr(&p));
    assert!(exists(&store.join("store.snap")));
    let p = dedup("out2", &[], None);
    assert!(p.status.success(), "{}", stderr(&p));
    assert_eq!(
        std::fs::read_to_string(d.join("out2/a.vert.dedup")).unwrap(),
        ""
    );
}
