//! `dedup --substr`: repeated spans removed inside documents (docs/substr.md),
//! through the real binary, on every format, thread count and store directory.

mod common;
mod server_procs;

use common::*;
use std::path::{Path, PathBuf};

const NOTICE: &str = "We use \"cookies\" to improve your experience on our café site. \
                      By continuing to browse you agree to our use of cookies and our privacy policy.";
const FIRST: &str = "Rain is expected in the north tomorrow.";
const SECOND: &str = "The council met on Tuesday to vote.";
const AFTER: &str = "Results follow next week.";

/// The three documents: the notice after a first sentence; the notice between two
/// sentences of another document (its second on its own line); the notice alone.
fn texts() -> [(&'static str, String); 3] {
    [
        ("a", format!("{FIRST} {NOTICE}")),
        ("b", format!("{SECOND} {NOTICE}\n{AFTER}")),
        ("c", NOTICE.to_string()),
    ]
}

/// The documents as JSON Lines, non-ASCII escaped as Python's `json.dumps` does.
fn jsonl_input(dir: &Path) -> PathBuf {
    let input = dir.join("jsonl");
    let lines: String = texts()
        .iter()
        .map(|(id, text)| {
            let line = serde_json::json!({"id": id, "text": text}).to_string();
            line.replace('é', "\\u00e9") + "\n"
        })
        .collect();
    write_file(&input.join("part.jsonl"), lines);
    input
}

/// The documents as a vertical: one token a line (whitespace-separated words).
fn vertical_input(dir: &Path) -> PathBuf {
    let input = dir.join("vert");
    let mut v = String::new();
    for (id, text) in texts() {
        v += &format!("<doc id=\"{id}\" url=\"http://x/{id}\" title=\"{id}\">\n");
        for para in text.split('\n') {
            v += "<p>\n";
            for w in para.split_whitespace() {
                v += &format!("{w}\n");
            }
            v += "</p>\n";
        }
        v += "</doc>\n";
    }
    write_file(&input.join("part.vert"), v);
    input
}

fn run_json(input: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let o = dedup(input, out, &[&["--json", "-"], extra].concat());
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_repeated_passage_is_cut_from_later_json_records_only() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_input(dir.path());
    let out = dir.path().join("out");
    // W = 1 stores every window: the whole repeat goes.
    let figures = run_json(&input, &out, &["--substr=6,1"]);
    let written = read(out.join("part.dedup.jsonl"));
    let lines: Vec<&str> = written.lines().collect();
    let given = read(input.join("part.jsonl"));
    assert_eq!(
        lines.len(),
        2,
        "c, nothing but the notice, is emptied: {written}"
    );
    assert_eq!(
        lines[0],
        given.lines().next().unwrap(),
        "the first copy as read"
    );
    let b: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(b["id"], "b");
    assert_eq!(b["text"], format!("{SECOND} \n{AFTER}"));
    assert_eq!(figures["spans_removed"], 2);
    let again = dir.path().join("again");
    let o = webdedup(&["dedup", s(&input), "-o", s(&again), "--substr=6,1"]);
    assert_says(&o, "2 repeated spans removed inside documents (");
    assert_eq!(figures["documents_kept_partly"], 1);
    assert_eq!(figures["documents_dropped_all_paragraphs"], 1);
    // Its bytes as written in the input: the escaped notice, twice.
    let escaped = serde_json::to_string(NOTICE)
        .unwrap()
        .replace('é', "\\u00e9");
    assert_eq!(figures["span_bytes_removed"], 2 * (escaped.len() - 2));
}

#[test]
fn a_vertical_loses_the_token_lines_of_the_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let input = vertical_input(dir.path());
    let out = dir.path().join("out");
    let figures = run_json(&input, &out, &["--substr=6,1"]);
    let written = read(out.join("part.vert.dedup"));
    let given = read(input.join("part.vert"));
    let docs: Vec<&str> = written.split_inclusive("</doc>\n").collect();
    assert_eq!(docs.len(), 2, "{written}");
    assert!(given.starts_with(docs[0]), "the first copy as read");
    let lines = |t: &str| {
        t.split_whitespace()
            .map(|w| format!("{w}\n"))
            .collect::<String>()
    };
    let b = format!(
        "<doc id=\"b\" url=\"http://x/b\" title=\"b\">\n<p>\n{}</p>\n<p>\n{}</p>\n</doc>\n",
        lines(SECOND),
        lines(AFTER)
    );
    assert_eq!(docs[1], b);
    assert_eq!(figures["spans_removed"], 2);
}

