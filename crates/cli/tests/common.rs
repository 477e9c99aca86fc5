//! Helpers shared by the CLI tests: run the real `webdedup` binary.

#![allow(dead_code)]

#[path = "common/corpus_formats.rs"]
pub mod corpus_formats;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn webdedup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(args)
        .output()
        .expect("run webdedup")
}

/// Runs `webdedup args` with the fault point `fault` armed (`WEBDEDUP_FAULT`), or
/// with none (the variable removed, whatever the test's environment holds).
pub fn webdedup_fault<S: AsRef<OsStr>>(args: &[S], fault: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_webdedup"));
    c.args(args);
    match fault {
        Some(f) => c.env("WEBDEDUP_FAULT", f),
        None => c.env_remove("WEBDEDUP_FAULT"),
    };
    c.output().expect("run webdedup")
}

/// `webdedup batch ARGS...` with the fault point `fault` armed, or none.
pub fn batch(args: &[&str], fault: Option<&str>) -> Output {
    webdedup_fault(&[&["batch"], args].concat(), fault)
}

/// One task of a simulated Slurm array (`batch ARGS...`): killed first at `fault`
/// when one is given (it must be reached), then run to its end, then launched
/// again, which a finished task skips.
pub fn batch_task_killed_and_relaunched(args: &[&str], fault: Option<&str>, what: &str) {
    if let Some(fault) = fault {
        let o = batch(args, Some(fault));
        assert!(
            !o.status.success() && stderr(&o).contains("fault injection: abort at"),
            "{what}: the fault {fault} was not reached: {}",
            stderr(&o)
        );
    }
    let o = batch(args, None);
    assert!(o.status.success(), "{what}: {}", stderr(&o));
    let again = batch(args, None);
    assert!(
        again.status.success() && stderr(&again).contains("already finished"),
        "{}",
        stderr(&again)
    );
}

/// `run -i INPUT -o OUTPUT -w WORK EXTRA...`: the arguments of [`batch`] for a
/// whole batch run.
pub fn batch_run_args<'a>(
    input: &'a Path,
    output: &'a Path,
    work: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    io_args("run", input, output, &[&["-w", s(work)], extra].concat())
}

/// Asserts that a run with `fault` armed ended as the fault says: `stop:N` is a
/// clean stop (exit 3), any other an abort at the fault point (like kill -9).
pub fn assert_ended_by(o: &Output, fault: &str, what: &str) {
    if fault.starts_with("stop") {
        assert_eq!(o.status.code(), Some(3), "{what} {fault}: {}", stderr(o));
    } else {
        assert!(
            stderr(o).contains("fault injection: abort at"),
            "{what} {fault}: {}",
            stderr(o)
        );
    }
}

/// Asserts that a run succeeded, showing its status and stderr when not.
pub fn ok(o: &Output) {
    assert!(o.status.success(), "{:?}: {}", o.status, stderr(o));
}

/// Asserts that a run's stderr says `says` (whatever its exit), showing it when not.
pub fn assert_says(o: &Output, says: &str) {
    let err = stderr(o);
    assert!(err.contains(says), "expected {says:?} in: {err}");
}

/// Asserts that a run ended with exit `code` and that its stderr says `says`:
/// how every refusal (exit 2) and input problem (exit 1) is checked.
pub fn assert_fails_saying(o: &Output, code: i32, says: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    assert_says(o, says);
}

/// `dir/name/a.vert`, one document of one paragraph of one word: the smallest
/// input a command accepts. Returns the directory.
pub fn one_doc_input(dir: &Path, name: &str) -> PathBuf {
    let input = dir.join(name);
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("a.vert"),
        "<doc id=\"1\">\n<p>\nword\n</p>\n</doc>\n",
    )
    .unwrap();
    input
}

