//! A word-level diff of a dropped document against its original: which words
//! of each are not in their longest common subsequence. Bounded: texts are cut
//! to [`MAX_WORDS`] words, and a middle part (after the common start and end)
//! too large for the table is marked changed whole.

/// Words shown of each text.
pub const MAX_WORDS: usize = 1500;
/// The largest table of the subsequence search (cells).
const MAX_CELLS: usize = 1 << 22;

/// A text's words, with `"\n"` for each line break between non-empty lines, at
/// most [`MAX_WORDS`] words; and whether it was cut.
pub fn words(text: &str) -> (Vec<&str>, bool) {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if !out.is_empty() {
            out.push("\n");
        }
        for w in line.split_whitespace() {
            if out.len() >= MAX_WORDS {
                return (out, true);
            }
            out.push(w);
        }
    }
    (out, false)
}

/// For each word of `a` and of `b`: whether it is in their common subsequence
/// (false: removed from `a`, added in `b`).
pub fn common(a: &[&str], b: &[&str]) -> (Vec<bool>, Vec<bool>) {
    let (mut in_a, mut in_b) = (vec![false; a.len()], vec![false; b.len()]);
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    for i in 0..pre {
        in_a[i] = true;
        in_b[i] = true;
    }
    for k in 0..suf {
        in_a[a.len() - 1 - k] = true;
        in_b[b.len() - 1 - k] = true;
    }
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    if ma.is_empty() || mb.is_empty() || (ma.len() + 1) * (mb.len() + 1) > MAX_CELLS {
        return (in_a, in_b);
    }
    // lcs[i][j]: the longest common subsequence of ma[i..] and mb[j..].
    let w = mb.len() + 1;
    let mut lcs = vec![0u16; (ma.len() + 1) * w];
    for i in (0..ma.len()).rev() {
        for j in (0..mb.len()).rev() {
            lcs[i * w + j] = if ma[i] == mb[j] {
                lcs[(i + 1) * w + j + 1] + 1
            } else {
                lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < ma.len() && j < mb.len() {
        if ma[i] == mb[j] {
            in_a[pre + i] = true;
            in_b[pre + j] = true;
            i += 1;
            j += 1;
        } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    (in_a, in_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_added_and_removed() {
        let (a, _) = words("Python 3.11 is\nthe best release");
        let (b, _) = words("Python 3.13 is\n\nthe best release so far");
        let (ca, cb) = common(&a, &b);
        let removed: Vec<&str> = a
            .iter()
            .zip(&ca)
            .filter(|(_, c)| !**c)
            .map(|(w, _)| *w)
            .collect();
        let added: Vec<&str> = b
            .iter()
            .zip(&cb)
            .filter(|(_, c)| !**c)
            .map(|(w, _)| *w)
            .collect();
        assert_eq!(removed, ["3.11"]);
        assert_eq!(added, ["3.13", "so", "far"]);
        assert_eq!(a[3], "\n");
    }

    #[test]
    fn identical_and_disjoint_texts() {
        let t = ["a", "b", "c"];
        assert_eq!(common(&t, &t), (vec![true; 3], vec![true; 3]));
        assert_eq!(common(&t, &["x", "y"]), (vec![false; 3], vec![false; 2]));
        assert_eq!(common(&[], &t), (vec![], vec![false; 3]));
    }

    #[test]
    fn long_texts_are_cut() {
        let long = "w ".repeat(MAX_WORDS + 10);
        let (w, cut) = words(&long);
        assert!(cut);
        assert_eq!(w.len(), MAX_WORDS);
    }
}
