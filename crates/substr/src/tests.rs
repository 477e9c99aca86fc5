//! The suffix array's answers against brute force on random texts.

use crate::corpus::Corpus;
use crate::rule::{repeated_spans, Keep, Settings};
use proptest::prelude::*;
use std::ops::Range;

/// Byte sets of the texts as spans (sorted, merged).
fn to_spans(marks: &[bool]) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    for (i, &m) in marks.iter().enumerate() {
        if !m {
            continue;
        }
        match spans.last_mut() {
            Some(last) if last.end == i => last.end = i + 1,
            _ => spans.push(i..i + 1),
        }
    }
    spans
}

/// Every window of `l` bytes of every text, with its global order.
fn windows(texts: &[String], l: usize) -> Vec<(usize, usize, &[u8])> {
    let mut out = Vec::new();
    for (t, text) in texts.iter().enumerate() {
        let b = text.as_bytes();
        for p in 0..b.len().saturating_sub(l - 1) {
            out.push((t, p, &b[p..p + l]));
        }
    }
    out
}

/// Remove-all by brute force: bytes in a window of `l` bytes found twice.
fn brute_all(texts: &[String], l: usize) -> Vec<Vec<Range<usize>>> {
    let w = windows(texts, l);
    let mut marks: Vec<Vec<bool>> = texts.iter().map(|t| vec![false; t.len()]).collect();
    for &(t, p, s) in &w {
        if w.iter().filter(|x| x.2 == s).count() >= 2 {
            marks[t][p..p + l].iter_mut().for_each(|m| *m = true);
        }
    }
    marks.iter().map(|m| to_spans(m)).collect()
}

/// Keep-first by brute force through each position's longest previous factor:
/// the longest prefix of the text at `p` that starts at an earlier position of
/// the corpus (within one text).
fn brute_first(texts: &[String], l: usize) -> Vec<Vec<Range<usize>>> {
    let mut marks: Vec<Vec<bool>> = texts.iter().map(|t| vec![false; t.len()]).collect();
    for (t, text) in texts.iter().enumerate() {
        let b = text.as_bytes();
        for p in 0..b.len() {
            let mut lpf = 0;
            for (u, other) in texts.iter().enumerate().take(t + 1) {
                let o = other.as_bytes();
                let end = if u == t { p } else { o.len() };
                for q in 0..end {
                    let n = b[p..]
                        .iter()
                        .zip(&o[q..])
                        .take_while(|(x, y)| x == y)
                        .count();
                    lpf = lpf.max(n);
                }
            }
            if lpf >= l {
                marks[t][p..p + lpf].iter_mut().for_each(|m| *m = true);
            }
        }
    }
    marks.iter().map(|m| to_spans(m)).collect()
}

fn found(texts: &[String], l: usize, keep: Keep, shard_bytes: usize) -> Vec<Vec<Range<usize>>> {
    let mut c = Corpus::new();
    for t in texts {
        c.push(t);
    }
    let settings = Settings {
        length: l,
        keep,
        shard_bytes,
        threads: 1 + shard_bytes % 3,
    };
    // Touching spans are one span in the brute force's marks.
    repeated_spans(&c, &settings)
        .unwrap()
        .into_iter()
        .map(|spans| {
            let mut marks = vec![false; spans.last().map_or(0, |s| s.end)];
            for s in spans {
                marks[s].iter_mut().for_each(|m| *m = true);
            }
            to_spans(&marks)
        })
        .collect()
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[ab]{0,24}", 1..6)
}

proptest! {
    #[test]
    fn every_copy_as_brute_force(t in texts(), l in 1usize..7, shard in 1usize..40) {
        let want = brute_all(&t, l);
        prop_assert_eq!(found(&t, l, Keep::None, usize::MAX), want.clone());
        prop_assert_eq!(found(&t, l, Keep::None, shard), want);
    }

    #[test]
    fn keep_first_as_longest_previous_factor(t in texts(), l in 1usize..7, shard in 1usize..40) {
        let want = brute_first(&t, l);
        prop_assert_eq!(found(&t, l, Keep::First, usize::MAX), want.clone());
        prop_assert_eq!(found(&t, l, Keep::First, shard), want);
    }
}

#[test]
fn repeat_across_texts_is_struck_in_both() {
    let a = "x".repeat(3) + "the same long sentence" + "y";
    let b = "z".to_string() + "the same long sentence";
    let spans = found(&[a, b], 10, Keep::None, usize::MAX);
    assert_eq!(spans, vec![vec![3..25], vec![1..23]]);
    let a = "x".repeat(3) + "the same long sentence" + "y";
    let b = "z".to_string() + "the same long sentence";
    let spans = found(&[a, b], 10, Keep::First, usize::MAX);
    assert_eq!(spans, vec![vec![], vec![1..23]]);
}

#[test]
fn a_span_names_the_first_copy_of_its_first_window() {
    let shared = "the same long sentence";
    let texts = [
        format!("ab{shared}"),
        "nothing".to_string(),
        format!("{shared}!"),
        format!("x{shared}"),
    ];
    let mut c = Corpus::new();
    for t in &texts {
        c.push(t);
    }
    let settings = Settings {
        length: 10,
        keep: Keep::First,
        shard_bytes: 16,
        threads: 2,
    };
    let got = crate::rule::struck(&c, &settings, true).unwrap();
    let first = c.text_range(0).start + 2;
    assert_eq!(got.spans, vec![vec![], vec![], vec![0..22], vec![1..23]]);
    assert_eq!(got.firsts, vec![vec![], vec![], vec![first], vec![first]]);
    let every = Settings {
        keep: Keep::None,
        ..settings
    };
    let got = crate::rule::struck(&c, &every, true).unwrap();
    assert_eq!(got.firsts[0], vec![first]);
    assert_eq!(got.firsts[3], vec![first]);
}
