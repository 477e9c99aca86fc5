//! The decision table, checked document by document on hand-made verticals.

use crate::plan::{ChunkPlan, Planner};
use crate::policy::{decide, Decisions, DocStatus, Scratch};
use crate::render::{render, DdOut};
use crate::report::ChunkStats;
use crate::{DocCheck, Options};
use std::sync::Arc;
use verticals::{doc, para};
use webdedup_formats::chunk::Chunk;
use webdedup_formats::fields::JsonlOptions;
use webdedup_formats::read::DocFormat;
use webdedup_store::MemStore;

mod verticals;

/// A long paragraph (>= 50 characters) made of `word` repeated.
fn long(word: &str) -> String {
    let words: Vec<&str> = std::iter::repeat_n(word, 60 / (word.len() + 1) + 1).collect();
    format!("<p>\n{}\n</p>\n", words.join("\n"))
}

/// The default options with the document check `doc_check`.
fn checking(doc_check: DocCheck) -> Options {
    Options {
        doc_check,
        ..Options::default()
    }
}

/// The default options without normalization: texts must match exactly.
fn unnormalized() -> Options {
    Options {
        normalization: webdedup_text::Normalization::None,
        ..Options::default()
    }
}

/// Runs the policy over `inputs` in order against one store; returns each input's
/// output and its documents' statuses.
fn run(inputs: &[String], opts: &Options) -> Vec<(String, Vec<String>)> {
    run_as(&DocFormat::Vertical, inputs, opts)
        .into_iter()
        .map(|(out, st, _)| (out, st))
        .collect()
}

/// [`run`] for inputs of `format`; also returns each input's `.dd` lines.
fn run_as(
    format: &DocFormat,
    inputs: &[String],
    opts: &Options,
) -> Vec<(String, Vec<String>, String)> {
    let store = MemStore::new(13);
    let mut planner = Planner::new(opts);
    let (mut plan, mut scratch, mut dec) = (
        ChunkPlan::default(),
        Scratch::default(),
        Decisions::default(),
    );
    inputs
        .iter()
        .map(|input| {
            let chunk = Chunk {
                data: input.as_bytes().to_vec(),
                first_line: 1,
                last: true,
                ..Default::default()
            };
            planner.plan_as(format, &chunk, &mut plan);
            decide(
                &plan,
                Default::default(),
                &store,
                opts,
                &mut scratch,
                &mut dec,
            )
            .unwrap();
            let mut out = Vec::new();
            let mut dd = Vec::new();
            render(
                &chunk.data,
                &plan,
                &dec,
                &mut out,
                Some(DdOut {
                    out: &mut dd,
                    name: "in",
                }),
                None,
                &mut ChunkStats::default(),
            );
            let statuses = dec.docs.iter().map(|s| s.code()).collect();
            (
                String::from_utf8(out).unwrap(),
                statuses,
                String::from_utf8(dd).unwrap(),
            )
        })
        .collect()
}

fn run1(input: String) -> (String, Vec<String>) {
    run(&[input], &Options::default()).pop().unwrap()
}

#[test]
fn first_instance_of_a_long_paragraph_wins() {
    let a = doc("a", &[long("alpha"), long("beta")]);
    let b = doc("b", &[long("beta"), long("gamma")]);
    let (out, st) = run1(a.clone() + &b);
    assert_eq!(st, ["K", "1/2"]);
    assert_eq!(out, a + &doc("b", &[long("gamma")]));
}

#[test]
fn duplicate_documents_are_dropped_whole() {
    let a = doc("a", &[long("alpha"), para("Note")]);
    let again = doc("other-url", &[long("alpha"), para("Note")]);
    let (out, st) = run1(a.clone() + &again);
    assert_eq!(st, ["K", "D"]);
    assert_eq!(out, a);
}

#[test]
fn short_paragraphs_share_the_fate_of_the_next_long_one() {
    let first = doc("a", &[long("seen")]);
    // "Title" precedes a duplicate long paragraph: dropped with it. "See also" precedes
    // a new one: kept with it.
    let second = doc(
        "b",
        &[para("Title"), long("seen"), para("See also"), long("fresh")],
    );
    let (out, st) = run(&[first, second], &Options::default()).pop().unwrap();
    assert_eq!(st, ["2/4"]);
    assert_eq!(out, doc("b", &[para("See also"), long("fresh")]));
}

