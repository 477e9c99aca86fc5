//! The one input layer as `webdedup dedup` uses it: files, directories and `-` in
//! any mix, non-regular files inside directories skipped (never waited on), a
//! signal stops a run waiting on a named pipe given explicitly.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const A_VERT: &str = "<doc id=\"a\" url=\"https://a.example/\" title=\"A\">\n<p>\nThe\nfirst\nparagraph\nof\ndocument\nA\nis\nlong\nenough\nto\nbe\nlooked\nup\nin\nthe\nstore\n</p>\n</doc>\n";
const B_VERT: &str = "<doc id=\"b\" url=\"https://b.example/\" title=\"B\">\n<p>\nDocument\nB\nhas\na\nparagraph\nof\nits\nown\nthat\nis\nlong\nenough\nto\nbe\nlooked\nup\n</p>\n</doc>\n";

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success(), "mkfifo {}", path.display());
}

/// Waits for `child` at most `limit` (a hang is a failure, not a stuck suite):
/// kills it and panics when it does not end.
fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run webdedup")
}

/// A named pipe `dir/pipe.vert` and a `dedup` run started on it, its outputs
/// in `dir/out`.
fn dedup_on_a_pipe(dir: &Path) -> (PathBuf, PathBuf, Child) {
    let fifo = dir.join("pipe.vert");
    mkfifo(&fifo);
    let out = dir.join("out");
    let child = spawn(&command_args("dedup", &fifo, &out, &[]));
    (fifo, out, child)
}

fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

#[test]
fn a_fifo_in_an_input_directory_is_skipped_with_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    write_file(&input.join("a.vert"), A_VERT);
    mkfifo(&input.join("b.vert"));
    fs::write(input.join("c.vert"), B_VERT).unwrap();
    let out = dir.path().join("out");
    let mut child = spawn(&command_args("dedup", &input, &out, &[]));
    let st = wait_bounded(&mut child, Duration::from_secs(60), "dedup over a FIFO");
    let err = stderr_of(&mut child);
    assert_eq!(
        st.code(),
        Some(1),
        "skipped input is an input problem: {err}"
    );
    assert!(
        err.contains("b.vert: not a regular file (FIFO): skipped"),
        "{err}"
    );
    assert_eq!(read(out.join("a.vert.dedup")), A_VERT);
    assert_eq!(read(out.join("c.vert.dedup")), B_VERT);
    assert!(!out.join("b.vert.dedup").exists());
}

#[test]
fn sigterm_stops_a_run_waiting_on_a_named_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out, mut child) = dedup_on_a_pipe(dir.path());
    // The output directory is made after the signal handlers are installed and
    // before any input is opened: from then on the run waits for a writer.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !out.exists() {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("the kill command");
    assert!(killed.success());
    let st = wait_bounded(&mut child, Duration::from_secs(60), "dedup after SIGTERM");
    let err = stderr_of(&mut child);
    assert_eq!(st.code(), Some(128 + 15), "{err}");
    assert!(!out.join("pipe.vert.dedup").exists(), "nothing was read");
}

#[test]
fn a_named_pipe_given_explicitly_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let (fifo, out, mut child) = dedup_on_a_pipe(dir.path());
    // A gzip stream through the pipe, written in two parts. The writer opens
    // without waiting (a reader must be there already), so a run that never
    // opens the pipe fails the test instead of hanging it.
    let data = gzip(format!("{A_VERT}{A_VERT}{B_VERT}").as_bytes());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut w = loop {
        use std::os::unix::fs::OpenOptionsExt;
        match fs::OpenOptions::new()
            .write(true)
            .custom_flags(0o4000) // O_NONBLOCK: ENXIO while no reader has it open
            .open(&fifo)
        {
            Ok(w) => break w,
            Err(_) if Instant::now() < deadline && child.try_wait().unwrap().is_none() => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!(
                "the run never opened the pipe: {e}; {}",
                stderr_of(&mut child)
            ),
        }
    };
    {
        use std::io::Write;
        w.write_all(&data[..data.len() / 2]).unwrap();
        w.flush().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        w.write_all(&data[data.len() / 2..]).unwrap();
    }
    drop(w);
    let st = wait_bounded(&mut child, Duration::from_secs(60), "dedup over a pipe");
    let err = stderr_of(&mut child);
    assert_eq!(st.code(), Some(0), "{err}");
    assert_eq!(
        read(out.join("pipe.vert.dedup")),
        format!("{A_VERT}{B_VERT}")
    );
}

