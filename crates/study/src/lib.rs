//! What the quality studies of near-duplicate documents share (SimHash's
//! `quality_study`, MinHash's `minhash_study`): the documents of a corpus, the exact
//! ground truth and scores. Benchmarks only; the pairs each method predicts come
//! from its own crate.
//!
//! Ground truth: every pair of documents whose sets of word 5-grams have Jaccard
//! similarity >= a threshold, computed exactly (all-pairs with prefix filtering,
//! which never misses a pair above the threshold, then exact set intersection).
//! Words are the whitespace-separated words of the document text (vertical tokens,
//! glued ones joined), lowercased, keeping those with a letter or digit; a document
//! with fewer than 5 words has one "5-gram" of all its words; a document without a
//! word has no 5-gram and no pair.
//!
//! ```
//! // The exact ground truth the studies score predictions against.
//! let a = webdedup_study::grams("one two three four five six seven eight");
//! assert_eq!(webdedup_study::jaccard(&a, &a), 1.0);
//! ```

use rayon::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use webdedup_formats::chunk::DEFAULT_MAX_LINE_BYTES;
use webdedup_formats::problems::Problems;
use webdedup_formats::read::ReadSettings;
use webdedup_formats::texts::{read_file_texts, Text};
use webdedup_formats::vertical::{attr, parse_tag, Tag};
use xxhash_rust::xxh3::xxh3_64;

/// A document of the corpus, in input order.
pub struct Doc {
    /// Rank of its file among the files given, and its position in the file.
    pub file: u32,
    pub index: u32,
    pub id: String,
    pub url: String,
    pub lang: String,
    /// Words joined by spaces (glued tokens joined without one).
    pub text: String,
}

/// The documents of `files` (verticals, JSON Lines, Parquet, WET: the format
/// sniffed from each file's first bytes), in order, read as whole texts by the
/// project's readers. A file that cannot be read is reported and skipped.
pub fn load_docs(files: &[String]) -> Vec<Doc> {
    let mut docs = Vec::new();
    let problems = Problems::new(false);
    for (rank, f) in files.iter().enumerate() {
        let path = PathBuf::from(f);
        let mut index = 0;
        let mut read = |t: Text<'_>| {
            if let Text::Doc { id, text, raw, .. } = t {
                let first = raw.split(|&b| b == b'\n').next().unwrap_or(b"");
                docs.push(Doc {
                    file: rank as u32,
                    index,
                    id,
                    url: doc_attr(first, b"url").unwrap_or_default(),
                    lang: doc_attr(first, b"lang").unwrap_or_else(|| "?".into()),
                    text: text.to_string(),
                });
                index += 1;
            }
        };
        let settings = ReadSettings::default();
        read_file_texts(
            &path,
            &settings,
            DEFAULT_MAX_LINE_BYTES,
            &problems,
            &mut read,
        );
    }
    docs
}

/// An attribute of a `<doc ...>` line, unescaped.
fn doc_attr(line: &[u8], name: &[u8]) -> Option<String> {
    match parse_tag(line)? {
        Tag::Open { attrs, .. } => attr(attrs, name).map(|v| v.into_owned()),
        _ => None,
    }
}

/// The sorted, distinct word 5-gram hashes of a document's text (the ground truth's
/// sets).
pub fn grams(text: &str) -> Vec<u64> {
    let words: Vec<String> = text
        .split_whitespace()
        .filter(|w| w.chars().any(|c| c.is_alphanumeric()))
        .map(|w| w.to_lowercase())
        .collect();
    let mut g: Vec<u64> = if words.is_empty() {
        Vec::new()
    } else if words.len() < 5 {
        vec![xxh3_64(words.join(" ").as_bytes())]
    } else {
        words
            .windows(5)
            .map(|w| xxh3_64(w.join(" ").as_bytes()))
            .collect()
    };
    g.sort_unstable();
    g.dedup();
    g
}

/// The size of the intersection of two sorted sets.
pub fn inter<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The Jaccard similarity of two sorted sets (0 for two empty sets).
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let i = inter(a, b);
    let u = a.len() + b.len() - i;
    if u == 0 {
        0.0
    } else {
        i as f64 / u as f64
    }
}

/// All pairs (i < j) with Jaccard >= t, exactly (prefix + length filtering), sorted.
/// Empty sets have no pair.
pub fn truth_pairs(sets: &[Vec<u64>], t: f64) -> Vec<(u32, u32)> {
    let mut freq: HashMap<u64, u32> = HashMap::new();
    for s in sets {
        for &g in s {
            *freq.entry(g).or_default() += 1;
        }
    }
    // Sets re-expressed as sorted ranks, rarest gram first.
    let mut order: Vec<(u32, u64)> = freq.iter().map(|(&g, &f)| (f, g)).collect();
    order.sort_unstable();
    let rank: HashMap<u64, u32> = order
        .iter()
        .enumerate()
        .map(|(r, &(_, g))| (g, r as u32))
        .collect();
    let ranked: Vec<Vec<u32>> = sets
        .iter()
        .map(|s| {
            let mut r: Vec<u32> = s.iter().map(|g| rank[g]).collect();
            r.sort_unstable();
            r
        })
        .collect();
    let prefix = |n: usize| {
        if n == 0 {
            0
        } else {
            n - (t * n as f64).ceil() as usize + 1
        }
    };
    let mut index: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, r) in ranked.iter().enumerate() {
        for &tok in &r[..prefix(r.len())] {
            index.entry(tok).or_default().push(i as u32);
        }
    }
    let n = sets.len();
    let out: Vec<Vec<(u32, u32)>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut seen = std::collections::HashSet::new();
            let mut res = Vec::new();
            let ri = &ranked[i];
            for &tok in &ri[..prefix(ri.len())] {
                for &j in &index[&tok] {
                    if j as usize <= i || !seen.insert(j) {
                        continue;
                    }
                    let (a, b) = (ri.len() as f64, ranked[j as usize].len() as f64);
                    if a.min(b) < t * a.max(b) {
                        continue;
                    }
                    if jaccard(&sets[i], &sets[j as usize]) >= t {
                        res.push((i as u32, j));
                    }
                }
            }
            res
        })
        .collect();
    let mut v: Vec<(u32, u32)> = out.into_iter().flatten().collect();
    v.sort_unstable();
    v
}

/// True positives, false positives, false negatives.
#[derive(Default, Clone, Copy, Debug)]
pub struct Score {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
}

impl Score {
    pub fn p(&self) -> f64 {
        if self.tp + self.fp == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fp) as f64
        }
    }
    pub fn r(&self) -> f64 {
        if self.tp + self.fn_ == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fn_) as f64
        }
    }
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.p(), self.r());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

/// The score of predicted pairs against true pairs (both sorted), over the pairs
/// that `keep` accepts.
pub fn score(
    truth: &[(u32, u32)],
    pred: &[(u32, u32)],
    keep: impl Fn(&(u32, u32)) -> bool,
) -> Score {
    let t: Vec<&(u32, u32)> = truth.iter().filter(|p| keep(p)).collect();
    let p: Vec<&(u32, u32)> = pred.iter().filter(|p| keep(p)).collect();
    let tp = inter(&t, &p);
    Score {
        tp,
        fp: p.len() - tp,
        fn_: t.len() - tp,
    }
}