#[test]
fn outputs_are_the_same_for_any_thread_count_and_chunk_size() {
    let dir = tempfile::tempdir().unwrap();
    for (name, input) in [("vert", sample_dir()), ("jsonl", jsonl_sample_dir())] {
        let one = dir.path().join(format!("{name}-1"));
        ok(&dedup(&input, &one, &["--substr", "-t", "1"]));
        let many = dir.path().join(format!("{name}-3"));
        ok(&dedup(
            &input,
            &many,
            &["--substr", "-t", "3", "--chunk-bytes", "20000"],
        ));
        assert_same_files(name, &tree(&many), &tree(&one));
    }
}

#[test]
fn every_format_of_the_same_documents_removes_the_same_spans() {
    let dir = tempfile::tempdir().unwrap();
    let figures = |name: &str, input: PathBuf| {
        let f = run_json(&input, &dir.path().join(name), &["--substr"]);
        (
            f["spans_removed"].clone(),
            f["documents_kept_partly"].clone(),
        )
    };
    let jsonl = figures("jsonl", jsonl_sample_dir());
    assert!(jsonl.0.as_u64().unwrap() > 100, "{jsonl:?}");
    assert_eq!(figures("parquet", parquet_sample_dir()), jsonl);
    assert_eq!(figures("wet", wet_sample_dir()), jsonl);
}

/// The crawls of the samples, in order.
const CRAWLS: [&str; 3] = ["cc-2023-14", "cc-2023-50", "cc-2024-33"];

/// Runs `dedup --substr` over `sample` (crawl folders) in one run, then
/// `crawl_run(crawl's input, its output, the store)` crawl after crawl on one
/// store: asserts both write the same outputs.
fn assert_crawl_after_crawl_equals_one_run(
    dir: &Path,
    sample: &Path,
    crawl_run: impl Fn(&Path, &Path, &Path) -> std::process::Output,
) {
    let one = dir.join("one");
    ok(&dedup(sample, &one, &["--substr"]));
    let (store, crawls) = (dir.join("store"), dir.join("crawls"));
    for crawl in CRAWLS {
        ok(&crawl_run(&sample.join(crawl), &crawls.join(crawl), &store));
    }
    assert_same_files("crawl after crawl", &outputs(&crawls), &outputs(&one));
}

#[test]
fn crawl_after_crawl_on_a_store_equals_one_run() {
    let dir = tempfile::tempdir().unwrap();
    assert_crawl_after_crawl_equals_one_run(dir.path(), &jsonl_sample_dir(), |i, o, store| {
        dedup(i, o, &["--substr", "--store", s(store)])
    });
}

#[test]
fn a_store_refuses_other_window_sizes_and_modes() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_input(dir.path());
    let store = dir.path().join("store");
    let run = |out: &str, extra: &[&str]| {
        dedup(
            &input,
            &dir.path().join(out),
            &[&["--store", s(&store)], extra].concat(),
        )
    };
    ok(&run("first", &["--substr=10,4"]));
    assert_fails_saying(
        &run("w", &["--substr=10,8"]),
        2,
        "winnowing windows (W) '4' in the store, '8' in this run",
    );
    assert_fails_saying(
        &run("k", &["--substr=12,4"]),
        2,
        "window tokens (K) '10' in the store, '12' in this run",
    );
    assert_fails_saying(&run("exact", &[]), 2, "key kind");
    ok(&run("again", &["--substr"]));
    // The shortest stretch removed decides nothing about the keys.
    ok(&run("bytes", &["--substr=10,4,0"]));
}

