//! Quality study: MinHash LSH near-duplicates against exact word 5-gram Jaccard
//! >= 0.8, beside SimHash at k = 3 and k = 9.
//!
//! `cargo run --release -p webdedup-minhash --example minhash_study -- [--threshold 0.8] [--show 'SETTINGS'] [--verify J] FILES...`
//!
//! Ground truth: `webdedup-study` (shared with SimHash's `quality_study`). Two views:
//!
//! * **Pairs.** Predicted pairs are the LSH candidates (two documents that share a
//!   band key), or the candidates whose estimated Jaccard (signatures) is >= J
//!   ("verified"); scored against the true pairs.
//! * **Dropped documents** (what stream mode does). Documents are taken in input
//!   order; a document is dropped when one of its band keys was inserted by an
//!   earlier *kept* document (verified: and the estimated Jaccard with one of those
//!   originals is >= J); a kept document inserts its keys (the first inserter of a
//!   key stays its owner). Dropped documents insert nothing. Let K(d) be the
//!   documents kept before d by the method itself. d is *droppable* when some e in
//!   K(d) has true Jaccard(d, e) >= the threshold. TP = dropped and droppable, FP =
//!   dropped and not droppable, FN = kept and droppable. "orig ok" is the share of
//!   dropped documents whose named original (the owner of the first matching band,
//!   or the first that passed verification) itself has true Jaccard >= threshold.
//!   SimHash is scored the same way (drop when within k of an earlier kept
//!   document; the original is the first such).
//!
//! Also: the chosen fast signature (`fss`: one permutation, densified by rehashing
//! rounds) against classic k-permutation MinHash (`classic`) and against one
//! permutation with optimal densification (`od`, Shrivastava 2017, implemented
//! here) on the same bands, the Jaccard estimates'
//! bias and spread against the exact Jaccard of the same shingle sets, the
//! probability that a band is shared on synthetic pairs of known Jaccard and set
//! size against `1 - (1 - s^R)^B`, per-language scores, and ten false positives and
//! ten false negatives at `--show` (default: the crate's defaults) with
//! verification at `--verify` (default 0.8).
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use webdedup_minhash::reference::{Classic, SplitMix64};
use webdedup_minhash::{
    estimate_jaccard, mix64, Banding, MinHasher, Params, Shingler, Shingling, Sketch,
};
use webdedup_simhash::search::pairs_within;
use webdedup_simhash::tokenize::{Fingerprinter, Settings};
use webdedup_study::{grams, jaccard, load_docs, score, truth_pairs, Doc, Score};

/// Signatures of every document, in input order (None = no shingle).
type Sigs = Vec<Option<Vec<u32>>>;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Method {
    /// The crate's signature: one permutation, densified by rehashing rounds.
    Fss,
    /// One permutation, optimal densification (copying).
    Od,
    /// Classic k-permutation MinHash (`reference::Classic`).
    Classic,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::Fss => "fss",
            Method::Od => "od",
            Method::Classic => "classic",
        })
    }
}

/// One-permutation hashing with optimal densification (Shrivastava, ICML 2017):
/// the same first round as the crate's sketch; an empty bin i then copies the bin
/// probe(i, 1), probe(i, 2), ... that the first round filled.
struct Densified {
    k: usize,
}

impl Densified {
    fn probe(&self, i: usize, t: u64) -> usize {
        let m = mix64(((i as u64) << 32 | t) ^ 0x6465_6e73_6966_7931);
        (((m >> 32) * self.k as u64) >> 32) as usize
    }

    fn signature(&self, xs: impl IntoIterator<Item = u64>) -> Option<Vec<u32>> {
        let k = self.k;
        let mut mins = vec![u64::MAX; k];
        for x in xs {
            let b = (((x >> 32) * k as u64) >> 32) as usize;
            mins[b] = mins[b].min(x & 0xffff_ffff);
        }
        let filled = mins.iter().filter(|&&m| m != u64::MAX).count();
        if filled == 0 {
            return None;
        }
        Some(
            (0..k)
                .map(|i| {
                    if mins[i] != u64::MAX {
                        return mins[i] as u32;
                    }
                    (1..)
                        .map(|t| mins[self.probe(i, t)])
                        .find(|&m| m != u64::MAX)
                        .unwrap() as u32
                })
                .collect(),
        )
    }
}

