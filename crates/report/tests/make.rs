//! `webdedup_report::make` on small runs written here in the commands' formats:
//! figures per crawl, language and domain, problems by file and line, the page
//! cap, and drops beside their originals with the changed words marked.

use std::path::{Path, PathBuf};
use webdedup_report::{make, Options};

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn options(inputs: &[&Path]) -> Options {
    Options {
        inputs: inputs.iter().map(|p| p.to_path_buf()).collect(),
        ..Default::default()
    }
}

/// A MinHash run over two crawls of JSON Lines: `b` dropped as a copy of `a`.
fn minhash_run(root: &Path) -> (PathBuf, PathBuf) {
    let files = [
        (
            "out/c1/p.jsonl.dedup.dd",
            "<dd id=\"a\" url=\"https://www.x.org/de/a\" title=\"A\" status=\"K\"/>\n",
        ),
        (
            "out/c1/p.jsonl.dedup",
            "{\"id\":\"a\",\"text\":\"the quick brown fox\\njumps over the lazy dog\"}\n",
        ),
        (
            "out/c2/p.dedup.dd",
            "<dd id=\"b\" url=\"https://y.org/b\" title=\"B\" status=\"D\"/>\n<dd id=\"c\" url=\"https://y.org/c\" title=\"C\" status=\"2/3\"/>\n",
        ),
        ("out/c2/p.dedup.pairs", "b\ta\t0.750\n"),
        ("out/c2/p.dedup.jsonl", "{\"id\":\"c\",\"text\":\"other\"}\n"),
        (
            "in/c2/p.jsonl",
            "{\"id\":\"b\",\"text\":\"the quick red fox\\njumps over the lazy dog today\"}\n{\"id\":\"c\",\"text\":\"other\"}\n",
        ),
    ];
    for (name, text) in files {
        write(&root.join(name), text);
    }
    (root.join("out"), root.join("in"))
}

#[test]
fn totals_by_crawl_language_and_domain() {
    let t = tempfile::tempdir().unwrap();
    let (run, _) = minhash_run(t.path());
    let made = make(&options(&[&run])).unwrap();
    let r = &made.runs[0];
    assert_eq!(r["documents_read"], 3);
    assert_eq!(r["documents_kept_whole"], 1);
    assert_eq!(r["documents_kept_partly"], 1);
    assert_eq!(r["documents_dropped_duplicate"], 1);
    assert_eq!(r["minhash_pairs"], 1);
    let html = &made.html;
    assert!(html.contains("data-figure=\"documents_read\" data-source=\"dd\" data-value=\"3\""));
    // Crawls, the language a URL names, domains without www.
    assert!(
        html.contains("<td class=\"text\">c1</td>") && html.contains("<td class=\"text\">c2</td>")
    );
    assert!(html.contains("<td class=\"text\">de</td>"));
    assert!(
        html.contains("<td class=\"text\">x.org</td>")
            && html.contains("<td class=\"text\">y.org</td>")
    );
    // The similarity chart has the pair in its 0.75 bin.
    assert!(html.contains("data-bin=\"0.75\" data-count=\"1\""));
    assert_eq!(made.problems.count, 0);
}

#[test]
fn drops_beside_their_originals_with_words_marked() {
    let t = tempfile::tempdir().unwrap();
    let (run, src) = minhash_run(t.path());
    let mut o = options(&[&run]);
    o.sources = vec![src];
    let made = make(&o).unwrap();
    let html = &made.html;
    for shown in [
        "data-doc=\"b\" data-original=\"a\"",
        "data-added=\"2\" data-removed=\"1\"",
        "<del>brown </del>",
        "<ins>red </ins>",
        "<ins>today </ins>",
    ] {
        assert!(html.contains(shown), "{shown} not in {html}");
    }
    // Without the inputs the original is still shown, the drop's text is not.
    let made = make(&options(&[&run])).unwrap();
    assert!(made.html.contains("the quick brown fox"));
    assert!(!made.html.contains("data-added="));
    assert!(made.html.contains("--source"));
}

#[test]
fn bad_lines_are_reported_with_file_and_line() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("out");
    write(
        &run.join("p.dedup.dd"),
        "<dd url=\"\" title=\"\" status=\"K\"/>\nnot a dd line\n<dd url=\"\" status=\"Z\"/>\n",
    );
    let made = make(&options(&[&run])).unwrap();
    assert_eq!(made.problems.count, 2);
    let dd = run.join("p.dedup.dd").display().to_string();
    assert_eq!(
        made.problems.shown[0],
        format!("{dd}:2: not a <dd .../> line")
    );
    assert_eq!(
        made.problems.shown[1],
        format!("{dd}:3: unknown status 'Z'")
    );
    assert_eq!(made.runs[0]["documents_read"], 1);
}

#[test]
fn a_directory_without_run_outputs_is_refused() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("x/notes.txt"), "hello");
    let err = make(&options(&[&t.path().join("x")])).unwrap_err();
    assert!(
        format!("{err:#}").contains("nothing to report in"),
        "{err:#}"
    );
}

#[test]
fn the_page_cap_leaves_sections_out_but_keeps_the_totals() {
    let t = tempfile::tempdir().unwrap();
    let (run, src) = minhash_run(t.path());
    let mut o = options(&[&run]);
    o.sources = vec![src];
    let full = make(&o).unwrap();
    o.max_bytes = full.html.len() - 1;
    let capped = make(&o).unwrap();
    assert!(capped.html.len() < full.html.len());
    assert!(!capped.left_out.is_empty());
    assert!(capped.html.contains("id=\"totals\""));
    assert!(capped.html.contains("data-left-out="));
}
