//! End to end: near mode, the URL filter, feedback mode and `webdedup check`, with
//! the real binary.

mod common;
#[path = "../../dedup/src/tests/verticals.rs"]
mod verticals;
use common::*;
use verticals::{doc, para};

const P1: &str = "the quick brown fox jumps over the lazy dog near the river bank today";
const P2: &str = "a completely different sentence about databases tables indexes and queries";
const P3: &str = "yet another paragraph which talks about compilers parsers and the lexers";

#[test]
fn feedback_mode_writes_dropped_paragraphs_with_references_that_check_confirms() {
    let tmp = tempfile::tempdir().unwrap();
    let (input, output) = (tmp.path().join("in"), tmp.path().join("out"));
    write_file(&input.join("a.vert"), doc("a", &[para(P1), para(P2)]));
    write_file(
        &input.join("b.vert"),
        doc("b", &[para(P3), para(P2)]) + &doc("a", &[para(P1), para(P2)]),
    );
    let o = dedup(&input, &output, &["-f", "--dd", "--min-para-chars", "10"]);
    ok(&o);

    let idx = read(output.join("files.idx"));
    let id = |rel: &str| format!("{:016x}", xxhash_rust::xxh3::xxh3_64(rel.as_bytes()));
    assert_eq!(
        idx,
        format!("{}\ta.vert\n{}\tb.vert\n", id("a.vert"), id("b.vert"))
    );
    // b.vert: record 2 (P2) repeats a.vert's record 2; the second document of b
    // repeats a.vert's document whole: its records 3 and 4 are a.vert's 1 and 2.
    let dropped = read(output.join("b.vert.dedup.dropped"));
    let (a, b) = (id("a.vert"), id("b.vert"));
    assert_eq!(
        dropped,
        format!(
            "<t>{b}:2\t{a}:2</f>\n{}<t>{b}:3\t{a}:1</f>\n{}<t>{b}:4\t{a}:2</f>\n{}",
            para(P2),
            para(P1),
            para(P2)
        )
    );
    assert_eq!(read(output.join("a.vert.dedup.dropped")), "");
    assert_eq!(
        read(output.join("b.vert.dedup.dd"))
            .matches("status=\"D\"")
            .count(),
        1
    );

    let report = check_report(&input, &output, false);
    assert_eq!(report["references"], 3);
    assert_eq!(report["confirmed"], 3);
    assert_eq!(report["mismatches"].as_array().unwrap().len(), 0);

    // A planted wrong reference is a mismatch naming both places; exit status 1.
    let forged = dropped.replacen(&format!("{b}:2\t{a}:2"), &format!("{b}:2\t{a}:1"), 1);
    std::fs::write(output.join("b.vert.dedup.dropped"), forged).unwrap();
    let c = check(&input, &output, &[]);
    assert_eq!(c.status.code(), Some(1), "{}", stderr(&c));
    let err = stderr(&c);
    assert!(
        err.contains("mismatch") && err.contains("b.vert:2") && err.contains("a.vert:1"),
        "{err}"
    );
    assert!(err.contains("b.vert.dedup.dropped:1"), "{err}");
}

#[test]
fn check_over_a_feedback_run_of_the_sample_finds_no_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    for (mode, extra) in [("exact", &[][..]), ("near", &["-n"][..])] {
        let out = tmp.path().join(mode);
        let mut args = vec!["-f", "-t", "2"];
        args.extend_from_slice(extra);
        let o = dedup(&sample_dir(), &out, &args);
        ok(&o);
        let r = check_report(&sample_dir(), &out, mode == "near");
        assert!(r["references"].as_u64().unwrap() > 10_000, "{mode}: {r}");
        assert_eq!(r["mismatches"].as_array().unwrap().len(), 0, "{mode}: {r}");
        assert_eq!(r["unknown_original"], 0, "{mode}: {r}");
        if mode == "exact" {
            // Every exact reference names a paragraph with the same text.
            assert_eq!(r["confirmed"], r["references"], "{r}");
        }
    }
}

#[test]
fn near_mode_output_is_the_same_for_any_thread_count_and_chunk_size() {
    let tmp = tempfile::tempdir().unwrap();
    let mut first = None;
    for (threads, chunk) in [("1", "1000000"), ("2", "20000"), ("3", "7000")] {
        let out = tmp.path().join(format!("o{threads}"));
        let o = dedup(
            &sample_dir(),
            &out,
            &[
                "-n",
                "--smooth",
                "-f",
                "--dd",
                "-t",
                threads,
                "--chunk-bytes",
                chunk,
            ],
        );
        ok(&o);
        let t = tree(&out);
        match &first {
            None => first = Some(t),
            Some(f) => assert!(
                f == &t,
                "outputs differ with -t {threads} --chunk-bytes {chunk}"
            ),
        }
    }
}

