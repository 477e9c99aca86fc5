//! Paragraphs taken whole (normalized from their bytes at once) plan exactly as
//! the same paragraphs taken word by word: keys, lengths, tokens, characters.

use super::*;
use crate::options::{MinHashChoices, Mode};
use proptest::prelude::*;
use webdedup_formats::chunk::Chunk;

/// Every setting whose planning reads the paragraph text or its length.
fn settings() -> Vec<(&'static str, Options, bool)> {
    let near = Options {
        mode: Mode::Near {
            near: crate::NearOptions {
                ngram: 2,
                threshold: 0.5,
                smooth: false,
                max_stub: 20,
                rules: crate::NearRules::Webdedup,
            },
            feedback: false,
        },
        ..Options::default()
    };
    let minhash = Options::for_minhash(MinHashChoices::default().options().unwrap());
    let lower = Options {
        normalization: Normalization::Lower,
        ..Options::default()
    };
    vec![
        ("loose", Options::default(), false),
        ("loose --mark", Options::default(), true),
        ("lower", lower, false),
        ("near", near, false),
        ("minhash", minhash, false),
    ]
}

/// The plan of `input` (one chunk) as a string: every field compared at once.
fn plan_of(input: &[u8], opts: &Options, marks: bool, whole: bool) -> String {
    let chunk = Chunk {
        data: input.to_vec(),
        first_line: 1,
        last: true,
        ..Default::default()
    };
    let mut planner = Planner::new(opts).with_marks(marks).with_whole_paras(whole);
    let mut plan = ChunkPlan::default();
    planner.plan(&chunk, &mut plan);
    format!("{plan:?}")
}

fn same_plans(input: &[u8]) -> Result<(), TestCaseError> {
    for (name, opts, marks) in settings() {
        let whole = plan_of(input, &opts, marks, true);
        let by_word = plan_of(input, &opts, marks, false);
        prop_assert_eq!(whole, by_word, "{}", name);
    }
    Ok(())
}

#[test]
fn edge_paragraphs_plan_as_word_by_word() {
    let cases: &[&str] = &[
        // At the end of the chunk, with and without the last newline.
        "<doc url=\"u\" title=\"t\">\n<p>\nA\nb\n</p>",
        "<doc url=\"u\" title=\"t\">\n<p class=\"x\" n=\"2\">\nWord\n<g/>\n.\n</p>\n</doc>",
        // Empty, blank-only, punctuation-only paragraphs; digits; uppercase.
        "<doc>\n<p>\n</p>\n<p>\n\n \n</p>\n<p>\n,\n.\n</p>\n<p>\nRoom\n101\nA-4\n</p>\n</doc>\n",
        // CRLF everywhere (never whole), and a CR in one paragraph only.
        "<doc>\r\n<p>\r\nOne\r\ntwo\r\n</p>\r\n</doc>\r\n",
        "<doc>\n<p>\nOne\ntwo\r\n</p>\n<p>\nthree\n</p>\n</doc>\n",
        // A glue at the end and one at the start (not whole); a paragraph left open.
        "<doc>\n<p>\nend\n<g/>\n</p>\n<p>\n<g/>\nstart\n</p>\nafter\n</doc>\n",
        "<doc>\n<p>\nopen\nparagraph\n<p>\nnext\n</p>\n</doc>\n",
    ];
    for case in cases {
        same_plans(case.as_bytes()).unwrap();
    }
    // Invalid UTF-8 is reported with its line (never whole), valid UTF-8 counted
    // in characters.
    same_plans(b"<doc>\n<p>\ncaf\xe9\nok\n</p>\n<p>\ncaf\xc3\xa9\n<g/>\n!\n</p>\n</doc>\n")
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Random documents of paragraphs whose lines are ASCII words (letters of both
    /// cases, digits, punctuation alone or inside), blank lines and glue, mixed
    /// with what must be read word by word (non-ASCII, tabs, CR, other tags).
    #[test]
    fn whole_paragraphs_plan_as_word_by_word(paras in proptest::collection::vec(
        (proptest::collection::vec(prop_oneof![
            12 => "[a-zA-Z]{1,8}",
            3 => "[0-9]{1,4}",
            3 => "[.,;!?()-]{1,2}",
            2 => "[a-z]{1,3}[.'-][a-z]{1,3}",
            2 => Just("<g/>".to_string()),
            1 => Just("".to_string()),
            1 => "[ \x0b\x0c]{1,2}",
            1 => "[a-z]{0,3}[\u{e9}\u{4e2d}\u{2013}\t\r][a-z]{0,3}",
            1 => Just("<s>".to_string()),
        ], 0..30), any::<bool>()), 1..8)) {
        let mut input = String::from("<doc url=\"u\" title=\"t\">\n");
        for (lines, attrs) in &paras {
            input.push_str(if *attrs { "<p n=\"1\">\n" } else { "<p>\n" });
            for l in lines {
                input.push_str(l);
                input.push('\n');
            }
            input.push_str("</p>\n");
        }
        input.push_str("</doc>\n");
        same_plans(input.as_bytes())?;
    }
}
