//! Issue 19: what every command must do alike, through the real binary: never two
//! inputs to one output, quiet exit on a closed pipe, exit statuses (missing
//! inputs, nothing to do, usage errors), and the small answers that were wrong
//! (`status`, `distribute --knot`, `batch publish`).

mod common;

use common::{
    assert_fails_saying, assert_says, batch, batch_run_args, ok, one_doc_input, owned, s, stderr,
    warc_response, webdedup,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Two crawls with the same file name (`ca/crawl.warc`, `cb/crawl.warc`): each
/// gets its own output, below the inputs' common directory, and the revisit of
/// the second names a record that is still in the outputs.
#[test]
fn warc_dedup_keeps_inputs_with_one_name_apart() {
    let dir = tempfile::tempdir().unwrap();
    let body = "the same page, long enough that a revisit record is smaller than it ".repeat(20);
    for (sub, date) in [
        ("ca", "2024-01-01T00:00:00Z"),
        ("cb", "2024-02-01T00:00:00Z"),
    ] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        std::fs::write(
            dir.path().join(sub).join("crawl.warc"),
            warc_response("http://example.org/", date, &body),
        )
        .unwrap();
    }
    let out = dir.path().join("out");
    let o = webdedup(&[
        "warc",
        "dedup",
        "-i",
        s(&dir.path().join("ca/crawl.warc")),
        s(&dir.path().join("cb/crawl.warc")),
        "-o",
        s(&out),
    ]);
    ok(&o);
    let first = std::fs::read(out.join("ca/crawl.warc")).expect("first output");
    let second = std::fs::read(out.join("cb/crawl.warc")).expect("second output");
    assert_eq!(
        first,
        warc_response("http://example.org/", "2024-01-01T00:00:00Z", &body)
    );
    assert!(String::from_utf8_lossy(&second).contains("WARC-Type: revisit"));
    assert!(!out.join("crawl.warc").exists());
}

/// `dir/name`: a WARC of one response, for the checks of refusals.
fn one_page_warc(dir: &Path, name: &str) -> PathBuf {
    let warc = dir.join(name);
    let page = warc_response("http://example.org/", "2024-01-01T00:00:00Z", "x");
    std::fs::write(&warc, page).unwrap();
    warc
}

/// One file given twice would be written twice to one place: refused before
/// anything is written, naming both inputs and the output.
#[test]
fn warc_dedup_refuses_a_file_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let input = one_page_warc(dir.path(), "crawl.warc");
    let out = dir.path().join("out");
    let o = webdedup(&["warc", "dedup", "-i", s(&input), s(&input), "-o", s(&out)]);
    assert_fails_saying(&o, 2, &format!("inputs {} and {}", s(&input), s(&input)));
    assert_says(&o, s(&out.join("crawl.warc")));
    assert!(!out.exists(), "nothing may be written");
}

/// `similar --dedup` follows the same rule (and its message).
#[test]
fn similar_dedup_refuses_a_file_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.txt");
    std::fs::write(&input, "one document here\nanother document there\n").unwrap();
    let out = dir.path().join("out");
    let o = webdedup(&[
        "similar",
        "--dedup",
        "--output-dir",
        s(&out),
        "--input-format",
        "lines",
        s(&input),
        s(&input),
    ]);
    assert_fails_saying(&o, 2, "would both be written to");
}