#[test]
fn trailing_short_paragraphs_follow_whether_any_long_one_was_kept() {
    let first = doc("a", &[long("one"), long("two")]);
    let kept_some = doc("b", &[long("one"), long("three"), para("Footer")]);
    let kept_none = doc("c", &[long("two"), para("Footer")]);
    let res = run(&[first, kept_some, kept_none], &Options::default());
    assert_eq!(
        res[1],
        (
            doc("b", &[long("three"), para("Footer")]),
            vec!["2/3".to_string()]
        )
    );
    // Every paragraph dropped: the document is not written at all.
    assert_eq!(res[2], (String::new(), vec!["E".to_string()]));
}

#[test]
fn documents_without_long_paragraphs_are_kept_unless_repeated() {
    let a = doc("a", &[para("Gallery"), para("Home")]);
    let b = doc("b", &[para("Gallery"), para("Contact")]);
    let (out, st) = run1(a.clone() + &b + &doc("c", &[para("Gallery"), para("Home")]));
    assert_eq!(st, ["K", "K", "D"]);
    assert_eq!(out, a + &b);
}

#[test]
fn min_para_chars_decides_long_and_short() {
    // 49 characters is short, 50 is long (Unicode scalar values, spaces included).
    let p49 = format!("<p>\n{}\n</p>\n", "ž".repeat(49));
    let p50 = format!("<p>\n{}\n</p>\n", "ž".repeat(50));
    let input = doc("a", &[p49.clone(), p50.clone()])
        + &doc("b", std::slice::from_ref(&p49))
        + &doc("c", &[p50.clone(), long("x")]);
    let (_, st) = run1(input);
    // b has only a short paragraph (its doc key differs from a's): kept. c repeats the long one.
    assert_eq!(st, ["K", "K", "1/2"]);
}

#[test]
fn normalization_makes_variants_collide_or_not() {
    // A short paragraph, then a long one that starts with `heading`.
    let variant = |url: &str, short_text: &str, heading: &str| {
        let words = "word ".repeat(10).trim().replace(' ', "\n");
        let long = format!("<p>\n{heading}\n{words}\n</p>\n");
        doc(url, &[para(short_text), long])
    };
    let upper = variant("a", "x", "The Python 3.9 Docs ,");
    let lower = variant("b", "y", "the python 4.2 docs");
    let loose = run(&[upper.clone(), lower.clone()], &Options::default());
    assert_eq!(
        loose[1].1,
        ["E"],
        "loose: case, digits and punctuation do not matter"
    );
    let none = unnormalized();
    let exact = run(&[upper, lower], &none);
    assert_eq!(exact[1].1, ["K"], "none: the text must match exactly");
}

#[test]
fn url_title_doc_check_tests_documents_only_when_url_and_title_repeat() {
    let a = doc("same", &[long("alpha")]);
    let moved = doc("moved", &[long("alpha")]);
    let repeated = doc("same", &[long("alpha")]);
    let opts = checking(DocCheck::UrlTitle);
    let res = run(&[a.clone() + &moved + &repeated + &repeated], &opts);
    // "moved" has a new URL: its document key is not tested, its paragraph is seen (E).
    // The first "same" repeat stores the document key; the second is a duplicate (D).
    assert_eq!(res[0].1, ["K", "E", "E", "D"]);
    let all = run(&[a + &moved], &Options::default());
    assert_eq!(all[0].1, ["K", "D"]);
}

#[test]
fn doc_check_none_decides_paragraphs_only() {
    let a = doc("same", &[long("alpha"), long("beta")]);
    let copy = doc("same", &[long("alpha"), long("beta")]);
    let shorts = doc("x", &[para("see also")]);
    let opts = checking(DocCheck::None);
    let res = run(&[a.clone() + &copy + &shorts + &shorts], &opts);
    // The copy loses its paragraphs one by one (E, never D); a repeated document of
    // short paragraphs asks no key at all and is kept.
    assert_eq!(res[0].1, ["K", "E", "K", "K"]);
    let all = run(&[a + &copy + &shorts + &shorts], &Options::default());
    assert_eq!(all[0].1, ["K", "D", "K", "D"]);
}

#[test]
fn a_one_paragraph_document_does_not_collide_with_its_paragraph() {
    // The document key and the paragraph key hash the same text, in different key spaces.
    let (out, st) = run1(doc("a", &[long("solo")]));
    assert_eq!(st, ["K"]);
    assert!(!out.is_empty());
}

#[test]
fn repeated_paragraph_inside_one_document() {
    let (out, st) = run1(doc("a", &[long("echo"), long("echo")]));
    assert_eq!(st, ["1/2"]);
    assert_eq!(out, doc("a", &[long("echo")]));
}