#[test]
fn bad_window_sizes_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_input(dir.path());
    let out = dir.path().join("out");
    let o = dedup(&input, &out, &["--substr=4,8"]);
    assert_refused(&o, "W must be 1 to K (4), not 8");
    let o = dedup(&input, &out, &["--substr=twelve"]);
    assert_refused(&o, "--substr takes K,W");
    let o = dedup(&input, &out, &["--substr", "-n"]);
    assert_refused(&o, "cannot be used with");
    // Units are words as written: a normalization would be ignored, so it is refused.
    for extra in [
        &["--substr", "--normalize", "none"][..],
        &["--substr", "--normalize", "lower"][..],
    ] {
        let o = dedup(&input, &out, extra);
        assert_refused(
            &o,
            "substring mode hashes words as written: --normalize does not apply",
        );
    }
    let work = dir.path().join("work");
    let args = batch_run_args(&input, &out, &work, &["--substr", "--normalize", "none"]);
    let o = batch(&args, None);
    assert_refused(
        &o,
        "substring mode hashes words as written: --normalize does not apply",
    );
}

#[test]
fn redis_and_hash_servers_remove_what_the_embedded_store_removes() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_sample_dir();
    let embedded = dir.path().join("embedded");
    ok(&dedup(&input, &embedded, &["--substr", "--dd", "-t", "1"]));
    let want = outputs(&embedded);

    let node = common::redis_server::Node::start(false);
    let redis = dir.path().join("redis");
    let url = node.url();
    let o = dedup(
        &input,
        &redis,
        &[
            "--substr",
            "--dd",
            "-t",
            "2",
            "--store",
            &url,
            "--capacity",
            "100000",
        ],
    );
    ok(&o);
    assert_same_files("redis", &outputs(&redis), &want);
    // The key set records the mode: paragraph keys are refused there.
    let o = dedup(&input, &dir.path().join("exact"), &["--store", &url]);
    assert_fails_saying(&o, 2, "key kind");

    let mut cluster = server_procs::Cluster::start(dir.path(), 2);
    let servers = dir.path().join("servers");
    let o = dedup(
        &input,
        &servers,
        &["--substr", "--dd", "-t", "2", "-s", cluster.map_arg()],
    );
    cluster.stop();
    ok(&o);
    assert_same_files("-s MAP", &outputs(&servers), &want);
}

/// The attributes file beside an output.
fn out_attrs(written: &str) -> String {
    let stem = written
        .trim_end_matches(".jsonl")
        .trim_end_matches(".dedup");
    format!("{stem}.dedup.attributes.jsonl")
}

#[test]
fn mark_names_the_spans_by_their_characters_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let chars = |t: &str| t.chars().count();
    let b_span = [chars(SECOND) + 1, chars(SECOND) + 1 + chars(NOTICE)];
    for (name, input, written) in [
        ("jsonl", jsonl_input(dir.path()), "part.dedup.jsonl"),
        ("vert", vertical_input(dir.path()), "part.vert.dedup"),
    ] {
        let attributes = out_attrs(written);
        let out = dir.path().join(format!("{name}-out"));
        let figures = run_json(&input, &out, &["--substr=6,1", "--mark"]);
        assert_eq!(figures["spans_removed"], 2, "{name}");
        let given = std::fs::read(input.read_dir().unwrap().next().unwrap().unwrap().path());
        assert!(
            std::fs::read(out.join(written)).unwrap() == given.unwrap(),
            "{name}: input as read"
        );
        let attrs = read(out.join(attributes));
        let spans: Vec<serde_json::Value> = attrs
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["attributes"]
                    ["webdedup_repeated_spans"]
                    .clone()
            })
            .collect();
        assert_eq!(
            spans,
            [
                serde_json::json!([]),
                serde_json::json!([[b_span[0], b_span[1], 1.0]]),
                serde_json::json!([[0, chars(NOTICE), 1.0]]),
            ],
            "{name}: {attrs}"
        );
    }
}

/// `files.idx` of an output: file id (16 hex digits) to the input's relative path.
fn files_index(out: &Path) -> std::collections::HashMap<String, String> {
    read(out.join("files.idx"))
        .lines()
        .map(|l| {
            let (id, rel) = l.split_once('\t').expect("ID TAB REL");
            (id.to_string(), rel.to_string())
        })
        .collect()
}

/// A `.spans` line: the span (`FILE:LINE:START-END`) and its first copy
/// (`FILE:LINE:START`), each as (file id, line, characters).
type Place = (String, u64, std::ops::Range<usize>);