/// `webdedup ... | head -1`: the reader went away; exit quietly with status 0, as
/// ripgrep and the Unix tools do, whichever command writes to stdout.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut cdx = String::new();
    for i in 0..20_000 {
        cdx.push_str(&format!(
            "org,example)/p{} 20240101000000 http://example.org/p{} {} 200 AAAA{} - - 100 {} crawl.warc.gz\n",
            i % 1000,
            i % 1000,
            if i % 3 == 0 { "warc/revisit" } else { "text/html" },
            i % 7,
            i
        ));
    }
    let big = dir.path().join("big.cdx");
    std::fs::write(&big, cdx).unwrap();
    let servers = dir.path().join("servers");
    std::fs::write(&servers, "127.0.0.1:4001\n127.0.0.1:4002\n").unwrap();
    let warc = dir.path().join("many.warc");
    let records: Vec<u8> = (0..3000)
        .flat_map(|i| {
            warc_response(
                &format!("http://example.org/{i}"),
                "2024-01-01T00:00:00Z",
                "x",
            )
        })
        .collect();
    std::fs::write(&warc, records).unwrap();
    let map = dir.path().join("hashmap.conf");
    let o = webdedup(&["distribute", "-s", s(&servers), "-o", s(&map)]);
    ok(&o);
    let cases: Vec<Vec<&str>> = vec![
        vec!["warc", "index", s(&warc)],
        vec!["similar", "--input-format", "lines", s(&big)],
        vec!["status", "-m", s(&map), "--json", "-"],
        vec!["cdx", "dups", s(&big)],
        vec!["cdx", "revisits", s(&big)],
        vec!["cdx", "dates", s(&big)],
        vec!["simhash", "--input-format", "lines", s(&big)],
        vec!["distribute", "-s", s(&servers)],
    ];
    for args in cases {
        // A pipe whose reader is gone before the command starts: every write to
        // stdout fails with EPIPE, whatever the output's size.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_webdedup"))
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("Broken pipe") && !err.contains("error") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// A missing input is a usage error (status 2) in every command, and no output is
/// created for a run that cannot start.
#[test]
fn a_missing_input_is_status_2_everywhere_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let nothere = dir.path().join("nothere");
    let out = dir.path().join("m.tsv");
    let outdir = dir.path().join("outdir");
    let n = s(&nothere);
    let cases: Vec<Vec<&str>> = vec![
        vec!["simhash", n, "-o", s(&out)],
        vec!["similar", n, "-o", s(&out)],
        vec!["cdx", "dups", n, "-o", s(&out)],
        vec!["cdx", "revisits", n, "-o", s(&out)],
        vec!["cdx", "dates", n, "-o", s(&out)],
        vec!["warc", "index", n, "-o", s(&out)],
        vec!["warc", "dedup", n, "-o", s(&outdir)],
        vec!["dedup", "-i", n, "-o", s(&outdir)],
        vec!["batch", "run", "-i", n, "-o", s(&outdir), "-w", s(&outdir)],
    ];
    for args in cases {
        let o = webdedup(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(n),
            "{args:?} names the file: {}",
            stderr(&o)
        );
        assert!(!out.exists(), "{args:?} created {}", out.display());
        assert!(!outdir.exists(), "{args:?} created {}", outdir.display());
    }
}

/// An input directory without input files: nothing to do is not success.
#[test]
fn an_empty_input_directory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("out");
    let work = dir.path().join("work");
    // The output directory of an earlier run (for check and status).
    let done = dir.path().join("done");
    std::fs::create_dir(&done).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["dedup", "-i", s(&empty), "-o", s(&out)],
        [vec!["batch"], batch_run_args(&empty, &out, &work, &[])].concat(),
        vec!["check", "-i", s(&empty), "-o", s(&done)],
        vec!["status", "-i", s(&empty), "-o", s(&done)],
        vec!["simhash", s(&empty), "-o", s(&out)],
        vec!["similar", s(&empty), "-o", s(&out)],
        vec!["cdx", "dups", s(&empty), "-o", s(&out)],
        vec!["cdx", "revisits", s(&empty), "-o", s(&out)],
        vec!["cdx", "dates", s(&empty), "-o", s(&out)],
        vec!["cdx", "dates", "--merge", s(&empty), "-o", s(&out)],
        vec!["warc", "index", s(&empty), "-o", s(&out)],
        vec!["warc", "dedup", s(&empty), "-o", s(&out)],
    ];
    for args in cases {
        let o = webdedup(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("no input files"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!out.exists(), "{args:?}");
    }
}