/// The crash-and-restore check of a run with a store: `args(out, store)` is the
/// run. A reference runs unharmed on two threads; then, for each fault, a run
/// with it armed (a crash at a fault point, like kill -9, or `stop:N`, a clean
/// stop, like SIGTERM) ends as the fault says, and `-r` restores it to the
/// reference's outputs and store, byte for byte. Directories go under `dir`,
/// named after `what`.
pub fn assert_restores_after_faults(
    dir: &Path,
    what: &str,
    faults: &[&str],
    args: impl Fn(&Path, &Path) -> Vec<String>,
) {
    let reference = dir.join(format!("{what}-ref"));
    let ref_store = dir.join(format!("{what}-ref-store"));
    let mut first = args(&reference, &ref_store);
    first.extend(["-t".into(), "2".into()]);
    ok(&webdedup_fault(&first, None));
    for fault in faults {
        let out = dir.join(format!("{what}-out-{fault}"));
        let store = dir.join(format!("{what}-store-{fault}"));
        let mut args = args(&out, &store);
        assert_ended_by(&webdedup_fault(&args, Some(fault)), fault, what);
        args.push("-r".into());
        ok(&webdedup_fault(&args, None));
        assert!(
            tree(&out) == tree(&reference),
            "{what} {fault}: outputs differ"
        );
        assert_same_store(&store, &ref_store, &format!("{what} {fault}"));
    }
}

/// Arguments as owned strings (for tables of runs).
pub fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// A path as a command-line argument (the tests' paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `webdedup COMMAND -i INPUT -o OUTPUT -q EXTRA...` as arguments.
pub fn command_args<'a>(
    command: &'a str,
    input: &'a Path,
    output: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    io_args(command, input, output, &[&["-q"], extra].concat())
}

/// `COMMAND -i INPUT -o OUTPUT EXTRA...`.
fn io_args<'a>(
    command: &'a str,
    input: &'a Path,
    output: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    [&[command, "-i", s(input), "-o", s(output)], extra].concat()
}

/// MinHash's dropped documents -> their originals, from every `.pairs` file of a run.
pub fn drops(out: &Path) -> std::collections::BTreeMap<String, String> {
    let mut m = std::collections::BTreeMap::new();
    for (name, bytes) in outputs(out) {
        if name.ends_with(".pairs") {
            for line in String::from_utf8(bytes).unwrap().lines() {
                let f: Vec<&str> = line.split('\t').collect();
                m.insert(f[0].to_string(), f[1].to_string());
            }
        }
    }
    m
}

/// `webdedup minhash` on `input` with `--store STORE` and `extra`.
pub fn minhash_with_store(input: &Path, output: &Path, store: &Path, extra: &[&str]) -> Output {
    let args = [&["--store", s(store)], extra].concat();
    webdedup(&command_args("minhash", input, output, &args))
}

/// A `webdedup minhash` store (in `dir`) made with the settings `old` keeps
/// working with them and refuses a run with `new` (exit 2, naming both:
/// `old_says` and `new_says` as the settings line writes them), and the other way
/// round.
pub fn assert_minhash_store_refuses_other_settings(
    input: &Path,
    dir: &Path,
    (old, old_says): (&[&str], &str),
    (new, new_says): (&[&str], &str),
) {
    let store = dir.join("store");
    let run =
        |name: &str, extra: &[&str]| minhash_with_store(input, &dir.join(name), &store, extra);
    ok(&run("old-1", old));
    ok(&run("old-2", old));
    let o = run("new-on-old", new);
    assert_fails_saying(&o, 2, old_says);
    assert_says(&o, new_says);
    std::fs::remove_dir_all(&store).unwrap();
    ok(&run("new", new));
    let o = run("old-on-new", old);
    assert_fails_saying(&o, 2, new_says);
    assert_says(&o, old_says);
}

pub fn dedup(input: &Path, output: &Path, extra: &[&str]) -> Output {
    webdedup(&command_args("dedup", input, output, extra))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn read(p: impl AsRef<Path>) -> String {
    let p = p.as_ref();
    String::from_utf8(std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display())))
        .unwrap()
}

/// The sample shipped in the repository.
pub fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini")
}

/// Every file under `dir`, relative path -> bytes, sorted.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    walk(dir, |p| {
        if !p.is_dir() {
            let name = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            out.push((name, std::fs::read(p).unwrap()));
        }
        true
    });
    out.sort();
    out
}

/// Calls `visit` on every path under `dir`, depth first; a directory is
/// entered when `visit` returns true for it. Directories that cannot be read
/// are passed over (a run may be writing there).
pub fn walk(dir: &Path, mut visit: impl FnMut(&Path) -> bool) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if visit(&p) && p.is_dir() {
                stack.push(p);
            }
        }
    }
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The JSON Lines sample shipped in the repository (the same documents as
/// `sample_dir()`, converted by `webdedup to-jsonl`).
pub fn jsonl_sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini-jsonl")
}

