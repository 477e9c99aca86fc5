//! Drops shown beside their originals: a deterministic sample (the drops whose
//! ids hash lowest, xxh3, so the same run always shows the same examples, spread
//! over the whole run, in memory for `k` of them only), and one way of showing a
//! drop beside its original, the words each lacks marked, for every kind of drop
//! (MinHash documents, feedback paragraphs of exact and near mode).
//!
//! A MinHash drop's original is found by id in the run's kept outputs (its
//! `.pairs` line names it), the drop itself in the run's inputs if given.

use crate::diff::{common, words, MAX_WORDS};
use crate::hist::Pair;
use crate::html::escape;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use webdedup_formats::problems::Problems;
use webdedup_simhash::input::{read_items, Item, ReadOptions};
use xxhash_rust::xxh3::xxh3_64;

/// A sampled MinHash drop: the `.pairs` file it came from (relative to the run
/// directory) and its line.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledPair {
    pub rel: String,
    pub pair: Pair,
}

/// The `k` items whose ids hash lowest among those offered.
#[derive(Debug)]
pub struct Sampler<T> {
    k: usize,
    kept: BTreeMap<(u64, String), T>,
}

impl<T> Default for Sampler<T> {
    fn default() -> Sampler<T> {
        Sampler::new(0)
    }
}

impl<T> Sampler<T> {
    pub fn new(k: usize) -> Sampler<T> {
        Sampler {
            k,
            kept: BTreeMap::new(),
        }
    }

    /// Offers the item `id` of the side file `rel`, made by `make` only if it
    /// enters the sample.
    pub fn offer(&mut self, rel: &str, id: &str, make: impl FnOnce() -> T) {
        if let Some(key) = self.admits(rel, id) {
            self.insert(key, make());
        }
    }

    /// The place `id` of `rel` would take in the sample, if it would enter it.
    pub fn admits(&self, rel: &str, id: &str) -> Option<(u64, String)> {
        if self.k == 0 {
            return None;
        }
        let key = (xxh3_64(id.as_bytes()), format!("{rel}\t{id}"));
        match self.kept.last_key_value() {
            Some((last, _)) if self.kept.len() >= self.k && *last <= key => None,
            _ => Some(key),
        }
    }

    /// Puts `item` at the place [`Self::admits`] gave, leaving out the highest.
    pub fn insert(&mut self, key: (u64, String), item: T) {
        self.kept.insert(key, item);
        if self.kept.len() > self.k {
            self.kept.pop_last();
        }
    }

    /// The sample, in hash order.
    pub fn items(&self) -> impl Iterator<Item = &T> {
        self.kept.values()
    }

    pub fn items_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.kept.values_mut()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// Finds the texts of the sampled MinHash drops' originals in the run's kept
/// `outputs` and of the drops themselves in `sources` (the run's inputs, when
/// given): each file read once, by the one reader of every format, documents by
/// id.
pub fn find_texts(
    samples: &Sampler<SampledPair>,
    outputs: &[PathBuf],
    sources: &[PathBuf],
) -> HashMap<String, String> {
    let mut texts = HashMap::new();
    if samples.is_empty() {
        return texts;
    }
    let originals: HashSet<String> = samples.items().map(|p| p.pair.original.clone()).collect();
    let drops: HashSet<String> = samples.items().map(|p| p.pair.doc.clone()).collect();
    collect(outputs, &originals, &mut texts);
    let sources: Vec<PathBuf> = expand(sources).into_iter().map(|f| f.path).collect();
    collect(&sources, &drops, &mut texts);
    texts
}

/// The files under `paths` (directories searched), in sorted order, with their
/// paths relative to the one given.
pub fn expand(paths: &[PathBuf]) -> Vec<webdedup_formats::input::InputFile> {
    let opts = webdedup_formats::input::ListOptions::default();
    match webdedup_formats::input::list_inputs(paths, &opts) {
        Ok(l) => l.files,
        Err(_) => Vec::new(),
    }
}

fn collect(files: &[PathBuf], wanted: &HashSet<String>, texts: &mut HashMap<String, String>) {
    let problems = Problems::quiet();
    let opts = ReadOptions::default();
    for f in files {
        if wanted.iter().all(|w| texts.contains_key(w)) {
            return;
        }
        read_items(f, &opts, &problems, |item| {
            if let Item::Doc { id, text, .. } = item {
                if wanted.contains(&id) && !texts.contains_key(&id) {
                    texts.insert(id, text.to_owned());
                }
            }
        });
    }
}

/// How alike a drop and its original are.
pub enum Similarity {
    /// MinHash's estimate of their Jaccard similarity (`-`: not estimated).
    Jaccard(Option<f64>),
    /// The share of their words in common (2 x common / (both lengths)), from
    /// the diff shown: feedback drops, whose run records no similarity.
    Words,
}

/// A drop and its original, as shown side by side.
pub struct Beside<'a> {
    pub dropped: &'a str,
    pub original: &'a str,
    /// Where the drop is recorded (a side file, and its line).
    pub at: &'a str,
    pub similarity: Similarity,
    pub original_text: Option<&'a str>,
    /// Why the original's text is not shown, when it is not.
    pub original_missing: &'a str,
    pub dropped_text: Option<&'a str>,
    pub dropped_missing: &'a str,
}