/// Usage errors: nothing to read, an unknown record type, an option that would be
/// ignored.
#[test]
fn usage_errors_are_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let warc = one_page_warc(dir.path(), "a.warc");
    let docs = dir.path().join("docs.txt");
    std::fs::write(&docs, "one document\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["cdx", "dates"], "FILES"),
        (
            vec!["warc", "index", "--records", "bogus", s(&warc)],
            "bogus",
        ),
        (
            vec!["similar", "--output-dir", s(dir.path()), s(&docs)],
            "--dedup",
        ),
    ];
    for (args, says) in cases {
        let o = webdedup(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// The KNOT layout has one port for every server: a map whose servers listen on
/// different ports cannot be written in it.
#[test]
fn distribute_knot_refuses_servers_on_different_ports() {
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers");
    std::fs::write(&servers, "10.0.0.1:1234\n10.0.0.2:1235\n").unwrap();
    let out = dir.path().join("hashmap.knot");
    let o = webdedup(&["distribute", "-s", s(&servers), "--knot", "-o", s(&out)]);
    assert_fails_saying(&o, 2, "10.0.0.2:1235");
    assert_says(&o, "one port");
    assert!(!out.exists());
    // One port: fine.
    std::fs::write(&servers, "10.0.0.1:1234\n10.0.0.2:1234\n").unwrap();
    let o = webdedup(&["distribute", "-s", s(&servers), "--knot", "-o", s(&out)]);
    ok(&o);
}

/// `status` tells a server that is not running (`stopped`) from one that runs but
/// wants the token (`auth required`); neither is called `crashed`.
#[test]
fn status_tells_stopped_and_auth_required_apart() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let servers = dir.path().join("servers");
    std::fs::write(&servers, format!("127.0.0.1:{port}\n")).unwrap();
    let map = dir.path().join("hashmap.conf");
    let o = webdedup(&["distribute", "-s", s(&servers), "-o", s(&map)]);
    ok(&o);
    let token = dir.path().join("token");
    std::fs::write(&token, "a shared secret of more than 16 bytes\n").unwrap();
    let status = |with_token: bool| {
        let mut args = vec!["status", "-m", s(&map)];
        if with_token {
            args.extend(["--auth-token-file", s(&token)]);
        }
        let o = webdedup(&args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, out) = status(false);
    assert_eq!(code, Some(1));
    assert!(out.contains("stopped") && !out.contains("crashed"), "{out}");

    let ready = dir.path().join("ready");
    let snap = dir.path().join("s.snap");
    let mut server = Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args([
            "server",
            "-m",
            s(&map),
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args([
            "--auth-token-file",
            s(&token),
            "-o",
            s(&snap),
            "--ready-file",
            s(&ready),
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !ready.exists() {
        assert!(server.try_wait().unwrap().is_none(), "the server exited");
        assert!(started.elapsed().as_secs() < 60, "the server did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, out) = status(false);
    assert_eq!(code, Some(1));
    assert!(
        out.contains("auth required") && out.contains("--auth-token-file"),
        "{out}"
    );
    let (code, out) = status(true);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ready"), "{out}");

    // A clean stop (SIGTERM: it saves and exits 0).
    let ok = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    assert!(server.wait().unwrap().success());
    let (code, out) = status(true);
    assert_eq!(code, Some(1));
    assert!(out.contains("stopped") && !out.contains("crashed"), "{out}");
}

/// `batch publish` after `batch run -t 2 --store`: the work directory knows its task
/// count, so publish needs no `--task-count` (and one that differs is not an error).
#[test]
fn batch_publish_reads_the_task_count_from_the_work_directory() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::sample_dir();
    let (work, out, store) = (
        dir.path().join("work"),
        dir.path().join("out"),
        dir.path().join("hashes"),
    );
    let o = batch(
        &batch_run_args(&input, &out, &work, &["-t", "2", "--store", s(&store)]),
        None,
    );
    ok(&o);
    let snap = std::fs::read(store.join("store.snap")).unwrap();
    for extra in [&[][..], &["--task-count", "4"][..]] {
        let mut args = vec![
            "batch",
            "publish",
            "-i",
            s(&input),
            "-w",
            s(&work),
            "--store",
            s(&store),
        ];
        args.extend_from_slice(extra);
        let o = webdedup(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(store.join("store.snap")).unwrap(),
            snap,
            "idempotent"
        );
    }
}

/// The inputs of the checks of every command, made in `d`: a WARC with a page and
/// its revisit (`crawl.warc`), plain documents one a line (`docs.txt`) and the
/// WARC's CDXJ index (`crawl.cdxj`, written by `warc index`).
fn capture_inputs(d: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let body = "a page long enough that a revisit record is smaller than it ".repeat(30);
    let mut warc = warc_response("http://example.org/", "2024-01-01T00:00:00Z", &body);
    warc.extend(warc_response(
        "http://example.org/",
        "2024-02-01T00:00:00Z",
        &body,
    ));
    let (warc_in, docs, cdx) = (
        d.join("crawl.warc"),
        d.join("docs.txt"),
        d.join("crawl.cdxj"),
    );
    std::fs::write(&warc_in, &warc).unwrap();
    std::fs::write(&docs, "one document here\nanother one there\n").unwrap();
    let o = webdedup(&["warc", "index", s(&warc_in), "-o", s(&cdx), "-q"]);
    ok(&o);
    (warc_in, docs, cdx)
}

/// `-q`, `--json FILE|-` and the summary line mean the same in every command
/// (docs/cli.md): without `-q` one `webdedup CMD: ...` line on stderr (counts with
/// thousands separators, plurals right); with `-q` nothing there; `--json FILE`
/// holds the same figures with the command and its status; `--json -` where the
/// command's output goes (standard output) is refused before anything runs.
#[test]
fn summaries_quiet_and_json_are_one_convention() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (warc_in, docs, cdx) = capture_inputs(d);
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "simhash",
            owned(&[
                "simhash",
                "--input-format",
                "lines",
                s(&docs),
                "-o",
                s(&d.join("fp.tsv")),
            ]),
        ),
        (
            "cdx dups",
            owned(&["cdx", "dups", s(&cdx), "-o", s(&d.join("dups.txt"))]),
        ),
        (
            "warc index",
            owned(&["warc", "index", s(&warc_in), "-o", s(&d.join("i.cdxj"))]),
        ),
        (
            "warc dedup",
            owned(&[
                "warc",
                "dedup",
                "-i",
                s(&warc_in),
                "-o",
                s(&d.join("out.warc")),
            ]),
        ),
    ];
    for (name, args) in &cases {
        let args: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
        let loud = webdedup(&args);
        assert_eq!(loud.status.code(), Some(0), "{name}: {}", stderr(&loud));
        let err = stderr(&loud);
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("webdedup {name}: ")))
            .unwrap_or_else(|| panic!("{name}: no summary line in {err:?}"));
        assert!(
            line.contains("1 file") || *name == "cdx dups",
            "{name}: {line}"
        );
        assert!(
            !line.contains("1 files") && !line.contains("1 records"),
            "{name}: {line}"
        );

        let json = d.join(format!("{}.json", name.replace(' ', "-")));
        let quiet = webdedup(&[&args[..], &["-q", "--json", s(&json)]].concat());
        assert_eq!(quiet.status.code(), Some(0), "{name}: {}", stderr(&quiet));
        assert_eq!(
            stderr(&quiet),
            "",
            "{name}: -q prints nothing when all is well"
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["command"], *name);
        assert_eq!(v["status"], 0);
    }
    // The revisit of the second capture saves bytes: in thousands, with "saved".
    let o = webdedup(&[
        "warc",
        "dedup",
        "-i",
        s(&warc_in),
        "-o",
        s(&d.join("o2.warc")),
    ]);
    let err = stderr(&o);
    assert!(err.contains(" saved, "), "{err}");
    let v = std::fs::metadata(&warc_in).unwrap().len();
    let with_commas = format!("{},{:03} -> ", v / 1000, v % 1000);
    assert!(err.contains(&with_commas), "{with_commas} not in {err}");

    // --json - where the output goes: refused, nothing written.
    let out = d.join("never.txt");
    let o = webdedup(&["cdx", "dups", s(&cdx), "--json", "-"]);
    assert_fails_saying(&o, 2, "--json -");
    let o = webdedup(&["cdx", "dups", s(&cdx), "-o", s(&out), "--json", "-"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["command"], "cdx dups");
}

/// One rule for the near-mode limits: a `--ngram` that `dedup` refuses is refused
/// by `check` too (it was clamped there silently), naming the flag.
#[test]
fn check_refuses_the_ngram_dedup_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let input = one_doc_input(dir.path(), "in");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    for cmd in ["dedup", "check"] {
        let o = webdedup(&[cmd, s(&input), "-o", s(&out), "--near", "--ngram", "0"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        assert_says(&o, "--ngram must be between 1 and 64");
    }
}

/// `warc dedup` takes its inputs as every archive command does: positional files
/// or directories (searched recursively); `-i/--input`, its older form, still works.
#[test]
fn warc_dedup_takes_inputs_as_the_other_archive_commands() {
    let dir = tempfile::tempdir().unwrap();
    let body = "the same page, long enough that a revisit record is smaller than it ".repeat(20);
    let crawls = dir.path().join("crawls");
    for (sub, date) in [
        ("2024-01", "2024-01-01T00:00:00Z"),
        ("2024-02", "2024-02-01T00:00:00Z"),
    ] {
        std::fs::create_dir_all(crawls.join(sub)).unwrap();
        std::fs::write(
            crawls.join(sub).join(format!("{sub}.warc")),
            warc_response("http://example.org/", date, &body),
        )
        .unwrap();
    }
    let first = warc_response("http://example.org/", "2024-01-01T00:00:00Z", &body);
    // A directory, positional.
    let out = dir.path().join("out-dir");
    let o = webdedup(&["warc", "dedup", s(&crawls), "-o", s(&out)]);
    ok(&o);
    assert_eq!(std::fs::read(out.join("2024-01.warc")).unwrap(), first);
    let second = std::fs::read(out.join("2024-02.warc")).unwrap();
    assert!(String::from_utf8_lossy(&second).contains("WARC-Type: revisit"));
    // Files, positional, and the same files with the older -i: the same outputs.
    let a = crawls.join("2024-01/2024-01.warc");
    let b = crawls.join("2024-02/2024-02.warc");
    for (name, args) in [
        ("out-files", vec!["warc", "dedup", s(&a), s(&b)]),
        ("out-i", vec!["warc", "dedup", "-i", s(&a), s(&b)]),
    ] {
        let out2 = dir.path().join(name);
        let mut args = args.clone();
        args.extend(["-o", s(&out2)]);
        let o = webdedup(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read(out2.join("2024-01.warc")).unwrap(), first);
        assert_eq!(std::fs::read(out2.join("2024-02.warc")).unwrap(), second);
    }
    // -i is the older form: not shown in --help.
    let help = String::from_utf8_lossy(&webdedup(&["warc", "dedup", "--help"]).stdout).into_owned();
    assert!(
        help.contains("[FILES]...") || help.contains("<FILES>..."),
        "{help}"
    );
    assert!(!help.contains("--input"), "{help}");
}

/// A field path with an empty part is refused by every document command with the
/// message the Python module gives (one library function checks it:
/// `webdedup_formats::read::ReadChoices::settings`); it was accepted silently and
/// matched nothing.
#[test]
fn a_bad_field_path_is_refused_alike_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("a.jsonl"), "{\"text\":\"word\"}\n").unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let work = dir.path().join("work");
    let fps = dir.path().join("fps.tsv");
    let cases: Vec<Vec<&str>> = vec![
        vec!["dedup", "-i", s(&input), "-o", s(&out)],
        vec!["check", "-i", s(&input), "-o", s(&out)],
        [vec!["batch"], batch_run_args(&input, &out, &work, &[])].concat(),
        vec!["simhash", "-i", s(&input), "-o", s(&fps)],
    ];
    for mut args in cases {
        args.extend(["--text-field", "body..text"]);
        let o = webdedup(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o).trim_end(),
            "webdedup: error: --text-field \"body..text\": a field name or a dotted path (metadata.url)",
            "{args:?}"
        );
    }
}

/// Every command that can run for seconds draws the shared progress bar (bytes of
/// the inputs, rate, ETA) when asked, not only `dedup`: `--progress always` draws
/// it into a log too; without a terminal and without `always`, nothing is drawn.
#[test]
fn every_long_command_draws_the_progress_bar() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (warc_in, docs, cdx) = capture_inputs(d);
    let vert = d.join("vert");
    std::fs::create_dir(&vert).unwrap();
    std::fs::write(
        vert.join("a.vert"),
        "<doc url=\"u\" title=\"t\">\n<p>\nsome words of a paragraph\n</p>\n</doc>\n",
    )
    .unwrap();
    let out = |name: &str| d.join(name);
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "fingerprinting",
            owned(&[
                "simhash",
                s(&docs),
                "--input-format",
                "lines",
                "-o",
                s(&out("f.tsv")),
            ]),
        ),
        (
            "comparing",
            owned(&[
                "similar",
                s(&docs),
                "--input-format",
                "lines",
                "-o",
                s(&out("p.tsv")),
            ]),
        ),
        (
            "reading indexes",
            owned(&["cdx", "dups", s(&cdx), "-o", s(&out("d.txt"))]),
        ),
        (
            "reading indexes",
            owned(&["cdx", "revisits", s(&cdx), "-o", s(&out("r.txt"))]),
        ),
        (
            "reading indexes",
            owned(&["cdx", "dates", s(&cdx), "-o", s(&out("t.txt"))]),
        ),
        (
            "indexing",
            owned(&["warc", "index", s(&warc_in), "-o", s(&out("i.cdxj"))]),
        ),
        (
            "deduplicating",
            owned(&["warc", "dedup", s(&warc_in), "-o", s(&out("w.warc"))]),
        ),
        (
            "batch run",
            owned(&[
                "batch",
                "run",
                "-i",
                s(&vert),
                "-o",
                s(&out("bo")),
                "-w",
                s(&out("bw")),
            ]),
        ),
    ];
    for (what, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut always = args.clone();
        always.extend(["--progress", "always"]);
        let o = webdedup(&always);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{always:?}: {err}");
        assert!(
            err.lines()
                .any(|l| l.contains("ETA") && l.contains(what) && l.contains('[')),
            "{always:?} drew no progress bar: {err}"
        );
        // Not a terminal, not asked: no bar (the summary only). Outputs of the
        // first run are replaced; work directories are fresh.
        let _ = std::fs::remove_dir_all(out("bo"));
        let _ = std::fs::remove_dir_all(out("bw"));
        let o = webdedup(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("ETA"), "{args:?}: {}", stderr(&o));
    }
}

