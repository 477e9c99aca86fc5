//! `dedup -n --near-rules onion` on the command line: onion's defaults (smoothing
//! on, stubs of at most 20 tokens), `--no-smooth` (onion's -m), and what the rules
//! do not support. The rules themselves are pinned in
//! `crates/dedup/tests/onion_rules.rs`.

mod common;
use common::*;
use std::fs;

/// Two documents of new tokens: 21 of them, then 3.
fn input() -> String {
    // Letters, not digits: our rules fold digits, which would repeat one word.
    let long = ('a'..='u')
        .map(|c| format!("word{c}"))
        .collect::<Vec<_>>()
        .join("\n");
    format!(
        "<doc url=\"u1\" title=\"t\">\n<p>\n{long}\n</p>\n</doc>\n\
         <doc url=\"u2\" title=\"t\">\n<p>\nbrand\nnew\nwords\n</p>\n</doc>\n"
    )
}

fn run(extra: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let input_path = dir.path().join("a.vert");
    fs::write(&input_path, input()).unwrap();
    let out = dir.path().join("out");
    let o = dedup(&input_path, &out, extra);
    let text = fs::read_to_string(out.join("a.vert.dedup")).unwrap_or_default();
    (o.status.code(), text, stderr(&o))
}

#[test]
fn onion_rules_smooth_by_default_as_onion_does() {
    // onion drops a document of at most 20 tokens even when all of it is new (its
    // edges count as dropped neighbours); the 21-token document stays.
    let (code, out, err) = run(&["-n", "--near-rules", "onion"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("wordu") && !out.contains("brand"), "{out}");
    // onion -l 2: a 3-token document is no stub any more.
    let (_, out, _) = run(&["-n", "--near-rules", "onion", "--max-stub", "2"]);
    assert_eq!(out, input());
    // onion -m.
    let (_, out, _) = run(&["-n", "--near-rules", "onion", "--no-smooth"]);
    assert_eq!(out, input());
    // Our rules keep both (nothing was seen; our smoothing needs a dropped paragraph).
    let (_, out, _) = run(&["-n", "--smooth"]);
    assert_eq!(out, input());
}

#[test]
fn onion_rules_refuse_what_they_do_not_support() {
    for (args, message) in [
        (
            &["-n", "--near-rules", "onion", "-f"][..],
            "--near-rules onion does not support feedback mode",
        ),
        (&["-n", "--no-smooth"][..], "--no-smooth applies with"),
        (&["-n", "--max-stub", "5"][..], "--max-stub applies with"),
        (
            &["-n", "--near-rules", "fancy"][..],
            "unknown near rules 'fancy'",
        ),
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
    }
}
