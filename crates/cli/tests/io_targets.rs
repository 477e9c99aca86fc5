//! Issue 27, inputs and outputs through the real binary: `-o` onto a device or a
//! FIFO is written in place (never replaced by a regular file).

mod common;

use common::{stderr, webdedup};
use std::ffi::CString;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// A WARC response record (uncompressed).
fn response(uri: &str, date: &str, body: &str) -> String {
    let block = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{body}");
    format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n\
         WARC-Record-ID: <urn:uuid:{uri}-{date}>\r\nContent-Type: application/http; msgtype=response\r\n\
         Content-Length: {}\r\n\r\n{block}\r\n\r\n",
        block.len()
    )
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
        response("http://a.org/", "2020-01-01T00:00:00Z", &body)
            + &response("http://a.org/", "2020-02-01T00:00:00Z", &body),
    )
    .unwrap();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("simhash", [v(&["simhash", "-q"]), vec![s(&jsonl)]].concat()),
        ("similar", [v(&["similar", "-q"]), vec![s(&jsonl)]].concat()),
        ("cdx dups", [v(&["cdx", "dups", "-q"]), vec![s(&cdx)]].concat()),
        (
            "cdx revisits",
            [v(&["cdx", "revisits", "-q"]), vec![s(&cdx)]].concat(),
        ),
        ("cdx dates", [v(&["cdx", "dates", "-q"]), vec![s(&cdx)]].concat()),
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
    if unsafe { libc::mknod(c_path(&null).as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) }
        != 0
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