#[test]
fn glue_changes_the_text() {
    // "e . g" with glue is "e.g"; without glue it is "e . g": under `none` they differ.
    let glued = doc(
        "a",
        &[format!(
            "<p>\ne\n<g/>\n.\n<g/>\ng\n{}\n</p>\n",
            "pad\n".repeat(15).trim_end()
        )],
    );
    let spaced = doc(
        "b",
        &[format!(
            "<p>\ne\n.\ng\n{}\n</p>\n",
            "pad\n".repeat(15).trim_end()
        )],
    );
    let none = unnormalized();
    assert_eq!(run(&[glued.clone(), spaced.clone()], &none)[1].1, ["K"]);
    // Under `loose` punctuation goes and spaces collapse: "e g pad ..." vs "eg pad ...".
    assert_eq!(run(&[glued, spaced], &Options::default())[1].1, ["K"]);
}

#[test]
fn status_codes() {
    assert_eq!(DocStatus::Kept.code(), "K");
    assert_eq!(DocStatus::Partial { kept: 3, total: 7 }.code(), "3/7");
    assert_eq!(DocStatus::Duplicate.code(), "D");
    assert_eq!(DocStatus::Emptied.code(), "E");
    assert!(!DocStatus::Emptied.written() && DocStatus::Partial { kept: 1, total: 2 }.written());
}

// ---- Near mode (-n): onion's rules on hand-made documents -------------------------

fn near(ngram: usize, smooth: bool) -> Options {
    Options {
        mode: crate::options::Mode::Near {
            near: crate::NearOptions {
                ngram,
                threshold: 0.5,
                smooth,
                max_stub: 20,
                rules: crate::NearRules::Webdedup,
            },
            feedback: false,
        },
        // Every test paragraph below is long enough to be judged.
        min_para_chars: 10,
        ..Options::default()
    }
}

const P1: &str = "the quick brown fox jumps over the lazy dog near the river bank today";
const P2: &str = "a completely different sentence about databases tables indexes and queries";

#[test]
fn near_drops_a_paragraph_that_differs_by_one_word() {
    // 13 tokens, one changed at the end: n-grams of 3 cover 12 of 13 tokens.
    let a = doc("a", &[para(P1), para(P2)]);
    let b = doc(
        "b",
        &[para(
            "the quick brown fox jumps over the lazy dog near the river bank tomorrow",
        )],
    );
    let res = run(&[a.clone(), b.clone()], &near(3, false));
    assert_eq!(res[1].1, ["E"], "near duplicate dropped");
    let exact = run(
        &[a, b],
        &Options {
            min_para_chars: 10,
            ..Options::default()
        },
    );
    assert_eq!(exact[1].1, ["K"], "exact mode keeps it");
}

#[test]
fn near_keeps_a_paragraph_at_or_below_the_threshold() {
    // 8 tokens; the first 4 form the only seen 4-gram: exactly 4/8 covered, not more than 0.5.
    let a = doc("a", &[para("alpha beta gamma delta")]);
    let b = doc("b", &[para("alpha beta gamma delta one two three four")]);
    let res = run(&[a, b], &near(4, false));
    assert_eq!(res[1].1, ["K"]);
    // With 5 of 8 covered it is dropped.
    let a = doc("a", &[para("alpha beta gamma delta epsilon")]);
    let b = doc(
        "b",
        &[para("alpha beta gamma delta epsilon two three four")],
    );
    assert_eq!(run(&[a, b], &near(4, false))[1].1, ["E"]);
}

#[test]
fn near_sees_ngrams_earlier_in_the_same_document() {
    let d = doc("a", &[para(P1), para(P2), para(P1)]);
    let (out, st) = run(&[d], &near(3, false)).pop().unwrap();
    assert_eq!(st, ["2/3"]);
    assert_eq!(out, doc("a", &[para(P1), para(P2)]));
}

#[test]
fn near_ngrams_cross_paragraph_boundaries() {
    // The second document splits the first one's paragraph in two halves of 3
    // tokens: with n = 4 neither half holds a whole 4-gram, but the windows
    // crossing the boundary are seen, and each half is more than half covered.
    let a = doc("a", &[para("one two three four five six")]);
    let b = doc("b", &[para("one two three"), para("four five six")]);
    let res = run(&[a, b], &near(4, false));
    // "one two three": no 4-gram ends in it; not covered; kept. "four five six":
    // the 4-grams ending in it are all seen and cover it whole.
    assert_eq!(res[1].1, ["1/2"]);
    assert_eq!(res[1].0, doc("b", &[para("one two three")]));
}

