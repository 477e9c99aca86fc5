//! JSON Lines through everything `webdedup dedup` does: the same decisions as the
//! verticals they were converted from (exact and near), outputs that change only
//! the text value, bad records, compression, threads, feedback and `check`,
//! restore after a crash, `--store` across runs, batch mode, Redis and the hash
//! servers.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// (id, status) of every `.dd` line under `out`, files in sorted order.
fn dd_entries(out: &Path) -> Vec<(Option<String>, String)> {
    dd_lines(out)
        .iter()
        .map(|l| (attr(l, "id"), attr(l, "status").unwrap()))
        .collect()
}

/// The `id` attributes of the `<doc>` lines of every vertical under `dir`, in order.
fn vertical_ids(dir: &Path) -> Vec<String> {
    tree(dir)
        .into_iter()
        .flat_map(|(_, bytes)| {
            let text = String::from_utf8(decompress(&bytes)).unwrap();
            text.lines()
                .filter(|l| l.starts_with("<doc "))
                .map(|l| {
                    let i = l.find(" id=\"").unwrap() + 5;
                    l[i..i + l[i..].find('"').unwrap()].to_string()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap()
}

/// Decompressed outputs (name, bytes), without the run's salt file.
fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(n, _)| !n.ends_with(".webdedup.run-id"))
        .map(|(n, b)| (n, decompress(&b)))
        .collect()
}

#[test]
fn the_jsonl_sample_is_the_vertical_sample_converted_and_decides_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // The shipped JSON Lines sample is what the project's converter makes of the
    // vertical sample (the shared corpus's rules).
    let conv = t.join("conv");
    ok(&webdedup(&[
        "to-jsonl",
        "-i",
        s(&sample_dir()),
        "-o",
        s(&conv),
    ]));
    assert_eq!(outputs(&conv), outputs(&jsonl_sample_dir()));

    let ids = vertical_ids(&sample_dir());
    assert_eq!(ids.len(), 380);
    for (mode, extra) in [("exact", &[][..]), ("near", &["-n"][..])] {
        let (vo, jo) = (t.join(format!("v-{mode}")), t.join(format!("j-{mode}")));
        let vf = dedup_figures(&sample_dir(), &vo, extra);
        let jf = dedup_figures(&jsonl_sample_dir(), &jo, extra);
        // Same kept/dropped documents, same paragraphs kept per document (`N/M`).
        let (v, j) = (dd_entries(&vo), dd_entries(&jo));
        assert_eq!(v.len(), ids.len());
        assert_eq!(j.len(), ids.len());
        for ((id, (vid, vs)), (jid, js)) in ids.iter().zip(&v).zip(&j) {
            assert_eq!(vid, &None, "vertical .dd lines have no ids");
            assert_eq!(jid.as_deref(), Some(id.as_str()), "{mode}");
            assert_eq!(vs, js, "{mode}: document {id}");
        }
        for field in DECISION_FIGURES
            .iter()
            .chain(&["paragraphs_long", "url_title_repeats"])
        {
            assert_eq!(vf[field], jf[field], "{mode}: {field}");
        }
        assert!(vf["paragraphs_retained"].as_u64() < vf["paragraphs_read"].as_u64());
    }

    // Every byte of a kept record outside its text value is as read; the text is
    // its kept lines, in order; outputs are compressed like their inputs.
    let jo = t.join("j-exact");
    for (name, bytes) in tree(&jo) {
        if !name.ends_with(".dedup.jsonl.gz") {
            continue;
        }
        assert!(
            bytes.starts_with(&[0x1f, 0x8b]),
            "{name} is gzip, as its input"
        );
        let input = decompress(
            &fs::read(jsonl_sample_dir().join(name.replace(".dedup.jsonl.gz", ".jsonl.gz")))
                .unwrap(),
        );
        let input = String::from_utf8(input).unwrap();
        let by_id: std::collections::HashMap<String, &str> = input
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["id"].as_str().unwrap().to_string(), l)
            })
            .collect();
        let out = String::from_utf8(decompress(&bytes)).unwrap();
        assert!(out.lines().count() > 50);
        for line in out.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("valid JSON");
            let orig = by_id[v["id"].as_str().unwrap()];
            let (head, tail) = ("\"text\": \"", "\", \"metadata\": {");
            let cut = |l: &str| (l.find(head).unwrap(), l.rfind(tail).unwrap());
            let ((a, b), (c, d)) = (cut(line), cut(orig));
            assert_eq!(&line[..a], &orig[..c]);
            assert_eq!(&line[b..], &orig[d..]);
            let w: serde_json::Value = serde_json::from_str(orig).unwrap();
            let kept: Vec<&str> = v["text"].as_str().unwrap().lines().collect();
            let mut all = w["text"].as_str().unwrap().lines();
            for k in &kept {
                assert!(all.any(|l| l == *k), "kept lines are input lines, in order");
            }
        }
    }
}