fn spans_report(path: &Path) -> Vec<(Place, Option<Place>)> {
    let place = |p: &str| -> Place {
        let mut f = p.splitn(3, ':');
        let (file, line, chars) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let chars = match chars.split_once('-') {
            Some((a, b)) => a.parse().unwrap()..b.parse().unwrap(),
            None => chars.parse().unwrap()..chars.parse().unwrap(),
        };
        (file.to_string(), line.parse().unwrap(), chars)
    };
    read(path)
        .lines()
        .map(|l| {
            let (span, first) = l.split_once('\t').expect("SPAN TAB FIRST COPY");
            (place(span), (first != "-").then(|| place(first)))
        })
        .collect()
}

#[test]
fn feedback_names_the_first_copy_of_each_removed_span() {
    let dir = tempfile::tempdir().unwrap();
    let chars = |t: &str| t.chars().count();
    let notice_in_a = chars(FIRST) + 1;
    let b_span = chars(SECOND) + 1..chars(SECOND) + 1 + chars(NOTICE);
    for (name, input, spans) in [
        ("jsonl", jsonl_input(dir.path()), "part.dedup.spans"),
        ("vert", vertical_input(dir.path()), "part.vert.dedup.spans"),
    ] {
        let out = dir.path().join(format!("{name}-out"));
        run_json(&input, &out, &["--substr=6,1", "-f"]);
        let given = read(input.read_dir().unwrap().next().unwrap().unwrap().path());
        // Documents are named by the line they start on.
        let doc_lines: Vec<u64> = (1..)
            .zip(given.lines())
            .filter(|(_, l)| name == "jsonl" || l.starts_with("<doc"))
            .map(|(n, _)| n)
            .collect();
        let report = spans_report(&out.join(spans));
        let names = files_index(&out);
        let file = report[0].0 .0.clone();
        assert_eq!(names[&file], given_name(&input), "{name}");
        let a = (file.clone(), doc_lines[0], notice_in_a..notice_in_a);
        assert_eq!(
            report,
            [
                (
                    (file.clone(), doc_lines[1], b_span.clone()),
                    Some(a.clone())
                ),
                ((file.clone(), doc_lines[2], 0..chars(NOTICE)), Some(a)),
            ],
            "{name}"
        );
    }
}

/// The relative path of the one file of `input`.
fn given_name(input: &Path) -> String {
    let entry = input.read_dir().unwrap().next().unwrap().unwrap();
    entry.file_name().to_string_lossy().into_owned()
}

#[test]
fn feedback_reports_are_the_same_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    for (name, input) in [("vert", sample_dir()), ("jsonl", jsonl_sample_dir())] {
        let one = dir.path().join(format!("{name}-1"));
        ok(&dedup(&input, &one, &["--substr", "-f", "-t", "1"]));
        let many = dir.path().join(format!("{name}-3"));
        let more = ["--substr", "-f", "-t", "3", "--chunk-bytes", "20000"];
        ok(&dedup(&input, &many, &more));
        let one = tree(&one);
        let reports = one.iter().filter(|(n, _)| n.ends_with(".spans"));
        assert!(
            reports.clone().any(|(_, b)| !b.is_empty()),
            "{name}: spans listed"
        );
        assert_same_files(name, &tree(&many), &one);
        // The outputs themselves are those of a run without the report.
        let plain = dir.path().join(format!("{name}-plain"));
        ok(&dedup(&input, &plain, &["--substr"]));
        let without = |t: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
            t.into_iter()
                .filter(|(n, _)| !n.ends_with(".spans") && n != "files.idx")
                .collect()
        };
        assert_same_files(name, &without(one), &tree(&plain));
    }
}

/// The first characters of `text` from character `at`, roughly as the loose
/// normalization has them: letters lowercased, digits `0`, no spaces or
/// punctuation (a window's first tokens, whatever the script).
fn first_chars(text: &str, at: usize) -> String {
    text.chars()
        .skip(at)
        .filter(|c| c.is_alphanumeric())
        .map(|c| if c.is_numeric() { '0' } else { c })
        .flat_map(char::to_lowercase)
        .take(8)
        .collect()
}

/// The texts of a JSON Lines file's records, by line (from 1), each file read once:
/// a crawl's report names thousands of spans, and a debug build decompressing the
/// file again for each of them spends minutes.
#[derive(Default)]
struct RecordTexts(std::collections::HashMap<PathBuf, Vec<String>>);