#[test]
fn near_inserts_only_the_ngrams_of_kept_paragraphs() {
    let first = doc("a", &[para(P1)]);
    // Dropped as a near duplicate: its new last words must not be inserted...
    let variant = doc(
        "b",
        &[para(
            "the quick brown fox jumps over the lazy dog near the river bank xx yy zz",
        )],
    );
    // ...so a paragraph made of them is new.
    let tail = doc("c", &[para("bank xx yy zz ww")]);
    let res = run(&[first, variant, tail], &near(3, false));
    assert_eq!(res[1].1, ["E"]);
    assert_eq!(res[2].1, ["K"]);
}

#[test]
fn smoothing_drops_short_kept_runs_between_dropped_paragraphs() {
    let a = doc("a", &[para(P1), para(P2)]);
    // A 4-token paragraph between two dropped ones: a stub.
    let b = doc("b", &[para(P1), para("only four new words"), para(P2)]);
    assert_eq!(run(&[a.clone(), b.clone()], &near(3, false))[1].1, ["1/3"]);
    assert_eq!(run(&[a.clone(), b.clone()], &near(3, true))[1].1, ["E"]);
    // A run longer than --max-stub is left alone.
    // (Distinct words without digits: `loose` maps every digit to 0.)
    let long_run = "ka kb kc kd ke kf kg kh ki kj kk kl km kn ko kp kq kr ks kt ku";
    let c = doc("c", &[para(P1), para(long_run), para(P2)]);
    assert_eq!(run(&[a.clone(), c], &near(3, true))[1].1, ["1/3"]);
    // A document with nothing dropped is not smoothed.
    let d = doc("d", &[para("short kept one"), para("another short kept")]);
    assert_eq!(run(&[d], &near(3, true))[0].1, ["K"]);
}

#[test]
fn near_mode_short_paragraphs_ride_along_as_in_exact_mode() {
    let a = doc("a", &[para(P1)]);
    let b = doc("b", &[para("hi"), para(P1), para("bye"), para(P2)]);
    let (out, st) = run(&[a, b], &near(3, false)).pop().unwrap();
    // "hi" shares the fate of the dropped P1; "bye" that of the kept P2.
    assert_eq!(st, ["2/4"]);
    assert_eq!(out, doc("b", &[para("bye"), para(P2)]));
}

#[test]
fn url_filter_drops_documents_before_any_store_request() {
    let (filter, problems) = crate::UrlFilter::parse("host:spam.example\n");
    assert!(problems.is_empty());
    let opts = Options {
        url_filter: Some(std::sync::Arc::new(filter)),
        ..Options::default()
    };
    let spam = doc("http://spam.example/a", &[long("alpha")]);
    let ham = doc("http://ham.example/a", &[long("alpha")]);
    let (out, st) = run(&[spam + &ham.clone()], &opts).pop().unwrap();
    // The filtered copy came first but asked nothing: the second one is new.
    assert_eq!(st, ["U", "K"]);
    assert_eq!(out, ham);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Near mode drops at least what exact mode drops: the exact verdicts are the
    /// same in both (same keys asked), and near mode only adds drops.
    #[test]
    fn near_mode_never_keeps_more_than_exact_mode(
        docs in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(0u8..6, 1..12), 1..5),
            1..8,
        ),
        ngram in 2usize..5,
        smooth: bool,
    ) {
        let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
        let input: String = docs
            .iter()
            .enumerate()
            .map(|(i, paras)| {
                let body: Vec<String> = paras
                    .iter()
                    .map(|p| para(&p.iter().map(|&w| words[w as usize]).collect::<Vec<_>>().join(" ")))
                    .collect();
                doc(&format!("u{}", i % 3), &body)
            })
            .collect();
        let exact_opts = Options { min_para_chars: 20, ..Options::default() };
        let near_opts = Options { min_para_chars: 20, ..near(ngram, smooth) };
        let exact = run(std::slice::from_ref(&input), &exact_opts).pop().unwrap();
        let near_res = run(&[input], &near_opts).pop().unwrap();
        proptest::prop_assert!(near_res.0.len() <= exact.0.len());
        // Every line near mode keeps, exact mode keeps too (same order).
        let exact_lines: Vec<&str> = exact.0.lines().collect();
        let mut i = 0;
        for line in near_res.0.lines() {
            while i < exact_lines.len() && exact_lines[i] != line {
                i += 1;
            }
            proptest::prop_assert!(i < exact_lines.len(), "near kept a line exact mode dropped");
            i += 1;
        }
    }
}