/// Decompresses gzip or zstd (by magic), or returns plain bytes as they are.
pub fn decompress(data: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    if data.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(data)
            .read_to_end(&mut out)
            .unwrap();
    } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        out = zstd::decode_all(data).unwrap();
    } else {
        out = data.to_vec();
    }
    out
}

/// The Parquet sample shipped in the repository (the JSON Lines sample in
/// FineWeb's layout, written by `common::corpus_formats::write_parquet`).
pub fn parquet_sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini-parquet")
}

/// The WET sample shipped in the repository (the JSON Lines sample as Common
/// Crawl WET files, written by `common::corpus_formats::wet_file`).
pub fn wet_sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/web3-mini-wet")
}

/// Every line of the `.dd` lists under `out`, files in sorted order.
pub fn dd_lines(out: &Path) -> Vec<String> {
    tree(out)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".dd"))
        .flat_map(|(_, bytes)| {
            let text = String::from_utf8(bytes).unwrap();
            text.lines().map(str::to_owned).collect::<Vec<_>>()
        })
        .collect()
}

/// The value of the attribute `name="..."` of a `.dd` or `<doc>` line.
pub fn attr(line: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    line.find(&key).map(|i| {
        let rest = &line[i + key.len()..];
        rest[..rest.find('"').unwrap()].to_string()
    })
}

/// Input big enough for a run to last past a kill: `copies` copies of the
/// sample's crawls under `dir/in`.
pub fn big_input(dir: &Path, copies: usize) -> PathBuf {
    let input = dir.join("in");
    for i in 0..copies {
        let dst = input.join(format!("copy{i}"));
        std::fs::create_dir_all(&dst).unwrap();
        for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
            std::fs::copy(
                sample_dir().join(crawl).join("part-00000.vert.gz"),
                dst.join(format!("{crawl}.vert.gz")),
            )
            .unwrap();
        }
    }
    input
}

/// A loopback port no other test of this process was given: the kernel's pick,
/// retried when it repeats one handed out before (the kernel may give a port again
/// once its probe socket is closed, and tests run in parallel threads).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap();
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// One crawl of the shipped vertical sample, decompressed, and the byte offset of
/// each `<doc ` line in it (for tests that cut a few documents out).
pub fn sample_crawl_docs(crawl: &str) -> (Vec<u8>, Vec<usize>) {
    let gz = std::fs::read(sample_dir().join(crawl).join("part-00000.vert.gz")).unwrap();
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let starts = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"<doc ") && (i == 0 || text[i - 1] == b'\n'))
        .collect();
    (text, starts)
}

/// A WARC response record (uncompressed).
pub fn warc_response(uri: &str, date: &str, body: &str) -> Vec<u8> {
    let block = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{body}");
    format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n\
         WARC-Record-ID: <urn:uuid:{uri}-{date}>\r\nContent-Type: application/http; msgtype=response\r\n\
         Content-Length: {}\r\n\r\n{block}\r\n\r\n",
        block.len()
    )
    .into_bytes()
}

// ---- helpers for batch phase commands ----

/// `PHASE... -i INPUT -w WORK EXTRA...`: the arguments of [`batch`] for one phase
/// command (`hash`, `resolve --stage docs`, `filter -o OUT`...).
pub fn phase_args<'a>(
    phase: &[&'a str],
    input: &'a Path,
    work: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    [phase, &["-i", s(input), "-w", s(work)], extra].concat()
}

/// A Slurm array simulated by a loop: every task of every phase (its name and
/// its arguments) as its own process, tasks in `order` (`order.len()` of them),
/// with `task_args` and the task's `--task-count` and `--task-index` after the
/// phase's; the (phase, task) of a `kills` entry is killed first at its fault and
/// relaunched. In a phase of `task0_only`, every other task has nothing to do.
pub fn simulated_slurm_array(
    phases: &[(&str, Vec<&str>)],
    task_args: &[&str],
    order: &[usize],
    kills: &[(&str, usize, &str)],
    task0_only: &[&str],
) {
    let count = order.len().to_string();
    for (phase, head) in phases {
        for &t in order {
            let index = t.to_string();
            let args = [
                &head[..],
                task_args,
                &["--task-count", &count, "--task-index", &index],
            ]
            .concat();
            if task0_only.contains(phase) && t != 0 {
                let o = batch(&args, None);
                ok(&o);
                assert_says(&o, "nothing to do");
                continue;
            }
            let fault = kills
                .iter()
                .find(|(p, task, _)| p == phase && *task == t)
                .map(|(_, _, fault)| *fault);
            batch_task_killed_and_relaunched(&args, fault, &format!("{phase} task {t}"));
        }
    }
}

