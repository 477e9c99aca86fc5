//! Quality study: MinHash LSH near-duplicates against exact word 5-gram Jaccard
//! >= 0.8, beside SimHash at k = 3 and k = 9.
//!
//! `cargo run --release -p webdedup-minhash --example minhash_study -- [--threshold 0.8] [--show 'SETTINGS'] [--verify J] [--rensa DIR]... [--datatrove DIR] [--only options] FILES...`
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
//! First, the options table that chose the defaults (`options`): verification and
//! band settings in stream mode beside rensa's and datatrove's runs on the same
//! documents (`--rensa DIR`, `--datatrove DIR`: their exports), scored by issue 32's
//! earlier-document rule too; `--only options` stops after it.
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

mod checks;
mod options;
mod signatures;
mod stream;

use checks::*;
use rayon::prelude::*;
use signatures::*;
use std::collections::HashMap;
use std::time::Instant;
use stream::*;
use webdedup_minhash::{Banding, Params, Shingling};
use webdedup_simhash::search::pairs_within;
use webdedup_simhash::tokenize::{Fingerprinter, Settings};
use webdedup_study::{grams, load_docs, score, truth_pairs};

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
    // The study simulates verification on the band signature's values.
    let mut show = Params {
        verify_hashes: 0,
        ..Params::default()
    };
    let mut verify = 0.8;
    let mut datatrove: Option<String> = None;
    let mut rensa: Vec<String> = Vec::new();
    let mut only_options = false;
    while args.first().is_some_and(|a| a.starts_with("--")) {
        let a = args.remove(0);
        let v = args.remove(0);
        match a.as_str() {
            "--threshold" => threshold = v.parse().unwrap(),
            "--show" => show = Params::parse(&v).unwrap(),
            "--verify" => verify = v.parse().unwrap(),
            "--datatrove" => datatrove = Some(v),
            "--rensa" => rensa.push(v),
            "--only" if v == "options" => only_options = true,
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

    let mut peers = Vec::new();
    for dir in &rensa {
        let name = std::fs::read_to_string(format!("{dir}/name.txt"))
            .unwrap_or_else(|e| panic!("{dir}/name.txt: {e}"));
        peers.push((name, options::peer_removed(dir, &docs)));
    }
    if let Some(dir) = &datatrove {
        let name = "datatrove 0.10.1 MinHash (112 = 14 x 8, clusters)";
        peers.push((name.to_string(), options::peer_removed(dir, &docs)));
    }
    options::options_table(
        &docs,
        &truth,
        |h, norm| signatures(&docs, Method::Fss, Shingling::Words(5), norm, h),
        &peers,
    );
    if only_options {
        return;
    }

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
                let s = signatures(&docs, m, sh, show.norm, h);
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
                norm: show.norm,
                hashes,
                bands,
                rows: rows_per,
                verify_hashes: 0,
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
        bbit_verification(&truth, &shown.sigs, &shown.keys, verify);
        examples(&shingle_sets, &docs, &truth, &shown, show, verify);
    }
    eprintln!("total {:.1} s", t0.elapsed().as_secs_f64());
}