#[test]
fn a_kept_plan_is_used_only_for_the_same_bytes_and_within_its_budget() {
    use crate::plan::PlanCache;
    let opts = Options::default();
    let mut planner = Planner::new(&opts);
    let plan_of = |planner: &mut Planner, text: &str| {
        let chunk = Chunk {
            data: text.as_bytes().to_vec(),
            first_line: 1,
            last: true,
            ..Default::default()
        };
        let mut plan = ChunkPlan::default();
        planner.plan(&chunk, &mut plan);
        plan
    };
    let a = doc("a", &[long("alpha"), para("x")]);
    let b = doc("b", &[long("beta")]);
    let cache = PlanCache::new(1 << 20);
    assert!(cache.put(b"f", 0, a.as_bytes(), plan_of(&mut planner, &a)));
    let mut got = ChunkPlan::default();
    // Other bytes under the same name and index: not used (and dropped).
    assert!(!cache.take(b"f", 0, b.as_bytes(), &mut got));
    assert!(got.docs.is_empty() && cache.is_empty());
    assert!(cache.put(b"f", 0, a.as_bytes(), plan_of(&mut planner, &a)));
    assert!(
        !cache.take(b"f", 1, a.as_bytes(), &mut got),
        "another chunk index"
    );
    assert!(cache.take(b"f", 0, a.as_bytes(), &mut got));
    let want = plan_of(&mut planner, &a);
    assert_eq!(format!("{:?}", got), format!("{:?}", want));
    assert!(!cache.take(b"f", 0, a.as_bytes(), &mut got), "taken once");
    // Past the budget nothing is kept.
    let tiny = PlanCache::new(10);
    assert!(!tiny.put(b"f", 0, a.as_bytes(), plan_of(&mut planner, &a)));
    assert!(tiny.is_empty());
}

// ---- JSON Lines: the same policy, the text value rewritten in place --------------

fn jsonl() -> DocFormat {
    DocFormat::Jsonl(Arc::new(JsonlOptions::default()))
}

/// A long line of text (>= 50 characters) made of `word` repeated.
fn long_line(word: &str) -> String {
    vec![word; 60 / (word.len() + 1) + 1].join(" ")
}

/// A JSON line with `text` and fields around it, as a JSON writer would put them.
fn jline(id: &str, text: &str) -> String {
    format!(
        "{{\"id\": \"{id}\", \"text\": {}, \"n\": [1, {{\"x\": \"\\u00e9\"}}], \"metadata\": {{\"url\": \"https://e/{id}\", \"title\": \"T\"}}}}\n",
        serde_json::to_string(text).unwrap()
    )
}

#[test]
fn jsonl_duplicate_lines_are_removed_from_the_text_value_in_place() {
    let (a, b, c) = (long_line("alpha"), long_line("beta"), long_line("gamma"));
    let first = jline("1", &format!("{a}\n{b}"));
    let cases = [
        // (text of the second document, text written for it)
        (format!("{a}\n{c}"), c.clone()),
        (format!("{c}\n{a}"), c.clone()),
        (format!("{c}\n{a}\nshort\n{b}\n"), format!("{c}\n")),
        // "x" is short: it rides along with the next long line (kept).
        (
            format!("{c}\r\n\n{b}\r\nx\n\n{c}x\n"),
            format!("{c}\r\n\nx\n\n{c}x\n"),
        ),
        (format!("{c}\r\n\n{b}\r\n{c}x"), format!("{c}\r\n\n{c}x")),
        (
            format!("\n{a}\n{c} \\ \"tail\""),
            format!("\n{c} \\ \"tail\""),
        ),
    ];
    for (text, kept) in cases {
        let second = jline("2", &text);
        let (out, st, dd) = run_as(&jsonl(), &[first.clone() + &second], &Options::default())
            .pop()
            .unwrap();
        let want = jline("2", &kept);
        assert_eq!(out, first.clone() + &want, "text {text:?}");
        assert_eq!(st[0], "K");
        assert!(st[1].contains('/'), "{st:?}");
        // Every byte outside the text value is the input's.
        let v: serde_json::Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
        assert_eq!(v["text"], kept.as_str());
        assert!(dd.starts_with(
            "<dd id=\"1\" url=\"https://e/1\" title=\"T\" status=\"K\"/>\n<dd id=\"2\""
        ));
    }
}