impl RecordTexts {
    fn text(&mut self, path: &Path, line: u64) -> &str {
        let records = self.0.entry(path.to_path_buf()).or_insert_with(|| {
            let bytes = decompress(&std::fs::read(path).unwrap());
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(|record| {
                    let v: serde_json::Value = serde_json::from_str(record).unwrap();
                    v["text"].as_str().unwrap().to_string()
                })
                .collect()
        });
        &records[line as usize - 1]
    }
}

#[test]
fn crawl_after_crawl_names_first_copies_in_earlier_crawls() {
    let dir = tempfile::tempdir().unwrap();
    let sample = jsonl_sample_dir();
    let store = dir.path().join("store");
    let crawls = ["cc-2023-14", "cc-2023-50", "cc-2024-33"];
    // Each crawl's file under its crawl's name, so that file ids tell them apart.
    let mut written = std::collections::HashMap::new();
    let mut texts = RecordTexts::default();
    for crawl in crawls {
        let input = dir.path().join("in").join(crawl);
        let part = input.join(crawl).join("part-00000.jsonl.gz");
        write_file(
            &part,
            std::fs::read(sample.join(crawl).join("part-00000.jsonl.gz")).unwrap(),
        );
        let out = dir.path().join("out").join(crawl);
        let args = ["--substr", "-f", "--store", s(&store)];
        ok(&dedup(&input, &out, &args));
        for (id, rel) in files_index(&out) {
            written.insert(id, (part.clone(), rel));
        }
        let report = spans_report(&out.join(crawl).join("part-00000.dedup.spans"));
        if crawl == crawls[0] {
            continue;
        }
        let mut earlier = 0;
        for ((file, line, chars), first) in &report {
            let Some((first_file, first_line, at)) = first else {
                panic!("{crawl}: every first copy is known on a store directory");
            };
            let (path, rel) = &written[first_file];
            if !rel.starts_with(crawl) {
                earlier += 1;
            }
            // The span starts as the first copy does (normalized).
            let here = first_chars(texts.text(&written[file].0, *line), chars.start);
            let there = first_chars(texts.text(path, *first_line), at.start);
            assert_eq!(
                here, there,
                "{crawl}: {file}:{line} and {first_file}:{first_line}"
            );
        }
        assert!(
            earlier > 0,
            "{crawl}: {} spans, none from an earlier crawl",
            report.len()
        );
    }
}

#[test]
fn feedback_is_refused_on_redis_which_keeps_no_locations() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_input(dir.path());
    let node = common::redis_server::Node::start(false);
    let o = dedup(
        &input,
        &dir.path().join("out"),
        &["--substr", "-f", "--store", &node.url()],
    );
    assert_fails_saying(&o, 2, "Redis does not keep");
}

// ---- batch mode: `webdedup batch ... --substr` ----

/// The first `docs` documents of each crawl of the vertical sample, as the
/// sample lays them out (`DIR/slice/CRAWL/part.vert`): cheap, and the crawls
/// repeat one another's spans.
fn sample_slice(dir: &Path, docs: usize) -> PathBuf {
    let input = dir.join("slice");
    for crawl in CRAWLS {
        let (text, starts) = sample_crawl_docs(crawl);
        let end = starts.get(docs).copied().unwrap_or(text.len());
        write_file(&input.join(crawl).join("part.vert"), &text[..end]);
    }
    input
}

/// The figures of a run's `--json` that `dedup --substr` and `batch run --substr`
/// share.
fn shared_figures(json: &serde_json::Value) -> Vec<(&'static str, serde_json::Value)> {
    let names = [
        "bytes_in",
        "bytes_out",
        "documents_read",
        "documents_kept",
        "documents_dropped",
        "paragraphs_read",
        "paragraphs_retained",
        "spans_removed",
        "span_bytes_removed",
    ];
    names.iter().map(|&n| (n, json[n].clone())).collect()
}