/// The `--help` entry of `flag` (its lines up to the next option), or panics.
fn help_entry(help: &str, flag: &str) -> String {
    let starts = |l: &str| {
        let t = l.trim_start();
        t.starts_with("--") || (t.starts_with('-') && t.get(2..4) == Some(", "))
    };
    let lines: Vec<&str> = help.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            starts(l) && l.contains(&format!("--{flag} "))
                || l.trim_end().ends_with(&format!("--{flag}"))
        })
        .unwrap_or_else(|| panic!("no --{flag} in\n{help}"));
    let end = lines[at + 1..]
        .iter()
        .position(|l| starts(l))
        .map_or(lines.len(), |e| at + 1 + e);
    lines[at..end].join("\n")
}

/// A flag several commands take is defined once: the same help and default
/// everywhere (batch's `--doc-check` had drifted: it listed `all` and
/// `url-title`, not `none`).
#[test]
fn a_shared_flag_has_one_help_and_default_everywhere() {
    let help = |args: &[&str]| {
        let mut a = args.to_vec();
        a.push("--help");
        String::from_utf8_lossy(&webdedup(&a).stdout).into_owned()
    };
    let (dedup, batch, check) = (help(&["dedup"]), help(&["batch", "run"]), help(&["check"]));
    for flag in [
        "normalize",
        "max-line-bytes",
        "min-para-chars",
        "doc-check",
        "chunk-bytes",
        "blocks",
        "compress",
        "dd",
        "output",
        "substr[=<K,W[,B]>]",
        "feedback",
        "mark",
    ] {
        assert_eq!(
            help_entry(&dedup, flag),
            help_entry(&batch, flag),
            "--{flag}"
        );
    }
    for flag in ["normalize", "max-line-bytes", "ngram", "threshold"] {
        assert_eq!(
            help_entry(&dedup, flag),
            help_entry(&check, flag),
            "--{flag}"
        );
    }
    assert!(help_entry(&batch, "doc-check").contains("`none`"));
}

