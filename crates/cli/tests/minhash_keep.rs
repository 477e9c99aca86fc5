//! `webdedup batch run --minhash --keep POLICY` with the real binary: on a corpus
//! where four near-duplicate copies each win under another policy, every policy
//! names its survivor as the original of the other three (verification anchored
//! on it) and is the cluster of all four (`--clusters`), for any thread and task
//! count; `first` is stream mode's bytes; a
//! document without a usable value is an input problem (file, line, reason) and
//! ranks last; stream mode refuses other policies.

mod common;
use common::*;
use std::path::Path;

/// A deterministic word list (no dependency on a random crate).
fn words(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            format!("w{}x", (x >> 33) % 5000)
        })
        .collect()
}

fn record(id: &str, text: &[String], date: &str, score: &str) -> String {
    let date = match date {
        "" => String::new(),
        d => format!(r#","date":"{d}""#),
    };
    format!(
        r#"{{"id":"{id}","text":"{}"{date},"meta":{{"score":{score}}}}}"#,
        text.join(" ")
    ) + "\n"
}

/// Two files; copies d1..d4 of one text of 1500 words, each first under another
/// policy: d1 in input order, d2 longest (two more words), d3 newest (an offset
/// date that is the latest instant), d4 the highest score. `dates` overrides the
/// dates of d3 and d4.
fn corpus(dir: &Path, d3_date: &str, d4_date: &str) {
    let base = words(7, 1500);
    let changed = |at: usize, w: &str| {
        let mut t = base.clone();
        t[at] = w.into();
        t
    };
    let mut longer = base.clone();
    longer.extend(["extra".to_string(), "words".to_string()]);
    let other = |i: u64| record(&format!("u{i}"), &words(100 + i, 80), "2020-01-01", "0.5");
    write_file(
        &dir.join("a.jsonl"),
        [
            other(0),
            record("d1", &base, "2020-01-01", "0.1"),
            other(1),
            record("d2", &longer, "2021-06-01T10:00:00Z", "0.2"),
            other(2),
        ]
        .concat(),
    );
    write_file(
        &dir.join("b.jsonl"),
        [
            other(3),
            record("d3", &changed(800, "changed1"), d3_date, "0.3"),
            other(4),
            record("d4", &changed(1300, "changed2"), d4_date, "0.9"),
            other(5),
        ]
        .concat(),
    );
}

fn keep_run(
    input: &Path,
    out: &Path,
    work: &Path,
    keep: &str,
    layout: &[&str],
) -> std::process::Output {
    let mut args = batch_run_args(
        input,
        out,
        work,
        &["--minhash", "--dd", "--clusters", "--keep", keep],
    );
    args.extend_from_slice(layout);
    batch(&args, None)
}

/// The first two fields of each line of a run's files ending in `suffix`.
fn two_fields(out: &Path, suffix: &str) -> Vec<(String, String)> {
    lines_of(out, suffix)
        .iter()
        .map(|(_, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect()
}

/// The (document, original) pairs of a run's `.pairs` reports.
fn pairs(out: &Path) -> Vec<(String, String)> {
    let mut p = two_fields(out, ".pairs");
    p.sort();
    p
}

fn kept_ids(out: &Path) -> Vec<String> {
    let mut ids: Vec<String> = lines_of(out, ".dedup.jsonl")
        .iter()
        .map(|(_, l)| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    ids.sort();
    ids
}

#[test]
fn each_policy_keeps_its_survivor_for_any_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    corpus(&input, "2024-03-01T00:00:00+05:00", "2022-01-01");
    let copies = ["d1", "d2", "d3", "d4"];
    let others: Vec<String> = (0..6).map(|i| format!("u{i}")).collect();
    for (keep, survivor) in [
        ("first", "d1"),
        ("longest", "d2"),
        ("newest:date", "d3"),
        ("max:meta.score", "d4"),
    ] {
        let run = |name: &str, layout: &[&str]| {
            let (out, work) = (
                tmp.path().join(format!("o-{name}")),
                tmp.path().join(format!("w-{name}")),
            );
            let o = keep_run(&input, &out, &work, keep, layout);
            assert!(o.status.success(), "--keep {keep}: {}", stderr(&o));
            out
        };
        let one = run(&format!("{keep}-1"), &["-t", "1"]);
        let want: Vec<(String, String)> = copies
            .iter()
            .filter(|&&d| d != survivor)
            .map(|d| (d.to_string(), survivor.to_string()))
            .collect();
        assert_eq!(
            pairs(&one),
            want,
            "--keep {keep}: the others name {survivor}"
        );
        let mut kept: Vec<String> = others.clone();
        kept.push(survivor.to_string());
        kept.sort();
        assert_eq!(kept_ids(&one), kept, "--keep {keep}: the kept documents");
        // A cluster is the survivor and what was dropped as its near-duplicates.
        let clusters = two_fields(&one, ".clusters");
        assert_eq!(clusters.len(), 10, "--keep {keep}: every document");
        for (d, c) in &clusters {
            let want = if copies.contains(&d.as_str()) {
                survivor
            } else {
                d.as_str()
            };
            assert_eq!(c, want, "--keep {keep}: the cluster of {d}");
        }
        let three = run(
            &format!("{keep}-3"),
            &["-t", "3", "--task-count", "3", "--partitions", "5"],
        );
        assert_same_files(
            &format!("--keep {keep}, 3 threads and tasks"),
            &tree(&three),
            &tree(&one),
        );
        if keep == "first" {
            let stream_out = tmp.path().join("stream");
            ok(&webdedup(&command_args(
                "minhash",
                &input,
                &stream_out,
                &["--dd", "--clusters"],
            )));
            assert_same_files(
                "--keep first against stream mode",
                &tree(&one),
                &tree(&stream_out),
            );
        }
    }
}

#[test]
fn a_document_without_a_usable_value_is_a_problem_and_ranks_last() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    // The two newest copies lose their dates: d2 is then the newest with one.
    corpus(&input, "soon", "");
    let out = tmp.path().join("out");
    let o = keep_run(
        &input,
        &out,
        &tmp.path().join("work"),
        "newest:date",
        &["-t", "2"],
    );
    assert_eq!(o.status.code(), Some(1), "input problems: {}", stderr(&o));
    let b = input.join("b.jsonl");
    assert_says(
        &o,
        &format!("{}:2: --keep newest:date: field 'date' is not an ISO 8601 date or date and time ('soon'); ranked after every document with a value", b.display()),
    );
    assert_says(
        &o,
        &format!("{}:4: --keep newest:date: no field 'date'", b.display()),
    );
    let want: Vec<(String, String)> = ["d1", "d3", "d4"]
        .iter()
        .map(|d| (d.to_string(), "d2".to_string()))
        .collect();
    assert_eq!(pairs(&out), want);
}

#[test]
fn other_policies_are_refused_where_they_cannot_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    corpus(&input, "2024-03-01", "2022-01-01");
    let o = webdedup(&command_args(
        "minhash",
        &input,
        &tmp.path().join("s"),
        &["--keep", "longest"],
    ));
    assert_fails_saying(
        &o,
        2,
        "--keep longest: stream mode keeps the first copy in input order",
    );
    let o = webdedup(&command_args(
        "minhash",
        &input,
        &tmp.path().join("s1"),
        &["--keep", "first"],
    ));
    ok(&o);
    let o = batch(
        &batch_run_args(
            &input,
            &tmp.path().join("o"),
            &tmp.path().join("w"),
            &["--keep", "longest"],
        ),
        None,
    );
    assert_refused(&o, "--minhash");
    let o = keep_run(
        &input,
        &tmp.path().join("o2"),
        &tmp.path().join("w2"),
        "oldest:date",
        &[],
    );
    assert_refused(&o, "unknown survivor policy 'oldest:date' (expected first, longest, newest:FIELD or max:FIELD)");
}