#[test]
fn batch_run_equals_stream_mode_for_any_task_and_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_slice(dir.path(), 30);
    for (name, extra) in [("feedback", &["-f"][..]), ("mark", &["-f", "--mark"])] {
        let k_w = ["--substr=10,4", "--dd"];
        let stream = dir.path().join(format!("stream-{name}"));
        let want = run_json(&input, &stream, &[&k_w[..], extra, &["-t", "1"]].concat());
        assert!(want["spans_removed"].as_u64().unwrap() > 20, "{want}");
        let runs: &[(&str, &str)] = match name {
            "feedback" => &[("1", "1"), ("2", "3")],
            _ => &[("2", "3")],
        };
        for &(threads, tasks) in runs {
            let out = dir.path().join(format!("batch-{name}-{threads}-{tasks}"));
            let work = dir.path().join(format!("work-{name}-{threads}-{tasks}"));
            let flags = ["-t", threads, "--task-count", tasks, "--partitions", "5"];
            let args = [&k_w[..], extra, &flags, &["--json", "-"]].concat();
            let o = batch(&batch_run_args(&input, &out, &work, &args), None);
            ok(&o);
            let what = format!("{name}, -t {threads}, {tasks} tasks");
            assert_same_files(&what, &tree(&out), &tree(&stream));
            let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(shared_figures(&got), shared_figures(&want), "{what}");
        }
    }
}

/// A Slurm array simulated by a loop: every phase's task killed at a fault point
/// (before and after its result is in place), run again to its end, then
/// launched once more (already finished): the outputs are stream mode's.
#[test]
fn killed_and_rerun_phases_give_stream_modes_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_slice(dir.path(), 20);
    let stream = dir.path().join("stream");
    ok(&dedup(&input, &stream, &["--substr=10,4", "-f", "--dd"]));
    let (out, work) = (dir.path().join("out"), dir.path().join("work"));
    let phases = [
        ("hash", vec!["hash"]),
        ("windows", vec!["resolve", "--stage", "windows"]),
        ("filter", vec!["filter", "-o", s(&out), "--dd"]),
    ];
    let kills = [
        ("hash", 0, "batch-hash-written:1"),
        ("hash", 2, "batch-hash-published:1"),
        ("windows", 1, "batch-resolve-partition:2"),
        ("windows", 2, "batch-resolve-published:1"),
        ("filter", 0, "batch-filter-written:1"),
    ];
    let task_args = ["--substr=10,4", "-f", "--partitions", "5"];
    simulated_slurm_array(
        &phases,
        &phase_args(&[], &input, &work, &task_args),
        &[2, 0, 1],
        &kills,
        &[],
    );
    assert_same_files("killed and rerun", &tree(&out), &tree(&stream));
}

#[test]
fn batch_crawl_after_crawl_on_a_store_equals_stream_mode() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_slice(dir.path(), 20);
    assert_crawl_after_crawl_equals_one_run(dir.path(), &input, |i, o, store| {
        let work = dir.path().join("work").join(i.file_name().unwrap());
        let args = ["--substr", "--store", s(store)];
        batch(&batch_run_args(i, o, &work, &args), None)
    });
}

#[test]
fn a_batch_work_directory_records_k_and_w_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let input = jsonl_input(dir.path());
    let work = dir.path().join("work");
    let hash = |extra: &[&str]| {
        let args = [&FIRST_OF_TWO_TASKS[..], extra].concat();
        batch(&phase_args(&["hash"], &input, &work, &args), None)
    };
    ok(&hash(&["--substr=12,8"]));
    assert!(read(work.join("settings")).contains("substr=12,8\n"));
    assert_fails_saying(
        &hash(&["--substr=12,4"]),
        2,
        "substr '12,8' in the store, '12,4' in this run",
    );
    assert_fails_saying(
        &hash(&["--substr=12,8", "-f"]),
        2,
        "locations 'false' in the store",
    );
    assert_fails_saying(&hash(&[]), 2, "in the store");
    // Exact mode's stages are not this directory's.
    let resolve = ["resolve", "--stage", "paras"];
    let args = [&FIRST_OF_TWO_TASKS[..], &["--substr=12,8"]].concat();
    let o = batch(&phase_args(&resolve, &input, &work, &args), None);
    assert_fails_saying(&o, 2, "--stage paras is not a stage of the work directory");
    // -f names first copies within one run: a store of earlier runs is refused.
    let o = batch(
        &batch_run_args(
            &input,
            &dir.path().join("out"),
            &dir.path().join("w2"),
            &["--substr", "-f", "--store", s(&dir.path().join("store"))],
        ),
        None,
    );
    assert_fails_saying(&o, 2, "not supported with -f");
}