/// `--task-count 2 --task-index 0`: the first of two tasks.
pub const FIRST_OF_TWO_TASKS: [&str; 4] = ["--task-count", "2", "--task-index", "0"];

/// Asserts that a run failed (any exit but 0) and that its stderr says `says`.
pub fn assert_refused(o: &Output, says: &str) {
    assert!(!o.status.success(), "expected a refusal: {}", stderr(o));
    assert_says(o, says);
}

// ---- helpers for comparing runs ----

/// The files a run wrote under `dir` (without the run id a run on servers or
/// with a store leaves beside its outputs).
pub fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(n, _)| !n.ends_with(".webdedup.run-id"))
        .collect()
}

/// Every line of the files under `dir` whose names end in `suffix`, as (file
/// name, line), files in name order.
pub fn lines_of(dir: &Path, suffix: &str) -> Vec<(String, String)> {
    outputs(dir)
        .into_iter()
        .filter(|(n, _)| n.ends_with(suffix))
        .flat_map(|(n, b)| {
            let text = String::from_utf8_lossy(&b).into_owned();
            text.lines()
                .map(|l| (n.clone(), l.to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Asserts that two runs wrote the same files (names first, then each file's
/// bytes), naming the first file that differs.
pub fn assert_same_files(what: &str, got: &[(String, Vec<u8>)], want: &[(String, Vec<u8>)]) {
    let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(got), names(want), "{what}: file names");
    for ((n, a), (_, b)) in got.iter().zip(want) {
        assert!(a == b, "{what}: {n} differs");
    }
}

// ---- helpers for journals ----

/// The length of a journal file's header and the byte ranges of its records
/// after it (the file must hold whole records).
pub fn journal_records(b: &[u8]) -> (usize, Vec<std::ops::Range<usize>>) {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
    let header = 16 + u32_at(12) + 4;
    let mut at = header;
    let mut records = Vec::new();
    while at + 12 <= b.len() {
        let end = at + 12 + u32_at(at);
        assert!(end <= b.len(), "a whole journal expected");
        records.push(at..end);
        at = end;
    }
    (header, records)
}

// ---- helpers for check ----

/// `webdedup check -i INPUT -o OUTPUT EXTRA...`: a run's references checked.
pub fn check(input: &Path, output: &Path, extra: &[&str]) -> Output {
    webdedup(&[&["check", "-i", s(input), "-o", s(output)], extra].concat())
}

/// The `--json` report of a [`check`] (`--near` if `near`) that must succeed.
pub fn check_report(input: &Path, output: &Path, near: bool) -> serde_json::Value {
    let near: &[&str] = if near { &["--near"] } else { &[] };
    let o = check(input, output, &[&["--json", "-"], near].concat());
    assert!(o.status.success(), "check failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

// ---- helpers for input files ----

/// Writes `path`, making its folders first.
pub fn write_file(path: &Path, data: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

/// Asserts that two store directories saved the same `store.snap`, byte for byte.
pub fn assert_same_store(got: &Path, want: &Path, what: &str) {
    let snap = |dir: &Path| {
        let path = dir.join("store.snap");
        std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    };
    assert!(snap(got) == snap(want), "{what}: the stores differ");
}

/// Asserts that a run did not panic (whatever its exit).
pub fn assert_no_panic(o: &Output) {
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

// ---- helpers for redis-server ----

#[path = "common/redis_server.rs"]
pub mod redis_server;

// ---- helpers for the runs that compare formats ----

/// The `--json` figures of the decisions, which every input format of the same
/// documents must give alike.
pub const DECISION_FIGURES: [&str; 8] = [
    "documents_read",
    "documents_kept_whole",
    "documents_kept_partly",
    "documents_dropped_duplicate",
    "documents_dropped_all_paragraphs",
    "paragraphs_read",
    "paragraphs_retained",
    "keys_stored",
];

/// `dedup INPUT -o OUT --dd --json OUT.json EXTRA...`, which must succeed: its
/// `--json` figures (the `.dd` lists are in OUT).
pub fn dedup_figures(input: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let json = out.with_extension("json");
    ok(&dedup(
        input,
        out,
        &[&["--dd", "--json", s(&json)], extra].concat(),
    ));
    serde_json::from_str(&read(&json)).unwrap()
}