#[test]
fn the_readme_main_job_runs_on_the_jsonl_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("web3-mini-jsonl.dedup");
    let o = webdedup(&["dedup", "-i", s(&jsonl_sample_dir()), "-o", s(&out), "--dd"]);
    ok(&o);
    let err = stderr(&o);
    let line = "380 documents read, 319 kept (83.95%), 61 dropped (46 duplicates, 15 with every paragraph seen), 28,762 of 68,530 paragraphs retained (41.97%), 77 URL+title repeats";
    assert!(err.contains(line), "missing {line:?} in\n{err}");
    assert!(out.join("cc-2023-14/part-00000.dedup.jsonl.gz").exists());
    assert!(out.join("cc-2023-14/part-00000.dedup.dd").exists());
}

#[test]
fn jsonl_outputs_do_not_depend_on_threads_or_chunk_size() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    ok(&dedup(&jsonl_sample_dir(), &a, &["--dd", "-t", "1"]));
    ok(&dedup(
        &jsonl_sample_dir(),
        &b,
        &["--dd", "-t", "3", "--chunk-bytes", "40000"],
    ));
    assert!(tree(&a) == tree(&b), "outputs differ");
}

/// A long line of text (>= 50 characters).
fn long(word: &str) -> String {
    [word; 12].join(" ")
}

#[test]
fn bad_records_are_reported_counted_and_passed_through_unless_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    fs::create_dir_all(&dir).unwrap();
    let (a, b, c) = (long("alpha"), long("beta"), long("gamma"));
    let mut input = format!("{{\"id\":\"a\",\"text\":\"{a}\\n{b}\"}}\nnot json\n{{\"id\":\"b\"}}\n{{\"id\":\"c\",\"text\":7}}\n\n{{\"id\":\"d\",\"text\":\"{a}\\n{c}\"}}\n").into_bytes();
    let invalid = format!("{{\"id\":\"e\",\"text\":\"caf\u{e9} {c}x\"}}\n")
        .into_bytes()
        .iter()
        .map(|&x| if x == 0xa9 { 0xff } else { x }) // é's second byte: invalid UTF-8
        .collect::<Vec<u8>>();
    input.extend_from_slice(&invalid);
    let file = dir.join("bad.jsonl");
    fs::write(&file, &input).unwrap();
    let out = tmp.path().join("out");
    let stats = tmp.path().join("s.json");
    let o = dedup(&dir, &out, &["--json", s(&stats), "--dd"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let f = file.display();
    for want in [
        format!("{f}:2: not a JSON object: record passed through unchanged"),
        format!("{f}:3: no field 'text': record passed through unchanged"),
        format!("{f}:4: field 'text' is not a string: record passed through unchanged"),
        format!("{f}:7: invalid UTF-8: kept, read lossily for keys"),
    ] {
        assert!(err.contains(&want), "missing {want:?} in\n{err}");
    }
    let st = json(&stats);
    assert_eq!(st["bad_records"], 3);
    assert_eq!(st["issues"]["bad-record"], 3);
    assert_eq!(st["documents_read"], 3);
    let written = fs::read(out.join("bad.dedup.jsonl")).unwrap();
    let mut want = format!("{{\"id\":\"a\",\"text\":\"{a}\\n{b}\"}}\nnot json\n{{\"id\":\"b\"}}\n{{\"id\":\"c\",\"text\":7}}\n{{\"id\":\"d\",\"text\":\"{c}\"}}\n").into_bytes();
    want.extend_from_slice(&invalid);
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&want)
    );
    assert_eq!(written, want, "the invalid byte is kept as read");
    assert_eq!(
        read(out.join("bad.dedup.dd")),
        "<dd id=\"a\" url=\"\" title=\"\" status=\"K\"/>\n<dd id=\"bad.jsonl:2\" url=\"\" title=\"\" status=\"B\"/>\n<dd id=\"bad.jsonl:3\" url=\"\" title=\"\" status=\"B\"/>\n<dd id=\"bad.jsonl:4\" url=\"\" title=\"\" status=\"B\"/>\n<dd id=\"d\" url=\"\" title=\"\" status=\"1/2\"/>\n<dd id=\"e\" url=\"\" title=\"\" status=\"K\"/>\n"
    );
    // Asked to, bad records are left out (and still reported).
    let out2 = tmp.path().join("out2");
    let o = dedup(&dir, &out2, &["--drop-bad-records"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("record dropped (--drop-bad-records)"));
    let mut want =
        format!("{{\"id\":\"a\",\"text\":\"{a}\\n{b}\"}}\n{{\"id\":\"d\",\"text\":\"{c}\"}}\n")
            .into_bytes();
    want.extend_from_slice(&invalid);
    assert_eq!(fs::read(out2.join("bad.dedup.jsonl")).unwrap(), want);
}