#[test]
fn near_mode_keeps_fewer_paragraphs_than_exact_mode_on_the_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let figures = |extra: &[&str], name: &str| {
        let out = tmp.path().join(name);
        let json = tmp.path().join(format!("{name}.json"));
        let mut args = vec!["--json", json.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = dedup(&sample_dir(), &out, &args);
        ok(&o);
        let v: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
        v["paragraphs_retained"].as_u64().unwrap()
    };
    let exact = figures(&[], "exact");
    let near = figures(&["-n"], "near");
    let smooth = figures(&["-n", "--smooth"], "smooth");
    assert!(near < exact, "near {near} exact {exact}");
    assert!(smooth <= near, "smooth {smooth} near {near}");
}

#[test]
fn url_filter_rules_give_status_u_and_bad_rules_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (input, output) = (tmp.path().join("in"), tmp.path().join("out"));
    write_file(
        &input.join("x.vert"),
        doc("http://spam.example/1", &[para(P1)])
            + &doc("https://www.example.org/docs/a", &[para(P2)])
            + &doc("https://keep.example/", &[para(P3)]),
    );
    let rules = tmp.path().join("rules.txt");
    std::fs::write(
        &rules,
        "# spam\nhost:spam.example\nprefix:https://www.example.org/docs/\nre:([\n",
    )
    .unwrap();
    let json = tmp.path().join("run.json");
    let o = dedup(
        &input,
        &output,
        &[
            "--dd",
            "--url-filter",
            rules.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    // The bad rule is an input problem (exit 1) named by file and line; the rest applies.
    assert_fails_saying(
        &o,
        1,
        &format!("{}:4: bad regular expression", rules.display()),
    );
    let dd = read(output.join("x.vert.dedup.dd"));
    let statuses: Vec<&str> = dd
        .lines()
        .map(|l| l.rsplit("status=\"").next().unwrap())
        .collect();
    assert_eq!(statuses, ["U\"/>", "U\"/>", "K\"/>"]);
    assert_eq!(
        read(output.join("x.vert.dedup")),
        doc("https://keep.example/", &[para(P3)])
    );
    let v: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    assert_eq!(v["documents_dropped_url_filter"], 2);
}

#[test]
fn near_options_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let o = dedup(
        &sample_dir(),
        &tmp.path().join("o"),
        &["-n", "--threshold", "1.5"],
    );
    assert_fails_saying(&o, 2, "--threshold");
    let o = dedup(&sample_dir(), &tmp.path().join("o"), &["--smooth"]);
    assert_eq!(o.status.code(), Some(2), "--smooth needs -n");
}

#[test]
fn wikilinks_rows_exact_and_near_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    let ctx_l = "the reference manual describes how the parser reads every statement";
    let ctx_r = "before the planner chooses an index for the query at hand";
    let row = |c1: &str, c2: &str, c3: &str, c4: &str, c5: &str, c6: &str| {
        format!("{c1}\t{c2}\t{c3}\t{c4}\t{c5}\t{c6}\n")
    };
    let r1 = row("p1", "Parser", "parser", "7", ctx_l, ctx_r);
    // Columns 1 and 4 differ only: an exact duplicate.
    let r2 = row("p2", "Parser", "parser", "9", ctx_l, ctx_r);
    // Another target, same text: kept in both modes (near needs the target seen).
    let r3 = row("p3", "Planner", "parser", "7", ctx_l, ctx_r);
    // Same target, one word of context changed: near duplicate only.
    let r4 = row(
        "p4",
        "Parser",
        "parser",
        "7",
        ctx_l,
        &ctx_r.replace("hand", "last"),
    );
    let short = "only\tthree\tcolumns\n".to_string();
    write_file(
        &input.join("links.tsv"),
        [r1.clone(), r2, short.clone(), r3.clone(), r4.clone()].concat(),
    );

    let exact_out = tmp.path().join("exact");
    let o = dedup(&input, &exact_out, &["--format", "wikilinks", "-f"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the short row is an input problem: {}",
        stderr(&o)
    );
    assert_says(
        &o,
        &format!("{}:3: row has 3 columns", input.join("links.tsv").display()),
    );
    assert_eq!(
        read(exact_out.join("links.tsv.dedup")),
        [r1.clone(), short.clone(), r3.clone(), r4.clone()].concat()
    );
    let id = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(b"links.tsv"));
    assert_eq!(
        read(exact_out.join("links.tsv.dedup.dropped")),
        format!(
            "<t>{id}:2\t{id}:1</f>\n{}",
            row("p2", "Parser", "parser", "9", ctx_l, ctx_r)
        )
    );

    let near_out = tmp.path().join("near");
    let o = dedup(&input, &near_out, &["--format", "wikilinks", "-n"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        read(near_out.join("links.tsv.dedup")),
        [r1, short, r3].concat()
    );
}
