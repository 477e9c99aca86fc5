use super::*;
use proptest::prelude::*;
use std::collections::HashSet;
use webdedup_store::MemStore;

/// A text made of vocabulary entries: words (each written its own way: lower or
/// upper case, or with a comma) and ideographs, glued to each other as they are in
/// Chinese text, after the word `lead` (a line's first unit is another unit than
/// the same word after a space). Returns the text and each entry's byte range.
fn text_of(lead: &str, ids: &[u8]) -> (String, Vec<Range<usize>>) {
    let mut text = lead.to_string();
    let mut spans = Vec::new();
    let mut prev_cjk = false;
    for &id in ids {
        let cjk = id % 4 == 0;
        let word = if cjk {
            char::from_u32(0x4E00 + id as u32).unwrap().to_string()
        } else {
            let w: String = [b'a' + id % 26, b'a' + id / 26 % 26, b'q']
                .iter()
                .map(|&b| b as char)
                .collect();
            match id / 20 {
                0 => w,
                1 => w.to_uppercase(),
                _ => format!("{w},"),
            }
        };
        if !(cjk && prev_cjk) {
            text.push(' ');
        }
        spans.push(text.len()..text.len() + word.len());
        text.push_str(&word);
        prev_cjk = cjk;
    }
    (text, spans)
}

fn run(texts: &[&str], params: SubstrParams) -> Vec<Vec<Range<usize>>> {
    let store = MemStore::new(7);
    let mut d = TextDedup::new(&store, params);
    texts
        .iter()
        .map(|t| {
            let mut out = Vec::new();
            d.dedup(t, &mut out).unwrap();
            out
        })
        .collect()
}

fn covered(removed: &[Range<usize>], r: &Range<usize>) -> bool {
    removed.iter().any(|x| x.start <= r.start && r.end <= x.end)
}

#[test]
fn params_are_checked() {
    assert!(SubstrParams::new(12, 8).is_ok());
    assert!(SubstrParams::new(0, 1).unwrap_err().contains("K must be"));
    assert!(SubstrParams::new(5, 6)
        .unwrap_err()
        .contains("W must be 1 to K (5)"));
    assert!(SubstrParams::new(5, 0).is_err());
    assert_eq!(SubstrParams::DEFAULT.min_span(), 13);
    assert_eq!(
        SubstrParams::parse(SubstrParams::DEFAULT_ARG),
        Ok(SubstrParams::DEFAULT)
    );
    assert_eq!(
        SubstrParams::parse(" 20, 4"),
        Ok(SubstrParams::new(20, 4).unwrap())
    );
    assert_eq!(
        SubstrParams::parse("20,4,0"),
        Ok(SubstrParams::new(20, 4).unwrap().with_min_bytes(0))
    );
    assert!(SubstrParams::parse("20").unwrap_err().contains("K,W"));
    assert!(SubstrParams::parse("20,4,1,1")
        .unwrap_err()
        .contains("K,W,B"));
    assert!(SubstrParams::parse("4,20")
        .unwrap_err()
        .contains("W must be"));
}

#[test]
fn rolling_keys_equal_keys_computed_afresh() {
    let hashes: Vec<u64> = (0..40u64)
        .map(|i| i.wrapping_mul(0x1234_5678_9abc_def1))
        .collect();
    let mut rolled = Vec::new();
    window_keys(&hashes, 5, &mut rolled);
    assert_eq!(rolled.len(), 36);
    let mut one = Vec::new();
    for (i, &r) in rolled.iter().enumerate() {
        window_keys(&hashes[i..i + 5], 5, &mut one);
        assert_eq!(one, [r], "window {i}");
    }
    window_keys(&hashes[..4], 5, &mut one);
    assert!(one.is_empty());
}

#[test]
fn winnowing_picks_the_rightmost_minimum_of_each_run_once() {
    let keys = [
        77, 74, 42, 17, 98, 50, 17, 98, 8, 88, 67, 39, 77, 74, 42, 17, 98,
    ];
    let mut out = Vec::new();
    winnow(&keys, 4, &mut out);
    // The paper's example (figure 2, robust winnowing): 17 17 8 39 17.
    let picked: Vec<u64> = out.iter().map(|&i| keys[i as usize]).collect();
    assert_eq!(picked, [17, 17, 8, 39, 17]);
    assert_eq!(out, [3, 6, 8, 11, 15]);
    winnow(&keys[..2], 4, &mut out);
    assert_eq!(out, [1]);
}

#[test]
fn a_repeated_passage_is_removed_from_the_later_document_only() {
    let notice = "We use cookies to improve your experience on our site. By continuing \
                  to browse you agree to our use of cookies and our privacy policy.";
    let a = format!("Rain is expected in the north tomorrow. {notice}");
    let b = format!("The council met on Tuesday to vote. {notice} Results follow next week.");
    let removed = run(
        &[&a, &b],
        SubstrParams::new(6, 1).unwrap().with_min_bytes(0),
    );
    assert!(removed[0].is_empty());
    let kept = strike_text(&b, &removed[1]);
    assert_eq!(
        kept,
        "The council met on Tuesday to vote.  Results follow next week."
    );
}