#[test]
fn compressed_jsonl_is_read_and_written_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let plain =
        decompress(&fs::read(jsonl_sample_dir().join("cc-2024-33/part-00000.jsonl.gz")).unwrap());
    let reference = tmp.path().join("ref");
    let p = tmp.path().join("p/x.jsonl");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, &plain).unwrap();
    ok(&dedup(&p, &reference, &[]));
    let want = fs::read(reference.join("x.dedup.jsonl")).unwrap();
    for (name, data, magic) in [
        ("g.jsonl.gz", gzip(&plain), &[0x1f, 0x8b][..]),
        (
            "z.jsonl.zst",
            zstd::encode_all(&plain[..], 3).unwrap(),
            &[0x28, 0xb5, 0x2f, 0xfd][..],
        ),
    ] {
        let f = tmp.path().join(name);
        fs::write(&f, data).unwrap();
        let out = tmp.path().join(format!("out-{name}"));
        ok(&dedup(&f, &out, &[]));
        let got = fs::read(out.join(name.replace(".jsonl", ".dedup.jsonl"))).unwrap();
        assert!(got.starts_with(magic), "{name}: compressed like its input");
        assert_eq!(decompress(&got), want, "{name}");
        // --compress names one compression for every output.
        let out = tmp.path().join(format!("none-{name}"));
        ok(&dedup(&f, &out, &["--compress", "none"]));
        let stem = name.rsplit_once('.').unwrap().0;
        let plain_out = stem.replace(".jsonl", ".dedup.jsonl");
        assert_eq!(fs::read(out.join(plain_out)).unwrap(), want);
    }
}

#[test]
fn feedback_on_jsonl_is_confirmed_by_check_exact_and_near() {
    let tmp = tempfile::tempdir().unwrap();
    for (mode, extra, check_extra) in [
        ("exact", &[][..], &[][..]),
        ("near", &["-n"][..], &["--near"][..]),
    ] {
        let out = tmp.path().join(mode);
        ok(&dedup(
            &jsonl_sample_dir(),
            &out,
            &[&["-f"], extra].concat(),
        ));
        let dropped = read(out.join("cc-2024-33/part-00000.dedup.dropped"));
        // One line per dropped paragraph after its reference: the paragraph as it
        // is escaped in the JSON text.
        // (Short paragraphs that rode along with a dropped one have no line of
        // their own, as in the seed.)
        let lines: Vec<&str> = dropped.lines().collect();
        let i = lines.iter().position(|l| l.starts_with("<t>")).unwrap();
        assert!(lines[i].ends_with("</f>"), "{}", lines[i]);
        assert!(!lines[i + 1].starts_with("<t>"));
        let o = webdedup(
            &[
                &[
                    "check",
                    "-i",
                    s(&jsonl_sample_dir()),
                    "-o",
                    s(&out),
                    "--json",
                    "-",
                ],
                check_extra,
            ]
            .concat(),
        );
        ok(&o);
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["mismatches"].as_array().unwrap().len(), 0, "{mode}: {r}");
        assert!(r["confirmed"].as_u64().unwrap() > 1000, "{mode}: {r}");
        if mode == "exact" {
            assert_eq!(r["confirmed"], r["checked"], "{r}");
        }
    }
}

