//! Script study: `webdedup minhash` runs on a mixed-script corpus scored per
//! language against exact Jaccard truth that suits each script.
//!
//! `cargo run --release -p webdedup-minhash --example minhash_script_study -- CORPUS NAME=PAIRS...`
//! (bench/minhash_scripts.sh makes the corpus, runs `webdedup minhash` with each
//! setting and calls this).
//!
//! CORPUS is the JSON Lines file the runs read (bench/minhash_scripts_corpus.py): a
//! document's language is the prefix of its id (`zh-00012-c1-0.02`). PAIRS is a
//! run's `.dedup.pairs` file: its first column lists the dropped documents.
//!
//! Truth: the shingles of a document are character 5-grams if its language is
//! written without spaces (zh, ja, th) and word 5-grams otherwise, of the text
//! normalized as webdedup does (`loose`); exact Jaccard of the shingle sets, all
//! pairs (webdedup-study's prefix filtering). In input order, as minhash_study's
//! dropped view does (a stream can only match documents it kept): a document is
//! *droppable* when a document the run kept before it has Jaccard >= 0.8 with it,
//! and its drop is *justified* when one has Jaccard >= 0.6. Per language: recall =
//! droppable documents dropped / droppable documents; precision = justified drops /
//! drops; F1 their harmonic mean. The truth uses the language label, not
//! webdedup's script detection, so a wrong choice of `auto:5` shows as an error.

use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};
use webdedup_minhash::{written_without_spaces, Shingler, Shingling};
use webdedup_study::{jaccard, load_docs, truth_pairs};
use webdedup_text::{Normalization, TextBuilder};

const UNSPACED: [&str; 3] = ["zh", "ja", "th"];
const DROPPABLE: f64 = 0.8;
const JUSTIFIED: f64 = 0.6;

fn lang_of(id: &str) -> &str {
    id.split('-').next().unwrap_or("?")
}

/// The truth's shingles: the shingling the document's language calls for.
fn truth_set(lang: &str, text: &str) -> Vec<u64> {
    let sh = if UNSPACED.contains(&lang) {
        Shingling::Chars(5)
    } else {
        Shingling::Words(5)
    };
    let mut v = Vec::new();
    Shingler::new(sh, Normalization::Loose).for_each(text.as_bytes(), |x| v.push(x));
    v.sort_unstable();
    v.dedup();
    v
}

#[derive(Default)]
struct Tally {
    docs: usize,
    droppable: usize,
    drops: usize,
    justified_drops: usize,
    droppable_dropped: usize,
}

impl Tally {
    fn recall(&self) -> f64 {
        ratio(self.droppable_dropped, self.droppable)
    }
    fn precision(&self) -> f64 {
        ratio(self.justified_drops, self.drops)
    }
    fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((corpus, runs)) = args.split_first() else {
        eprintln!("usage: minhash_script_study CORPUS NAME=PAIRS...");
        std::process::exit(2);
    };
    let docs = load_docs(std::slice::from_ref(corpus));
    let langs: Vec<&str> = docs.iter().map(|d| lang_of(&d.id)).collect();
    let sets: Vec<Vec<u64>> = docs
        .par_iter()
        .zip(&langs)
        .map(|(d, l)| truth_set(l, &d.text))
        .collect();
    // Each document's earlier partners at Jaccard >= JUSTIFIED, with the Jaccard.
    let mut earlier: Vec<Vec<(usize, f64)>> = vec![Vec::new(); docs.len()];
    for (i, j) in truth_pairs(&sets, JUSTIFIED) {
        let (i, j) = (i as usize, j as usize);
        earlier[j].push((i, jaccard(&sets[i], &sets[j])));
    }
    // What `auto:5` chooses, per document (the same test as the shingler's).
    let chars_chosen: Vec<bool> = docs
        .par_iter()
        .map(|d| {
            let mut norm = TextBuilder::new(Normalization::Loose);
            norm.push_text(d.text.as_bytes());
            written_without_spaces(norm.text())
        })
        .collect();

    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    let mut seen: Vec<&str> = langs.clone();
    seen.sort_unstable();
    seen.dedup();
    let spaced: Vec<&str> = seen
        .iter()
        .copied()
        .filter(|l| !UNSPACED.contains(l))
        .collect();
    let unspaced: Vec<&str> = seen
        .iter()
        .copied()
        .filter(|l| UNSPACED.contains(l))
        .collect();
    for l in spaced.iter().chain(&unspaced) {
        groups.push((l.to_string(), vec![l]));
    }
    groups.push((format!("spaced ({})", spaced.join(" ")), spaced.clone()));
    groups.push((
        format!("unspaced ({})", unspaced.join(" ")),
        unspaced.clone(),
    ));

    println!("## MinHash script study\n");
    println!(
        "{} documents of {corpus}; truth: exact Jaccard of character 5-grams (zh, ja, th) or word 5-grams (the others), loose-normalized; droppable at >= {DROPPABLE} with a document the run kept before it, justified at >= {JUSTIFIED}.\n",
        docs.len()
    );
    println!("| language | documents | with an earlier document at >= {DROPPABLE} | `auto:5` chose chars |");
    println!("|---|---|---|---|");
    for (name, members) in &groups {
        let idx: Vec<usize> = (0..docs.len())
            .filter(|&d| members.contains(&langs[d]))
            .collect();
        let droppable = idx
            .iter()
            .filter(|&&d| earlier[d].iter().any(|&(_, j)| j >= DROPPABLE))
            .count();
        let chars = idx.iter().filter(|&&d| chars_chosen[d]).count();
        println!("| {name} | {} | {droppable} | {chars} |", idx.len());
    }
    println!();
    println!("| run | language | drops | recall | precision | F1 |");
    println!("|---|---|---|---|---|---|");
    for run in runs {
        let (name, path) = run.split_once('=').unwrap_or((run, run));
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read the pairs file {path}: {e}"));
        let dropped: HashSet<&str> = text.lines().filter_map(|l| l.split('\t').next()).collect();
        // The best Jaccard of each document with one the run kept before it.
        let best: Vec<f64> = earlier
            .iter()
            .map(|e| {
                e.iter()
                    .filter(|&&(i, _)| !dropped.contains(docs[i].id.as_str()))
                    .map(|&(_, j)| j)
                    .fold(0.0, f64::max)
            })
            .collect();
        let mut tallies: BTreeMap<usize, Tally> = BTreeMap::new();
        for (g, (_, members)) in groups.iter().enumerate() {
            let t = tallies.entry(g).or_default();
            for d in (0..docs.len()).filter(|&d| members.contains(&langs[d])) {
                let drop = dropped.contains(docs[d].id.as_str());
                t.docs += 1;
                t.droppable += (best[d] >= DROPPABLE) as usize;
                t.drops += drop as usize;
                t.justified_drops += (drop && best[d] >= JUSTIFIED) as usize;
                t.droppable_dropped += (drop && best[d] >= DROPPABLE) as usize;
            }
        }
        let missed: Vec<String> = (0..docs.len())
            .filter(|&d| best[d] >= DROPPABLE && !dropped.contains(docs[d].id.as_str()))
            .map(|d| format!("{} ({:.3})", docs[d].id, best[d]))
            .collect();
        eprintln!("{name}: kept though droppable: {}", missed.join(", "));
        for (g, t) in &tallies {
            println!(
                "| {name} | {} | {} | {:.3} | {:.3} | {:.3} |",
                groups[*g].0,
                t.drops,
                t.recall(),
                t.precision(),
                t.f1()
            );
        }
    }
}
