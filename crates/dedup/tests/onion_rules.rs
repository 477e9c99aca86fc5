//! `-n --near-rules onion` pinned on a hand-made vertical, one document per rule of
//! onion 1.2 (n-grams of 3, at most 4 tokens per smoothed stub to keep it small).
//! The expected decisions follow from onion's rules (reasoned out below, document
//! by document) and were checked once against onion 1.2 itself:
//! `onion -n 3 -l 4 t.vert` (and `-m` for the unsmoothed case) marks exactly the
//! paragraphs these tests expect dropped.

use webdedup_dedup::{NearOptions, NearRules, Options, RunConfig};
use webdedup_store::MemStore;

/// A paragraph of space-separated tokens, one a line.
fn p(tokens: &str) -> String {
    format!("<p>\n{}\n</p>\n", tokens.replace(' ', "\n"))
}

fn doc(name: &str, paras: &[String]) -> String {
    format!(
        "<doc url=\"https://example.com/{name}\" title=\"{name}\">\n{}</doc>\n",
        paras.concat()
    )
}

/// Glued punctuation: `alpha <g/> , beta ...` (glue is no token for onion).
fn punctuated() -> String {
    "<p>\nalpha\n<g/>\n,\nbeta\n<g/>\n,\ngamma\n<g/>\n,\ndelta\n</p>\n".into()
}

/// The documents, each with its paragraphs.
fn docs() -> Vec<(&'static str, Vec<String>)> {
    vec![
        // a: everything is new.
        (
            "a",
            vec![
                punctuated(),
                p("1 one 2 two 3 three 4"),
                p("see also the manual"),
                p("q r s t"),
                p("Kappa Lambda Mu Nu"),
            ],
        ),
        // b: punctuation counts (b1 shares no 3-gram with a1, whose commas are
        // tokens); no digit folding (b2 shares none with a2); every paragraph is
        // judged (b3, four tokens, is covered by the seen `see also the`,
        // `also the manual`: dropped on its own, no riding along).
        (
            "b",
            vec![
                p("alpha beta gamma delta epsilon"),
                p("5 one 6 two 7 three 8"),
                p("see also the manual"),
                p("zeta eta theta iota q"),
            ],
        ),
        // c: the window restarts at <doc>: with b's last token `q` before it, c1
        // would end the seen `q r s` (2 of its 3 tokens covered); it does not.
        ("c", vec![p("r s u"), p("lorem ipsum dolor sit amet")]),
        // d: smoothing. d2 and d4 are seen (c2); d3, new, is a stub of 3 <= 4
        // tokens between them; d1, new, is a stub between the document's start and
        // d2 (onion counts the edges); d5 is a run of 5 tokens and stays.
        (
            "d",
            vec![
                p("tiny"),
                p("lorem ipsum dolor sit amet"),
                p("small stub here"),
                p("lorem ipsum dolor sit amet"),
                p("omega psi chi phi upsilon"),
            ],
        ),
        // e: n-grams seen earlier in the same document count (e2: 4 of 6 tokens
        // covered by e1's `mu nu xi`, `nu xi omicron`); the threshold is exclusive
        // (e3: 3 of 6 covered, exactly 0.5, kept).
        (
            "e",
            vec![
                p("mu nu xi omicron pi rho"),
                p("mu nu xi omicron sigma tau"),
                p("mu nu xi upsilon phi chi"),
            ],
        ),
        // f: no case folding (f1 is a5 in lower case: new).
        (
            "f",
            vec![p("kappa lambda mu nu"), p("nothing here was seen before")],
        ),
        // g: a whole document of at most 4 tokens is a stub between its edges:
        // dropped although new (not when smoothing is off).
        ("g", vec![p("brand new words")]),
        // h: c again: every paragraph seen, the document dropped whole.
        ("h", vec![p("r s u"), p("lorem ipsum dolor sit amet")]),
    ]
}

fn input() -> String {
    docs()
        .iter()
        .map(|(name, paras)| doc(name, paras))
        .collect()
}

/// The input without the paragraphs `dropped` names (`"b3"`: document b's third),
/// and without documents left with no paragraph.
fn expected(dropped: &[&str]) -> String {
    let mut out = String::new();
    for (name, paras) in docs() {
        let kept: Vec<String> = paras
            .iter()
            .enumerate()
            .filter(|(i, _)| !dropped.contains(&format!("{name}{}", i + 1).as_str()))
            .map(|(_, para)| para.clone())
            .collect();
        if !kept.is_empty() {
            out.push_str(&doc(name, &kept));
        }
    }
    out
}

/// The output of a run over the input with `near`; every paragraph long for our
/// rules too (onion's ignore the setting).
fn dedup(near: NearOptions) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.vert");
    std::fs::write(&path, input()).unwrap();
    let mut cfg = RunConfig::new(&path, dir.path().join("out"));
    cfg.options = Options {
        mode: webdedup_dedup::options::Mode::Near {
            near,
            feedback: false,
        },
        min_para_chars: 1,
        ..Options::default()
    };
    webdedup_dedup::run(&cfg, &MemStore::new(13), &|_| {}).unwrap();
    std::fs::read_to_string(dir.path().join("out/t.vert.dedup")).unwrap()
}

/// onion's defaults, but 3-grams and stubs of at most 4 tokens.
fn onion(smooth: bool) -> NearOptions {
    NearOptions {
        ngram: 3,
        threshold: 0.5,
        smooth,
        max_stub: 4,
        rules: NearRules::Onion,
    }
}

#[test]
fn onion_rules_make_onions_decisions() {
    assert_eq!(
        dedup(onion(true)),
        expected(&["b3", "d1", "d2", "d3", "d4", "e2", "g1", "h1", "h2"])
    );
}

#[test]
fn onion_rules_without_smoothing_keep_the_stubs() {
    // onion -m: d1, d3 and g stay.
    assert_eq!(
        dedup(onion(false)),
        expected(&["b3", "d2", "d4", "e2", "h1", "h2"])
    );
}

#[test]
fn our_rules_decide_otherwise_on_the_same_input() {
    // The default rules see through punctuation, digits and case (b1, b2, f1
    // dropped) and let short paragraphs ride along: the two modes differ.
    let ours = dedup(NearOptions {
        rules: NearRules::Webdedup,
        ..onion(true)
    });
    assert_ne!(ours, dedup(onion(true)));
    for text in [
        "alpha\nbeta\ngamma\ndelta\nepsilon",
        "5\none\n6",
        "kappa\nlambda",
    ] {
        assert!(!ours.contains(text), "{text:?} kept by our rules:\n{ours}");
    }
}