/// A small JSON Lines corpus cut from the shipped sample: three crawls of two files
/// each (one plain, one gzipped), the first documents of each sample file.
fn corpus() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("webdedup-jsonl-corpus-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
            let text = decompress(
                &fs::read(jsonl_sample_dir().join(crawl).join("part-00000.jsonl.gz")).unwrap(),
            );
            let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
            fs::create_dir_all(dir.join(crawl)).unwrap();
            fs::write(dir.join(crawl).join("a.jsonl"), lines[..14].concat()).unwrap();
            fs::write(
                dir.join(crawl).join("b.jsonl.gz"),
                gzip(&lines[14..28].concat()),
            )
            .unwrap();
        }
        dir
    })
}

fn run_args(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = command_args("dedup", corpus(), out, &["--dd", "--chunk-bytes", "30000"]);
    a.extend_from_slice(extra);
    owned(&a)
}

#[test]
fn a_killed_jsonl_run_restores_to_the_same_bytes_and_store() {
    let tmp = tempfile::tempdir().unwrap();
    // The decisions of unfinished outputs go to their logs, named after the input,
    // so a restore finds them whatever compression the `.jsonl.gz` input's output
    // gets.
    assert_restores_after_faults(
        tmp.path(),
        "jsonl",
        &[
            "commit:4",
            "output-bytes:60000",
            "rename:2",
            "stop:2",
            "stop:5",
        ],
        |out, store| run_args(out, &["--store", s(store)]),
    );
}

#[test]
fn crawl_by_crawl_with_a_store_equals_one_run_and_batch_mode_equals_stream_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let all = t.join("all");
    ok(&dedup(corpus(), &all, &["--dd"]));
    let store = t.join("store");
    for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
        let out = t.join("inc").join(crawl);
        ok(&dedup(
            &corpus().join(crawl),
            &out,
            &["--dd", "--store", s(&store)],
        ));
    }
    assert!(
        tree(&t.join("inc")) == tree(&all),
        "incremental runs differ"
    );

    let batch = t.join("batch");
    let work = t.join("work");
    let o = webdedup(&[
        "batch",
        "run",
        "-i",
        s(corpus()),
        "-o",
        s(&batch),
        "-w",
        s(&work),
        "-t",
        "2",
        "--dd",
        "--task-count",
        "3",
    ]);
    ok(&o);
    assert!(tree(&batch) == tree(&all), "batch outputs differ");
    // A work directory remembers how documents were read.
    let o = webdedup(&[
        "batch",
        "hash",
        "-i",
        s(corpus()),
        "-w",
        s(&work),
        "--task-count",
        "3",
        "--task-index",
        "0",
        "--text-field",
        "body",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_says(&o, "text-field");
}

/// A process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn jsonl_on_redis_and_on_hash_servers_equals_the_embedded_store() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let embedded = t.join("embedded");
    ok(&dedup(corpus(), &embedded, &["--dd", "-t", "1"]));

    // A real redis-server on loopback.
    let node = redis_server::Node::start(false);
    let redis = t.join("redis");
    let url = node.url();
    let o = dedup(
        corpus(),
        &redis,
        &["--dd", "--store", &url, "--capacity", "10000"],
    );
    ok(&o);
    assert!(
        outputs(&redis) == outputs(&embedded),
        "Redis outputs differ"
    );

    // One hash server owning every block.
    let port = free_port();
    let map = t.join("map");
    fs::write(&map, format!("127.0.0.1:{port}\n")).unwrap();
    let dist = t.join("dist");
    ok(&webdedup(&["distribute", "-s", s(&map), "-o", s(&dist)]));
    let ready = t.join("ready");
    let _server = Proc(
        Command::new(env!("CARGO_BIN_EXE_webdedup"))
            .args([
                "server",
                "-m",
                s(&dist),
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .arg("--ready-file")
            .arg(&ready)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the hash server", || ready.exists());
    let remote = t.join("servers");
    ok(&dedup(corpus(), &remote, &["--dd", "-s", s(&dist)]));
    assert!(
        outputs(&remote) == outputs(&embedded),
        "server outputs differ"
    );
}