#[test]
fn files_directories_and_stdin_in_any_mix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("crawl");
    write_file(&d.join("sub/x.vert"), A_VERT);
    let single = dir.path().join("single.vert.gz");
    fs::write(&single, gzip(format!("{A_VERT}{B_VERT}").as_bytes())).unwrap();
    let out = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args([
            "dedup",
            "-i",
            d.to_str().unwrap(),
            "-i",
            single.to_str().unwrap(),
            "-i",
            "-",
            "-o",
            out.to_str().unwrap(),
            "-q",
            "--dd",
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        // Compressed standard input is detected by content too.
        stdin
            .write_all(&zstd::encode_all(format!("{B_VERT}{A_VERT}").as_bytes(), 1).unwrap())
            .unwrap();
    }
    let st = wait_bounded(&mut child, Duration::from_secs(60), "dedup with stdin");
    let err = stderr_of(&mut child);
    assert_eq!(st.code(), Some(0), "{err}");
    // In the order given: the directory (sorted), the file, standard input.
    assert_eq!(read(out.join("sub/x.vert.dedup")), A_VERT);
    assert_eq!(read(out.join("single.vert.dedup")), B_VERT);
    assert_eq!(read(out.join("stdin.dedup")), "");
    assert_eq!(
        read(out.join("stdin.dedup.dd")),
        "<dd url=\"https://b.example/\" title=\"B\" status=\"D\"/>\n<dd url=\"https://a.example/\" title=\"A\" status=\"D\"/>\n"
    );
}

#[test]
fn a_missing_input_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = dedup(&dir.path().join("nope"), &dir.path().join("out"), &[]);
    assert_fails_saying(&o, 2, "nope");
}

#[test]
fn archive_commands_read_directories_where_a_stream_of_files_makes_sense() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("cdx");
    let line = |date: &str| {
        format!("org,example)/ {date} http://example.org/ text/html 200 AAAA - - 100 0 a.warc.gz\n")
    };
    write_file(&d.join("a.cdx"), line("20200101000000"));
    write_file(&d.join("b/c.cdx"), line("20210101000000"));
    mkfifo(&d.join("pipe.cdx"));
    let o = webdedup(&["cdx", "dups", s(&d)]);
    // The FIFO is reported and skipped (exit 1), the files are read in order.
    assert_fails_saying(&o, 1, "pipe.cdx: not a regular file (FIFO): skipped");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "org,example)/ sha1:AAAA 20210101000000\n"
    );
    // `warc dedup` reads directories too, as every archive command (issue 19): the
    // FIFO is reported and skipped, not the directory refused.
    let out = dir.path().join("out");
    let o = webdedup(&["warc", "dedup", s(&d), "-o", s(&out)]);
    assert_fails_saying(&o, 1, "pipe.cdx: not a regular file (FIFO): skipped");
    assert!(!stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

/// Every command takes its inputs one way: positional paths, `-i/--input` kept as
/// the older form; both may be mixed, and the inputs keep the order given (the
/// first copy of a document is the one kept).
#[test]
fn every_command_takes_inputs_positionally_with_i_as_an_alias() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.vert"), dir.path().join("b.vert"));
    fs::write(&a, A_VERT).unwrap();
    fs::write(&b, format!("{B_VERT}{A_VERT}")).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    // Positional: b first, so b keeps A and a's copy of it is dropped.
    for (cmd, o) in [("dedup", out("d1")), ("minhash", out("m1"))] {
        let r = webdedup(&[cmd, b, a, "-o", &o, "-q"]);
        assert_eq!(r.status.code(), Some(0), "{cmd}: {}", stderr(&r));
    }
    assert_eq!(read(dir.path().join("d1/a.vert.dedup")), "");
    assert_eq!(
        read(dir.path().join("d1/b.vert.dedup")),
        format!("{B_VERT}{A_VERT}")
    );
    // Mixed: `a -i b` reads a, then b.
    let r = webdedup(&["dedup", a, "-i", b, "-o", &out("d2"), "-q"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(read(dir.path().join("d2/a.vert.dedup")), A_VERT);
    assert_eq!(read(dir.path().join("d2/b.vert.dedup")), B_VERT);
    // And `-i b a`, the older form alone.
    let r = webdedup(&["dedup", "-i", b, a, "-o", &out("d3"), "-q"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(read(dir.path().join("d3/a.vert.dedup")), "");
    // The other commands that read documents: positional too.
    let r = webdedup(&[
        "batch",
        "run",
        b,
        a,
        "-w",
        &out("w"),
        "-o",
        &out("b1"),
        "-q",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(read(dir.path().join("b1/a.vert.dedup")), "");
    let r = webdedup(&["dedup", b, a, "-o", &out("f"), "-q", "-f"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let r = webdedup(&["check", b, a, "-o", &out("f"), "-q"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let r = webdedup(&["status", b, a, "-o", &out("d1")]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("2 finished"),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    // And the archive commands take `-i` as well as positional files.
    let cdx = dir.path().join("a.cdx");
    fs::write(
        &cdx,
        "org,example)/ 20200101000000 http://example.org/ text/html 200 AAAA - - 100 0 a.warc.gz\n",
    )
    .unwrap();
    let r = webdedup(&["cdx", "dates", "-i", cdx.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // No inputs at all: a usage error naming the positional form.
    let r = webdedup(&["dedup", "-o", &out("none")]);
    assert_fails_saying(&r, 2, "<PATH>");
}
