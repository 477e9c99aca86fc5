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

/// A WARC response record (uncompressed).
fn response(uri: &str, date: &str, body: &str) -> Vec<u8> {
    let block = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{body}");
    format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n\
         WARC-Record-ID: <urn:uuid:{uri}>\r\nContent-Type: application/http; msgtype=response\r\n\
         Content-Length: {}\r\n\r\n{block}\r\n\r\n",
        block.len()
    )
    .into_bytes()
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
    warc.extend(response("http://a.org/", "2020-01-01T00:00:00Z", "hello"));
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
            1,
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