/// `dedup`, `minhash` and `check` show their outcome as every command does: one
/// summary line with plurals right and the real thread count, only the parts that
/// apply (MinHash judges whole documents: no paragraph or URL+title parts), and
/// `--json` one object with `command` and `status`.
#[test]
fn dedup_minhash_and_check_summaries_follow_the_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let doc = "<doc id=\"a\" url=\"https://a.example/\" title=\"A\">\n<p>\nThe\nfirst\nparagraph\nof\ndocument\nA\nis\nlong\nenough\nto\nbe\nlooked\nup\nin\nthe\nstore\n</p>\n</doc>\n";
    let input = dir.path().join("a.vert");
    std::fs::write(&input, doc.repeat(2)).unwrap();
    let out = |n: &str| dir.path().join(n);
    let o = webdedup(&["dedup", s(&input), "-o", s(&out("d")), "-t", "0", "-f"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with("webdedup dedup: 1 file, 2 documents read, 1 kept"),
        "{err}"
    );
    assert!(
        err.contains("(1 duplicate, 0 with every paragraph seen)"),
        "{err}"
    );
    // The ordered step's share of the CPU, then the last part: how to see the run
    // (feedback mode's .dropped files).
    let ordered = err.find(" thread, ordered step ").expect(&err);
    let see_it = err.find(", see it: webdedup report ").expect(&err);
    assert!(ordered < see_it, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let o = webdedup(&["minhash", s(&input), "-o", s(&out("m")), "--json", "-"]);
    let err = stderr(&o);
    assert!(
        err.starts_with("webdedup minhash: 1 file, 2 documents read"),
        "{err}"
    );
    assert!(
        !err.contains("paragraph") && !err.contains("URL+title"),
        "{err}"
    );
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (json["command"].as_str(), json["status"].as_i64()),
        (Some("minhash"), Some(0))
    );
    assert_eq!(json["documents_dropped"], 1);
    let o = webdedup(&["check", s(&input), "-o", s(&out("d")), "--json", "-"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.starts_with("webdedup check: "), "{err}");
    assert!(err.contains("0 mismatches"), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (json["command"].as_str(), json["status"].as_i64()),
        (Some("check"), Some(0))
    );
}