/// Signatures of every document (None = no shingle).
fn signatures(docs: &[Doc], method: Method, shingling: Shingling, hashes: usize) -> Sigs {
    let params = Params {
        shingling,
        hashes,
        bands: 1,
        rows: 1,
    };
    let from_hashes = |sig: &(dyn Fn(&[u64]) -> Option<Vec<u32>> + Sync)| -> Sigs {
        docs.par_iter()
            .map_init(
                || (Shingler::new(shingling), Vec::new()),
                |(s, v), d| {
                    v.clear();
                    s.for_each(d.text.as_bytes(), |h| v.push(h));
                    sig(v)
                },
            )
            .collect()
    };
    match method {
        Method::Fss => docs
            .par_iter()
            .map_init(
                || MinHasher::new(params).unwrap(),
                |m, d| m.signature(d.text.as_bytes()).map(|s| s.to_vec()),
            )
            .collect(),
        Method::Classic => {
            let c = Classic::new(hashes);
            from_hashes(&|v| c.signature(v.iter().copied()))
        }
        Method::Od => {
            let o = Densified { k: hashes };
            from_hashes(&|v| o.signature(v.iter().copied()))
        }
    }
}

/// Band keys of every document.
fn band_keys(sigs: &Sigs, b: Banding) -> Vec<Vec<u64>> {
    sigs.par_iter()
        .map(|s| {
            let mut k = Vec::new();
            if let Some(s) = s {
                b.keys(s, &mut k);
            }
            k
        })
        .collect()
}

