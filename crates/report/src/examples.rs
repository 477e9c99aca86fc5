//! A deterministic sample of drops to show beside their originals: the
//! documents whose ids hash lowest (xxh3), so the same run always shows the
//! same examples, spread over the whole run, in memory for `k` of them only;
//! then their texts, the originals' from the run's kept outputs (the `.pairs`
//! line names the original by id), the drops' from the run's inputs if given.

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

/// The `k` pairs with the lowest hashes seen so far.
#[derive(Debug, Default)]
pub struct Sampler {
    k: usize,
    kept: BTreeMap<(u64, String), SampledPair>,
    /// Texts of the sampled documents and their originals, by id.
    pub texts: HashMap<String, String>,
}

impl Sampler {
    pub fn new(k: usize) -> Sampler {
        Sampler {
            k,
            ..Default::default()
        }
    }

    /// Offers a pair of the `.pairs` file `rel`.
    pub fn offer_pair(&mut self, rel: &str, pair: Pair) {
        if self.k == 0 {
            return;
        }
        let key = (xxh3_64(pair.doc.as_bytes()), format!("{rel}\t{}", pair.doc));
        if self.kept.len() >= self.k {
            match self.kept.last_key_value() {
                Some((last, _)) if *last > key => {}
                _ => return,
            }
        }
        self.kept.insert(
            key,
            SampledPair {
                rel: rel.to_owned(),
                pair,
            },
        );
        if self.kept.len() > self.k {
            self.kept.pop_last();
        }
    }

    /// The sample, in hash order.
    pub fn pairs(&self) -> impl Iterator<Item = &SampledPair> {
        self.kept.values()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// Finds the texts of the sampled drops' originals in the run's kept `outputs`
/// and of the drops themselves in `sources` (the run's inputs, when given):
/// each file read once, by the one reader of every format, documents by id.
pub fn find_texts(samples: &mut Sampler, outputs: &[PathBuf], sources: &[PathBuf]) {
    if samples.is_empty() {
        return;
    }
    let originals: HashSet<String> = samples.pairs().map(|p| p.pair.original.clone()).collect();
    let drops: HashSet<String> = samples.pairs().map(|p| p.pair.doc.clone()).collect();
    collect(outputs, &originals, &mut samples.texts);
    let sources = expand(sources);
    collect(&sources, &drops, &mut samples.texts);
}

/// The files under `paths` (directories searched), in sorted order.
fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    let opts = webdedup_formats::input::ListOptions::default();
    match webdedup_formats::input::list_inputs(paths, &opts) {
        Ok(l) => l.files.into_iter().map(|f| f.path).collect(),
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

/// The sampled drops, each beside its original with the words the drop added
/// (`<ins>`) and the original's words it lacks (`<del>`) marked.
pub fn examples_html(samples: &Sampler, has_sources: bool) -> String {
    let mut s = format!(
        "<p class=\"note\">{} drops sampled by the hash of their ids (the same every time), each beside its original: words only in the original <del>struck</del>, words only in the drop <ins>marked</ins>.{}</p>",
        samples.pairs().count(),
        if has_sources { "" } else { " The dropped documents' own text is in the run's inputs only: give them with <code>--source</code>." }
    );
    for p in samples.pairs() {
        let original = samples.texts.get(&p.pair.original);
        let dropped = samples.texts.get(&p.pair.doc);
        let _ = write!(
            s,
            "<div class=\"example\" data-doc=\"{}\" data-original=\"{}\"><h3>{} <span class=\"muted\">dropped as a copy of</span> {} <span class=\"muted\">Jaccard {}, {}</span></h3>",
            escape(&p.pair.doc),
            escape(&p.pair.original),
            escape(&p.pair.doc),
            escape(&p.pair.original),
            p.pair.jaccard.map_or("-".into(), |j| format!("{j:.3}")),
            escape(&p.rel)
        );
        let (a, cut_a) = original.map_or((Vec::new(), false), |t| words(t));
        let (b, cut_b) = dropped.map_or((Vec::new(), false), |t| words(t));
        let (ca, cb) = common(&a, &b);
        let removed = ca.iter().filter(|c| !**c).count();
        let added = cb.iter().filter(|c| !**c).count();
        if original.is_some() && dropped.is_some() {
            let _ = write!(
                s,
                "<p class=\"note\" data-added=\"{added}\" data-removed=\"{removed}\">{added} words added, {removed} removed.</p>"
            );
        }
        s.push_str("<div class=\"pair\"><div><b>original (kept)</b><br>");
        match original {
            Some(_) => marked(&a, &ca, "del", cut_a, &mut s),
            None => s.push_str("<span class=\"muted\">not found in the kept outputs</span>"),
        }
        s.push_str("</div><div><b>dropped</b><br>");
        match dropped {
            Some(_) => marked(&b, &cb, "ins", cut_b, &mut s),
            None => s.push_str("<span class=\"muted\">not in the outputs (give the run's inputs with <code>--source</code>)</span>"),
        }
        s.push_str("</div></div></div>\n");
    }
    s
}

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
            a.offer_pair("x.pairs", pair(d));
        }
        for d in docs.iter().rev() {
            b.offer_pair("x.pairs", pair(d));
        }
        let ids = |s: &Sampler| s.pairs().map(|p| p.pair.doc.clone()).collect::<Vec<_>>();
        assert_eq!(a.pairs().count(), 5);
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
        assert!(Sampler::new(0).is_empty());
    }
}