#[test]
fn a_span_repeated_within_one_document_keeps_its_first_copy() {
    let s = "one two three four five six seven eight nine ten";
    let t = format!("Say {s} and then {s}");
    // W = 1 stores every window: the whole copy goes.
    let removed = run(&[&t], SubstrParams::new(4, 1).unwrap().with_min_bytes(0));
    assert_eq!(strike_text(&t, &removed[0]), format!("Say {s} and then "));
    // W = 2: at most one token kept at each end of the copy.
    let removed = run(&[&t], SubstrParams::new(4, 2).unwrap().with_min_bytes(0));
    let kept = strike_text(&t, &removed[0]);
    let rest = kept.strip_prefix(&format!("Say {s} and then ")).unwrap();
    assert!(rest.split_whitespace().count() <= 2, "{rest:?}");
}

#[test]
fn a_line_break_inside_a_repeat_makes_other_text_one_before_it_does_not() {
    let s = "one two three four five six seven eight";
    let a = format!("Intro: {s}");
    let b = format!("Intro:\n{s}");
    let c = "one two three four\nfive six seven eight";
    let d = "One two three four five six seven eight";
    let removed = run(
        &[&a, &b, c, d],
        SubstrParams::new(8, 1).unwrap().with_min_bytes(0),
    );
    assert_eq!(strike_text(&b, &removed[1]), "Intro:\n");
    assert!(removed[2].is_empty(), "a line break is not a space");
    assert!(removed[3].is_empty(), "words are compared as written");
}

#[test]
fn stretches_shorter_than_min_bytes_are_kept() {
    let s = "one two three four five six seven eight";
    let (a, b) = (format!("A: {s}"), format!("B: {s}"));
    // The repeat's units hold 32 bytes (its spaces not counted).
    let params = SubstrParams::new(4, 1).unwrap();
    let removed = run(&[&a, &b], params.with_min_bytes(32));
    assert_eq!(strike_text(&b, &removed[1]), "B: ");
    let removed = run(&[&a, &b], params.with_min_bytes(33));
    assert!(removed[1].is_empty());
}

#[test]
fn short_repeats_are_not_removed() {
    let a = "alpha beta gamma delta epsilon";
    let b = "zeta alpha beta gamma delta eta";
    let removed = run(&[a, b], SubstrParams::new(5, 2).unwrap().with_min_bytes(0));
    assert!(removed[1].is_empty());
}

#[test]
fn ideographs_repeat_character_by_character() {
    let a = "他说：今天天气很好我们去公园散步吧";
    let b = "昨天下雨了。今天天气很好我们去公园散步吧！";
    let removed = run(&[a, b], SubstrParams::new(6, 1).unwrap().with_min_bytes(0));
    assert_eq!(strike_text(b, &removed[1]), "昨天下雨了。！");
    let removed = run(&[a, b], SubstrParams::new(6, 4).unwrap().with_min_bytes(0));
    let kept = strike_text(b, &removed[1]).chars().count();
    assert!(kept <= "昨天下雨了。！".chars().count() + 2 * 3, "{kept}");
}

/// Token indexes (of the later text) covered by a window that occurred before: in
/// the earlier text, or earlier in the same one. Exact, by token ids.
fn exactly_seen(a: &[u8], b: &[u8], k: usize) -> Vec<bool> {
    let mut windows: HashSet<&[u8]> = a.windows(k).collect();
    let mut covered = vec![false; b.len()];
    for (i, w) in b.windows(k).enumerate() {
        if !windows.insert(w) {
            covered[i..i + k].fill(true);
        }
    }
    covered
}

proptest! {
    /// The guarantee: a span of at least K+W-1 tokens copied from an earlier
    /// document is removed but for at most W-1 tokens at each end; and every
    /// removed token lies in a window of K tokens seen before.
    #[test]
    fn repeated_spans_are_found_and_only_they(
        k in 1usize..10,
        w_part in 0.0f64..1.0,
        a in prop::collection::vec(0u8..60, 0..120),
        at in 0usize..1000,
        extra in 0usize..30,
        pre in prop::collection::vec(0u8..60, 0..30),
        post in prop::collection::vec(0u8..60, 0..30),
        min_bytes in prop::sample::select(vec![0usize, 0, 10, 30]),
    ) {
        let w = 1 + ((k - 1) as f64 * w_part) as usize;
        let params = SubstrParams::new(k, w).unwrap().with_min_bytes(min_bytes);
        let len = params.min_span() + extra;
        prop_assume!(a.len() >= len);
        let at = at % (a.len() - len + 1);
        let span = &a[at..at + len];
        let b: Vec<u8> = pre.iter().chain(span).chain(&post).copied().collect();
        let (ta, _) = text_of("first", &a);
        let (tb, tokens_b) = text_of("later", &b);
        let removed = run(&[&ta, &tb], params).pop().unwrap();
        let first = pre.len() + w - 1;
        let last = pre.len() + len - w; // inclusive
        let unit_bytes = |units: &[Range<usize>]| units.iter().map(|r| r.len()).sum::<usize>();
        if unit_bytes(&tokens_b[first..=last]) >= min_bytes {
            for (t, r) in tokens_b.iter().enumerate().take(last + 1).skip(first) {
                prop_assert!(covered(&removed, r), "token {t} of the copy kept");
            }
        }
        let seen = exactly_seen(&a, &b, k);
        for (t, r) in tokens_b.iter().enumerate() {
            if removed.iter().any(|x| x.start < r.end && r.start < x.end) {
                prop_assert!(seen[t], "token {t} removed, never seen in a window");
            }
        }
        for x in &removed {
            let inside: Vec<_> = tokens_b.iter().filter(|r| x.start <= r.start && r.end <= x.end).cloned().collect();
            prop_assert!(unit_bytes(&inside) >= min_bytes, "a stretch of {:?} under {min_bytes} bytes removed", x);
        }
    }

}