/// The drops, each beside its original with the words the drop added (`<ins>`)
/// and the original's words it lacks (`<del>`) marked, after the `note`.
pub fn beside_html(note: &str, items: &[Beside<'_>]) -> String {
    let mut s = format!(
        "<p class=\"note\">{} drops sampled by the hash of their ids (the same every time), each beside its original: words only in the original <del>struck</del>, words only in the drop <ins>marked</ins>.{note}</p>",
        items.len()
    );
    for b in items {
        let (a, cut_a) = b.original_text.map_or((Vec::new(), false), words);
        let (d, cut_d) = b.dropped_text.map_or((Vec::new(), false), words);
        let (ca, cd) = common(&a, &d);
        let removed = ca.iter().filter(|c| !**c).count();
        let added = cd.iter().filter(|c| !**c).count();
        let both = b.original_text.is_some() && b.dropped_text.is_some();
        let similarity = match b.similarity {
            Similarity::Jaccard(j) => Some(("Jaccard", j)),
            Similarity::Words if both => {
                let shared = 2 * (a.len() - removed);
                Some((
                    "words in common",
                    Some(shared as f64 / (a.len() + d.len()).max(1) as f64),
                ))
            }
            Similarity::Words => None,
        };
        let (shown, value) = match similarity {
            Some((what, Some(v))) => (
                format!("{what} {v:.3}, "),
                format!(" data-similarity=\"{v:.3}\""),
            ),
            Some((what, None)) => (format!("{what} -, "), String::new()),
            None => (String::new(), String::new()),
        };
        let _ = write!(
            s,
            "<div class=\"example\" data-doc=\"{}\" data-original=\"{}\"{value}><h3>{} <span class=\"muted\">dropped as a copy of</span> {} <span class=\"muted\">{shown}{}</span></h3>",
            escape(b.dropped),
            escape(b.original),
            escape(b.dropped),
            escape(b.original),
            escape(b.at)
        );
        if both {
            let _ = write!(
                s,
                "<p class=\"note\" data-added=\"{added}\" data-removed=\"{removed}\">{added} words added, {removed} removed.</p>"
            );
        }
        s.push_str("<div class=\"pair\"><div><b>original (kept)</b><br>");
        match b.original_text {
            Some(_) => marked(&a, &ca, "del", cut_a, &mut s),
            None => {
                let _ = write!(s, "<span class=\"muted\">{}</span>", b.original_missing);
            }
        }
        s.push_str("</div><div><b>dropped</b><br>");
        match b.dropped_text {
            Some(_) => marked(&d, &cd, "ins", cut_d, &mut s),
            None => {
                let _ = write!(s, "<span class=\"muted\">{}</span>", b.dropped_missing);
            }
        }
        s.push_str("</div></div></div>\n");
    }
    s
}

/// The sampled MinHash drops beside their originals.
pub fn minhash_html(
    samples: &Sampler<SampledPair>,
    texts: &HashMap<String, String>,
    has_sources: bool,
) -> String {
    let items: Vec<Beside<'_>> = samples
        .items()
        .map(|p| Beside {
            dropped: &p.pair.doc,
            original: &p.pair.original,
            at: &p.rel,
            similarity: Similarity::Jaccard(p.pair.jaccard),
            original_text: texts.get(&p.pair.original).map(String::as_str),
            original_missing: "not found in the kept outputs",
            dropped_text: texts.get(&p.pair.doc).map(String::as_str),
            dropped_missing: NOT_IN_OUTPUTS,
        })
        .collect();
    beside_html(if has_sources { "" } else { NEEDS_SOURCES }, &items)
}

/// What the page says where a text is only in the run's inputs.
pub const NOT_IN_OUTPUTS: &str =
    "not in the outputs (give the run's inputs with <code>--source</code>)";
const NEEDS_SOURCES: &str = " The dropped documents' own text is in the run's inputs only: give them with <code>--source</code>.";

/// `words` as HTML, the ones not in common inside `<tag>`.
fn marked(words: &[&str], in_common: &[bool], tag: &str, cut: bool, out: &mut String) {
    let mut open = false;
    for (w, &c) in words.iter().zip(in_common) {
        if open && c {
            let _ = write!(out, "</{tag}>");
            open = false;
        }
        if *w == "\n" {
            out.push_str("<br>");
            continue;
        }
        if !open && !c {
            let _ = write!(out, "<{tag}>");
            open = true;
        }
        out.push_str(&escape(w));
        out.push(' ');
    }
    if open {
        let _ = write!(out, "</{tag}>");
    }
    if cut {
        let _ = write!(
            out,
            "<span class=\"muted\">… (the first {MAX_WORDS} words)</span>"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(doc: &str) -> Pair {
        Pair {
            doc: doc.into(),
            original: "o".into(),
            jaccard: Some(0.9),
        }
    }

    #[test]
    fn the_sample_does_not_depend_on_the_order_seen() {
        let docs: Vec<String> = (0..200).map(|i| format!("doc{i}")).collect();
        let mut a = Sampler::new(5);
        let mut b = Sampler::new(5);
        for d in &docs {
            a.offer("x.pairs", d, || pair(d));
        }
        for d in docs.iter().rev() {
            b.offer("x.pairs", d, || pair(d));
        }
        let ids = |s: &Sampler<Pair>| s.items().map(|p| p.doc.clone()).collect::<Vec<_>>();
        assert_eq!(a.items().count(), 5);
        assert_eq!(ids(&a), ids(&b));
        let mut lowest: Vec<&String> = docs.iter().collect();
        lowest.sort_by_key(|d| xxh3_64(d.as_bytes()));
        assert_eq!(
            ids(&a),
            lowest[..5]
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        );
        assert!(Sampler::<Pair>::new(0).is_empty());
    }
}