#[test]
fn jsonl_documents_dropped_whole_or_emptied_are_left_out() {
    let (a, b) = (long_line("alpha"), long_line("beta"));
    let one = jline("1", &format!("{a}\n{b}"));
    let same = jline("2", &format!("{a}\n{b}"));
    let emptied = jline("3", &format!("{b}\n\n{a}"));
    let (out, st, _) = run_as(
        &jsonl(),
        &[one.clone() + &same + &emptied],
        &Options::default(),
    )
    .pop()
    .unwrap();
    assert_eq!(st, ["K", "D", "E"]);
    assert_eq!(out, one);
}

#[test]
fn jsonl_bad_records_pass_through_unless_dropped_and_ask_nothing() {
    let a = long_line("alpha");
    let input = format!(
        "not json\n{}{{\"text\": 3}}\n{}",
        jline("1", &a),
        jline("2", &a)
    );
    let (out, st, dd) = run_as(&jsonl(), std::slice::from_ref(&input), &Options::default())
        .pop()
        .unwrap();
    assert_eq!(st, ["B", "K", "B", "D"]);
    assert_eq!(
        out,
        format!("not json\n{}{{\"text\": 3}}\n", jline("1", &a))
    );
    assert!(
        dd.starts_with("<dd id=\"in:1\" url=\"\" title=\"\" status=\"B\"/>\n"),
        "{dd}"
    );
    let dropping = DocFormat::Jsonl(Arc::new(JsonlOptions {
        drop_bad: true,
        ..Default::default()
    }));
    let (out, st, _) = run_as(&dropping, &[input], &Options::default())
        .pop()
        .unwrap();
    assert_eq!(st, ["B", "K", "B", "D"]);
    assert_eq!(out, jline("1", &a));
}

#[test]
fn jsonl_without_url_and_title_always_tests_the_document_key() {
    let a = long_line("alpha");
    let doc = |id: &str| format!("{{\"id\":\"{id}\",\"text\":\"{a}\"}}\n");
    let opts = checking(DocCheck::UrlTitle);
    // No URL+title: the shortcut does not apply, so the copy is a duplicate
    // document (D), not a document emptied paragraph by paragraph (E).
    let (_, st, dd) = run_as(&jsonl(), &[doc("x") + &doc("y")], &opts)
        .pop()
        .unwrap();
    assert_eq!(st, ["K", "D"]);
    assert_eq!(dd, "<dd id=\"x\" url=\"\" title=\"\" status=\"K\"/>\n<dd id=\"y\" url=\"\" title=\"\" status=\"D\"/>\n");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// A vertical and its JSON Lines conversion (the project's converter) give the
    /// same decisions, exact and near mode: a paragraph and a line of the text are
    /// the same unit, and glued tokens are one word in both.
    #[test]
    fn verticals_and_their_jsonl_conversion_decide_alike(
        docs in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec((0u8..8, proptest::bool::weighted(0.15)), 1..14), 0..5),
            1..8,
        ),
        near_mode: bool,
    ) {
        let words = ["Alpha", "beta", "gamma", ",", "delta-3", "épsilon", "zeta", "(x)"];
        let mut vert = String::new();
        for (i, paras) in docs.iter().enumerate() {
            vert.push_str(&format!("<doc id=\"d{i}\" url=\"u{}\" title=\"t\">\n", i % 3));
            for p in paras {
                vert.push_str("<p>\n");
                for (j, &(w, glue)) in p.iter().enumerate() {
                    if glue && j > 0 {
                        vert.push_str("<g/>\n");
                    }
                    vert.push_str(words[w as usize]);
                    vert.push('\n');
                }
                vert.push_str("</p>\n");
            }
            vert.push_str("</doc>\n");
        }
        let mut json = Vec::new();
        webdedup_formats::convert::vertical_to_jsonl(vert.as_bytes(), &mut json).unwrap();
        let json = String::from_utf8(json).unwrap();
        let opts = Options {
            min_para_chars: 25,
            ..if near_mode { near(3, false) } else { Options::default() }
        };
        let (_, st_v, _) = run_as(&DocFormat::Vertical, std::slice::from_ref(&vert), &opts).pop().unwrap();
        let (_, st_j, _) = run_as(&jsonl(), &[json], &opts).pop().unwrap();
        proptest::prop_assert_eq!(st_v, st_j);
    }
}