/// Pairs (i < j) sharing at least one band key, sorted; None when there are more
/// than `cap`.
fn candidates(keys: &[Vec<u64>], bands: usize, cap: usize) -> Option<Vec<(u32, u32)>> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for b in 0..bands {
        let mut by: HashMap<u64, Vec<u32>> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            if let Some(&key) = k.get(b) {
                by.entry(key).or_default().push(i as u32);
            }
        }
        for m in by.values() {
            for x in 0..m.len() {
                for y in x + 1..m.len() {
                    out.push((m[x], m[y]));
                }
            }
            if out.len() > 4 * cap {
                out.sort_unstable();
                out.dedup();
                if out.len() > cap {
                    return None;
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

fn est(sigs: &Sigs, i: u32, j: u32) -> f64 {
    match (&sigs[i as usize], &sigs[j as usize]) {
        (Some(a), Some(b)) => estimate_jaccard(a, b),
        _ => 0.0,
    }
}

/// Stream-mode decisions: for each document, None (kept) or Some(original).
fn stream_minhash(keys: &[Vec<u64>], sigs: &Sigs, verify: Option<f64>) -> Vec<Option<u32>> {
    let mut owner: HashMap<u64, u32> = HashMap::new();
    let mut out = Vec::with_capacity(keys.len());
    for (d, k) in keys.iter().enumerate() {
        let mut original = None;
        let mut tried = Vec::new();
        for key in k {
            if let Some(&o) = owner.get(key) {
                match verify {
                    None => {
                        original = Some(o);
                        break;
                    }
                    Some(j) => {
                        if !tried.contains(&o) {
                            tried.push(o);
                            if est(sigs, d as u32, o) >= j {
                                original = Some(o);
                                break;
                            }
                        }
                    }
                }
            }
        }
        if original.is_none() {
            for &key in k {
                owner.entry(key).or_insert(d as u32);
            }
        }
        out.push(original);
    }
    out
}

/// SimHash stream decisions: drop when within k of an earlier kept document.
fn stream_simhash(fps: &[Option<u64>], k: u32) -> Vec<Option<u32>> {
    let mut kept: Vec<(u64, u32)> = Vec::new();
    let mut out = Vec::with_capacity(fps.len());
    for (d, f) in fps.iter().enumerate() {
        let original = f.and_then(|f| {
            kept.iter()
                .find(|(g, _)| (f ^ g).count_ones() <= k)
                .map(|&(_, o)| o)
        });
        if original.is_none() {
            if let Some(f) = f {
                kept.push((*f, d as u32));
            }
        }
        out.push(original);
    }
    out
}

/// What the `--show` settings produced: signatures, band keys, verified pairs.
struct Shown {
    sigs: Sigs,
    keys: Vec<Vec<u64>>,
    pairs: Vec<(u32, u32)>,
}

struct Truth {
    pairs: Vec<(u32, u32)>,
    /// Partners of each document.
    adj: Vec<Vec<u32>>,
    sets: Vec<Vec<u64>>,
}

/// Dropped-documents score (see the module docs) and the share of drops whose
/// named original is a true partner; `doc_ok` filters documents (per language).
fn score_dropped(
    t: &Truth,
    decisions: &[Option<u32>],
    doc_ok: impl Fn(usize) -> bool,
) -> (Score, f64) {
    let kept: Vec<bool> = decisions.iter().map(|d| d.is_none()).collect();
    let mut s = Score::default();
    let (mut drops, mut orig_ok) = (0usize, 0usize);
    for (d, dec) in decisions.iter().enumerate() {
        if !doc_ok(d) {
            continue;
        }
        let droppable = t.adj[d]
            .iter()
            .any(|&e| (e as usize) < d && kept[e as usize]);
        match (dec, droppable) {
            (Some(_), true) => s.tp += 1,
            (Some(_), false) => s.fp += 1,
            (None, true) => s.fn_ += 1,
            (None, false) => {}
        }
        if let Some(o) = dec {
            drops += 1;
            orig_ok += t.adj[d].contains(o) as usize;
        }
    }
    let share = if drops == 0 {
        1.0
    } else {
        orig_ok as f64 / drops as f64
    };
    (s, share)
}

fn prf(s: &Score) -> String {
    format!("{:.3}/{:.3}/**{:.3}**", s.p(), s.r(), s.f1())
}

fn prf_short(s: &Score) -> String {
    format!("{:.2}/{:.2}/{:.2}", s.p(), s.r(), s.f1())
}

/// Configurations of the main table: (shingling, hashes, bands, rows).
fn configs() -> Vec<(Shingling, usize, usize, usize)> {
    let w5 = Shingling::Words(5);
    let mut v = vec![
        (w5, 64, 16, 4),
        (w5, 64, 8, 8),
        (w5, 64, 4, 16),
        (w5, 112, 28, 4),
        (w5, 112, 14, 8),
        (w5, 112, 8, 14),
        (w5, 112, 7, 16),
        (w5, 128, 32, 4),
        (w5, 128, 16, 8),
        (w5, 128, 8, 16),
        (w5, 256, 64, 4),
        (w5, 256, 32, 8),
        (w5, 256, 16, 16),
        (w5, 256, 20, 12),
    ];
    for sh in [
        Shingling::Words(3),
        Shingling::Words(7),
        Shingling::Chars(5),
        Shingling::Chars(9),
    ] {
        v.push((sh, 112, 14, 8));
        v.push((sh, 112, 8, 14));
    }
    v
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut threshold = 0.8;
    let mut show = Params::default();
    let mut verify = 0.8;
    let mut datatrove: Option<String> = None;
    while args.first().is_some_and(|a| a.starts_with("--")) {
        let a = args.remove(0);
        let v = args.remove(0);
        match a.as_str() {
            "--threshold" => threshold = v.parse().unwrap(),
            "--show" => show = Params::parse(&v).unwrap(),
            "--verify" => verify = v.parse().unwrap(),
            "--datatrove" => datatrove = Some(v),
            _ => panic!("unknown option {a}"),
        }
    }
    let t0 = Instant::now();
    let docs = load_docs(&args);
    let sets: Vec<Vec<u64>> = docs.par_iter().map(|d| grams(&d.text)).collect();
    let pairs = truth_pairs(&sets, threshold);
    let mut adj = vec![Vec::new(); docs.len()];
    for &(i, j) in &pairs {
        adj[i as usize].push(j);
        adj[j as usize].push(i);
    }
    let truth = Truth { pairs, adj, sets };
    let mut langs: Vec<String> = docs.iter().map(|d| d.lang.clone()).collect();
    langs.sort();
    langs.dedup();
    let same_lang = |l: &str| {
        let docs = &docs;
        let l = l.to_string();
        move |&(i, j): &(u32, u32)| docs[i as usize].lang == l && docs[j as usize].lang == l
    };
    // The exact stream: drop a document when an earlier exactly-kept one is a true
    // partner. Its drop count is the reference for the dropped view.
    let mut oracle_kept = vec![true; docs.len()];
    for d in 0..docs.len() {
        oracle_kept[d] = !truth.adj[d]
            .iter()
            .any(|&e| (e as usize) < d && oracle_kept[e as usize]);
    }
    let oracle_drops = oracle_kept.iter().filter(|k| !**k).count();
    println!("## MinHash quality study\n");
    println!(
        "{} documents from {} files; ground truth: {} pairs with word 5-gram Jaccard >= {threshold} (exact); an exact stream (drop a document when an earlier kept one is a true partner) drops {oracle_drops}. {:.1} s to read and compute it.\n",
        docs.len(),
        args.len(),
        truth.pairs.len(),
        t0.elapsed().as_secs_f64()
    );
    let mut lang_line = String::from("Ground-truth pairs per language (both documents):");
    for l in &langs {
        let n = truth.pairs.iter().filter(|p| same_lang(l)(p)).count();
        let d = docs.iter().filter(|d| d.lang == *l).count();
        lang_line.push_str(&format!(" {l} {n} ({d} docs);"));
    }
    println!("{lang_line}\n");

    // SimHash at the project's defaults (unicode / distinct / 5), k = 3 and 9.
    let fps: Vec<Option<u64>> = docs
        .par_iter()
        .map_init(
            || Fingerprinter::new(Settings::default()),
            |f, d| f.fingerprint(&d.text),
        )
        .collect();
    let mut rows: Vec<String> = Vec::new();
    let mut lang_rows: Vec<String> = Vec::new();
    for k in [3u32, 9] {
        let pred = pairs_within(&fps, k);
        let s = score(&truth.pairs, &pred, |_| true);
        let dec = stream_simhash(&fps, k);
        let (ds, ok) = score_dropped(&truth, &dec, |_| true);
        rows.push(format!(
            "| SimHash unicode/distinct/5 | k = {k} | – | {} | {} | – | – | {} | – | {ok:.3} |",
            pred.len(),
            prf(&s),
            prf(&ds)
        ));
        let mut row = format!("| SimHash k = {k} |");
        for l in &langs {
            let sl = score(&truth.pairs, &pred, same_lang(l));
            let (dl, _) = score_dropped(&truth, &dec, |d| docs[d].lang == *l);
            row.push_str(&format!(" {} · {} |", prf_short(&sl), prf_short(&dl)));
        }
        lang_rows.push(row);
    }

    if let Some(dir) = &datatrove {
        rows.push(datatrove_row(dir, &docs, &truth));
    }

    // MinHash: signatures per (method, shingling, hashes), then every banding.
    let cap = 50 * truth.pairs.len().max(1000);
    type SigKey = (Method, Shingling, usize);
    let mut sig_cache: HashMap<SigKey, Sigs> = HashMap::new();
    let mut sig_secs: HashMap<(Method, Shingling, usize), f64> = HashMap::new();
    let mut get_sigs = |m: Method, sh: Shingling, h: usize| -> Sigs {
        sig_cache
            .entry((m, sh, h))
            .or_insert_with(|| {
                let t = Instant::now();
                let s = signatures(&docs, m, sh, h);
                sig_secs.insert((m, sh, h), t.elapsed().as_secs_f64());
                s
            })
            .clone()
    };
    let mut comparison: Vec<String> = Vec::new();
    let mut shown: Option<Shown> = None;
    for (sh, hashes, bands, rows_per) in configs() {
        let banding = Banding {
            bands,
            rows: rows_per,
        };
        let methods: &[Method] = if sh == Shingling::Words(5) && (hashes == 112 || hashes == 128) {
            &[Method::Fss, Method::Od, Method::Classic]
        } else {
            &[Method::Fss]
        };
        for &m in methods {
            let sigs = get_sigs(m, sh, hashes);
            let keys = band_keys(&sigs, banding);
            let Some(cand) = candidates(&keys, bands, cap) else {
                rows.push(format!(
                    "| MinHash {m} {sh} | {hashes} = {bands} x {rows_per} | {:.3} | > {cap} | – | | | | | |",
                    banding.threshold()
                ));
                continue;
            };
            let s_lsh = score(&truth.pairs, &cand, |_| true);
            let mut verified: Vec<String> = Vec::new();
            let mut v_pairs = Vec::new();
            for j in [0.7, 0.8] {
                let v: Vec<(u32, u32)> = cand
                    .iter()
                    .copied()
                    .filter(|&(a, b)| est(&sigs, a, b) >= j)
                    .collect();
                verified.push(prf(&score(&truth.pairs, &v, |_| true)));
                if j == verify {
                    v_pairs = v;
                }
            }
            let dec = stream_minhash(&keys, &sigs, None);
            let (ds, _) = score_dropped(&truth, &dec, |_| true);
            let decv = stream_minhash(&keys, &sigs, Some(verify));
            let (dv, okv) = score_dropped(&truth, &decv, |_| true);
            let line = format!(
                "| MinHash {m} {sh} | {hashes} = {bands} x {rows_per} | {:.3} | {} | {} | {} | {} | {} | {} | {okv:.3} |",
                banding.threshold(),
                cand.len(),
                prf(&s_lsh),
                verified[0],
                verified[1],
                prf(&ds),
                prf(&dv),
            );
            if methods.len() > 1 {
                comparison.push(line.clone());
            }
            if m == Method::Fss {
                rows.push(line);
            }
            let p = Params {
                shingling: sh,
                hashes,
                bands,
                rows: rows_per,
            };
            if m == Method::Fss && p == show {
                let mut row = format!("| MinHash {} (LSH · verified {verify}) |", p.describe());
                for l in &langs {
                    let sl = score(&truth.pairs, &v_pairs, same_lang(l));
                    let (dl, _) = score_dropped(&truth, &decv, |d| docs[d].lang == *l);
                    row.push_str(&format!(" {} · {} |", prf_short(&sl), prf_short(&dl)));
                }
                lang_rows.push(row);
                shown = Some(Shown {
                    sigs: sigs.clone(),
                    keys: keys.clone(),
                    pairs: v_pairs.clone(),
                });
            }
        }
    }
    let header = "| method | hashes = bands x rows | threshold (1/B)^(1/R) | candidate pairs | pairs: LSH P/R/F1 | pairs: verified J >= 0.7 | pairs: verified J >= 0.8 | dropped: LSH P/R/F1 | dropped: verified P/R/F1 | orig ok (verified) |\n|---|---|---|---|---|---|---|---|---|---|";
    println!("### Precision / recall / F1 (verified dropped view at J >= {verify})\n");
    println!("{header}");
    for r in &rows {
        println!("{r}");
    }
    println!("\n### The crate's signature (fss) against optimal densification (od) and classic k-permutation MinHash (classic)\n");
    println!("{header}");
    for r in &comparison {
        println!("{r}");
    }
    println!();
    let mut secs: Vec<String> = sig_secs
        .iter()
        .map(|((m, sh, h), s)| format!("{m} {sh} {h}: {s:.1} s"))
        .collect();
    secs.sort();
    println!(
        "Signature times (all documents, rayon over 2 threads, loaded machine): {}\n",
        secs.join("; ")
    );

    // Jaccard estimates against the exact Jaccard of the same shingle sets.
    let shingle_sets = estimate_errors(&docs, &truth, show);

    println!("### Per language (pairs P/R/F1 · dropped P/R/F1)\n");
    println!("| method | {} |", langs.join(" | "));
    println!("|---|{}", "---|".repeat(langs.len()));
    for r in &lang_rows {
        println!("{r}");
    }
    println!();

    synthetic_bands();

    if let Some(shown) = shown {
        bbit_verification(&docs, &truth, &shown.sigs, &shown.keys, verify);
        examples(&shingle_sets, &docs, &truth, &shown, show, verify);
    }
    eprintln!("total {:.1} s", t0.elapsed().as_secs_f64());
}

/// datatrove's results (exported by bench/datatrove_minhash.py) in the main
/// table's form. Its candidates are the pairs that share a bucket; its dropped view
/// counts a removed document as right when a document datatrove kept, anywhere in
/// the input (its clusters have no order), is a true partner, and a kept document
/// as a miss when an earlier kept one is.
fn datatrove_row(dir: &str, docs: &[Doc], truth: &Truth) -> String {
    let read = |name: &str| -> Vec<Vec<String>> {
        std::fs::read_to_string(format!("{dir}/{name}"))
            .unwrap_or_else(|e| panic!("{dir}/{name}: {e}"))
            .lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    };
    let number: HashMap<(u32, u32), u32> = docs
        .iter()
        .enumerate()
        .map(|(n, d)| ((d.file, d.index), n as u32))
        .collect();
    let at = |r: &str, i: &str| number[&(r.parse().unwrap(), i.parse().unwrap())];
    let ids = read("ids.tsv");
    assert_eq!(
        ids.len(),
        docs.len(),
        "datatrove saw another number of documents"
    );
    for row in &ids {
        assert_eq!(
            docs[at(&row[0], &row[1]) as usize].id,
            row[2],
            "document numbering differs at {row:?}"
        );
    }
    let mut cand: Vec<(u32, u32)> = read("candidates.tsv")
        .iter()
        .map(|r| {
            let (a, b) = (at(&r[0], &r[1]), at(&r[2], &r[3]));
            (a.min(b), a.max(b))
        })
        .collect();
    cand.sort_unstable();
    cand.dedup();
    let mut removed = vec![false; docs.len()];
    for r in read("removed.tsv") {
        removed[at(&r[0], &r[1]) as usize] = true;
    }
    let s = score(&truth.pairs, &cand, |_| true);
    let mut ds = Score::default();
    for d in 0..docs.len() {
        let kept_partner = |earlier: bool| {
            truth.adj[d]
                .iter()
                .any(|&e| !removed[e as usize] && (!earlier || (e as usize) < d))
        };
        match (removed[d], removed[d] || kept_partner(true)) {
            (true, _) if kept_partner(false) => ds.tp += 1,
            (true, _) => ds.fp += 1,
            (false, true) => ds.fn_ += 1,
            (false, false) => {}
        }
    }
    format!(
        "| datatrove 0.10.1 MinHash (5-grams, 64-bit xxhash) | 112 = 14 x 8 | 0.719 | {} | {} | – | – | {} (clusters: {} removed) | – | – |",
        cand.len(),
        prf(&s),
        prf(&ds),
        removed.iter().filter(|r| **r).count()
    )
}

const METHODS: [Method; 3] = [Method::Fss, Method::Od, Method::Classic];

/// Bias and spread of the estimated Jaccard (each method, the `show` hashes)
/// against the exact Jaccard of the same shingle sets, over the pairs whose
/// ground-truth Jaccard is >= 0.5.
fn estimate_errors(docs: &[Doc], truth: &Truth, show: Params) -> Vec<Vec<u64>> {
    let shingle_sets: Vec<Vec<u64>> = docs
        .par_iter()
        .map_init(
            || Shingler::new(show.shingling),
            |s, d| {
                let mut v = Vec::new();
                s.for_each(d.text.as_bytes(), |h| v.push(h));
                v.sort_unstable();
                v.dedup();
                v
            },
        )
        .collect();
    let wide = truth_pairs(&truth.sets, 0.5);
    println!(
        "### Jaccard estimates against the exact Jaccard of the same shingle sets ({})\n",
        show.describe()
    );
    println!("Pairs with ground-truth Jaccard >= 0.5 ({}), grouped by the exact Jaccard of their {} shingle sets and by the smaller set's size. Bias = mean(estimate - exact) and RMSE per method; `binomial` is sqrt(J(1-J)/k), the RMSE of classic MinHash in theory.\n", wide.len(), show.shingling);
    println!("| exact J | smaller set | pairs | fss bias / RMSE | od bias / RMSE | classic bias / RMSE | binomial |\n|---|---|---|---|---|---|---|");
    let sigs: Vec<Sigs> = METHODS
        .iter()
        .map(|&m| signatures(docs, m, show.shingling, show.hashes))
        .collect();
    let sizes = [(0usize, 112usize), (112, 500), (500, usize::MAX)];
    // [J bucket][size bucket] -> (exact, estimates per method)
    type Cell = Vec<(f64, [f64; 3])>;
    let mut buckets: Vec<Vec<Cell>> = vec![vec![Vec::new(); sizes.len()]; 5];
    for &(i, j) in &wide {
        let (a, b) = (&shingle_sets[i as usize], &shingle_sets[j as usize]);
        if a.is_empty() || b.is_empty() {
            continue;
        }
        let exact = jaccard(a, b);
        let jb = ((exact * 10.0) as usize).clamp(5, 9) - 5;
        let small = a.len().min(b.len());
        let sb = sizes
            .iter()
            .position(|&(lo, hi)| small >= lo && small < hi)
            .unwrap();
        let e = [
            est(&sigs[0], i, j),
            est(&sigs[1], i, j),
            est(&sigs[2], i, j),
        ];
        buckets[jb][sb].push((exact, e));
    }
    for (jb, row) in buckets.iter().enumerate() {
        for (sb, v) in row.iter().enumerate() {
            if v.is_empty() {
                continue;
            }
            let n = v.len() as f64;
            let cells: Vec<String> = (0..3)
                .map(|m| {
                    let bias = v.iter().map(|x| x.1[m] - x.0).sum::<f64>() / n;
                    let rmse = (v.iter().map(|x| (x.1[m] - x.0).powi(2)).sum::<f64>() / n).sqrt();
                    format!("{bias:+.3} / {rmse:.3}")
                })
                .collect();
            let binom =
                (v.iter().map(|x| x.0 * (1.0 - x.0)).sum::<f64>() / n / show.hashes as f64).sqrt();
            let lo = 0.5 + jb as f64 / 10.0;
            let range = match jb {
                0 => "< 0.6".to_string(),
                4 => ">= 0.9".to_string(),
                _ => format!("{lo:.1}..{:.1}", lo + 0.1),
            };
            let (slo, shi) = sizes[sb];
            let size = if shi == usize::MAX {
                format!(">= {slo}")
            } else {
                format!("{slo}..{shi}")
            };
            println!(
                "| {range} | {size} | {} | {} | {binom:.3} |",
                v.len(),
                cells.join(" | ")
            );
        }
    }
    println!();
    shingle_sets
}

/// Synthetic pairs of n-element sets with exact Jaccard s: the share that shares a
/// band (each method) against 1 - (1 - s^R)^B, and the estimates' bias and RMSE.
fn synthetic_bands() {
    let p = Params::default();
    let b = p.banding();
    let classic = Classic::new(p.hashes);
    let od = Densified { k: p.hashes };
    let trials = 1000;
    println!(
        "### Synthetic pairs ({} hashes, {} x {}; {trials} pairs per cell, random 64-bit elements)\n",
        p.hashes, p.bands, p.rows
    );
    println!("Pairs of n-element sets with intersection m = round(2ns/(1+s)); s' = m/(2n-m) is their exact Jaccard. Share of pairs that share a band, fss / od / classic, and the formula 1-(1-s'^R)^B (binomial standard error of a share: at most 0.016).\n");
    let ns = [5usize, 20, 50, 100, 1000];
    let targets = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9];
    println!(
        "| s | {} |\n|---|{}",
        ns.iter()
            .map(|n| format!("n = {n}"))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(ns.len())
    );
    // Per n: sum of error, squared error and J(1-J) per method.
    let mut errs = vec![[(0.0f64, 0.0f64); 3]; ns.len()];
    let mut var = vec![0.0f64; ns.len()];
    for target in targets {
        let mut cells = Vec::new();
        for (ni, &n) in ns.iter().enumerate() {
            let m = ((2.0 * n as f64 * target) / (1.0 + target)).round() as usize;
            let s_exact = m as f64 / (2 * n - m) as f64;
            let mut rng = SplitMix64(n as u64 * 1000 + (target * 100.0) as u64);
            let mut hits = [0usize; 3];
            let mut sk = Sketch::new(p.hashes);
            for _ in 0..trials {
                let common: Vec<u64> = (0..m).map(|_| rng.next()).collect();
                let a: Vec<u64> = common
                    .iter()
                    .copied()
                    .chain((m..n).map(|_| rng.next()))
                    .collect();
                let bb: Vec<u64> = common
                    .iter()
                    .copied()
                    .chain((m..n).map(|_| rng.next()))
                    .collect();
                let mut fss = |xs: &[u64]| {
                    sk.clear();
                    xs.iter().for_each(|&x| sk.push(x));
                    let mut o = Vec::new();
                    sk.finish(&mut o);
                    o
                };
                let pairs = [
                    (fss(&a), fss(&bb)),
                    (
                        od.signature(a.iter().copied()).unwrap(),
                        od.signature(bb.iter().copied()).unwrap(),
                    ),
                    (
                        classic.signature(a.iter().copied()).unwrap(),
                        classic.signature(bb.iter().copied()).unwrap(),
                    ),
                ];
                for (mi, (x, y)) in pairs.iter().enumerate() {
                    hits[mi] += shares_band(x, y, b) as usize;
                    let e = estimate_jaccard(x, y) - s_exact;
                    errs[ni][mi].0 += e;
                    errs[ni][mi].1 += e * e;
                }
                var[ni] += s_exact * (1.0 - s_exact);
            }
            let t = trials as f64;
            cells.push(format!(
                "{:.3} / {:.3} / {:.3} ({:.3}; s' {s_exact:.3})",
                hits[0] as f64 / t,
                hits[1] as f64 / t,
                hits[2] as f64 / t,
                b.probability(s_exact)
            ));
        }
        println!("| {target} | {} |", cells.join(" | "));
    }
    println!("\nJaccard estimates on the same pairs (all s pooled): bias / RMSE per method; `binomial` = sqrt(mean s'(1-s')/k).\n");
    println!("| n | fss | od | classic | binomial |\n|---|---|---|---|---|");
    let total = (trials * targets.len()) as f64;
    for (ni, &n) in ns.iter().enumerate() {
        let cells: Vec<String> = errs[ni]
            .iter()
            .map(|&(e, e2)| format!("{:+.4} / {:.4}", e / total, (e2 / total).sqrt()))
            .collect();
        println!(
            "| {n} | {} | {:.4} |",
            cells.join(" | "),
            (var[ni] / total / p.hashes as f64).sqrt()
        );
    }
    println!();
}

fn shares_band(a: &[u32], b: &[u32], banding: Banding) -> bool {
    a.chunks_exact(banding.rows)
        .zip(b.chunks_exact(banding.rows))
        .take(banding.bands)
        .any(|(x, y)| x == y)
}

/// Verification from the low b bits of each signature value (what a side store of
/// signatures would keep): the share of equal b-bit values, corrected for chance
/// agreement, `(f - 2^-b) / (1 - 2^-b)`.
fn bbit_verification(docs: &[Doc], truth: &Truth, sigs: &Sigs, keys: &[Vec<u64>], verify: f64) {
    println!("### Verification from b-bit signatures (the side store of `--verify`)\n");
    println!("Candidates verified with the low b bits of each of the signature's values (estimate corrected for chance agreement, (f - 2^-b)/(1 - 2^-b)); default settings, J >= {verify}.\n");
    println!("| bits per value | side store per kept document | pairs: verified P/R/F1 | dropped: verified P/R/F1 |\n|---|---|---|---|");
    let k = sigs.iter().flatten().next().map_or(0, |s| s.len());
    for bits in [32u32, 16, 8, 4] {
        let mask = if bits == 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        let low: Sigs = sigs
            .iter()
            .map(|s| s.as_ref().map(|s| s.iter().map(|v| v & mask).collect()))
            .collect();
        let chance = if bits == 32 {
            0.0
        } else {
            1.0 / (1u64 << bits) as f64
        };
        let corrected = |a: u32, b: u32| (est(&low, a, b) - chance) / (1.0 - chance);
        let cand = candidates(
            keys,
            keys.iter().map(|k| k.len()).max().unwrap_or(0),
            usize::MAX,
        )
        .unwrap();
        let v: Vec<(u32, u32)> = cand
            .iter()
            .copied()
            .filter(|&(a, b)| corrected(a, b) >= verify)
            .collect();
        let s = score(&truth.pairs, &v, |_| true);
        // The stream with b-bit verification.
        let mut owner: HashMap<u64, u32> = HashMap::new();
        let mut dec = Vec::with_capacity(docs.len());
        for (d, ks) in keys.iter().enumerate() {
            let mut original = None;
            let mut tried = Vec::new();
            for key in ks {
                if let Some(&o) = owner.get(key) {
                    if !tried.contains(&o) {
                        tried.push(o);
                        if corrected(d as u32, o) >= verify {
                            original = Some(o);
                            break;
                        }
                    }
                }
            }
            if original.is_none() {
                for &key in ks {
                    owner.entry(key).or_insert(d as u32);
                }
            }
            dec.push(original);
        }
        let (ds, _) = score_dropped(truth, &dec, |_| true);
        println!(
            "| {bits} | {} bytes | {} | {} |",
            k * bits as usize / 8,
            prf(&s),
            prf(&ds)
        );
    }
    println!();
}

/// Ten false positives and ten false negatives of the verified pair view at `show`.
fn examples(
    shingle_sets: &[Vec<u64>],
    docs: &[Doc],
    truth: &Truth,
    shown: &Shown,
    show: Params,
    verify: f64,
) {
    let Shown {
        sigs,
        keys,
        pairs: pred,
    } = shown;
    let truth_set: HashSet<(u32, u32)> = truth.pairs.iter().copied().collect();
    let pred_set: HashSet<(u32, u32)> = pred.iter().copied().collect();
    let line = |&(i, j): &(u32, u32)| {
        let (a, b) = (&docs[i as usize], &docs[j as usize]);
        let shared = keys[i as usize]
            .iter()
            .zip(&keys[j as usize])
            .filter(|(x, y)| x == y)
            .count();
        format!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {shared} | {} / {} | {} / {} |",
            a.id,
            b.id,
            a.lang,
            jaccard(&truth.sets[i as usize], &truth.sets[j as usize]),
            jaccard(&shingle_sets[i as usize], &shingle_sets[j as usize]),
            est(sigs, i, j),
            truth.sets[i as usize].len(),
            truth.sets[j as usize].len(),
            a.url,
            b.url
        )
    };
    let fps: Vec<&(u32, u32)> = pred.iter().filter(|p| !truth_set.contains(p)).collect();
    let fns: Vec<&(u32, u32)> = truth
        .pairs
        .iter()
        .filter(|p| !pred_set.contains(p))
        .collect();
    for (name, list) in [("false positives", fps), ("false negatives", fns)] {
        println!(
            "### Ten {name} of the verified pairs (estimated J >= {verify}) at {} (of {})\n",
            show.describe(),
            list.len()
        );
        println!("| id | id | lang | true J (5-grams) | exact J of the shingles | estimated J | bands shared | 5-grams | urls |\n|---|---|---|---|---|---|---|---|---|");
        let step = (list.len() / 10).max(1);
        for p in list.iter().step_by(step).take(10) {
            println!("{}", line(p));
        }
        println!();
    }
}
